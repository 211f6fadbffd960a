// basalt-bench: `basalt-bench storage <subcommand> [--flags]`. Prints a progress line on stderr
// while running and a table (or, with --json, one JSON object) on stdout at the end.
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/synchronization/mutex.h"
#include "src/tools/bench/bench_util.h"

namespace {

constexpr char kUsage[] =
    "usage: basalt-bench storage <subcommand> [--flags] [--json]\n"
    "  crc         [--buffer-mb=64 --chunk-kb=16 --seconds=1]\n"
    "              CRC32C (ISA-L) vs CRC32C table loop vs CRC32 (ISA-L), GB/s on one core\n"
    "  seed003     [--rows=4000000 --encodings=NONE,PREFIX,FAST_DIFF,ROW_INDEX --compressions=NONE,SNAPPY,ZLIB\n"
    "               --modes=cache,nocache --op-seconds=2 --cache-mb=2048 --dir=/tmp]\n"
    "              bytes/row on disk, full-scan MB/s raw and random Gets/s, block cache warm and off\n"
    "  compaction  [--rows=2000000 --encoding=NONE --compression=NONE --value-size=0 --repeats=3]\n"
    "              major compaction CPU with CRC32C vs NULL checksums\n"
    "  rocksdb     [--rows=1000000 --gets=300000 --rounds=3 --cache-mb=2048]\n"
    "              Basalt (NONE, FAST_DIFF) vs RocksDB, cached point lookups and full scans\n"
    "  write       [--threads=1,16,64 --durability=sync,async --seconds=5 --value-size=100]\n"
    "              write ops/s and writes per fdatasync\n";

}  // namespace

int main(int argc, char** argv) {
  // Debian's Abseil keeps deadlock detection on (built without NDEBUG); it costs on every lock.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (argc < 3 || std::strcmp(argv[1], "storage") != 0) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string sub = argv[2];
  auto flags = basalt::bench::Flags::Parse(argc, argv, 3);
  if (!flags.ok()) {
    std::fprintf(stderr, "%s\n%s", std::string(flags.status().message()).c_str(), kUsage);
    return 2;
  }
  basalt::bench::Report report;
  for (int i = 0; i < argc; ++i) {
    if (i) report.command += ' ';
    report.command += argv[i];
  }
  bool json = flags->Bool("json");
  int rc;
  if (sub == "crc") {
    rc = basalt::bench::RunCrc(*flags, &report);
  } else if (sub == "seed003") {
    rc = basalt::bench::RunSeed003(*flags, &report);
  } else if (sub == "compaction") {
    rc = basalt::bench::RunCompaction(*flags, &report);
  } else if (sub == "rocksdb") {
    rc = basalt::bench::RunRocksDb(*flags, &report);
  } else if (sub == "write") {
    rc = basalt::bench::RunWrite(*flags, &report);
  } else {
    std::fprintf(stderr, "unknown subcommand '%s'\n%s", sub.c_str(), kUsage);
    return 2;
  }
  if (rc != 0) return rc;
  basalt::bench::PrintReport(report, json);
  return 0;
}
