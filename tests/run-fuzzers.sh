#!/usr/bin/env bash
# Builds Basalt's libFuzzer targets (tests/fuzz) with clang in build-fuzz/, writes seed corpora,
# runs every fuzzer for a while and prints one summary line per fuzzer. Fails if any fuzzer finds
# a crash, a leak, a timeout or an out-of-memory (its input is then under build-fuzz/artifacts/).
#
#   tests/run-fuzzers.sh [seconds-per-target]      (default 20; run from anywhere)
#
# Environment: BASALT_FUZZ_BUILD_DIR (default build-fuzz), BASALT_FUZZ_JOBS (build parallelism,
# default 2), BASALT_FUZZERS (space-separated subset to run). Corpora persist and grow in
# <build>/corpus/<fuzzer>/ between runs; seeds are regenerated into <build>/seed-inputs/ each run.
# Needs clang and libclang-rt-14-dev (deploy/install-deps.sh installs both).
set -euo pipefail

secs="${1:-20}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ]; then
  echo "usage: $0 [seconds-per-target]" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${BASALT_FUZZ_BUILD_DIR:-build-fuzz}"
jobs="${BASALT_FUZZ_JOBS:-2}"
fuzzers=(${BASALT_FUZZERS:-fuzz_block_decode fuzz_block_file fuzz_block_file_fixup fuzz_wal fuzz_manifest
  fuzz_snapshot_manifest fuzz_catalog fuzz_verbs_frame fuzz_hbase_rpc fuzz_tcp_frame_stream})

for tool in clang clang++ cmake ninja; do
  command -v "$tool" >/dev/null || { echo "run-fuzzers: $tool not found; run deploy/install-deps.sh" >&2; exit 2; }
done

echo "run-fuzzers: configuring $build (clang, BASALT_FUZZ=ON)"
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DBASALT_FUZZ=ON -DBASALT_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build.configure.log" 2>&1 || {
  tail -n 30 "$build.configure.log" >&2
  echo "run-fuzzers: configure failed (full log: $build.configure.log)" >&2
  exit 2
}
rm -f "$build.configure.log"
echo "run-fuzzers: building fuzzers (-j$jobs)"
cmake --build "$build" --target basalt_fuzzers -j "$jobs"

echo "run-fuzzers: writing seed corpora"
rm -rf "$build/seed-inputs"
"$build/tests/fuzz/fuzz_make_seeds" "$build/seed-inputs"

mkdir -p "$build/logs"
failed=()
summary=()
for f in "${fuzzers[@]}"; do
  bin="$build/tests/fuzz/$f"
  [ -x "$bin" ] || { echo "run-fuzzers: no such fuzzer $bin" >&2; exit 2; }
  corpus="$build/corpus/$f"
  artifacts="$build/artifacts/$f"
  log="$build/logs/$f.log"
  mkdir -p "$corpus" "$artifacts" "$build/seed-inputs/$f"
  echo "run-fuzzers: $f for ${secs}s (log: $log)"
  rc=0
  "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" "$build/seed-inputs/$f" >"$log" 2>&1 || rc=$?
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -n 1; }
  execs="$(stat number_of_executed_units)"
  rate="$(stat average_exec_per_sec)"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)"
  ft="$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)"
  units="$(find "$corpus" -type f | wc -l)"
  if [ "$rc" -eq 0 ]; then
    verdict="ok"
  else
    verdict="FAILED(exit $rc)"
    failed+=("$f")
  fi
  summary+=("$(printf '%-22s %-16s execs=%-10s exec/s=%-7s cov=%-6s ft=%-6s corpus=%s' "$f" "$verdict" \
    "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$units")")
  if [ "$rc" -ne 0 ]; then
    grep -E 'ERROR: |FUZZ_CHECK|SUMMARY:|Test unit written' "$log" | head -n 8 | sed 's/^/    /' >&2 || true
  fi
done

echo
echo "run-fuzzers: summary (${secs}s per fuzzer)"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "run-fuzzers: FAILED: ${failed[*]}; crashing inputs in $build/artifacts/<fuzzer>/, logs in $build/logs/" >&2
  exit 1
fi
echo "run-fuzzers: all fuzzers ran clean"
