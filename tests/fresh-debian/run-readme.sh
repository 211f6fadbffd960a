#!/usr/bin/env bash
# The README's two commands, run as a new user runs them, in a freshly bootstrapped Debian 12
# (debootstrap --variant=minbase bookworm, nothing installed by hand), for a git clone and for a
# `git archive` tree of the committed HEAD (docs/DESIGN.md §8). A machine the suite usually runs on has
# packages that a fresh Debian lacks, and a git checkout gives answers a release tarball may not:
# this run is how a missing install step or a git-only assumption shows before a user finds it.
#
# For each tree it:
#   1. copies a fresh minbase Debian 12 (bootstrapped once per invocation) to WORK/<tree>/root;
#   2. puts the tree in /root/basalt there: `git clone` of this repository at HEAD, or
#      `git archive HEAD` unpacked (no .git at all);
#   3. runs, as root in a chroot with /proc, /sys, /dev/pts, /dev/shm and /run mounted,
#      the README's first fenced code block (set up and run: installs the dependencies, builds,
#      starts the quickstart server and its demo), then, with that server still running as the
#      README leaves it, the second (the tests: every stage to "=== all stages passed ===");
#   4. stops whatever the run left in the chroot, unmounts, and removes the root (--keep: not).
# The README is read from the tree itself, so the commands run are the ones the README says.
#
# Usage: tests/fresh-debian/run-readme.sh [--tree clone|archive|both] [--work DIR] [--keep]
#   --tree  which tree (default both, clone first)
#   --work  where the roots and logs go (default /var/tmp/basalt-fresh-debian; needs ~25 GiB)
#   --keep  leave each root in place after its run
# Environment: BASALT_DEBIAN_MIRROR (default http://deb.debian.org/debian).
# Needs root, debootstrap and git on the host, and Debian's mirror. Takes 35-40 minutes per tree
# on 2 cores; it is not part of CI (CI runs the second command on its own machine). Prints each
# stage's heading and time and each tree's closing lines; the full output is in WORK/<tree>.log.
# Exits 0 when both commands passed for every tree asked for, 1 otherwise.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
tree=both
work=/var/tmp/basalt-fresh-debian
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --tree) tree=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "usage: $0 [--tree clone|archive|both] [--work DIR] [--keep]" >&2; exit 2 ;;
  esac
done
case "$tree" in
  clone | archive) trees=("$tree") ;;
  both) trees=(clone archive) ;;
  *) echo "run-readme: --tree is clone, archive or both, not '$tree'" >&2; exit 2 ;;
esac
mirror=${BASALT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
say() { echo "run-readme: $*"; }
die() { echo "run-readme: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mounts)"
command -v debootstrap > /dev/null || die "no debootstrap (apt-get install debootstrap)"
commit=$(git -C "$src" rev-parse HEAD) || die "$src is not a git checkout (the trees are made from its HEAD)"
[ -z "$(git -C "$src" status --porcelain --untracked-files=no)" ] ||
  say "note: $src has uncommitted changes; they are not in the trees (HEAD is)"
mkdir -p "$work"
work=$(cd "$work" && pwd)

# The README's first two fenced code blocks, each one command.
readme_block() {
  awk -v want="$1" '/^```/ { if (inside) { inside = 0; n++; next } else { inside = 1; next } }
    inside && n + 1 == want { print }' "$2"
}

# Processes whose root is inside $1: what a run left behind (the quickstart server, a test's).
procs_in() {
  local p r
  for p in /proc/[0-9]*; do
    r=$(readlink "$p/root" 2> /dev/null) || continue
    [[ "$r" == "$1" || "$r" == "$1"/* ]] && echo "${p#/proc/}"
  done
  return 0
}
unmount_all() { { grep -o " $1/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m" || true; done; }
release_root() {
  local root=$1 pids
  pids=$(procs_in "$root")
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    kill -9 $pids 2> /dev/null || true
    sleep 1
  fi
  unmount_all "$root"
}
current_root=""
cleanup() {
  if [ -n "$current_root" ]; then
    release_root "$current_root"
    [ "$keep" = 1 ] || rm -rf --one-file-system "$current_root"
  fi
}
trap cleanup EXIT

base="$work/base"
if [ ! -x "$base/bin/bash" ] || [ ! -e "$base/.bootstrapped-$(date +%F)" ]; then
  say "debootstrap --variant=minbase bookworm ($mirror)"
  rm -rf --one-file-system "$base"
  debootstrap --variant=minbase bookworm "$base" "$mirror" > "$work/debootstrap.log" 2>&1 ||
    { tail -5 "$work/debootstrap.log"; die "debootstrap failed (log: $work/debootstrap.log)"; }
  touch "$base/.bootstrapped-$(date +%F)"
fi
mkdir -p "$work/apt-archives/partial"

rc=0
for t in "${trees[@]}"; do
  root="$work/$t/root"
  log="$work/$t.log"
  release_root "$root"
  rm -rf --one-file-system "$work/$t"
  mkdir -p "$work/$t"
  say "[$t] a fresh Debian 12 at $root"
  cp -a "$base" "$root"
  rm -f "$root"/.bootstrapped-*
  current_root=$root
  if [ "$t" = clone ]; then
    git clone --quiet --no-hardlinks "$src" "$root/root/basalt"
    git -C "$root/root/basalt" checkout --quiet "$commit"
  else
    mkdir -p "$root/root/basalt"
    git -C "$src" archive --format=tar "$commit" | tar -x -C "$root/root/basalt"
  fi
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mount -t proc proc "$root/proc"
  mount -t sysfs sysfs "$root/sys"
  # /dev is debootstrap's own few nodes (null, zero, random, tty ...), not the host's: a private
  # devpts and /dev/shm beside them, so that nothing mounted here reaches the host's /dev.
  mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"
  ln -sf pts/ptmx "$root/dev/ptmx"
  mount -t tmpfs -o mode=1777 shm "$root/dev/shm"
  mount -t tmpfs -o mode=0755 run "$root/run"
  # Downloads only: the .debs fetched for the first tree serve the second; nothing is installed.
  mount --bind "$work/apt-archives" "$root/var/cache/apt/archives"
  chmod 1777 "$root/tmp"
  in_root() {
    chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 TERM=dumb bash -c "cd /root/basalt && $1"
  }
  setup=$(readme_block 1 "$root/root/basalt/README.md")
  tests=$(readme_block 2 "$root/root/basalt/README.md")
  [ -n "$setup" ] && [ -n "$tests" ] || die "[$t] the README has no two fenced code blocks to run"
  {
    echo "# tree: $t of $commit, in a fresh Debian 12 (minbase)"
    echo "# host: $(uname -srm), $(nproc) cores, $(free -g | awk '/^Mem:/ { print $2 }') GiB"
  } > "$log"
  ok=1
  started=$SECONDS
  say "[$t] README command 1: $setup"
  if in_root "$setup" < /dev/null >> "$log" 2>&1; then
    say "[$t] command 1 passed in $((SECONDS - started)) s; $(grep -m1 '^quickstart OK' "$log" || echo 'no "quickstart OK" line')"
  else
    ok=0
    tail -30 "$log"
    say "[$t] command 1 FAILED after $((SECONDS - started)) s (log: $log)"
  fi
  if [ "$ok" = 1 ]; then
    started=$SECONDS
    say "[$t] README command 2 (the quickstart server still running): $tests"
    # The stage headings and times as they come, the rest into the log.
    if in_root "$tests" < /dev/null 2>&1 | tee -a "$log" | grep --line-buffered -E '^(=== |--- |\(all stages|tests: )'; then
      say "[$t] command 2 passed in $((SECONDS - started)) s"
    else
      ok=0
      grep -E 'Failed|FAILED|\*\*\*' "$log" | tail -30 || true
      tail -15 "$log"
      say "[$t] command 2 FAILED after $((SECONDS - started)) s (log: $log)"
    fi
    grep -q '^=== all stages passed ===$' "$log" || ok=0
  fi
  release_root "$root"
  [ "$keep" = 1 ] || rm -rf --one-file-system "$root"
  current_root=""
  if [ "$ok" = 1 ]; then say "[$t] PASSED: both README commands"; else say "[$t] FAILED"; rc=1; fi
done
exit "$rc"
