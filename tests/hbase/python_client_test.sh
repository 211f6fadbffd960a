#!/usr/bin/env bash
# A second, non-Java client against the HBase port (issue 38): the pure-Python hbase-driver
# 1.1.1 (PyPI, Apache-2.0; not packaged by Debian, and gohbase is not served by the Go proxy
# these machines reach), unmodified, finding the server through the records it published in the
# tests' ZooKeeper (src/front/hbase/hbase_zk.h). python_client.py does the calls and the checks.
#
# Usage: python_client_test.sh SERVER_BINARY OUT_DIR
# Environment: BASALT_TEST_SERVICES (the tests' ZooKeeper, tests/services/).
# Debian's Python (/usr/bin/python3, with python3-kazoo and python3-protobuf), whatever else is on PATH.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=$1
out=$2
mkdir -p "$out"
zk_port=$(cat "${BASALT_TEST_SERVICES:?run through ctest: it starts the tests\' ZooKeeper}/zookeeper/port")
wheel=$(ls "$out"/hbase_driver-1.1.1-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$wheel" ]; then
  /usr/bin/python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$out" hbase-driver==1.1.1 >"$out/pip.log" 2>&1 || {
    echo "python_client_test: pip could not fetch hbase-driver 1.1.1 from PyPI:" >&2
    tail -n 20 "$out/pip.log" >&2
    exit 1
  }
  wheel=$(ls "$out"/hbase_driver-1.1.1-*.whl | head -n 1)
fi
data=$(mktemp -d "$out/run.XXXXXX")
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$data"' EXIT
# The library reads /hbase (mostly fixed in its code); this is the only test publishing there.
"$server" --data_dir="$data/data" --listen=127.0.0.1:0 --http_listen=off --hbase_listen=127.0.0.1:0 \
  --hbase_port_file="$data/hbase.port" --hbase_zookeeper_quorum=127.0.0.1:"$zk_port" --hbase_znode_parent=/hbase \
  >"$out/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  [ -s "$data/hbase.port" ] && grep -q "published in ZooKeeper" "$out/server.log" && break
  sleep 0.1
done
grep -q "published in ZooKeeper" "$out/server.log" || { cat "$out/server.log" >&2; exit 1; }
PYTHONPATH="$wheel" timeout 120 /usr/bin/python3 "$here/python_client.py" 127.0.0.1:"$zk_port"
