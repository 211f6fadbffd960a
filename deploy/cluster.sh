#!/usr/bin/env bash
# A whole Basalt cluster on one machine, for development and tests, all under one directory: a
# private ZooKeeper (deploy/zookeeper.sh), a private Ceph (deploy/ceph.sh: 1 monitor, 3 OSDs on
# bluestore files, pool size 3), two masters and the region servers, on loopback.
#
#   deploy/cluster.sh start DIR [--servers 3] [--store bluestore|memstore] [--osds 3]
#                               [--zk-port 2181] [--ceph-port 6800] [--bin-dir build] [--secure]
#   deploy/cluster.sh status DIR
#   deploy/cluster.sh stop DIR        # SIGKILL everything, then remove DIR: nothing left behind
#
# `start` and `status` print one line per process, ZooKeeper's client address first, which is
# all a client needs: `basalt --zookeeper=127.0.0.1:2181`. Binaries come from --bin-dir (a build
# directory: src/server/basalt-server, src/master/basalt-master), else from PATH. The active
# master serves the catalogue and basalt:meta (its address is printed once it serves) and places
# the regions on the region servers (basalt-server --cluster), every file in the RADOS pool.
# Every daemon has an HBase port too (docs/DESIGN.md §15): an unmodified HBase client needs only
# hbase.zookeeper.quorum (ZooKeeper's address; zookeeper.znode.parent is HBase's /hbase).
#
# --secure: a secure cluster (README "Security"). A CA and certificates in DIR/certs
# (deploy/make-certs.sh: the servers', and user admin's), a ZooKeeper identity in
# DIR/zookeeper-identity (zookeeper_auth_file: no other ZooKeeper client may change the cluster's
# nodes), and every daemon with TLS on each port and auth=true, admin its superuser. `start` and
# `status` then print the settings Basalt's shell and HBase's client need, as admin.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
usage() { echo "usage: $0 start|status|stop DIR [--servers N] [--store bluestore|memstore] [--osds N] [--zk-port P] [--ceph-port P] [--bin-dir DIR] [--secure]" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 dir=$2; shift 2
servers=3 store=bluestore osds=3 zk_port=2181 ceph_port=6800 bin_dir="$here/../build" secure=0
while [ $# -gt 0 ]; do
  case $1 in
    --servers) servers=$2; shift 2 ;;
    --store) store=$2; shift 2 ;;
    --osds) osds=$2; shift 2 ;;
    --zk-port) zk_port=$2; shift 2 ;;
    --ceph-port) ceph_port=$2; shift 2 ;;
    --bin-dir) bin_dir=$2; shift 2 ;;
    --secure) secure=1; shift ;;
    *) usage ;;
  esac
done

binary() {  # $1: name, $2: its path in a build directory
  if [ -x "$bin_dir/$2" ]; then echo "$bin_dir/$2"; elif command -v "$1" > /dev/null; then command -v "$1"; else
    echo "cluster: no $1 in $bin_dir/$2 nor on PATH (build first, or give --bin-dir)" >&2; exit 1
  fi
}

. "$(dirname "$0")/lib.sh"  # alive

status() {
  [ -f "$dir/zk-quorum" ] || { echo "cluster: none in $dir"; return 1; }
  local rc=0 f p
  "$here/zookeeper.sh" status "$dir/zookeeper" || rc=1
  "$here/ceph.sh" status "$dir/ceph" | sed -n 1p
  for f in "$dir"/master-*.pid "$dir"/server-*.pid; do
    [ -e "$f" ] || continue
    p=$(cat "$f")
    local what; what=$(basename "$f" .pid)
    local addr=""; [ -f "$dir/$what.port" ] && addr=" 127.0.0.1:$(cat "$dir/$what.port")"
    local role=""; grep -q "active master" "$dir/$what.log" 2>/dev/null && role=" (active)"
    if alive "$p"; then echo "$what$addr pid $p$role"; else echo "$what$addr pid $p DEAD"; rc=1; fi
  done
  echo "hbase clients: hbase.zookeeper.quorum=$(cat "$dir/zk-quorum") zookeeper.znode.parent=/hbase"
  if [ -d "$dir/certs" ]; then
    local c="$dir/certs"
    echo "secure: basalt --zookeeper=$(cat "$dir/zk-quorum") --tls-ca=$c/ca.pem --tls-cert=$c/admin.pem --tls-key=$c/admin.key"
    echo "secure: hbase hbase.client.netty.tls.enabled=true hbase.rpc.tls.truststore.type=PEM" \
      "hbase.rpc.tls.truststore.location=$c/ca.pem hbase.rpc.tls.keystore.type=PEM" \
      "hbase.rpc.tls.keystore.location=$c/admin-keystore.pem (as admin: HADOOP_USER_NAME=admin)"
  fi
  return $rc
}

stop() {
  local f p killed=()
  for f in "$dir"/server-*.pid "$dir"/master-*.pid; do
    [ -e "$f" ] || continue
    p=$(cat "$f")
    if grep -qa basalt- "/proc/$p/cmdline" 2>/dev/null; then kill -9 "$p" 2>/dev/null && killed+=("$p") || true; fi
  done
  "$here/ceph.sh" stop "$dir/ceph"
  "$here/zookeeper.sh" stop "$dir/zookeeper"
  # A process killed with SIGKILL is gone only once the kernel has torn it down, which takes a
  # while for a large one (a sanitized build maps terabytes of shadow memory): wait, up to 10 s.
  for p in "${killed[@]}"; do
    for _ in $(seq 100); do alive "$p" || break; sleep 0.1; done
  done
  rm -rf "$dir"
}

start() {
  if [ -f "$dir/zk-quorum" ]; then echo "cluster: $dir already holds one; stop it first" >&2; exit 1; fi
  if ! [[ "$servers" =~ ^[1-9][0-9]*$ ]]; then echo "cluster: --servers wants a count of 1 or more" >&2; exit 2; fi
  local server_bin master_bin
  server_bin=$(binary basalt-server src/server/basalt-server)
  master_bin=$(binary basalt-master src/master/basalt-master)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  "$here/zookeeper.sh" start "$dir/zookeeper" --port "$zk_port" > /dev/null &
  local zk=$!
  "$here/ceph.sh" start "$dir/ceph" --osds "$osds" --store "$store" --port "$ceph_port" > /dev/null
  wait $zk
  local quorum="127.0.0.1:$zk_port"
  echo "$quorum" > "$dir/zk-quorum"
  local common=(--zookeeper_quorum="$quorum" --rados_pool=basalt --ceph_conf="$dir/ceph/ceph.conf" --rados_namespace=basalt
                --data_dir=/data)
  if [ "$secure" = 1 ]; then
    "$here/make-certs.sh" "$dir/certs" --days 30 admin
    (umask 077; echo "basalt:$(openssl rand -hex 16)" > "$dir/zookeeper-identity")
    local c="$dir/certs"
    common+=(--tls_cert="$c/server.pem" --tls_key="$c/server.key" --tls_ca="$c/ca.pem" --auth=true
             --superusers=basalt-server,admin --zookeeper_auth_file="$dir/zookeeper-identity")
  fi
  local m
  for m in 1 2; do  # one after the other, so that master-1 is the active one
    "$master_bin" --name="master-$m" --listen=127.0.0.1:0 --http_listen=127.0.0.1:0 --port_file="$dir/master-$m.port" \
      --hbase_listen=127.0.0.1:0 "${common[@]}" \
      > "$dir/master-$m.log" 2>&1 &
    echo $! > "$dir/master-$m.pid"
    for _ in $(seq 300); do
      # The active one once it serves (its port file), a backup once it says so.
      if [ -s "$dir/master-$m.port" ] || grep -q "backup master" "$dir/master-$m.log" 2>/dev/null; then break; fi
      alive "$(cat "$dir/master-$m.pid")" || { echo "cluster: master-$m exited; see $dir/master-$m.log" >&2; exit 1; }
      sleep 0.1
    done
  done
  local s
  for s in $(seq 1 "$servers"); do
    "$server_bin" --cluster --listen=127.0.0.1:0 --http_listen=127.0.0.1:0 --port_file="$dir/server-$s.port" \
      --hbase_listen=127.0.0.1:0 "${common[@]}" \
      > "$dir/server-$s.log" 2>&1 &
    echo $! > "$dir/server-$s.pid"
  done
  for s in $(seq 1 "$servers"); do
    for _ in $(seq 300); do
      [ -s "$dir/server-$s.port" ] && break
      alive "$(cat "$dir/server-$s.pid")" || { echo "cluster: server-$s exited; see $dir/server-$s.log" >&2; exit 1; }
      sleep 0.1
    done
    [ -s "$dir/server-$s.port" ] || { echo "cluster: server-$s did not start within 30 s" >&2; exit 1; }
  done
  status
}

case $cmd in
  start) start ;;
  status) status ;;
  stop) stop ;;
  *) usage ;;
esac
