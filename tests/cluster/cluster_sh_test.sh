#!/usr/bin/env bash
# deploy/cluster.sh as a developer uses it: start prints ZooKeeper's address first and every
# process; a shell that knows only ZooKeeper creates, writes and reads; so does the unmodified
# HBase client; status; a second cluster replicating both ways with it (a region server killed
# -9 mid-load); a third cluster started --secure; stop leaves nothing behind. Memstore and one
# OSD, to be quick.
# Usage: cluster_sh_test.sh REPO BUILD DIR ZK_PORT CEPH_PORT
set -euo pipefail
repo=$1 build=$2 dir=$3 zk=$4 ceph=$5
cluster="$repo/deploy/cluster.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$cluster" stop "$dir"  # what an interrupted run left
trap '"$cluster" stop "$dir"' EXIT

if "$cluster" start "$dir" --servers 0 --bin-dir "$build" 2> "$dir.err"; then fail "--servers 0 was accepted"; fi
grep -q "count of 1 or more" "$dir.err" || fail "--servers 0 refused without saying why: $(cat "$dir.err")"
rm -f "$dir.err"

out=$("$cluster" start "$dir" --servers 2 --store memstore --osds 1 --zk-port "$zk" --ceph-port "$ceph" --bin-dir "$build")
echo "$out"
[[ "$(echo "$out" | head -1)" == "zookeeper: 127.0.0.1:$zk pid "* ]] || fail "the first line is not ZooKeeper's address"
echo "$out" | grep -q "^master-1 127.0.0.1:[0-9]* pid [0-9]* (active)$" || fail "master-1, started first, is not the active master"
echo "$out" | grep -q "^master-2 pid [0-9]*$" || fail "no backup master-2"
echo "$out" | grep -q "^server-1 127.0.0.1:[0-9]* pid [0-9]*$" || fail "no server-1"
echo "$out" | grep -q "^server-2 127.0.0.1:[0-9]* pid [0-9]*$" || fail "no server-2"
echo "$out" | grep -q "^hbase clients: hbase.zookeeper.quorum=127.0.0.1:$zk zookeeper.znode.parent=/hbase$" ||
  fail "no line for HBase clients"
grep -q "HBase clients on 127.0.0.1:[0-9]*, published under /hbase" "$dir/master-1.log" ||
  fail "the active master did not publish its HBase port"

# The regions go to both servers; the shell knows only ZooKeeper.
got=$("$build/src/tools/shell/basalt" --zookeeper="127.0.0.1:$zk" --no-timing \
  -e "create 't', 'cf', SPLITS => ['m']; put 't', 'a1', 'cf:q', 'through zookeeper'; put 't', 'z1', 'cf:q', 'and the other server'; get 't', 'a1'; get 't', 'z1'; list_regions 't'; balancer; status 'detailed'")
echo "$got"
echo "$got" | grep -q "value=through zookeeper" || fail "the shell could not write and read through ZooKeeper"
echo "$got" | grep -q "value=and the other server" || fail "the second region's row was not read back"
for s in 1 2; do
  echo "$got" | grep -q "127.0.0.1:$(cat "$dir/server-$s.port") " || fail "server-$s holds no region of t"
  echo "$got" | grep -q "^    127.0.0.1:$(cat "$dir/server-$s.port"),[0-9]*: 1 region, " || fail "status 'detailed' does not show server-$s with its region"
done
echo "$got" | grep -q "^1 active master, 1 backup masters, 2 servers, 0 dead, 1.0000 average load$" || fail "status from the master"
"$cluster" status "$dir" > /dev/null || fail "status says a process is dead"

# The unmodified HBase client, given only hbase.zookeeper.quorum, runs its suite of Admin and
# Table calls (tests/hbase/java/ClientSuite.java; hbase_cluster_test.cc compares both views).
hbase_client="$build/tests/hbase/client"
java -Xmx512m --add-opens java.base/java.nio=ALL-UNNAMED -cp "$hbase_client/classes:$(cat "$hbase_client/classpath.txt")" \
  ClientSuite "zk:127.0.0.1:$zk@/hbase" "$dir/hb_keep.dump" 2 > "$dir/client-suite.log" 2>&1 ||
  fail "the HBase client's suite failed: $(grep -v '^SLF4J' "$dir/client-suite.log" | tail -20)"
grep -q "checks passed" "$dir/client-suite.log" || fail "the HBase client's suite did not finish"
# And its snapshot calls (tests/hbase/java/SnapshotSuite.java): taken by the regions' servers on
# RADOS, cloned, restored and deleted.
java -Xmx512m --add-opens java.base/java.nio=ALL-UNNAMED -cp "$hbase_client/classes:$(cat "$hbase_client/classpath.txt")" \
  SnapshotSuite "zk:127.0.0.1:$zk@/hbase" > "$dir/snapshot-suite.log" 2>&1 ||
  fail "the HBase client's snapshot suite failed: $(grep -v '^SLF4J' "$dir/snapshot-suite.log" | tail -20)"
grep -q "checks passed" "$dir/snapshot-suite.log" || fail "the HBase client's snapshot suite did not finish"

# A backup: a snapshot exported out of the cluster's RADOS pool to a directory, brought back in
# under another name (basalt-export-snapshot), and cloned: the rows as they were.
shell() { "$build/src/tools/shell/basalt" --zookeeper="127.0.0.1:$zk" --no-timing -e "$1"; }
shell "snapshot 't', 'bk'" > /dev/null || fail "snapshot of t"
store="rados:basalt/basalt:/data"
export_tool=("$build/src/tools/export/basalt-export-snapshot" --from_ceph_conf="$dir/ceph/ceph.conf" --to_ceph_conf="$dir/ceph/ceph.conf")
"${export_tool[@]}" --snapshot=bk --from="$store" --to="$dir/backup" || fail "export of bk to a directory"
"${export_tool[@]}" --snapshot=bk --from="$dir/backup" --to="$store" --target=bk-back | tee "$dir/import.out" ||
  fail "import of bk from the directory"
grep -q "copied 0 file(s), 0 bytes" "$dir/import.out" || fail "the import copied files the cluster holds"
got=$(shell "clone_snapshot 'bk-back', 't_back'; get 't_back', 'a1'; get 't_back', 'z1'")
echo "$got" | grep -q "value=through zookeeper" && echo "$got" | grep -q "value=and the other server" ||
  fail "the clone of the imported snapshot lacks t's rows: $got"

# Replication between two clusters (docs/DESIGN.md §15; issue 50): a second cluster B beside A,
# each the other's peer (active-active). YCSB's load is written on A by basalt-bench while one of
# A's region servers is killed with -9, and a few rows on B; then both hold the same rows, cell
# for cell (a digest of the whole table's scan), and B shipped only its own rows (no loop).
dirb="$dir-b" zkb=$((zk + 1)) cephb=$((ceph + 200)) records=60000
"$cluster" stop "$dirb"
trap '"$cluster" stop "$dir"; "$cluster" stop "$dirb"' EXIT
"$cluster" start "$dirb" --servers 1 --store memstore --osds 1 --zk-port "$zkb" --ceph-port "$cephb" \
  --bin-dir "$build" > /dev/null || fail "cluster B did not start"
shellb() { "$build/src/tools/shell/basalt" --zookeeper="127.0.0.1:$zkb" --no-timing -e "$1"; }
shell "create 'usertable', {NAME => 'f', REPLICATION_SCOPE => 1}, SPLITS => ['user5']" > /dev/null || fail "create on A"
shellb "create 'usertable', {NAME => 'f', REPLICATION_SCOPE => 1}" > /dev/null || fail "create on B"
shell "add_peer 'b', CLUSTER_KEY => '127.0.0.1:$zkb:/hbase'" > /dev/null || fail "add_peer on A"
shellb "add_peer 'a', CLUSTER_KEY => '127.0.0.1:$zk:/hbase'" > /dev/null || fail "add_peer on B"
"$build/src/tools/bench/basalt-bench" server load --zookeeper="127.0.0.1:$zk" --table=usertable \
  --records=$records --load_threads=4 > "$dir-b.load" 2>&1 &
load=$!
sleep 1
kill -0 "$load" 2> /dev/null || fail "the load on A ended before the kill: $(cat "$dir-b.load")"
kill -9 "$(cat "$dir/server-1.pid")"  # a source region server, mid-load
for i in 1 2 3 4 5; do shellb "put 'usertable', 'b-row-$i', 'f:q', 'written on b'" > /dev/null || fail "put on B"; done
wait "$load" || fail "the load on A failed: $(tail -5 "$dir-b.load")"
digest() { "$1" "scan 'usertable'" | grep -v "row(s)" | sha256sum | cut -d' ' -f1; }
for i in $(seq 120); do
  a=$(digest shell) b=$(digest shellb)
  [ "$a" = "$b" ] && break
  sleep 1
done
[ "$a" = "$b" ] || fail "A and B did not converge: $(shell "count 'usertable'") on A, $(shellb "count 'usertable'") on B"
rows=$(shell "count 'usertable'" | grep -o "^[0-9]* row(s)")
[ "$rows" = "$((records + 5)) row(s)" ] || fail "A holds $rows, not $((records + 5))"
statusb=$(shellb "status 'replication'")
echo "$statusb" | grep -q "PeerID=a, State=SHIPPING, .*ShippedEntries=5," || fail "B shipped other than its own 5 rows: $statusb"
echo "two clusters replicating to each other: $rows on both, digest $a; $(shell "status 'replication'" | grep SOURCE)"
"$cluster" stop "$dirb"

# --secure: TLS, client certificates, auth=true and a ZooKeeper identity on every daemon; the
# settings it prints are all Basalt's shell and HBase's client need, as admin.
dirc="$dir-c" zkc=$((zk + 2)) cephc=$((ceph + 400))
"$cluster" stop "$dirc"
trap '"$cluster" stop "$dir"; "$cluster" stop "$dirc"' EXIT
outc=$("$cluster" start "$dirc" --servers 1 --store memstore --osds 1 --zk-port "$zkc" --ceph-port "$cephc" \
  --bin-dir "$build" --secure) || fail "the secure cluster did not start"
echo "$outc"
basalt_flags=$(echo "$outc" | sed -n 's/^secure: basalt //p')
[ -n "$basalt_flags" ] || fail "no settings printed for Basalt's shell"
# shellcheck disable=SC2086  # (the printed flags, word by word)
got=$("$build/src/tools/shell/basalt" $basalt_flags --no-timing -e "create 's', 'cf'; put 's', 'r1', 'cf:q', 'secured'; get 's', 'r1'; whoami")
echo "$got" | grep -q "value=secured" || fail "the shell with the printed settings could not write and read: $got"
echo "$got" | grep -q "admin" || fail "the shell is not admin: $got"
if "$build/src/tools/shell/basalt" --zookeeper="127.0.0.1:$zkc" --no-timing --timeout=5 -e "list" > "$dirc.plain" 2>&1; then
  fail "a shell without TLS was served: $(cat "$dirc.plain")"
fi
rm -f "$dirc.plain"
hbase_settings=$(echo "$outc" | sed -n 's/^secure: hbase //p' | sed 's/ (as admin.*//')
jflags=(-DHADOOP_USER_NAME=admin)
for kv in $hbase_settings; do jflags+=("-D$kv"); done
java -Xmx512m --add-opens java.base/java.nio=ALL-UNNAMED -cp "$hbase_client/classes:$(cat "$hbase_client/classpath.txt")" \
  "${jflags[@]}" ReadProbe "zk:127.0.0.1:$zkc@/hbase" s 3 > "$dirc.probe" 2>&1 || true
grep -q "ALL 3 READ" "$dirc.probe" || fail "HBase's client with the printed settings could not read: $(grep -v '^SLF4J' "$dirc.probe" | tail -5)"
rm -f "$dirc.probe"
echo "secure cluster: the shell and HBase's client, as admin, with the settings it printed"
"$cluster" stop "$dirc"
trap '"$cluster" stop "$dir"' EXIT

pids=$(cat "$dir"/*.pid "$dir"/ceph/*.pid "$dir"/zookeeper/pid)
"$cluster" stop "$dir"
trap - EXIT
[ ! -e "$dir" ] || fail "stop left $dir"
for p in $pids; do
  if [ -e "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat")" != Z ]; then fail "stop left pid $p running"; fi
done
echo "cluster.sh: OK"
