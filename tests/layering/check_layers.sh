#!/usr/bin/env bash
# The layering check (docs/STYLE.md "Layout"): every project include of every source file
# must point down or sideways, never up, and never into another module's internal/.
#
#   vocab      (vocab/include/basalt/: the dependency-free vocabulary every layer shares; it
#               includes nothing of the project)
#   vocab <- common <- storage <- src
#   vocab <- common <- transport <- client (which only src/tools/ and tests include), src
#   proto (generated gRPC code, and small helpers on its messages that include only it)
#     <- transport, client, src
#
# An include "basalt/x.h" names the vocabulary when vocab/include/basalt/x.h exists, and the
# client's public API (client/include/basalt/) otherwise. The client's public headers may include
# only basalt/ headers; below the tools, no part of the server includes the client.
#
# Inside src/, the folders are floors (src/CMakeLists.txt): a folder may include its own floor
# and the ones below, and its tests (*_test.cc) any of src/:
#   1 base schema transactions  <  2 regions  <  3 catalog security  <  4 cluster  <  5 services
#   <  6 front daemon replication  <  7 server master (the programs)  <  8 tools
#
# A module's tests (*_test.cc beside its code) may also include the shared test helpers under
# tests/util/. Suites under tests/ may include any library; only the white-box suites of the
# storage formats (tests/corruption, tests/fuzz) may include storage/internal/.
#
# Usage: check_layers.sh [repo root]. Prints each violation as file:line: include (reason) and
# exits 1 if there is any, 0 otherwise.
set -euo pipefail
root="${1:-$(dirname "$0")/../..}"
cd "$root"

# The project directories an include may name, per module (the first path component).
allowed() {
  case "$1" in
    vocab) echo "vocab" ;;
    proto) echo "proto" ;;
    common) echo "vocab common" ;;
    storage) echo "vocab common storage" ;;
    transport) echo "vocab common proto transport" ;;
    client) echo "vocab common proto transport client" ;;
    src) echo "vocab common proto transport storage src" ;;
    tests) echo "vocab common proto transport client storage src tests" ;;
    *) echo "" ;;
  esac
}
project_dirs=" vocab common storage transport client proto src tests basalt "

# The floor of a folder of src/ (empty: not a known folder).
src_floor() {
  case "$1" in
    base | schema | transactions) echo 1 ;;
    regions) echo 2 ;;
    catalog | security) echo 3 ;;
    cluster) echo 4 ;;
    services) echo 5 ;;
    front | daemon | replication) echo 6 ;;
    server | master) echo 7 ;;
    tools) echo 8 ;;
    *) echo "" ;;
  esac
}

violations=0
report() {
  echo "$1"
  violations=$((violations + 1))
}

# The files are the modules' own, found in the tree itself, so that a git checkout, a release
# tarball and a `git archive` tree give the same answer (a listing from git alone is empty or
# missing there). Only the module directories are searched: build trees (build*/, or wherever
# cmake -B put one) hold generated code that is not the project's to check. A new module is added
# here and to allowed() above.
files=$(find vocab common proto storage transport client src tests -type f \( -name '*.h' -o -name '*.cc' \) | LC_ALL=C sort)
[ -n "$files" ] || { echo "layering: no source files under $(pwd)"; exit 1; }
for f in $files; do
  module="${f%%/*}"
  allow=" $(allowed "$module") "
  who="$module"
  if [[ "$f" == client/include/* ]]; then
    allow=" vocab client "
    who="a public header"
  elif [[ "$f" == vocab/* ]]; then
    who="the vocabulary"
  elif [[ "$f" == src/tools/* ]]; then
    allow="$allow client "
  fi
  while IFS= read -r hit; do
    [ -z "$hit" ] && continue
    line="${hit%%:*}"
    inc="${hit#*:}"
    inc="${inc#*\"}"
    inc="${inc%%\"*}"
    top="${inc%%/*}"
    # Only project headers count (absl/, grpcpp/, gtest/ ... are dependencies).
    [[ "$project_dirs" == *" $top "* ]] || continue
    if [ "$top" = basalt ]; then
      if [ -f "vocab/include/$inc" ]; then top=vocab; else top=client; fi
    fi
    if [[ "$allow" != *" $top "* ]]; then
      if [ "$top" = tests ] && [[ "$f" == *_test.cc ]] && [[ "$inc" == tests/util/* ]]; then continue; fi
      report "$f:$line: #include \"$inc\" ($who may not include $top/)"
      continue
    fi
    if [ "$module" = src ] && [ "$top" = src ]; then
      from="${f#src/}"
      from="${from%%/*}"
      to="${inc#src/}"
      to="${to%%/*}"
      from_floor=$(src_floor "$from")
      to_floor=$(src_floor "$to")
      if [ -z "$from_floor" ]; then
        report "$f:$line: src/$from/ is not a floor of src/ (add it to src_floor and src/CMakeLists.txt)"
      elif [ -z "$to_floor" ]; then
        report "$f:$line: #include \"$inc\" (src/$to/ is not a floor of src/)"
      elif [ "$to_floor" -gt "$from_floor" ] && [[ "$f" != *_test.cc ]]; then
        report "$f:$line: #include \"$inc\" (src/$from/, floor $from_floor, may not include src/$to/, floor $to_floor)"
      fi
      continue
    fi
    if [[ "$inc" == */internal/* ]] && [ "$top" != "$module" ]; then
      case "$f" in
        tests/corruption/* | tests/fuzz/*) [ "$top" = storage ] && continue ;;
      esac
      report "$f:$line: #include \"$inc\" (another module's internal/)"
    fi
  done < <(grep -n -E '^#include "' "$f" || true)
done

if [ "$violations" -gt 0 ]; then
  echo "layering: $violations include(s) point up a layer or into another module's internal/ (docs/STYLE.md)"
  exit 1
fi
echo "layering: every include points down a layer"
