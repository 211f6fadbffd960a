#!/bin/sh
# /init of the soft-RoCE test guest (busybox sh; put there by guest.sh, which documents it).
# Brings up eth0 and rxe0, runs /basalt/cmd.sh with `sh -c` in /tmp, prints the exit marker and
# powers off. Everything goes to the serial console, which guest.sh streams and parses.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export HOME=/root
export BASALT_RXE_ADDR=10.0.2.15

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmp /tmp
mount -t tmpfs shm /dev/shm
echo "guest-init: Linux $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo) MiB"

finish() {
  echo "BASALT-GUEST-EXIT $1"
  sync
  poweroff -f
  sleep 60
}

fail() {
  echo "guest-init: $*"
  finish 125
}

while read -r m; do
  insmod "/modules/$m" || fail "insmod $m failed"
done </modules/order

ip link set lo up
[ -e /sys/class/net/eth0 ] || fail "no eth0 (virtio_net did not probe)"
# Without this, the link-local IPv6 address (and so GID 0) stays tentative.
echo 0 >/proc/sys/net/ipv6/conf/eth0/accept_dad
echo 0 >/proc/sys/net/ipv6/conf/default/accept_dad
ip link set eth0 mtu "$(cat /basalt/mtu 2>/dev/null || echo 1500)"
ip addr add "$BASALT_RXE_ADDR/24" dev eth0
ip link set eth0 up
rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0 failed"

i=0
until ibv_devinfo -d rxe0 2>/dev/null | grep -q PORT_ACTIVE; do
  i=$((i + 1))
  [ "$i" -le 300 ] || { ibv_devinfo -v; rdma link; fail "rxe0 port never became active"; }
  sleep 0.1
done
# GID 1 (the IPv4-mapped RoCE v2 GID) is what the tests use; wait for it too.
i=0
until grep -q :ffff: /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null; do
  i=$((i + 1))
  [ "$i" -le 300 ] || { cat /sys/class/infiniband/rxe0/ports/1/gids/*; fail "rxe0 GID 1 never appeared"; }
  sleep 0.1
done
echo "guest-init: rxe0 active on eth0 $BASALT_RXE_ADDR"
if [ -f /basalt/uplink ]; then  # guest.sh --uplink: eth1 on qemu's user network, to the host
  [ -e /sys/class/net/eth1 ] || fail "no eth1 for --uplink"
  ip addr add "$(cat /basalt/uplink)/24" dev eth1
  ip link set eth1 up
  ip route add default via 10.0.3.2 dev eth1
  echo "guest-init: eth1 $(cat /basalt/uplink), default route to the host"
fi

ulimit -l unlimited 2>/dev/null || true
cd /tmp
status=0
sh -c "$(cat /basalt/cmd.sh)" </dev/null || status=$?
finish "$status"
