#!/usr/bin/env bash
# The layering check on a `git archive` tree of HEAD (as a release tarball is made), which has
# no .git and none of a checkout's untracked files: it must give the checkout's answer.
#
# Usage: check_archive.sh REPO_ROOT. Exits 77 (skipped) when REPO_ROOT is not a git checkout.
set -euo pipefail
root=$1
git -C "$root" rev-parse --git-dir >/dev/null 2>&1 || { echo "not a git checkout: skipped"; exit 77; }
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
git -C "$root" archive --format=tar HEAD | tar -x -C "$tree"
bash "$tree/tests/layering/check_layers.sh" "$tree"
