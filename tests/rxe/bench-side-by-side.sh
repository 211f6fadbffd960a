#!/bin/sh
# Runs inside the soft-RoCE guest (busybox sh): builds of the server and basalt-bench side by
# side in one boot, each server started afresh and loaded with the same records, alternating
# round by round so that drift hits every side. Per side and round: YCSB C over verbs with 16
# threads, then one thread with 32 async Gets in flight; on the side "new" also both over gRPC
# (the ratio's denominator). Side "new" is basalt-server and basalt-bench on the PATH (the
# build under test); any other side S is /basalt/basalt-server-S and /basalt/basalt-bench-S,
# passed with guest.sh --file. Environment: SIDES (default "old new"), ROUNDS (3), RECORDS
# (5000), SECONDS_PER_RUN (5), ASYNC_<side> (the async run's endpoint flags; default
# "--verbs_async_endpoints=4": 4 x 8 credits = 32 in flight).
#
#   tests/rxe/guest.sh --cache build/rxe-cache --timeout 2300 --bin build/src/server/basalt-server \
#     --bin build/src/tools/bench/basalt-bench \
#     --file OLD/build/src/server/basalt-server:/basalt/basalt-server-old \
#     --file OLD/build/src/tools/bench/basalt-bench:/basalt/basalt-bench-old \
#     --file tests/rxe/bench-side-by-side.sh:/basalt/side.sh -- "SIDES='old new' sh /basalt/side.sh"
set -u
addr=${BASALT_RXE_ADDR:?}
sides=${SIDES:-old new}
rounds=${ROUNDS:-3}
records=${RECORDS:-5000}
secs=${SECONDS_PER_RUN:-5}
server=127.0.0.1:16020

ycsb() {
  echo "=== $1"
  shift
  # shellcheck disable=SC2068 # the flags are words
  $@ --server=$server --workload=C --records="$records" --skip_load --seconds="$secs" --warmup_seconds=1 2>&1 |
    tr '\r' '\n' | grep -v '^\[\|^\*'
}

run_side() {
  side=$1
  if [ "$side" = new ]; then srv=basalt-server bench=basalt-bench; else srv=/basalt/basalt-server-$side bench=/basalt/basalt-bench-$side; fi
  async=$(eval "echo \${ASYNC_$side:---verbs_async_endpoints=4}")
  rm -rf /tmp/side-data /tmp/side.port
  $srv --data_dir=/tmp/side-data --listen=$server --port_file=/tmp/side.port --rdma=on --rdma_listen="$addr:0" \
    >/tmp/side.log 2>&1 &
  pid=$!
  i=0
  until [ -s /tmp/side.port ]; do
    i=$((i + 1))
    if [ "$i" -gt 600 ] || ! kill -0 "$pid" 2>/dev/null; then echo "side $side: server did not start"; cat /tmp/side.log; return; fi
    sleep 0.1
  done
  $bench server load --server=$server --records="$records" --durability=ASYNC_WAL >/dev/null 2>&1
  ycsb "$side verbs x16" "$bench" server ycsb --transport=verbs --threads=16
  ycsb "$side verbs async32 $async" "$bench" server ycsb --transport=verbs $async --threads=1 --async_window=32
  if [ "$side" = new ]; then
    ycsb "grpc async32" "$bench" server ycsb --transport=grpc --threads=1 --async_window=32
    ycsb "grpc x16" "$bench" server ycsb --transport=grpc --threads=16
  fi
  kill -TERM "$pid"
  wait "$pid"
}

r=1
while [ "$r" -le "$rounds" ]; do
  for s in $sides; do run_side "$s"; done
  r=$((r + 1))
done
