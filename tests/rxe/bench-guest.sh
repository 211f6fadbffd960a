#!/bin/sh
# Runs inside the soft-RoCE guest (busybox sh; see run-bench.sh): one basalt-server with verbs on
# rxe0, then basalt-bench over gRPC and over verbs side by side in the same boot — latency of
# Put/Get for 1 B … 64 KiB, then YCSB C with 1, 4 and 16 threads, then YCSB C from one thread
# with 32 async Gets in flight. The transports alternate (grpc, verbs, grpc, verbs) so drift
# shows. Environment: BENCH_OPS (latency ops per size), BENCH_RECORDS (YCSB records),
# BENCH_SECONDS (YCSB seconds per thread count), BENCH_PARTS (default "latency ycsb async").
set -eu
addr=${BASALT_RXE_ADDR:?}
ops=${BENCH_OPS:-2000}
records=${BENCH_RECORDS:-10000}
secs=${BENCH_SECONDS:-5}
parts=${BENCH_PARTS:-latency ycsb async}
has() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }

basalt-server --data_dir=/tmp/bench-data --listen=127.0.0.1:16020 --port_file=/tmp/bench.port --enable_echo=true \
  --rdma=on --rdma_listen="$addr:0" >/tmp/server.log 2>&1 &
srv=$!
i=0
until [ -s /tmp/bench.port ]; do
  i=$((i + 1))
  if [ "$i" -gt 600 ] || ! kill -0 "$srv" 2>/dev/null; then echo "bench: server did not start"; cat /tmp/server.log; exit 1; fi
  sleep 0.1
done
cat /tmp/server.log
nproc
server=127.0.0.1:16020
sizes=1,100,1024,4096,16384,65536

for round in 1 2; do
  has latency || break
  for t in grpc verbs; do
    echo "=== latency round $round, --transport=$t"
    basalt-bench server latency --server=$server --transport=$t --sizes=$sizes --ops="$ops" \
      --warmup=200 --rounds=4 --no_floor
  done
done

echo "=== ycsb load"
basalt-bench server load --server=$server --records="$records" --durability=ASYNC_WAL
for t in grpc verbs grpc verbs; do
  has ycsb || break
  echo "=== ycsb C --transport=$t"
  basalt-bench server ycsb --server=$server --transport=$t --workload=C --records="$records" --skip_load \
    --threads=1,4,16 --seconds="$secs" --warmup_seconds=1
done
# The client's busy-poll before it sleeps: 16 spinning callers on 2 vCPUs crowd each other out.
if has ycsb; then
  echo "=== ycsb C --transport=verbs --verbs_spin_us=0"
  basalt-bench server ycsb --server=$server --transport=verbs --verbs_spin_us=0 --workload=C --records="$records" \
    --skip_load --threads=1,4,16 --seconds="$secs" --warmup_seconds=1
fi
# One thread, 32 async Gets in flight (Table::GetAsync): over gRPC; over verbs on 4 async
# endpoints of 8 credits each, with and without the client's busy-poll; on 32 endpoints of one
# credit each (as before credits); and over verbs as before the async endpoints
# (--verbs_async_endpoints=0: blocking calls on 2 threads).
for round in 1 2; do
  has async || break
  for t in grpc "verbs --verbs_async_endpoints=4" "verbs --verbs_async_endpoints=4 --verbs_spin_us=0" \
    "verbs --verbs_async_endpoints=32 --verbs_async_credits=1" "verbs --verbs_async_endpoints=0"; do
    echo "=== ycsb C --async_window=32 --transport=$t"
    # shellcheck disable=SC2086 # $t is the transport and its flags
    basalt-bench server ycsb --server=$server --transport=$t --workload=C --records="$records" --skip_load \
      --threads=1 --async_window=32 --seconds="$secs" --warmup_seconds=1
  done
done
echo "=== server status"
kill -TERM "$srv"
wait "$srv" || true
tail -n 3 /tmp/server.log
