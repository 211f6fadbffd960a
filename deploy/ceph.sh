#!/usr/bin/env bash
# A private, throw-away Ceph cluster on loopback for development and tests (1 monitor, N OSDs,
# no manager, no authentication), all under one directory. Debian 12's ceph-mon and ceph-osd;
# no systemd. The recipe and its figures: docs/ceph-on-one-machine.md.
#
#   deploy/ceph.sh start DIR [--osds N] [--store memstore|bluestore] [--port P] [--pool NAME]
#                            [--addr IP]     # the daemons' address (default 127.0.0.1)
#   deploy/ceph.sh status DIR
#   deploy/ceph.sh stop DIR          # SIGKILL every daemon, then remove DIR
#
# `start` returns once the pool takes writes in every placement group, and prints the client
# configuration file (DIR/ceph.conf), the monitor's address and each daemon's pid. memstore
# keeps data only while the OSDs live (kill -9 loses it); bluestore keeps it in sparse files.
set -euo pipefail

usage() { echo "usage: $0 start|status|stop DIR [--osds N] [--store memstore|bluestore] [--port P] [--pool NAME] [--addr IP]" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 dir=$2; shift 2
osds=1 store=memstore port=6800 pool=basalt addr=127.0.0.1
while [ $# -gt 0 ]; do
  case $1 in
    --osds) osds=$2; shift 2 ;;
    --store) store=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --pool) pool=$2; shift 2 ;;
    --addr) addr=$2; shift 2 ;;
    *) usage ;;
  esac
done
PY=/usr/bin/python3   # Debian's, which has the rados module (not a pyenv one on PATH)

pids_of() { cat "$dir"/*.pid 2>/dev/null || true; }

. "$(dirname "$0")/lib.sh"  # alive

status() {
  [ -f "$dir/ceph.conf" ] || { echo "ceph: no cluster in $dir"; return 1; }
  echo "ceph: conf $dir/ceph.conf mon v2:$(cat "$dir/addr" 2>/dev/null || echo 127.0.0.1):$(cat "$dir/port") pool $(cat "$dir/pool")"
  local f p rc=0
  for f in "$dir"/*.pid; do
    [ -e "$f" ] || continue
    p=$(cat "$f")
    if alive "$p"; then echo "ceph: $(basename "$f" .pid) pid $p"; else echo "ceph: $(basename "$f" .pid) pid $p DEAD"; rc=1; fi
  done
  return $rc
}

stop() {
  local p
  for p in $(pids_of); do  # only our daemons: a pid left by an earlier boot may be another's now
    grep -qa -e ceph-mon -e ceph-osd "/proc/$p/cmdline" 2>/dev/null && kill -9 "$p" 2>/dev/null || true
  done
  for p in $(pids_of); do
    for _ in $(seq 100); do alive "$p" || break; sleep 0.05; done
  done
  rm -rf "$dir"
}

start() {
  if [ -f "$dir/ceph.conf" ]; then echo "ceph: $dir already holds a cluster; stop it first" >&2; exit 1; fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  echo "$port" > "$dir/port"; echo "$pool" > "$dir/pool"; echo "$addr" > "$dir/addr"
  local fsid; fsid=$(cat /proc/sys/kernel/random/uuid)
  cat > "$dir/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = v2:$addr:$port
ms bind msgr1 = false
public addr = $addr
cluster addr = $addr
ms bind port min = $((port + 1))
ms bind port max = $((port + 99))
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = false
run dir = $dir
log file = $dir/\$name.log
pid file = $dir/\$name.pid
osd pool default size = 1
osd pool default min size = 1
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon mgr mkfs grace = 31536000
paxos propose interval = 0.1
osd objectstore = $store
osd fast shutdown = false
osd recovery sleep = 0
osd recovery sleep hdd = 0
osd recovery sleep ssd = 0
osd recovery sleep hybrid = 0
bluestore block size = 2147483648
bluestore fsck on mount = false
osd max object size = 134217728
[mon]
mon data = $dir/mon.\$id
admin socket = $dir/\$name.asok
[osd]
osd data = $dir/osd.\$id
admin socket = $dir/\$name.asok
[client]
admin socket =
log file = /dev/null
EOF
  export CEPH_CONF=$dir/ceph.conf
  local i uuids=()
  for i in $(seq 0 $((osds - 1))); do uuids+=("$(cat /proc/sys/kernel/random/uuid)"); done
  # OSD file systems need no monitor: make them while the monitor comes up.
  local mkfs=()
  for i in $(seq 0 $((osds - 1))); do
    mkdir -p "$dir/osd.$i"
    ceph-osd -i "$i" --mkfs --osd-uuid "${uuids[$i]}" --no-mon-config > "$dir/osd.$i.mkfs.log" 2>&1 &
    mkfs+=($!)
  done
  monmaptool --create --fsid "$fsid" --addv a "[v2:$addr:$port]" --enable-all-features \
    --set-min-mon-release pacific "$dir/monmap" > /dev/null
  ceph-authtool --create-keyring "$dir/mon.keyring" --gen-key -n mon. > /dev/null
  mkdir -p "$dir/mon.a"
  ceph-mon --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/mon.keyring"
  ceph-mon -i a
  local p
  for p in "${mkfs[@]}"; do
    wait "$p" || { echo "ceph: osd mkfs failed, see $dir/osd.*.mkfs.log" >&2; exit 1; }
  done
  # One python process for every monitor command (each `ceph` CLI call costs ~0.3 s).
  "$PY" - "$dir" "$pool" "${uuids[@]}" <<'EOF'
import json, sys, time, rados
d, pool, uuids = sys.argv[1], sys.argv[2], sys.argv[3:]
c = rados.Rados(conffile=d + "/ceph.conf")
deadline = time.time() + 30
while True:
    try:
        c.connect(timeout=5); break
    except Exception:
        if time.time() > deadline: raise
        time.sleep(0.1)
def mon(**cmd):
    r, out, err = c.mon_command(json.dumps(cmd), b"")
    if r != 0: sys.exit("ceph: %s: %s" % (cmd["prefix"], err))
    return out
for i, u in enumerate(uuids):
    mon(prefix="osd new", uuid=u, id=i)
open(d + "/osds-registered", "w").close()
EOF
  for i in $(seq 0 $((osds - 1))); do ceph-osd -i "$i" 2>> "$dir/osd.$i.log"; done
  "$PY" - "$dir" "$pool" "$osds" <<'EOF'
import json, sys, time, rados
d, pool, osds = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = rados.Rados(conffile=d + "/ceph.conf")
c.connect(timeout=30)
def mon(**cmd):
    r, out, err = c.mon_command(json.dumps(cmd), b"")
    if r != 0: sys.exit("ceph: %s: %s" % (cmd["prefix"], err))
    return out
pgs = 8
mon(prefix="osd pool create", pool=pool, pg_num=pgs, pgp_num=pgs)
if osds > 1:
    mon(prefix="osd pool set", pool=pool, var="size", val=str(min(osds, 3)))
    mon(prefix="osd pool set", pool=pool, var="min_size", val="2")
mon(prefix="osd pool application enable", pool=pool, app="basalt")
# Readiness: a write blocks until its placement group is active, so write one object into
# every placement group (found with `osd map`).
io = c.open_ioctx(pool)
io.set_namespace("ceph.sh-ready")
seen, n = set(), 0
deadline = time.time() + 60
while len(seen) < pgs:
    name = "ready-%d" % n; n += 1
    m = json.loads(mon(prefix="osd map", pool=pool, object=name, format="json"))
    if m["pgid"] in seen: continue
    seen.add(m["pgid"])
    io.write_full(name, b"ok")
    if time.time() > deadline: sys.exit("ceph: placement groups not active after 60 s")
for i in range(n): 
    try: io.remove_object("ready-%d" % i)
    except rados.ObjectNotFound: pass
io.close(); c.shutdown()
EOF
  status
}

case $cmd in
  start) start ;;
  status) status ;;
  stop) stop ;;
  *) usage ;;
esac
