#!/usr/bin/env bash
# Runs a shell command inside a throwaway qemu (TCG) guest that has a soft-RoCE device, rxe0, on
# its only NIC (tests/rxe/README.md). The host's kernel has no RDMA driver, so this is how
# the verbs transport is tested for real.
#
#   tests/rxe/guest.sh --cache DIR [--bin PATH]... [--file SRC:DEST]... [--timeout SECONDS]
#                      [--mem MiB] [--mtu BYTES] -- 'shell command run in the guest'
#
#   --cache DIR      Where the Debian kernel (.deb, vmlinux, the modules this needs) and the base
#                    initramfs are kept; a warm run only packs the --bin/--file part again.
#   --bin PATH       Executable copied to /bin/<name> in the guest, with every library ldd names.
#   --file SRC:DEST  Any file copied to DEST (an absolute guest path), e.g. test data, or a binary
#                    put at the host path a test has compiled in.
#   --timeout S      Whole-run limit (default 300): qemu is killed and the run fails past it.
#   --mem MiB        Guest memory (default 1536); the initramfs lives in it.
#   --mtu BYTES      eth0's MTU (default 1500, which gives rxe0 an active MTU of 1024).
#   --uplink         A second NIC, eth1 = 10.0.3.15/24, on qemu's user network (default route
#                    10.0.3.2): the guest can open TCP connections to the host's addresses (not
#                    its loopback), e.g. to a ZooKeeper and a Ceph the host runs on its own IP.
#
# The guest: Debian 12's stock 6.1 kernel booted through qemu's PVH entry, a busybox initramfs,
# 2 vCPUs, a virtio-net NIC on an isolated qemu hub (without --uplink nothing leaves qemu),
# eth0 = 10.0.2.15/24, rxe0 on eth0 with its port ACTIVE. The command runs under busybox `sh -c`
# in /tmp (a tmpfs) with BASALT_RXE_ADDR=10.0.2.15 exported; ibv_devinfo, ibv_rc_pingpong,
# rping, rdma (iproute2) and, when installed, perftest's ib_* tools are in /bin. Use GID index 1
# (the IPv4-mapped RoCE v2 GID). The console is streamed to stdout; the run exits with the
# command's status (125 when the guest could not set up rxe0, 124 on timeout, 1 on a missing
# marker or a setup error on the host).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "guest.sh: $*" >&2; exit 1; }
usage() { sed -n '5,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

cache="" timeout=300 mem=1536 mtu=1500 cmd="" uplink=0
bins=() files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cache) cache=$2; shift 2 ;;
    --bin) bins+=("$2"); shift 2 ;;
    --file) files+=("$2"); shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --mtu) mtu=$2; shift 2 ;;
    --uplink) uplink=1; shift ;;
    --) shift; cmd="$*"; break ;;
    -h|--help) usage ;;
    *) echo "guest.sh: unknown argument: $1" >&2; usage ;;
  esac
done
[ -n "$cache" ] || { echo "guest.sh: --cache DIR is required" >&2; usage; }
[ -n "$cmd" ] || { echo "guest.sh: no guest command after --" >&2; usage; }

# Host tools. Each missing one is a setup error, reported as such (deploy/install-deps.sh has them).
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found (Debian package qemu-system-x86)"
for t in cpio depmod modprobe ldd xz dpkg apt-get apt-cache flock timeout ldconfig; do
  command -v "$t" >/dev/null || die "$t not found (see deploy/install-deps.sh)"
done
busybox=/bin/busybox
[ -x "$busybox" ] || die "$busybox not found (Debian package busybox-static)"
tools=()
for t in ibv_devinfo ibv_rc_pingpong rping rdma; do
  p=$(command -v "$t") || die "$t not found (Debian packages ibverbs-utils, rdmacm-utils, iproute2)"
  tools+=("$p")
done
for t in ib_send_lat ib_send_bw ib_write_lat ib_write_bw ib_read_lat; do  # perftest, optional
  if p=$(command -v "$t"); then tools+=("$p"); fi
done
provider=/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
[ -e "$provider" ] || die "$provider not found (Debian package ibverbs-providers)"
[ -e /etc/libibverbs.d/rxe.driver ] || die "/etc/libibverbs.d/rxe.driver not found (ibverbs-providers)"
# (awk reads to the end: quitting early would kill ldconfig with SIGPIPE, failing under pipefail)
libgcc=$(ldconfig -p | awk '$1 == "libgcc_s.so.1" && /x86-64/ && !p { p = $NF } END { print p }')
[ -n "$libgcc" ] || die "libgcc_s.so.1 not found"

mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
# One guest at a time per cache (and TCG wants both cores anyway): hold the lock to the end.
exec 9>"$cache/lock"
if ! flock -n 9; then
  echo "guest.sh: waiting for another guest run on $cache"
  flock 9
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/basalt-rxe.XXXXXX")
qpid=""
cleanup() {
  if [ -n "$qpid" ]; then kill "$qpid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Modules the guest loads, in this order, each with its dependencies first. crc32_generic is
# needed by rdma_rxe (for its ICRC) without being declared; rdma_ucm gives rdma_cm to user space.
want_modules=(crc32_generic virtio_pci virtio_net rdma_rxe ib_uverbs rdma_ucm)

# ---- Kernel: fetched once, kept in $cache/kernel -------------------------------------------------
kdir=$cache/kernel

# Decompresses a bzImage into the ELF vmlinux it carries: the boot header (boot protocol >= 2.08)
# gives the payload's offset and length after the real-mode setup sectors; its first bytes say
# which compressor made it.
extract_vmlinux() {
  local in=$1 out=$2 setup off len start magic
  [ "$(od -An -c -j $((0x202)) -N4 "$in" | tr -d ' ')" = HdrS ] || return 1
  setup=$(od -An -tu1 -j $((0x1f1)) -N1 "$in" | tr -d ' ')
  [ "$setup" != 0 ] || setup=4
  off=$(od -An -tu4 -j $((0x248)) -N4 "$in" | tr -d ' ')
  len=$(od -An -tu4 -j $((0x24c)) -N4 "$in" | tr -d ' ')
  start=$(((setup + 1) * 512 + off))
  magic=$(od -An -tx1 -j "$start" -N6 "$in" | tr -d ' \n')
  local dec
  case "$magic" in
    fd377a585a00) dec=(xz -dc --single-stream) ;;
    1f8b*) dec=(gzip -dc) ;;
    28b52ffd*) dec=(zstd -dcq) ;;
    425a68*) dec=(bzip2 -dc) ;;
    5d0000*) dec=(xz -dc --format=lzma) ;;
    02214c18*) dec=(lz4 -dc) ;;
    *) return 1 ;;
  esac
  # The payload ends with the decompressed size (4 bytes), which some tools call trailing garbage:
  # judge by the result, not the exit status.
  tail -c +$((start + 1)) "$in" | head -c "$len" | "${dec[@]}" >"$out" 2>/dev/null || true
  [ "$(od -An -tx1 -N4 "$out" | tr -d ' \n')" = 7f454c46 ]
}

prepare_kernel() {
  local stamp="modules: ${want_modules[*]}"
  if [ -f "$kdir/ready" ] && [ "$(cat "$kdir/ready")" = "$stamp" ]; then return; fi
  mkdir -p "$kdir"
  local deb
  deb=$(ls "$kdir"/linux-image-*.deb 2>/dev/null | tail -n 1 || true)
  if [ -z "$deb" ]; then
    # The newest 6.1 ABI: the one linux-image-amd64 depends on, else the highest one listed.
    local pkg
    find_pkg() {
      pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
            awk '/Depends: linux-image-6\.1\.0-[0-9]+-amd64$/ && !p { p = $2 } END { print p }')
      if [ -z "$pkg" ]; then
        pkg=$(apt-cache pkgnames linux-image-6.1.0- 2>/dev/null |
              grep -E '^linux-image-6\.1\.0-[0-9]+-amd64$' | sort -V | tail -n 1 || true)
      fi
    }
    find_pkg
    if [ -z "$pkg" ] && [ "$(id -u)" = 0 ]; then
      echo "guest.sh: no linux-image-6.1 package known to apt; running apt-get update"
      apt-get update -qq >/dev/null 2>&1 || true
      find_pkg
    fi
    [ -n "$pkg" ] || die "no Debian linux-image-6.1.0-*-amd64 package available from apt"
    echo "guest.sh: downloading $pkg (once, into $kdir)"
    local sandbox=()  # apt's _apt user cannot write into our private temporary directory
    if [ "$(id -u)" = 0 ]; then sandbox=(-o APT::Sandbox::User=root); fi
    (cd "$tmp" && apt-get download -q "${sandbox[@]}" "$pkg" >/dev/null) || die "apt-get download $pkg failed"
    deb=$(ls "$tmp"/linux-image-*.deb | head -n 1)
    mv "$deb" "$kdir/"
    deb=$kdir/$(basename "$deb")
  fi
  echo "guest.sh: unpacking $(basename "$deb")"
  local root=$tmp/kroot
  dpkg -x "$deb" "$root" || die "dpkg -x $deb failed"
  local mbase=$root
  [ -d "$root/lib/modules" ] || mbase=$root/usr
  local kver
  kver=$(ls "$mbase/lib/modules" | head -n 1)
  [ -n "$kver" ] && [ -f "$root/boot/vmlinuz-$kver" ] || die "$deb holds no kernel and modules"
  depmod -b "$mbase" "$kver" || die "depmod failed"
  rm -rf "$kdir/modules" && mkdir -p "$kdir/modules"
  local m line path name
  : >"$kdir/modules/order"
  for m in "${want_modules[@]}"; do
    modprobe -d "$mbase" -S "$kver" --show-depends "$m" >"$tmp/deps" || die "modprobe cannot resolve $m"
    while read -r line; do
      case "$line" in insmod\ *) ;; *) continue ;; esac  # "builtin x" needs nothing
      path=$(echo "$line" | awk '{ print $2 }')
      name=$(basename "$path"); name=${name%.xz}; name=${name%.zst}; name=${name%.gz}
      grep -qxF "$name" "$kdir/modules/order" && continue
      case "$path" in
        *.xz) xz -dc "$path" >"$kdir/modules/$name" ;;
        *.zst) zstd -dcq "$path" >"$kdir/modules/$name" ;;
        *.gz) gzip -dc "$path" >"$kdir/modules/$name" ;;
        *) cp "$path" "$kdir/modules/$name" ;;
      esac
      echo "$name" >>"$kdir/modules/order"
    done <"$tmp/deps"
  done
  cp "$root/boot/vmlinuz-$kver" "$kdir/vmlinuz"
  rm -f "$kdir/vmlinux" "$kdir/boot-vmlinuz"
  if ! extract_vmlinux "$kdir/vmlinuz" "$kdir/vmlinux"; then
    echo "guest.sh: could not decompress vmlinuz; booting it as it is"
    rm -f "$kdir/vmlinux"
  fi
  echo "$kver" >"$kdir/version"
  rm -rf "$root"
  echo "$stamp" >"$kdir/ready"
}
prepare_kernel
kver=$(cat "$kdir/version")

# ---- Initramfs ------------------------------------------------------------------------------------
# Guest path for a host library: the guest is merged-/usr (lib -> usr/lib, lib64 -> usr/lib64),
# so /lib/x and /usr/lib/x are stored once.
guest_path() {
  case "$1" in
    /lib/*|/lib64/*) echo "/usr$1" ;;
    *) echo "$1" ;;
  esac
}

# Libraries (absolute host paths) that an executable or library needs, as ldd resolves them.
libs_of() {
  local out
  if ! out=$(ldd "$1" 2>&1); then
    case "$out" in *"not a dynamic executable"*) return 0 ;; esac
    die "ldd $1 failed: $out"
  fi
  case "$out" in *"not found"*) die "$1 needs a library that is not installed: $out" ;; esac
  echo "$out" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
}

# The base initramfs (busybox, init, modules, rdma tools and their libraries) is the same for
# every run: packed once, repacked only when any of its inputs changes.
base_inputs() {
  local f
  {
    echo "kernel $kver"
    for f in "$busybox" "${tools[@]}" "$provider" "$libgcc"; do
      echo "$f"
      libs_of "$f"
    done
  } | sort -u
}
base_files=$(base_inputs)
base_key=$({
  sha256sum "$here/guest.sh" "$here/guest-init.sh" | awk '{ print $1 }'
  echo "$base_files" | while read -r f; do
    case "$f" in /*) stat -L -c '%n %s %Y' "$f" ;; *) echo "$f" ;; esac
  done
  cat "$kdir/modules/order"
} | sha256sum | awk '{ print $1 }')

if [ ! -f "$cache/base.cpio" ] || [ "$(cat "$cache/base.key" 2>/dev/null)" != "$base_key" ]; then
  echo "guest.sh: packing the base initramfs"
  b=$tmp/base
  mkdir -p "$b"/{bin,sbin,dev,proc,sys,tmp,root,etc/libibverbs.d,modules,basalt,usr/bin,usr/lib,usr/lib64}
  ln -s usr/lib "$b/lib"
  ln -s usr/lib64 "$b/lib64"
  cp "$busybox" "$b/bin/busybox"
  for a in $("$busybox" --list); do [ -e "$b/bin/$a" ] || ln -s busybox "$b/bin/$a"; done  # sh, ip, ...
  cp "$here/guest-init.sh" "$b/init"
  chmod 755 "$b/init"
  cp "$kdir/modules/"* "$b/modules/"
  cp /etc/libibverbs.d/rxe.driver "$b/etc/libibverbs.d/"
  for f in "${tools[@]}"; do rm -f "$b/bin/$(basename "$f")"; cp -L "$f" "$b/bin/"; done
  echo "$base_files" | while read -r f; do
    case "$f" in /*) ;; *) continue ;; esac
    case " ${tools[*]} $busybox " in *" $f "*) continue ;; esac
    g=$(guest_path "$f")
    mkdir -p "$b$(dirname "$g")"
    cp -L "$f" "$b$g"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$b/etc/passwd"
  printf 'root:x:0:\n' >"$b/etc/group"
  printf '127.0.0.1 localhost\n::1 localhost\n10.0.2.15 guest\n' >"$b/etc/hosts"
  printf 'passwd: files\ngroup: files\nhosts: files\n' >"$b/etc/nsswitch.conf"
  (cd "$b" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$tmp/base.cpio"
  (cd "$b" && find . -mindepth 1 ! -type d | sed 's/^\.//') >"$tmp/base.list"
  mv "$tmp/base.cpio" "$cache/base.cpio"
  mv "$tmp/base.list" "$cache/base.list"
  echo "$base_key" >"$cache/base.key"
  rm -rf "$b"
fi

# The per-run part: --bin, their libraries that the base lacks, --file, and the command. Staged
# as symlinks and dereferenced by cpio, so big binaries are read once, not copied twice.
x=$tmp/extra
mkdir -p "$x/bin" "$x/basalt"
declare -A have=()
while read -r f; do have[$f]=1; done <"$cache/base.list"
add() {  # add HOST_PATH GUEST_PATH
  local g=$2
  [ -e "$1" ] || die "no such file: $1"
  mkdir -p "$x$(dirname "$g")"
  ln -sf "$(readlink -f "$1")" "$x$g"
  have[$g]=1
}
for f in "${bins[@]}"; do
  [ -f "$f" ] && [ -x "$f" ] || die "--bin $f: not an executable file"
  add "$f" "/bin/$(basename "$f")"
  libs=$(libs_of "$f") || exit 1
  for l in $libs; do
    g=$(guest_path "$l")
    [ -n "${have[$g]:-}" ] || add "$l" "$g"
  done
done
for spec in "${files[@]}"; do
  src=${spec%%:*} dst=${spec#*:}
  [ "$src" != "$spec" ] && [ "${dst#/}" != "$dst" ] || die "--file $spec: want SRC:/ABSOLUTE/DEST"
  [ -f "$src" ] || die "--file $spec: $src is not a file"
  case "$dst" in
    /tmp/*) die "--file $spec: the guest mounts a tmpfs over /tmp, which would hide $dst" ;;
  esac
  add "$src" "$dst"
done
printf '%s\n' "$cmd" >"$x/basalt/cmd.sh"
echo "$mtu" >"$x/basalt/mtu"
if [ "$uplink" = 1 ]; then echo 10.0.3.15 >"$x/basalt/uplink"; fi
# Concatenated newc archives are one initramfs to the kernel; later entries win.
{
  cat "$cache/base.cpio"
  (cd "$x" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -L -R 0:0 --quiet)
} >"$tmp/initrd.cpio"

# ---- Boot -----------------------------------------------------------------------------------------
kernel=$kdir/vmlinux
if [ ! -f "$kernel" ] || [ -f "$kdir/boot-vmlinuz" ]; then kernel=$kdir/vmlinuz; fi
log=$tmp/console.log

uplink_nic=()
if [ "$uplink" = 1 ]; then
  uplink_nic=(-netdev user,id=n1,net=10.0.3.0/24,host=10.0.3.2 -device virtio-net-pci,netdev=n1,romfile=)
fi

boot() {  # boot KERNEL; sets rc
  local k=$1
  mkfifo "$tmp/out"
  sed -u -e 's/\r$//' -e '/warning: hub 0 is not connected to host network/d' <"$tmp/out" | tee "$log" &
  local teepid=$!
  timeout -k 5 "$timeout" qemu-system-x86_64 \
    -accel tcg,thread=multi -cpu max -smp 2 -m "$mem" \
    -display none -nodefaults -no-reboot -serial stdio -monitor none \
    -kernel "$k" -initrd "$tmp/initrd.cpio" \
    -append "console=ttyS0 quiet loglevel=3 panic=-1 mitigations=off rdinit=/init" \
    -netdev hubport,id=n0,hubid=0 -device virtio-net-pci,netdev=n0,romfile= "${uplink_nic[@]}" \
    </dev/null >"$tmp/out" 2>&1 &
  qpid=$!
  rc=0
  wait "$qpid" || rc=$?
  qpid=""
  wait "$teepid" || true
  rm -f "$tmp/out"
}

boot "$kernel"
if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$kernel" = "$kdir/vmlinux" ] && ! grep -q 'guest-init:' "$log"; then
  echo "guest.sh: qemu could not boot the ELF vmlinux (PVH entry); trying vmlinuz"
  boot "$kdir/vmlinuz"
  if grep -q 'guest-init:' "$log"; then touch "$kdir/boot-vmlinuz"; fi
fi

if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
  echo "guest.sh: TIMEOUT: the guest did not finish within $timeout s; qemu killed" >&2
  exit 124
fi
status=$(sed -n 's/^.*BASALT-GUEST-EXIT \([0-9]\{1,3\}\)$/\1/p' "$log" | tail -n 1)
if [ -z "$status" ]; then
  echo "guest.sh: the guest ended without its exit marker (qemu exit status $rc)" >&2
  exit 1
fi
exit "$status"
