#!/usr/bin/env bash
# BENCHMARKS.md §10: a 3-server cluster (deploy/cluster.sh: ZooKeeper, Ceph with 3 bluestore
# OSDs, two masters, three region servers) against a standalone server on local disk and one on
# the same RADOS pool, in the same run, on this one machine: Get/Put latency (one client thread,
# alternating rounds) and YCSB A and C throughput, then the CPU each process spent per operation
# during the cluster's YCSB run.
#
#   src/tools/bench/cluster_vs_standalone.sh [BUILD_DIR] [WORK_DIR]
#
# BUILD_DIR defaults to build; WORK_DIR (default /tmp/basalt-cvs) is removed first and last.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
work=${2:-/tmp/basalt-cvs}
bench="$build/src/tools/bench/basalt-bench"
server="$build/src/server/basalt-server"
cluster="$root/deploy/cluster.sh"
zk_port=${ZK_PORT:-2290}
ceph_port=${CEPH_PORT:-6990}
records=${RECORDS:-20000}
seconds=${SECONDS_PER_RUN:-10}

cleanup() {
  local f
  for f in "$work"/*/pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
  "$cluster" stop "$work/cluster" > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
rm -rf "$work"
mkdir -p "$work"

echo "== starting the cluster (3 region servers) and two standalone servers"
"$cluster" start "$work/cluster" --servers 3 --zk-port "$zk_port" --ceph-port "$ceph_port" --bin-dir "$build"
conf="$work/cluster/ceph/ceph.conf"
start_standalone() {  # name, extra flags...
  local name=$1
  shift
  mkdir -p "$work/$name"
  "$server" --data_dir="$work/$name/data" --listen=127.0.0.1:0 --port_file="$work/$name/port" "$@" \
    > "$work/$name/log" 2>&1 &
  echo $! > "$work/$name/pid"
  for _ in $(seq 300); do [ -s "$work/$name/port" ] && break; sleep 0.1; done
  echo "127.0.0.1:$(cat "$work/$name/port")"
}
local_addr=$(start_standalone local)
rados_addr=$(start_standalone rados --rados_pool=basalt --ceph_conf="$conf" --rados_namespace=standalone)
declare -A target=([local]="--server=$local_addr" [rados]="--server=$rados_addr"
                   [cluster]="--zookeeper=127.0.0.1:$zk_port")

# CPU seconds (user + system) of a pid so far.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }
# "name pid" of each process a target's operations run on (the OSDs serve both RADOS targets).
processes() {
  local f
  case $1 in
    local | rados) echo "server $(cat "$work/$1/pid")" ;;
    cluster) for f in "$work"/cluster/server-*.pid "$work"/cluster/master-*.pid; do echo "$(basename "$f" .pid) $(cat "$f")"; done ;;
  esac
  if [ "$1" != local ]; then
    for f in "$work"/cluster/ceph/*.pid; do echo "$(basename "$f" .pid) $(cat "$f")"; done
  fi
}

echo "== latency, one thread, 1 KiB: two rounds, the targets alternating"
for round in 1 2; do
  for t in local rados cluster; do
    echo "-- $t, round $round"
    "$bench" server latency ${target[$t]} --sizes=1024 --ops=2000 --warmup=200 --rounds=2 --no_floor 2>/dev/null \
      | grep -E "^(Put|Get) "
  done
done

echo "== YCSB A and C, 16 threads, $records records in 6 regions, ${seconds} s each"
for t in local rados cluster; do
  echo "-- $t"
  declare -A before=()
  while read -r name pid; do before[$name]=$(cpu "$pid"); done < <(processes "$t")
  "$bench" server ycsb ${target[$t]} --workload=A,C --threads=16 --records="$records" --regions=6 \
    --seconds="$seconds" --warmup_seconds=2 --load_threads=4 2>/dev/null > "$work/ycsb-$t.txt"
  grep -E "^ +[AC] +16 |^load_records_per_s" "$work/ycsb-$t.txt"
  # Every operation the run made: the load's records, the warm-ups' and the recorded ones (the
  # recorded ones' rate stands for the warm-ups').
  ops=$(awk -v s="$seconds" '$1 == "A" || $1 == "C" {n += $3 * (s + 2) / s} /^load_records:/ {n += $2} END {printf "%d", n}' \
    "$work/ycsb-$t.txt")
  echo "CPU during the run ($ops operations): process, CPU s, CPU us per operation"
  total=0
  while read -r name pid; do
    used=$(awk -v a="${before[$name]}" -v b="$(cpu "$pid")" 'BEGIN {printf "%.2f", b - a}')
    total=$(awk -v a="$total" -v b="$used" 'BEGIN {print a + b}')
    echo "  $name $used $(awk -v u="$used" -v n="$ops" 'BEGIN {printf "%.1f", u * 1e6 / n}')"
  done < <(processes "$t")
  echo "  all $total $(awk -v u="$total" -v n="$ops" 'BEGIN {printf "%.1f", u * 1e6 / n}')"
done
