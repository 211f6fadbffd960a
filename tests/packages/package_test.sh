#!/usr/bin/env bash
# The Debian packages, installed as a user installs them (docs/DESIGN.md §11):
#   1. cpack makes basalt-server_*.deb and libbasalt-client-dev_*.deb from BUILD_DIR (configured
#      with -DCMAKE_INSTALL_PREFIX=/usr, as tests/run-tests.sh configures it);
#   2. a fresh Debian 12 (debootstrap --variant=minbase bookworm) installs them with
#      `apt-get install ./basalt-server_*.deb ./libbasalt-client-dev_*.deb`, apt fetching what they
#      depend on from Debian;
#   3. the installed units pass `systemd-analyze verify` there, without a word;
#   4. the server starts from the installed unit's ExecStart line, as the unit's User, with the
#      installed /etc/basalt/basalt.conf (only its listen ports changed, as an operator edits it),
#      and says READY=1 to a notify socket as systemd would see it;
#   5. the installed shell creates a table, writes and reads;
#   6. a tiny program built in the chroot against the installed libbasalt-client-dev with
#      find_package(Basalt) and Basalt::client does a Put and a Get;
#   7. SIGTERM stops the server cleanly (exit 0).
# Usage: package_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
# Exits 0 when all hold, 1 naming the step that failed, 77 (skipped) when it cannot run here: not
# root, no debootstrap, or Debian's mirror out of reach.
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
work=$3
mirror=${BASALT_DEBIAN_MIRROR:-http://deb.debian.org/debian}

skip() { echo "package_test: skipped: $*"; exit 77; }
fail() { echo "package_test: FAILED: $*" >&2; exit 1; }
step() { echo "package_test: $*"; }
[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, chroot)"
command -v debootstrap > /dev/null || skip "no debootstrap (deploy/install-deps.sh installs it)"
grep -q '^CMAKE_INSTALL_PREFIX:PATH=/usr$' "$build/CMakeCache.txt" ||
  fail "$build is not configured with -DCMAKE_INSTALL_PREFIX=/usr (no package rules there)"

root="$work/root"
server_pid=""
# Only /proc is mounted in the chroot (debootstrap makes its own /dev nodes); whatever is left
# mounted from a run cut short is let go first, and rm never crosses into another file system.
unmount_all() { { grep -o " $root/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m" || true; done; }
cleanup() {
  if [ -n "$server_pid" ]; then kill -9 "$server_pid" 2> /dev/null || true; fi
  unmount_all
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
unmount_all
rm -rf --one-file-system "$work"
mkdir -p "$work/debs"

step "1. cpack -G DEB"
(cd "$work/debs" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/debs" > "$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log"; fail "cpack"; }
server_deb=$(ls "$work"/debs/basalt-server_*.deb)
client_deb=$(ls "$work"/debs/libbasalt-client-dev_*.deb)
dpkg-deb --info "$server_deb" | sed -n 's/^ \(Package\|Version\|Depends\|Installed-Size\):/  &/p'
dpkg-deb --info "$client_deb" | sed -n 's/^ \(Package\|Depends\):/  &/p'

step "2. a fresh Debian 12 ($mirror), then apt-get install ./ the two packages"
if ! debootstrap --variant=minbase bookworm "$root" "$mirror" > "$work/debootstrap.log" 2>&1; then
  tail -5 "$work/debootstrap.log"
  grep -qiE "resolv|connect|network|Failed getting release" "$work/debootstrap.log" && skip "Debian's mirror is out of reach"
  fail "debootstrap"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
cp "$server_deb" "$client_deb" "$root/tmp/"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
in_root sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  /tmp/$(basename "$server_deb") /tmp/$(basename "$client_deb") cmake g++ make systemd" > "$work/apt.log" 2>&1 ||
  { tail -20 "$work/apt.log"; fail "apt-get install of the packages"; }
for f in /usr/bin/basalt-server /usr/bin/basalt-master /usr/bin/basalt /usr/bin/basalt-bench /usr/bin/basalt-export-snapshot \
  /lib/systemd/system/basalt-server.service /etc/basalt/basalt.conf /usr/include/basalt/client.h /usr/include/basalt/types.h \
  "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/cmake/Basalt/BasaltConfig.cmake"; do
  [ -e "$root$f" ] || fail "$f is not installed"
done
uid=$(in_root id -u basalt) || fail "no basalt user"
[ "$(stat -c %u "$root/var/lib/basalt")" = "$uid" ] || fail "/var/lib/basalt is not the basalt user's"

step "3. systemd-analyze verify the installed units (systemd's own, in the installed system)"
for unit in basalt-server basalt-master basalt-regionserver; do
  out=$(in_root systemd-analyze verify "/lib/systemd/system/$unit.service" 2>&1) ||
    { echo "$out"; fail "systemd-analyze verify $unit.service"; }
  [ -z "$out" ] || { echo "$out"; fail "systemd-analyze verify $unit.service is not clean"; }
done

step "4. the server from the unit's ExecStart, as its User, with the installed config"
unit="$root/lib/systemd/system/basalt-server.service"
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
user=$(sed -n 's/^User=//p' "$unit")
grep -q '^Type=notify$' "$unit" || fail "the unit is not Type=notify"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The operator's edit: the ports (the defaults may be taken on a machine running tests).
printf '\nlisten = 127.0.0.1:%s\nhttp_listen = 127.0.0.1:0\n' "$port" >> "$root/etc/basalt/basalt.conf"
python3 - "$root/run/basalt-notify.sock" > "$work/notify.log" 2>&1 <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
print(s.recv(512).decode(), flush=True)
PY
notify_pid=$!
for _ in $(seq 50); do [ -S "$root/run/basalt-notify.sock" ] && break; sleep 0.1; done
chmod 777 "$root/run/basalt-notify.sock"
chroot --userspec="$user:$user" "$root" /usr/bin/env -i NOTIFY_SOCKET=/run/basalt-notify.sock HOME=/var/lib/basalt \
  $exec_start > "$work/server.log" 2>&1 &
server_pid=$!
wait "$notify_pid" || { cat "$work/server.log"; fail "the server said nothing to the notify socket within 60 s"; }
grep -q "^READY=1" "$work/notify.log" || { cat "$work/notify.log" "$work/server.log"; fail "no READY=1"; }
echo "  notify: $(tr '\n' ' ' < "$work/notify.log")"
others=$(find "$root/var/lib/basalt" ! -uid "$uid")
[ -z "$others" ] || fail "files in /var/lib/basalt not the basalt user's: $others"

step "5. the installed shell"
out=$(in_root /usr/bin/basalt --server="127.0.0.1:$port" -e "create 'pkg', 'f'
put 'pkg', 'r1', 'f:q', 'installed'
get 'pkg', 'r1'" 2>&1) || { echo "$out"; fail "the shell"; }
echo "$out" | grep -q "value=installed" || { echo "$out"; fail "the shell did not read back what it wrote"; }

step "6. a program built against libbasalt-client-dev with find_package(Basalt)"
mkdir -p "$root/tmp/app"
cat > "$root/tmp/app/CMakeLists.txt" << 'EOF'
cmake_minimum_required(VERSION 3.25)
project(app CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(Basalt REQUIRED)
add_executable(app main.cc)
target_link_libraries(app PRIVATE Basalt::client)
EOF
cat > "$root/tmp/app/main.cc" << 'EOF'
#include <cstdio>
#include <string>

#include "basalt/client.h"

int main(int argc, char** argv) {
  basalt::ConnectionOptions o;
  o.address = argv[1];
  auto conn = basalt::Connection::Open(o);
  if (!conn.ok()) return std::printf("open: %s\n", conn.status().ToString().c_str()), 1;
  auto table = (*conn)->GetTable("pkg");
  if (absl::Status s = table->Put(basalt::Put("r2").Add("f", "q", "from-app")); !s.ok()) {
    return std::printf("put: %s\n", s.ToString().c_str()), 1;
  }
  auto got = table->Get(basalt::Get("r2"));
  if (!got.ok()) return std::printf("get: %s\n", got.status().ToString().c_str()), 1;
  std::printf("got %s\n", std::string(got->Value("f", "q").value_or("(none)")).c_str());
  return 0;
}
EOF
in_root sh -c "cd /tmp/app && cmake -S . -B b > /dev/null && cmake --build b > /dev/null" > "$work/app.log" 2>&1 ||
  { cat "$work/app.log"; fail "building a program against the installed library"; }
out=$(in_root /tmp/app/b/app "127.0.0.1:$port" 2>&1) || { echo "$out"; fail "the program"; }
[ "$out" = "got from-app" ] || { echo "$out"; fail "the program read '$out'"; }
step "7. SIGTERM, as systemctl stop sends it: a clean shutdown"
kill -TERM "$server_pid"
rc=0
wait "$server_pid" || rc=$?
server_pid=""
[ "$rc" = 0 ] || { cat "$work/server.log"; fail "the server exited with $rc at SIGTERM"; }
step "all held: the packages install on a fresh Debian 12, the server runs from its unit as $user, the shell and a program built with find_package(Basalt) write and read"
