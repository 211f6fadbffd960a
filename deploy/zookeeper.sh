#!/usr/bin/env bash
# A private, throw-away ZooKeeper server on loopback for development and tests (Debian 12's
# zookeeper package: one standalone ZooKeeperServerMain, tick 100 ms so sessions may time out in
# as little as 200 ms), all under one directory.
#
#   deploy/zookeeper.sh start DIR [--port P] [--addr IP]   # returns once the server answers ruok
#                                   # --addr: the address it listens on (default 127.0.0.1)
#   deploy/zookeeper.sh status DIR
#   deploy/zookeeper.sh stop DIR                # SIGKILL it, then remove DIR
set -euo pipefail

usage() { echo "usage: $0 start|status|stop DIR [--port P] [--addr IP]" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 dir=$2; shift 2
port=2181 addr=127.0.0.1
while [ $# -gt 0 ]; do
  case $1 in
    --port) port=$2; shift 2 ;;
    --addr) addr=$2; shift 2 ;;
    *) usage ;;
  esac
done

. "$(dirname "$0")/lib.sh"  # alive

ruok() {  # ZooKeeper's four-letter health check: ruok ADDR PORT
  local out
  out=$(timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2 && printf ruok >&3 && cat <&3" 2>/dev/null) || return 1
  [ "$out" = imok ]
}

status() {
  [ -f "$dir/zoo.cfg" ] || { echo "zookeeper: no server in $dir"; return 1; }
  local p; p=$(cat "$dir/pid")
  local port; port=$(cat "$dir/port")
  local at; at=$(cat "$dir/addr" 2>/dev/null || echo 127.0.0.1)
  if alive "$p" && ruok "$at" "$port"; then
    echo "zookeeper: $at:$port pid $p"
  else
    echo "zookeeper: $at:$port pid $p DEAD"; return 1
  fi
}

stop() {
  if [ -f "$dir/pid" ]; then
    local p; p=$(cat "$dir/pid")
    if grep -qa ZooKeeperServerMain "/proc/$p/cmdline" 2>/dev/null; then
      kill -9 "$p" 2>/dev/null || true
      for _ in $(seq 100); do alive "$p" || break; sleep 0.05; done
    fi
  fi
  rm -rf "$dir"
}

start() {
  if [ -f "$dir/zoo.cfg" ]; then echo "zookeeper: $dir already holds a server; stop it first" >&2; exit 1; fi
  mkdir -p "$dir/data"
  dir=$(cd "$dir" && pwd)
  echo "$port" > "$dir/port"; echo "$addr" > "$dir/addr"
  cat > "$dir/zoo.cfg" <<EOF
tickTime=100
dataDir=$dir/data
clientPort=$port
clientPortAddress=$addr
minSessionTimeout=200
maxSessionTimeout=60000
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat
EOF
  # The jar's manifest names the libraries it needs; logging goes nowhere (no slf4j binding).
  java -Xmx256m -XX:+UseSerialGC -Dzookeeper.admin.enableServer=false \
    -cp /usr/share/java/zookeeper.jar org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
    > "$dir/server.log" 2>&1 < /dev/null &
  echo $! > "$dir/pid"
  local p; p=$(cat "$dir/pid")
  for _ in $(seq 300); do
    if ruok "$addr" "$port"; then status; return 0; fi
    alive "$p" || { echo "zookeeper: exited; see $dir/server.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "zookeeper: not answering after 30 s; see $dir/server.log" >&2
  exit 1
}

case $cmd in
  start) start ;;
  status) status ;;
  stop) stop ;;
  *) usage ;;
esac
