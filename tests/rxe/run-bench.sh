#!/usr/bin/env bash
# The verbs-vs-gRPC benchmark in the soft-RoCE guest (BENCHMARKS.md §7): boots the guest with
# basalt-server and basalt-bench from a build directory and runs bench-guest.sh there.
#   tests/rxe/run-bench.sh [build-dir]        (default: build; env BENCH_OPS, BENCH_RECORDS, BENCH_SECONDS,
#                                              BENCH_PARTS: "latency ycsb async" or some of them)
# Latencies under TCG emulation show function and relative cost, not hardware speed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
exec "$here/guest.sh" --cache "$build/rxe-cache" --timeout "${BENCH_TIMEOUT:-3000}" \
  --bin "$build/src/server/basalt-server" --bin "$build/src/tools/bench/basalt-bench" \
  --file "$here/bench-guest.sh:/basalt/bench-guest.sh" \
  -- "BENCH_OPS=${BENCH_OPS:-2000} BENCH_RECORDS=${BENCH_RECORDS:-10000} BENCH_SECONDS=${BENCH_SECONDS:-5}" \
     "BENCH_PARTS='${BENCH_PARTS:-latency ycsb async}' sh /basalt/bench-guest.sh"
