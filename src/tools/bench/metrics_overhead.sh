#!/usr/bin/env bash
# What the data path's counting costs (docs/DESIGN.md §11: within 3 % of Get latency): basalt-bench's
# Get/Put latency against a server built with the counting (BUILD_ON) and one built without it
# (BUILD_OFF: cmake -DBASALT_METRICS=OFF), both running at once on this machine, benchmarked in
# alternating rounds so that the machine's drift hits both alike.
#
#   src/tools/bench/metrics_overhead.sh BUILD_ON BUILD_OFF [ROUNDS (3)] [extra basalt-bench flags...]
#   e.g. cmake -S . -B /tmp/build-nometrics -G Ninja -DBASALT_METRICS=OFF &&
#        cmake --build /tmp/build-nometrics --target basalt-server &&
#        src/tools/bench/metrics_overhead.sh build /tmp/build-nometrics 3
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,10p "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
on=$1 off=$2 rounds=${3:-3}
shift 2; [ $# -gt 0 ] && shift
bench=$on/src/tools/bench/basalt-bench
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
start() {  # start NAME BUILD
  "$2/src/server/basalt-server" --data_dir="$dir/$1" --listen=127.0.0.1:0 --port_file="$dir/$1.port" \
    --http_listen=127.0.0.1:0 > "$dir/$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 300); do [ -s "$dir/$1.port" ] && return 0; sleep 0.1; done
  echo "metrics_overhead: $1 did not start; see $dir/$1.log" >&2; exit 1
}
start on "$on"
start off "$off"
for r in $(seq "$rounds"); do
  for which in on off; do
    echo "== round $r, counting $which"
    "$bench" server latency --server="127.0.0.1:$(cat "$dir/$which.port")" --sizes=1024 --ops=5000 --warmup=500 \
      --rounds=4 --no_floor "$@" | grep -E "^(Get|Put)|p50" || true
  done
done
