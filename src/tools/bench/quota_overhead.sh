#!/usr/bin/env bash
# What quotas cost a call (at most 3 % on Get and Put p50 and on YCSB C x 16 threads, BENCHMARKS.md §17):
# two servers of one build running at once on this machine, one with no quota ("off") and one
# whose every call passes two limiters it never reaches ("on": a table quota on each benchmark
# table and a namespace quota on default, checked and taken on every Get, Put and YCSB read), in
# alternating rounds so that the machine's drift hits them alike.
#
#   src/tools/bench/quota_overhead.sh BUILD [ROUNDS (3)] [YCSB SECONDS (10)]
#   src/tools/bench/quota_overhead.sh BUILD --callgrind N1 N2
#   e.g. src/tools/bench/quota_overhead.sh build-release 3
# --callgrind: instead, the server alone under callgrind for N1 and for N2 Puts and Gets, with and
# without the quotas (metrics_callgrind.sh): the difference over N2 - N1 is its instructions per
# Put + Get, which the machine's noise does not move.
set -euo pipefail
[ $# -ge 1 ] || { sed -n 2,12p "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build=$1 rounds=${2:-3} seconds=${3:-10}
quotas="
  set_quota TYPE => THROTTLE, TABLE => 'bench_latency', LIMIT => '1000000req/sec'
  set_quota TYPE => THROTTLE, TABLE => 'usertable', LIMIT => '1000000req/sec'
  set_quota TYPE => THROTTLE, NAMESPACE => 'default', LIMIT => '100G/sec'"
if [ "$rounds" = --callgrind ]; then
  here=$(cd "$(dirname "$0")" && pwd)
  n1=$3 n2=$4 out=$(mktemp -d)
  for which in off on; do
    setup=""
    [ "$which" = on ] && setup=$quotas
    a=$(CALLGRIND_SHELL="$setup" "$here/metrics_callgrind.sh" "$build" "$n1" "$out/$which.$n1.cg" | awk '{print $2}')
    b=$(CALLGRIND_SHELL="$setup" "$here/metrics_callgrind.sh" "$build" "$n2" "$out/$which.$n2.cg" | awk '{print $2}')
    echo "quotas $which: $(( (b - a) / (n2 - n1) )) instructions per Put + Get (N=$n1: $a, N=$n2: $b)"
  done
  rm -rf "$out"
  exit 0
fi
bench=$build/src/tools/bench/basalt-bench
shell=$build/src/tools/shell/basalt
. "$(dirname "$0")/servers.sh"
start_server off
start_server on
on=127.0.0.1:$(cat "$dir/on.port")
"$shell" --server="$on" --no-timing -e "$quotas
  list_quotas"
for which in off on; do
  "$bench" server load --server="127.0.0.1:$(cat "$dir/$which.port")" --records=100000 --load_threads=4 \
    | grep -E "records/s|load" | head -2 || true
done
for r in $(seq "$rounds"); do
  for which in off on; do
    echo "== round $r, quotas $which"
    "$bench" server latency --server="127.0.0.1:$(cat "$dir/$which.port")" --sizes=1024 --ops=5000 --warmup=500 \
      --rounds=4 --no_floor | grep -E "^(Get|Put)|p50" || true
    "$bench" server ycsb --server="127.0.0.1:$(cat "$dir/$which.port")" --workload=C --threads=16 --skip_load \
      --records=100000 --seconds="$seconds" | grep -E "ops/s|^ *C" || true
  done
done
