#!/usr/bin/env bash
# A change's cost to the server, measured against the server from before it (BENCHMARKS.md §18,
# §20): two basalt-server programs running at once on this machine, BEFORE and AFTER, each with an
# HBase port, in alternating rounds so that the machine's drift hits them alike; each round a
# `server latency` (1 KiB Get and Put, 4 rounds of 5000), `server ycsb` workloads C and A at 16
# threads, and `server hbase_get` (the server's CPU per Get through its HBase port and through
# gRPC, 5000 Gets x 4 rounds) against each. The one BENCH client drives both.
#
#   src/tools/bench/before_after.sh BEFORE_SERVER AFTER_SERVER BENCH [ROUNDS (3)] [YCSB SECONDS (10)]
#   e.g. src/tools/bench/before_after.sh /tmp/before/basalt-server \
#          build-release/src/server/basalt-server build-release/src/tools/bench/basalt-bench 5
set -euo pipefail
[ $# -ge 3 ] || { sed -n 2,11p "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
before=$1 after=$2 bench=$3 rounds=${4:-3} seconds=${5:-10}
. "$(dirname "$0")/servers.sh"
server_binary=$before start_server before --hbase_listen=127.0.0.1:0 --hbase_port_file="$dir/before.hport"
server_binary=$after start_server after --hbase_listen=127.0.0.1:0 --hbase_port_file="$dir/after.hport"
for which in before after; do
  "$bench" server load --server="127.0.0.1:$(cat "$dir/$which.port")" --records=100000 --load_threads=4 \
    | tr '\r' '\n' | grep -E "^load_" || true
done
for r in $(seq "$rounds"); do
  for which in before after; do
    echo "== round $r, $which"
    "$bench" server latency --server="127.0.0.1:$(cat "$dir/$which.port")" --sizes=1024 --ops=5000 --warmup=500 \
      --rounds=4 --no_floor | tr '\r' '\n' | grep -E "^(Get|Put) " || true
    "$bench" server ycsb --server="127.0.0.1:$(cat "$dir/$which.port")" --workload=C,A --threads=16 --skip_load \
      --records=100000 --seconds="$seconds" | tr '\r' '\n' | grep -E "^workload|^ +[CA] +16 " || true
    "$bench" server hbase_get --server="127.0.0.1:$(cat "$dir/$which.port")" --hbase="127.0.0.1:$(cat "$dir/$which.hport")" \
      --server_pid="$(cat "$dir/$which.pid")" --gets=5000 --rounds=4 | tr '\r' '\n' | grep -E "^ *(gRPC|HBase port) " || true
  done
done
