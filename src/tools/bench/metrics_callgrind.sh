#!/usr/bin/env bash
# The server's instructions for N Puts and N Gets of 1 KiB (basalt-bench server latency), under
# callgrind, whose counts barely move on a noisy machine: run it for two N with a build that
# counts calls and one that does not (cmake -DBASALT_METRICS=OFF); the difference of the two
# totals over the difference of N is the instructions per Put+Get, start-up and shutdown
# cancelled out (BENCHMARKS.md §11).
#
#   src/tools/bench/metrics_callgrind.sh BUILD N OUT [SERVER_FLAG...] [-- BENCH_FLAG...]
#                                                          # prints callgrind's "summary: <Ir>"
# (security_overhead.sh --callgrind passes TLS and auth flags to both; quota_overhead.sh sets
# CALLGRIND_SHELL, shell commands run against the server before the benchmark.)
set -euo pipefail
build=$1 n=$2 out=$3
shift 3
server_flags=() bench_flags=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do server_flags+=("$1"); shift; done
[ $# -gt 0 ] && shift
bench_flags=("$@")
d=$(mktemp -d)
valgrind --tool=callgrind --callgrind-out-file="$out" "$build/src/server/basalt-server" --data_dir="$d/data" \
  --listen=127.0.0.1:0 --port_file="$d/port" --http_listen=off --cq_threads=1 --handler_threads=1 \
  "${server_flags[@]}" > "$d/log" 2>&1 &
pid=$!
for _ in $(seq 600); do [ -s "$d/port" ] && break; sleep 0.1; done
if [ -n "${CALLGRIND_SHELL:-}" ]; then
  "$build/src/tools/shell/basalt" --server="127.0.0.1:$(cat $d/port)" --no-timing -e "$CALLGRIND_SHELL" > /dev/null
fi
"$(dirname "$0")/../../../build/src/tools/bench/basalt-bench" server latency --server="127.0.0.1:$(cat $d/port)" --sizes=1024 --ops="$n" \
  --warmup=0 --rounds=1 --no_floor "${bench_flags[@]}" > "$d/bench" 2>&1 || { cat "$d/bench" >&2; exit 1; }
kill -TERM $pid; wait $pid || true
grep -h "^summary:\|^totals:" "$out" | head -1
rm -rf "$d"
