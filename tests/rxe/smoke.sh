#!/bin/sh
# Soft-RoCE smoke test, run inside the guest by guest.sh (busybox sh): proves that rxe0 does RC
# verbs (ibv_rc_pingpong, GID index 1) and that rdma_cm connects (rping), both over the guest's
# own address, the way Basalt's verbs transport will use it.
set -eu
addr=${BASALT_RXE_ADDR:?}

step() { echo "--- smoke: $*"; }

# Polls (up to $1 tenths of a second) until the command in "$2..." succeeds.
poll() {
  n=$1; shift
  i=0
  until "$@" >/dev/null 2>&1; do
    i=$((i + 1))
    if [ "$i" -gt "$n" ]; then echo "smoke: timed out waiting for: $*"; return 1; fi
    sleep 0.1
  done
}

# Reports a background server's failure with its log.
reap() {  # reap PID LOG NAME
  if ! wait "$1"; then
    echo "smoke: $3 server failed:"; cat "$2"; exit 1
  fi
  cat "$2"
}

step "ibv_devinfo -d rxe0"
ibv_devinfo -d rxe0
echo "GID 1: $(cat /sys/class/infiniband/rxe0/ports/1/gids/1)"

step "ibv_rc_pingpong (RC send/recv, GID index 1)"
timeout 120 ibv_rc_pingpong -d rxe0 -g 1 -n 200 >/tmp/pp-server.log 2>&1 &
srv=$!
poll 600 sh -c 'netstat -ltn | grep -q ":18515 "'
timeout 120 ibv_rc_pingpong -d rxe0 -g 1 -n 200 "$addr"
echo "(server)"
reap "$srv" /tmp/pp-server.log ibv_rc_pingpong

step "rping (rdma_cm connect, RDMA read/write, 10 iterations)"
timeout 120 rping -s -a "$addr" -C 10 -v >/tmp/rping-server.log 2>&1 &
srv=$!
poll 600 sh -c 'rdma resource show cm_id | grep -q LISTEN'
timeout 120 rping -c -a "$addr" -C 10 -v
echo "(server)"
reap "$srv" /tmp/rping-server.log rping

step "passed"
