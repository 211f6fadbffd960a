// Shared pieces of basalt-bench: flags, timing, the progress line, result reports (a table for
// people, --json for machines), scratch directories, and the seed-003 data set (docs/DESIGN.md
// §3: the table of L. Hofhansl, "HBase - Compression vs Block Encoding", 2016) loaded into a
// Region. Single-threaded use except where said otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/options.h"
#include "storage/region.h"

namespace basalt::bench {

// --name=value flags after the subcommand; a bare --name is "true".
class Flags {
 public:
  // InvalidArgument for anything that is not --name[=value].
  static absl::StatusOr<Flags> Parse(int argc, char** argv, int first);

  std::string Str(const std::string& name, const std::string& def) const;
  int64_t Int(const std::string& name, int64_t def) const;
  double Double(const std::string& name, double def) const;
  bool Bool(const std::string& name) const;
  // A comma-separated list ("1,16,64"); def when the flag is absent.
  std::vector<std::string> List(const std::string& name, const std::string& def) const;
  // Flags given but never asked for (typos).
  std::vector<std::string> Unused() const;
  // Exits with status 2 naming any flag not asked for yet: subcommands call it once they have
  // read their flags, before the long work starts.
  void RefuseUnused() const;

 private:
  std::map<std::string, std::string> values_;
  mutable std::map<std::string, bool> used_;
};

inline double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
// CPU time of the calling thread (user + sys), seconds.
double ThreadCpuSeconds();
// User and sys CPU of the calling thread (getrusage RUSAGE_THREAD), seconds.
void ThreadRusage(double* user, double* sys);

// One line on stderr, rewritten in place ("\r"), at most every 100 ms unless forced.
class Progress {
 public:
  void Update(const std::string& line, bool force = false);
  void Done();  // clears the line

 private:
  double last_ = 0;
  size_t width_ = 0;
};
Progress& GlobalProgress();

// A result: named fields, each a number (with a display precision) or a text.
struct Field {
  std::string name;
  std::string text;
  double num = 0;
  bool is_num = false;
  int precision = 0;
};
using Record = std::vector<Field>;
inline Field Text(std::string name, std::string v) { return Field{std::move(name), std::move(v), 0, false, 0}; }
inline Field Num(std::string name, double v, int precision = 0) { return Field{std::move(name), "", v, true, precision}; }

struct Report {
  std::string title;
  std::string command;  // the command line as run
  std::vector<Record> records;
  // Figures of the whole run (ratios, server memory): "name: value" lines under the table,
  // "summary": {...} in JSON. Empty: not printed.
  Record summary;
  std::vector<std::string> notes;
};

// Writes the report as an aligned table (with machine and date) or as one JSON object.
void PrintReport(const Report& r, bool json);
std::string MachineDescription();  // "nproc=2, CPU=..., date=..."
std::string CpuModel();
std::string DateUtc();

// A fresh directory under base (default $TMPDIR or /tmp), removed with everything in it on
// destruction.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& base, const std::string& tag);
  ~ScratchDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Sum of the sizes of the block files (*.blk) directly in dir.
uint64_t BlockFileBytes(const std::string& dir);

// ------------------------------------------------------------------ seed-003 data set
//
// Phoenix's `create table test (pk integer primary key, v1 float, v2 float)`: row key = pk as a
// 4-byte big-endian integer (0 .. rows-1), two cells per row in family "f", qualifiers "v1" and
// "v2", each value a random float (4 bytes), one fixed timestamp for every cell.
//
// Raw bytes of a cell (what "MB/s raw" counts): row + family + qualifier + 8-byte timestamp +
// 1-byte type + value, i.e. the content of an HBase KeyValue without its length fields.
// For this data: 4 + 1 + 2 + 8 + 1 + 4 = 20 bytes per cell, 40 per row.
inline constexpr char kSeedFamily[] = "f";
inline constexpr int64_t kSeedTimestamp = 1700000000000;
std::string SeedRowKey(uint32_t i);
inline uint64_t RawCellBytes(size_t row, size_t family, size_t qualifier, size_t value) {
  return row + family + qualifier + 8 + 1 + value;
}
uint64_t SeedRawBytesPerRow();

FamilyOptions SeedFamily(DataBlockEncoding e, Compression c, ChecksumType ck = ChecksumType::kCrc32c);

// Opens a region over dir with the given cache (nullptr: none), a memstore large enough that
// nothing flushes during a load, and no background compaction.
absl::StatusOr<std::unique_ptr<Region>> OpenBenchRegion(const std::string& dir, const FamilyOptions& family,
                                                        BlockCache* cache);

// Loads rows [0, rows) with SKIP_WAL, 1000 rows per Mutate, then Flush and MajorCompact so one
// file holds everything. value_size == 0: the seed-003 cells (v1, v2 floats); > 0: one cell "v"
// per row with value_size random bytes (PerformanceEvaluation style). `label` names the load
// on the progress line.
absl::Status LoadRegion(Region* region, uint64_t rows, size_t value_size, const std::string& label);

// Parses encoding / compression names (as EncodingName / CompressionName print them).
absl::StatusOr<DataBlockEncoding> ParseEncoding(const std::string& s);
absl::StatusOr<Compression> ParseCompression(const std::string& s);

// Result of one timed full scan: rows, cells, raw bytes, seconds.
struct ScanResult {
  uint64_t rows = 0, cells = 0, raw_bytes = 0;
  double seconds = 0;
  double MBps() const { return seconds > 0 ? raw_bytes / seconds / 1e6 : 0; }
};
absl::StatusOr<ScanResult> FullScan(Region* region, bool cache_blocks);

// A splitmix64 step: fast, deterministic random numbers for keys and values.
inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Subcommands; each returns the process exit code.
int RunCrc(const Flags& flags, Report* report);
int RunSeed003(const Flags& flags, Report* report);
int RunCompaction(const Flags& flags, Report* report);
int RunRocksDb(const Flags& flags, Report* report);
int RunWrite(const Flags& flags, Report* report);
// Against a running basalt-server (server_bench.cc).
int RunServerLatency(const Flags& flags, Report* report);
int RunServerYcsb(const Flags& flags, Report* report);
int RunServerLoad(const Flags& flags, Report* report);
int RunServerScan(const Flags& flags, Report* report);
// queue_bench.cc
int RunServerQueue(const Flags& flags, Report* report);
int RunServerSplit(const Flags& flags, Report* report);
int RunServerLocate(const Flags& flags, Report* report);
int RunServerSnapshot(const Flags& flags, Report* report);
// hbase_front_bench.cc
int RunServerHBaseGet(const Flags& flags, Report* report);
int RunServerReplicate(const Flags& flags, Report* report);
int RunServerReplicateSource(const Flags& flags, Report* report);

}  // namespace basalt::bench
