#include "src/tools/bench/bench_util.h"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/json_string.h"
#include "common/status.h"

namespace basalt::bench {

// ------------------------------------------------------------------ flags

absl::StatusOr<Flags> Flags::Parse(int argc, char** argv, int first) {
  Flags f;
  for (int i = first; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.size() < 3 || a.substr(0, 2) != "--") {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", AV(a), "' (flags are --name=value)"));
    }
    a.remove_prefix(2);
    size_t eq = a.find('=');
    if (eq == std::string_view::npos) {
      f.values_[std::string(a)] = "true";
    } else {
      f.values_[std::string(a.substr(0, eq))] = std::string(a.substr(eq + 1));
    }
  }
  return f;
}

std::string Flags::Str(const std::string& name, const std::string& def) const {
  used_[name] = true;
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second;
}

int64_t Flags::Int(const std::string& name, int64_t def) const {
  std::string s = Str(name, "");
  if (s.empty()) return def;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);  // accepts 4e6
  if (end == s.c_str() || *end != '\0') {
    std::fprintf(stderr, "bad number for --%s: %s\n", name.c_str(), s.c_str());
    std::exit(2);
  }
  return static_cast<int64_t>(v);
}

double Flags::Double(const std::string& name, double def) const {
  std::string s = Str(name, "");
  if (s.empty()) return def;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') {
    std::fprintf(stderr, "bad number for --%s: %s\n", name.c_str(), s.c_str());
    std::exit(2);
  }
  return v;
}

bool Flags::Bool(const std::string& name) const {
  std::string s = Str(name, "false");
  return s == "true" || s == "1" || s == "yes";
}

std::vector<std::string> Flags::List(const std::string& name, const std::string& def) const {
  std::string s = Str(name, def);
  std::vector<std::string> out;
  for (absl::string_view p : absl::StrSplit(absl::string_view(s), ',', absl::SkipEmpty())) out.emplace_back(p);
  return out;
}

std::vector<std::string> Flags::Unused() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : values_) {
    if (!used_.count(k)) out.push_back(k);
  }
  return out;
}

void Flags::RefuseUnused() const {
  auto unused = Unused();
  if (unused.empty()) return;
  for (const auto& u : unused) std::fprintf(stderr, "unknown flag --%s for this subcommand\n", u.c_str());
  std::exit(2);
}

// ------------------------------------------------------------------ timing

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void ThreadRusage(double* user, double* sys) {
  rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  *user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
  *sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

void Progress::Update(const std::string& line, bool force) {
  double now = NowSeconds();
  if (!force && now - last_ < 0.1) return;
  last_ = now;
  std::string out = line;
  if (out.size() < width_) out.append(width_ - out.size(), ' ');
  width_ = line.size();
  std::fprintf(stderr, "\r%s", out.c_str());
  std::fflush(stderr);
}

void Progress::Done() {
  if (width_ == 0) return;
  std::fprintf(stderr, "\r%s\r", std::string(width_, ' ').c_str());
  std::fflush(stderr);
  width_ = 0;
}

Progress& GlobalProgress() {
  static Progress p;
  return p;
}

// ------------------------------------------------------------------ reports

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t c = line.find(':');
      if (c != std::string::npos) return line.substr(c + 2);
    }
  }
  return "unknown";
}

std::string DateUtc() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
  return buf;
}

std::string MachineDescription() {
  return absl::StrCat("nproc=", std::thread::hardware_concurrency(), ", CPU=", CpuModel(), ", date=", DateUtc());
}

namespace {

std::string FormatField(const Field& f) {
  if (!f.is_num) return f.text;
  return absl::StrFormat("%.*f", f.precision, f.num);
}

std::string JsonNumber(double v) {
  if (v != v) return "null";  // NaN
  return absl::StrFormat("%.10g", v);
}

}  // namespace

void PrintReport(const Report& r, bool json) {
  GlobalProgress().Done();
  if (json) {
    std::string out = "{";
    absl::StrAppend(&out, "\"benchmark\":", JsonString(r.title), ",\"command\":", JsonString(r.command),
                    ",\"machine\":{\"nproc\":", std::thread::hardware_concurrency(),
                    ",\"cpu\":", JsonString(CpuModel()), ",\"date\":", JsonString(DateUtc()), "},\"results\":[");
    for (size_t i = 0; i < r.records.size(); ++i) {
      if (i) out += ",";
      out += "{";
      for (size_t j = 0; j < r.records[i].size(); ++j) {
        const Field& f = r.records[i][j];
        if (j) out += ",";
        absl::StrAppend(&out, JsonString(f.name), ":", f.is_num ? JsonNumber(f.num) : JsonString(f.text));
      }
      out += "}";
    }
    out += "]";
    if (!r.summary.empty()) {
      out += ",\"summary\":{";
      for (size_t j = 0; j < r.summary.size(); ++j) {
        const Field& f = r.summary[j];
        absl::StrAppend(&out, j ? "," : "", JsonString(f.name), ":", f.is_num ? JsonNumber(f.num) : JsonString(f.text));
      }
      out += "}";
    }
    out += ",\"notes\":[";
    for (size_t i = 0; i < r.notes.size(); ++i) absl::StrAppend(&out, i ? "," : "", JsonString(r.notes[i]));
    out += "]}\n";
    std::fputs(out.c_str(), stdout);
    return;
  }
  std::printf("== %s\n", r.title.c_str());
  std::printf("command: %s\n", r.command.c_str());
  std::printf("machine: %s\n\n", MachineDescription().c_str());
  // Columns: the union of field names, in first-seen order.
  std::vector<std::string> cols;
  for (const auto& rec : r.records) {
    for (const auto& f : rec) {
      if (std::find(cols.begin(), cols.end(), f.name) == cols.end()) cols.push_back(f.name);
    }
  }
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> width(cols.size());
  for (size_t c = 0; c < cols.size(); ++c) width[c] = cols[c].size();
  for (const auto& rec : r.records) {
    std::vector<std::string> row(cols.size(), "-");
    for (const auto& f : rec) {
      size_t c = std::find(cols.begin(), cols.end(), f.name) - cols.begin();
      row[c] = FormatField(f);
      width[c] = std::max(width[c], row[c].size());
    }
    cells.push_back(std::move(row));
  }
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      absl::StrAppend(&line, c ? "  " : "", absl::StrFormat("%*s", static_cast<int>(width[c]), row[c]));
    }
    std::printf("%s\n", line.c_str());
  };
  print_row(cols);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  print_row(rule);
  for (const auto& row : cells) print_row(row);
  if (!r.summary.empty()) {
    std::printf("\n");
    size_t w = 0;
    for (const auto& f : r.summary) w = std::max(w, f.name.size());
    for (const auto& f : r.summary) {
      std::printf("%-*s  %s\n", static_cast<int>(w + 1), (f.name + ":").c_str(), FormatField(f).c_str());
    }
  }
  if (!r.notes.empty()) std::printf("\n");
  for (const auto& n : r.notes) std::printf("* %s\n", n.c_str());
  std::fflush(stdout);
}

// ------------------------------------------------------------------ scratch directories

ScratchDir::ScratchDir(const std::string& base, const std::string& tag) {
  std::string b = base;
  if (b.empty()) {
    const char* t = std::getenv("TMPDIR");
    b = t != nullptr && *t != '\0' ? t : "/tmp";
  }
  std::string templ = absl::StrCat(b, "/basalt-bench-", tag, "-XXXXXX");
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    std::fprintf(stderr, "mkdtemp(%s) failed\n", templ.c_str());
    std::exit(1);
  }
  path_ = buf.data();
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

uint64_t BlockFileBytes(const std::string& dir) {
  uint64_t total = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".blk") total += e.file_size();
  }
  return total;
}

// ------------------------------------------------------------------ seed-003 data

std::string SeedRowKey(uint32_t i) {
  std::string k(4, '\0');
  k[0] = static_cast<char>(i >> 24);
  k[1] = static_cast<char>(i >> 16);
  k[2] = static_cast<char>(i >> 8);
  k[3] = static_cast<char>(i);
  return k;
}

uint64_t SeedRawBytesPerRow() { return 2 * RawCellBytes(4, 1, 2, 4); }

FamilyOptions SeedFamily(DataBlockEncoding e, Compression c, ChecksumType ck) {
  FamilyOptions f;
  f.name = std::string(kSeedFamily);
  f.encoding = e;
  f.compression = c;
  f.checksum = ck;
  return f;
}

absl::StatusOr<std::unique_ptr<Region>> OpenBenchRegion(const std::string& dir, const FamilyOptions& family,
                                                        BlockCache* cache) {
  RegionOptions o;
  o.block_cache = cache;
  o.memstore_flush_size = 64ull << 30;  // the load stays in one memstore
  o.background_compaction = false;
  RegionDescriptor d{"bench,,1", {family}, "", ""};
  return Region::Open(o, d, dir);
}

absl::Status LoadRegion(Region* region, uint64_t rows, size_t value_size, const std::string& label) {
  constexpr uint64_t kBatch = 1000;
  uint64_t rng = 42;
  std::vector<RowMutation> batch;
  std::string value_pool;
  if (value_size > 0) {
    value_pool.resize(value_size + 4096);
    for (char& c : value_pool) c = static_cast<char>(SplitMix64(&rng));
  }
  for (uint64_t start = 0; start < rows; start += kBatch) {
    batch.clear();
    uint64_t end = std::min(rows, start + kBatch);
    for (uint64_t i = start; i < end; ++i) {
      RowMutation rm;
      rm.row = SeedRowKey(static_cast<uint32_t>(i));
      if (value_size == 0) {
        for (const char* q : {"v1", "v2"}) {
          Mutation m;
          m.family = std::string(kSeedFamily);
          m.qualifier = std::string(q);
          m.timestamp = kSeedTimestamp;
          // A random float in [0, 1), as Phoenix's rand().
          float v = static_cast<float>(SplitMix64(&rng) >> 40) / static_cast<float>(1 << 24);
          m.value.assign(reinterpret_cast<const char*>(&v), sizeof v);
          rm.mutations.push_back(std::move(m));
        }
      } else {
        Mutation m;
        m.family = std::string(kSeedFamily);
        m.qualifier = std::string("v");
        m.timestamp = kSeedTimestamp;
        m.value = value_pool.substr(SplitMix64(&rng) % 4096, value_size);
        rm.mutations.push_back(std::move(m));
      }
      batch.push_back(std::move(rm));
    }
    BASALT_RETURN_IF_ERROR(region->Mutate(batch, Durability::kSkipWal));
    GlobalProgress().Update(absl::StrFormat("[%s] loading %d/%d rows", label, end, rows));
  }
  GlobalProgress().Update(absl::StrFormat("[%s] flush", label), true);
  BASALT_RETURN_IF_ERROR(region->Flush());
  GlobalProgress().Update(absl::StrFormat("[%s] major compaction", label), true);
  BASALT_RETURN_IF_ERROR(region->MajorCompact());
  return absl::OkStatus();
}

absl::StatusOr<DataBlockEncoding> ParseEncoding(const std::string& s) {
  for (auto e : {DataBlockEncoding::kNone, DataBlockEncoding::kPrefix, DataBlockEncoding::kFastDiff,
                 DataBlockEncoding::kRowIndex}) {
    if (s == EncodingName(e)) return e;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown encoding '", s, "' (NONE, PREFIX, FAST_DIFF, ROW_INDEX)"));
}

absl::StatusOr<Compression> ParseCompression(const std::string& s) {
  for (auto c : {Compression::kNone, Compression::kSnappy, Compression::kZlib}) {
    if (s == CompressionName(c)) return c;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown compression '", s, "' (NONE, SNAPPY, ZLIB)"));
}

absl::StatusOr<ScanResult> FullScan(Region* region, bool cache_blocks) {
  ScanSpec spec;
  spec.cache_blocks = cache_blocks;
  ScanResult r;
  double t0 = NowSeconds();
  BASALT_ASSIGN_OR_RETURN(auto scanner, region->Scan(spec));
  RowResult row;  // reused: no allocation per row or cell once warm
  for (;;) {
    BASALT_ASSIGN_OR_RETURN(bool more, scanner->Next(&row));
    if (!more) break;
    ++r.rows;
    for (const CellView& c : row.cells()) {
      r.raw_bytes += RawCellBytes(c.row.size(), c.family.size(), c.qualifier.size(), c.value.size());
    }
    r.cells += row.size();
  }
  r.seconds = NowSeconds() - t0;
  return r;
}

}  // namespace basalt::bench
