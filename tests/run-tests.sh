#!/usr/bin/env bash
# Basalt's whole test run, as CI runs it (the README's test command):
#   1. RelWithDebInfo build with -Werror, every CTest suite but the rxe tier (stage 2 runs it);
#   2. an ASan+UBSan build with clang, -Wthread-safety -Werror (clang checks the thread-safety
#      annotations GCC ignores), and every suite run under it, the rxe tier's verbs in the guest
#      included, but the hbase tier (HBase's own Java programs against the port: mostly JVM time;
#      the port's code runs under ASan through hbase_front_test and its fuzzer);
#   3. the libFuzzer targets, built with clang and run briefly.
# CI must stay under an hour on 2 cores, so the rxe tier (serial, in a TCG guest) runs once, in
# the build that also checks its memory, and the Release build of the programs (the benchmarks'
# build type, where GCC warns differently at -O3) is left to BASALT_RELEASE=1.
# Each stage ends with how long it took. Environment: BASALT_FUZZ_SECONDS (default 20) per fuzzer;
# BASALT_SKIP_ASAN=1, BASALT_SKIP_FUZZ=1 leave a stage out locally; BASALT_RELEASE=1 adds the
# Release build; with BASALT_SKIP_ASAN=1 the rxe tier runs in stage 1.
# Exits non-zero when any stage fails.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

started=$SECONDS
stage_started=$SECONDS
# Prints a stage's heading, and how long the one before it took.
stage() {
  if [ -n "${stage_name:-}" ]; then echo "--- $stage_name: $((SECONDS - stage_started)) s"; fi
  stage_name="$*"
  stage_started=$SECONDS
  echo; echo "=== $* ==="
}

stage "build (RelWithDebInfo, -Werror)"
# (Installed under /usr: the Debian packages are made from this build and tested, tests/packages.)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBASALT_WERROR=ON -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build build -j"$jobs"
passed=0
failed=0
# Runs ctest, keeping count of its results for the closing line.
run_ctest() {
  local log
  log=$(mktemp)
  local rc=0
  if ! ctest "$@" 2>&1 | tee "$log"; then rc=1; fi  # pipefail: ctest's status
  local line
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1 || true)
  rm -f "$log"
  if [[ "$line" =~ ([0-9]+)\ tests\ failed\ out\ of\ ([0-9]+) ]]; then
    failed=$((failed + BASH_REMATCH[1]))
    passed=$((passed + BASH_REMATCH[2] - BASH_REMATCH[1]))
  fi
  if [ "$rc" != 0 ]; then
    echo "tests: $passed passed, $((failed > 0 ? failed : 1)) failed"
    exit 1
  fi
}

stage "tests"
skip_rxe=()
if [ "${BASALT_SKIP_ASAN:-0}" != 1 ]; then skip_rxe=(-LE '^rxe$'); fi
run_ctest --test-dir build --output-on-failure -j"$jobs" --timeout 600 "${skip_rxe[@]}"

if [ "${BASALT_RELEASE:-0}" = 1 ]; then
  # The benchmarks' build type: its programs and libraries must compile warning-free too (GCC
  # warns differently at -O3). The tests are compiled by the other two builds, not again here.
  stage "build (Release, -Werror: the programs and libraries)"
  cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DBASALT_WERROR=ON >/dev/null
  cmake --build build-release -j"$jobs" --target basalt-server basalt-master basalt basalt-bench verbs-datapath-bench \
    metrics-bench basalt_client_shared basalt-export-snapshot
fi

if [ "${BASALT_SKIP_ASAN:-0}" != 1 ]; then
  # With clang, so one build both checks the thread-safety annotations (ABSL_GUARDED_BY ...) that
  # GCC ignores and runs every suite under the sanitizers.
  stage "build (ASan+UBSan, clang, -Wthread-safety -Werror)"
  CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBASALT_SANITIZE=ON \
    -DBASALT_BENCH=OFF -DBASALT_WERROR=ON -DCMAKE_CXX_FLAGS="-Wthread-safety" >/dev/null
  cmake --build build-asan -j"$jobs"
  stage "tests under ASan+UBSan"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_ctest --test-dir build-asan --output-on-failure -j"$jobs" --timeout 900 -LE '^hbase$'
  unset ASAN_OPTIONS UBSAN_OPTIONS
fi

if [ "${BASALT_SKIP_FUZZ:-0}" != 1 ] && [ -x tests/run-fuzzers.sh ]; then
  stage "fuzzers (${BASALT_FUZZ_SECONDS:-20} s each)"
  tests/run-fuzzers.sh "${BASALT_FUZZ_SECONDS:-20}"
fi
stage "all stages passed"
echo "(all stages: $((SECONDS - started)) s)"
echo "tests: $passed passed, $failed failed"
