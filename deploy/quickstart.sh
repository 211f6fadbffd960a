#!/usr/bin/env bash
# Standalone quickstart (the README's first command runs it after the build): starts a
# standalone basalt-server in the background on 127.0.0.1:16020 with its data in
# $BASALT_QUICKSTART_DIR (default /tmp/basalt-quickstart), then runs a short shell session
# against it. The server keeps running; stop it with:  kill "$(cat /tmp/basalt-quickstart/server.pid)"
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BASALT_BUILD_DIR:-build}
DIR=${BASALT_QUICKSTART_DIR:-/tmp/basalt-quickstart}
ADDR=127.0.0.1:16020
SERVER=$BUILD/src/server/basalt-server
SHELL_BIN=$BUILD/src/tools/shell/basalt
for b in "$SERVER" "$SHELL_BIN"; do
  [ -x "$b" ] || { echo "quickstart: $b is not built (run: cmake --build $BUILD)" >&2; exit 1; }
done

# A server left running by an earlier quickstart is stopped first (SIGTERM: a clean shutdown).
if [ -f "$DIR/server.pid" ] && kill -0 "$(cat "$DIR/server.pid")" 2>/dev/null; then
  kill "$(cat "$DIR/server.pid")"
  while kill -0 "$(cat "$DIR/server.pid")" 2>/dev/null; do sleep 0.1; done
fi
rm -rf "$DIR"
mkdir -p "$DIR"
nohup "$SERVER" --data_dir="$DIR/data" --listen="$ADDR" --port_file="$DIR/port" </dev/null >"$DIR/server.log" 2>&1 &
echo $! >"$DIR/server.pid"
for _ in $(seq 1 300); do
  [ -s "$DIR/port" ] && break
  kill -0 "$(cat "$DIR/server.pid")" 2>/dev/null || { echo "quickstart: the server did not start:" >&2; cat "$DIR/server.log" >&2; exit 1; }
  sleep 0.1
done
[ -s "$DIR/port" ] || { echo "quickstart: the server did not start listening within 30 s" >&2; exit 1; }
grep -m 1 " listening on " "$DIR/server.log"  # not head -n 1: the verbs state line comes first

"$SHELL_BIN" --server="$ADDR" -e "
create 'users', {NAME => 'info', VERSIONS => 3, DATA_BLOCK_ENCODING => 'FAST_DIFF', COMPRESSION => 'SNAPPY'}
put 'users', 'alice', 'info:email', 'alice@example.com'
put 'users', 'alice', 'info:city', 'Lisbon'
put 'users', 'bob', 'info:email', 'bob@example.com'
put 'users', 'alice', 'info:city', 'Porto'
get 'users', 'alice', {COLUMN => 'info:city', VERSIONS => 3}
scan 'users'
incr 'users', 'alice', 'info:logins', 1
incr 'users', 'alice', 'info:logins', 1
delete 'users', 'bob', 'info:email'
count 'users'
flush 'users'
describe 'users'
create 'events', 'd', SPLITS => ['g', 'n']
list_regions 'events'
"
echo
echo "quickstart OK: basalt-server is still running on $ADDR (pid $(cat "$DIR/server.pid"), data in $DIR/data)."
echo "  shell:  $SHELL_BIN --server=$ADDR"
echo "  stop:   kill \$(cat $DIR/server.pid)"
