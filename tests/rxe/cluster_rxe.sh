#!/usr/bin/env bash
# Runs a command in the soft-RoCE guest (guest.sh) against a ZooKeeper and a Ceph (1 monitor, 1
# memstore OSD) that this host runs on its own address, not loopback, so that the guest reaches
# them through guest.sh --uplink (qemu's user network connects to the host's addresses). For the
# cluster's verbs test (cluster_verbs_test.cc): the master and the region servers run in the
# guest, where rxe0 is.
#
#   tests/rxe/cluster_rxe.sh DIR ZK_PORT CEPH_PORT [guest.sh options...] -- 'guest command'
#
# The command runs with BASALT_ZK_QUORUM and BASALT_CEPH_CONF (/basalt/ceph.conf) exported.
# Everything is under DIR, removed at the end. Exits 77 (skipped) on a host with no address but
# loopback.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
deploy=$here/../../deploy
[ $# -ge 4 ] || { echo "usage: $0 DIR ZK_PORT CEPH_PORT [guest.sh options...] -- 'guest command'" >&2; exit 2; }
dir=$1 zk_port=$2 ceph_port=$3
shift 3
guest_args=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do guest_args+=("$1"); shift; done
[ "${1:-}" = -- ] || { echo "cluster_rxe: no guest command after --" >&2; exit 2; }
shift
cmd="$*"

addr=$(ip -4 -o addr show scope global 2>/dev/null | awk '{ split($4, a, "/"); print a[1]; exit }')
if [ -z "$addr" ]; then
  echo "cluster_rxe: skipped: this host has no IPv4 address but loopback for the guest to reach ZooKeeper and Ceph on"
  exit 77
fi

stop() {
  "$deploy/ceph.sh" stop "$dir/ceph" > /dev/null 2>&1 || true
  "$deploy/zookeeper.sh" stop "$dir/zookeeper" > /dev/null 2>&1 || true
  rm -rf "$dir"
}
stop  # what an interrupted run left
trap stop EXIT
mkdir -p "$dir"
"$deploy/zookeeper.sh" start "$dir/zookeeper" --port "$zk_port" --addr "$addr" &
zk=$!
"$deploy/ceph.sh" start "$dir/ceph" --port "$ceph_port" --addr "$addr"
wait "$zk"
# The guest's client configuration: the monitor, no authentication, no admin socket or log.
cat > "$dir/guest-ceph.conf" <<CONF
[global]
mon host = v2:$addr:$ceph_port
auth cluster required = none
auth service required = none
auth client required = none
[client]
admin socket =
log file = /dev/null
CONF
# A guest that cannot reach the host's address (a host whose network stack refuses qemu's user
# network) is an environment's limit, said as such: skipped (77), not failed.
reach="if [ \"\$(echo ruok | nc -w 5 $addr $zk_port)\" != imok ]; then
  echo 'cluster_rxe: skipped: the guest cannot reach ZooKeeper at $addr:$zk_port through qemu user networking'; exit 77; fi"
bash "$here/guest.sh" --uplink --file "$dir/guest-ceph.conf:/basalt/ceph.conf" "${guest_args[@]}" -- \
  "$reach; export BASALT_ZK_QUORUM=$addr:$zk_port BASALT_CEPH_CONF=/basalt/ceph.conf; $cmd"
