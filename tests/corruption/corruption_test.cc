// Corruption test (docs/DESIGN.md, §3, §7; after LevelDB's db/corruption_test.cc): build a region whose
// block files cover every encoding, compression and checksum family, then many times copy it,
// damage one area (a data block's header, payload or checksums, the index, bloom or file-info
// block, the trailer, the MANIFEST, a WAL record) located by parsing the layout of
// block_format.h / wal.h, open the copy and read everything (a Get of every row and a full Scan,
// with and without a block cache). Every outcome must be a DataLoss (InvalidArgument where the
// file no longer looks like a block file at all) naming the damaged file, or exactly the right
// data; never a crash, wrong data or a hang.
//
// BASALT_CORRUPTION_SEED=<n> replays a run.
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "common/coding.h"
#include "common/status.h"
#include "storage/internal/block_cache.h"
#include "storage/internal/block_format.h"
#include "storage/internal/wal.h"
#include "storage/region.h"
#include "tests/util/temp_dir.h"

namespace basalt {
namespace {

namespace fs = std::filesystem;

#if defined(BASALT_SANITIZED)
constexpr int kCaseDivisor = 4;  // ASan is ~4x slower; keep the executable well under a minute
#else
constexpr int kCaseDivisor = 1;
#endif

// row -> "family/qualifier" -> (timestamp, value)
using Model = std::map<std::string, std::map<std::string, std::pair<int64_t, std::string>>>;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}
void CopyDir(const std::string& from, const std::string& to) {
  fs::remove_all(to);
  fs::copy(from, to, fs::copy_options::recursive);
}

// Aborts the process (naming the case) when one case runs too long: a hang is a failure too.
class Watchdog {
 public:
  Watchdog() : thread_([this] { Run(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Arm(const std::string& what) {
    std::lock_guard<std::mutex> l(mu_);
    what_ = what;
    deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      cv_.wait_for(l, std::chrono::milliseconds(200));
      if (!what_.empty() && std::chrono::steady_clock::now() > deadline_) {
        std::cerr << "HANG: corruption case did not finish in 30 s: " << what_ << std::endl;
        std::abort();
      }
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::string what_;
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;
};

std::vector<FamilyOptions> Families(bool verify_checksums = true) {
  struct Spec {
    const char* name;
    DataBlockEncoding enc;
    Compression comp;
    ChecksumType ck;
    BloomType bloom;
    uint32_t bpc;
    bool cache_encoded;
  };
  const Spec specs[] = {
      {"f0", DataBlockEncoding::kNone, Compression::kNone, ChecksumType::kCrc32c, BloomType::kRow, 16384, false},
      {"f1", DataBlockEncoding::kPrefix, Compression::kSnappy, ChecksumType::kCrc32, BloomType::kRowCol, 512, false},
      {"f2", DataBlockEncoding::kFastDiff, Compression::kZlib, ChecksumType::kCrc32c, BloomType::kRow, 16384, true},
      {"f3", DataBlockEncoding::kRowIndex, Compression::kSnappy, ChecksumType::kCrc32c, BloomType::kNone, 1024, false},
      {"f4", DataBlockEncoding::kFastDiff, Compression::kNone, ChecksumType::kCrc32, BloomType::kRowCol, 512, true},
      {"f5", DataBlockEncoding::kRowIndex, Compression::kZlib, ChecksumType::kCrc32, BloomType::kRow, 2048, false},
  };
  std::vector<FamilyOptions> out;
  for (const Spec& s : specs) {
    FamilyOptions f;
    f.name = s.name;
    f.block_size = 2048;
    f.encoding = s.enc;
    f.compression = s.comp;
    f.checksum = s.ck;
    f.bloom = s.bloom;
    f.bytes_per_checksum = s.bpc;
    f.cache_encoded = s.cache_encoded;
    f.verify_checksums = verify_checksums;
    out.push_back(f);
  }
  return out;
}

RegionDescriptor Descriptor(bool verify_checksums = true) {
  RegionDescriptor d;
  d.name = "corrupt,,1";
  d.families = Families(verify_checksums);
  return d;
}

RegionOptions Options(BlockCache* cache) {
  RegionOptions o;
  o.block_cache = cache;
  o.background_compaction = false;  // the file layout stays exactly what the setup made
  o.compaction_min_files = 1000;
  o.clock = [] { return int64_t{1} << 40; };
  return o;
}

std::string RowName(int i) {
  char b[16];
  std::snprintf(b, sizeof b, "r%04d", i);
  return b;
}

std::string ValueFor(const std::string& row, const std::string& col, int64_t ts) {
  // Repetitive, so compression pays; lengths vary so blocks hold different numbers of cells.
  std::string unit = absl::StrCat(row, ":", col, "@", ts, ";");
  std::string v;
  const size_t reps = 1 + (std::hash<std::string>{}(unit) % 6);
  for (size_t i = 0; i < reps; ++i) v += unit;
  return v;
}

// Writes through the region and mirrors every mutation in the model.
class Writer {
 public:
  Writer(Region* r, Model* m) : r_(r), m_(m) {}
  void Put(const std::string& row, const std::string& fam, const std::string& q, int64_t ts) {
    const std::string col = fam + "/" + q;
    const std::string v = ValueFor(row, col, ts);
    ASSERT_TRUE(r_->Put(row, fam, q, v, ts).ok());
    auto& cell = (*m_)[row][col];
    if (cell.second.empty() || cell.first <= ts) cell = {ts, v};
  }
  void DeleteColumn(const std::string& row, const std::string& fam, const std::string& q, int64_t ts) {
    RowMutation rm{row, {}};
    Mutation m;
    m.kind = Mutation::Kind::kDeleteColumn;
    m.family = fam;
    m.qualifier = q;
    m.timestamp = ts;
    rm.mutations.push_back(m);
    ASSERT_TRUE(r_->Mutate({rm}).ok());
    auto it = m_->find(row);
    if (it != m_->end()) {
      auto c = it->second.find(fam + "/" + q);
      if (c != it->second.end() && c->second.first <= ts) it->second.erase(c);
      if (it->second.empty()) m_->erase(it);
    }
  }

 private:
  Region* r_;
  Model* m_;
};

// ------------------------------------------------------------------ reading a damaged copy

struct Outcome {
  bool open_failed = false;
  absl::Status open_status;
  int read_errors = 0;   // Gets and scans that failed (with DataLoss naming the file)
  int exact_reads = 0;   // Gets and scans that returned exactly the expected data
  bool scan_failed = false;
};

// Reads every row and a full scan; each result must be exact or a DataLoss naming `file`.
void ReadEverything(Region* region, const Model& model, const std::vector<std::string>& rows,
                    const std::string& file, bool cache_blocks, const std::string& what, Outcome* out) {
  auto named = [&](const absl::Status& s) {
    return file.empty() || s.message().find(file) != std::string_view::npos;
  };
  ReadSpec spec;
  spec.cache_blocks = cache_blocks;
  for (const std::string& row : rows) {
    auto cells = region->Get(row, spec);
    if (!cells.ok()) {
      EXPECT_EQ(cells.status().code(), absl::StatusCode::kDataLoss) << what << " Get " << row << ": " << cells.status();
      EXPECT_TRUE(named(cells.status())) << what << " error does not name " << file << ": " << cells.status();
      ++out->read_errors;
      continue;
    }
    std::map<std::string, std::pair<int64_t, std::string>> got;
    for (const Cell& c : *cells) got[c.family + "/" + c.qualifier] = {c.timestamp, c.value};
    auto it = model.find(row);
    const std::map<std::string, std::pair<int64_t, std::string>> empty;
    const auto& want = it == model.end() ? empty : it->second;
    if (got != want) {
      ADD_FAILURE() << what << ": WRONG DATA from Get " << row << " (" << got.size() << " cells, want " << want.size()
                    << ")";
    } else {
      ++out->exact_reads;
    }
  }
  ScanSpec scan;
  scan.cache_blocks = cache_blocks;
  auto scanner = region->Scan(scan);
  if (!scanner.ok()) {
    EXPECT_EQ(scanner.status().code(), absl::StatusCode::kDataLoss) << what << ": " << scanner.status();
    ++out->read_errors;
    out->scan_failed = true;
    return;
  }
  auto expect = model.begin();
  std::vector<Cell> cells;
  while (true) {
    auto more = (*scanner)->NextRow(&cells);
    if (!more.ok()) {
      EXPECT_EQ(more.status().code(), absl::StatusCode::kDataLoss) << what << " Scan: " << more.status();
      EXPECT_TRUE(named(more.status())) << what << " scan error does not name " << file << ": " << more.status();
      ++out->read_errors;
      out->scan_failed = true;
      return;
    }
    if (!*more) break;
    std::map<std::string, std::pair<int64_t, std::string>> got;
    for (const Cell& c : cells) got[c.family + "/" + c.qualifier] = {c.timestamp, c.value};
    if (expect == model.end() || cells.empty() || cells[0].row != expect->first || got != expect->second) {
      ADD_FAILURE() << what << ": WRONG DATA from Scan at row " << (cells.empty() ? "?" : cells[0].row)
                    << ", expected row " << (expect == model.end() ? "<end>" : expect->first);
      return;
    }
    ++expect;
  }
  if (expect != model.end()) {
    ADD_FAILURE() << what << ": Scan ended early without an error, missing row " << expect->first;
    return;
  }
  ++out->exact_reads;
}

// Opens a private copy of dir (opening replays and cuts the log, closing flushes) with a block
// cache, reading everything twice, then another copy without a cache, reading with and without
// cache_blocks.
Outcome OpenAndRead(const std::string& dir, const Model& model, const std::vector<std::string>& rows,
                    const std::string& file, const std::string& what, bool verify_checksums = true) {
  Outcome out;
  for (int mode = 0; mode < 2; ++mode) {
    const std::string copy = dir + ".open";
    CopyDir(dir, copy);
    BlockCache cache(4 << 20);
    auto region = Region::Open(Options(mode == 0 ? &cache : nullptr), Descriptor(verify_checksums), copy);
    if (!region.ok()) {
      out.open_failed = true;
      out.open_status = region.status();
      return out;  // opening is deterministic: the second mode would fail the same way
    }
    if (mode == 0) {
      ReadEverything(region->get(), model, rows, file, true, what + " [cache]", &out);
      ReadEverything(region->get(), model, rows, file, true, what + " [cache, again]", &out);
    } else {
      ReadEverything(region->get(), model, rows, file, true, what + " [no cache]", &out);
      ReadEverything(region->get(), model, rows, file, false, what + " [no cache, cache_blocks=false]", &out);
    }
    (*region)->Close().IgnoreError();
  }
  return out;
}

// ------------------------------------------------------------------ block file layout

struct Area {
  uint64_t begin = 0, end = 0;  // [begin, end)
  bool empty() const { return end <= begin; }
};

struct BlockFileLayout {
  std::string name;  // file name in the region dir
  uint64_t size = 0;
  Trailer trailer;
  std::vector<BlockHandle> data;
  std::vector<uint32_t> data_size_with_header;  // per data block: where its checksums start
};

BlockFileLayout ParseLayout(const std::string& dir, const std::string& name) {
  BlockFileLayout l;
  l.name = name;
  const std::string bytes = ReadFile(dir + "/" + name);
  l.size = bytes.size();
  EXPECT_GE(bytes.size(), kTrailerSize);
  auto t = DecodeTrailer(std::string_view(bytes).substr(bytes.size() - kTrailerSize), name);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return l;
  l.trailer = *t;
  // The index block is never compressed: its payload follows the header directly.
  const char* idx = bytes.data() + t->index.offset;
  const uint32_t idx_data = BlockHeader::DecodeFrom(idx).on_disk_data_size_with_header;
  std::string_view in(idx + kBlockHeaderSize, idx_data - kBlockHeaderSize);
  uint32_t n = 0;
  EXPECT_TRUE(GetVarint32(&in, &n));
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    BlockHandle h;
    EXPECT_TRUE(GetLengthPrefixed(&in, &key) && GetVarint64(&in, &h.offset) && GetVarint64(&in, &h.size));
    l.data.push_back(h);
    l.data_size_with_header.push_back(BlockHeader::DecodeFrom(bytes.data() + h.offset).on_disk_data_size_with_header);
  }
  EXPECT_TRUE(in.empty());
  return l;
}

Area Whole(const BlockHandle& h) { return {h.offset, h.offset + h.size}; }

// ------------------------------------------------------------------ the fixture

class CorruptionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* env = std::getenv("BASALT_CORRUPTION_SEED");
    seed_ = env != nullptr ? std::strtoull(env, nullptr, 10)
                           : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    std::cout << "BASALT_CORRUPTION_SEED=" << seed_ << "\n";
    base_ = new testing::TempDir;
    model_ = new Model;
    BuildBlockFileRegion(base_->path() + "/blocks", model_);
  }
  static void TearDownTestSuite() {
    delete base_;
    delete model_;
  }
  void SetUp() override { rng_.seed(seed_ + std::hash<std::string>{}(
                               ::testing::UnitTest::GetInstance()->current_test_info()->name())); }

  // Six families (every encoding, compression and checksum family), several files each, some
  // overwritten and deleted cells; closed cleanly, so everything is in block files.
  static void BuildBlockFileRegion(const std::string& dir, Model* model) {
    BlockCache cache(4 << 20);
    auto region = Region::Open(Options(&cache), Descriptor(), dir);
    ASSERT_TRUE(region.ok()) << region.status();
    Writer w(region->get(), model);
    const auto fams = Families();
    auto each = [&](int from, int to, auto fn) {
      for (int i = from; i < to; ++i) {
        for (const auto& f : fams) fn(RowName(i), f.name, i);
      }
    };
    each(0, 300, [&](const std::string& r, const std::string& f, int) {
      for (const char* q : {"q0", "q1", "q2"}) w.Put(r, f, q, 100);
    });
    ASSERT_TRUE((*region)->Flush().ok());
    each(0, 300, [&](const std::string& r, const std::string& f, int i) {
      if (i % 3 == 0) w.Put(r, f, "q0", 200);
    });
    ASSERT_TRUE((*region)->Flush().ok());
    ASSERT_TRUE((*region)->MajorCompact().ok());
    each(0, 350, [&](const std::string& r, const std::string& f, int i) {
      if (i >= 300) w.Put(r, f, "q1", 100);
      if (i % 7 == 0) w.DeleteColumn(r, f, "q1", 300);
    });
    ASSERT_TRUE((*region)->Flush().ok());
    each(0, 350, [&](const std::string& r, const std::string& f, int i) {
      if (i % 5 == 0) w.Put(r, f, "q2", 400);
    });
    ASSERT_TRUE((*region)->Close().ok());
  }

  static std::vector<std::string> Rows(const Model& m) {
    std::vector<std::string> rows;
    for (const auto& [r, cols] : m) rows.push_back(r);
    rows.push_back("r9999");  // never written
    rows.push_back("a");
    return rows;
  }

  std::vector<std::string> BlockFiles(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string n = e.path().filename().string();
      if (n.size() > 4 && n.substr(n.size() - 4) == ".blk") out.push_back(n);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  uint64_t Uniform(uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_); }

  // Copies the base, XORs a random non-zero mask into `nflips` bytes of `area` of `file`.
  std::string Damage(const std::string& from, const std::string& file, Area area, int nflips, std::string* what) {
    const std::string dir = scratch_.path() + "/case";
    CopyDir(from, dir);
    std::string bytes = ReadFile(dir + "/" + file);
    EXPECT_TRUE(fs::exists(dir + "/" + file)) << file;
    EXPECT_LE(area.end, bytes.size()) << file;
    if (area.end > bytes.size()) return dir;
    // Distinct offsets: two flips of one byte could cancel out and leave it undamaged.
    std::set<uint64_t> used;
    const int flips = static_cast<int>(std::min<uint64_t>(nflips, area.end - area.begin));
    for (int i = 0; i < flips; ++i) {
      uint64_t off = Uniform(area.begin, area.end - 1);
      while (!used.insert(off).second) off = Uniform(area.begin, area.end - 1);
      const uint8_t mask = static_cast<uint8_t>(Uniform(1, 255));
      bytes[off] = static_cast<char>(bytes[off] ^ mask);
      absl::StrAppend(what, " flip@", off, "^", mask);
    }
    WriteFile(dir + "/" + file, bytes);
    return dir;
  }
  std::string Truncate(const std::string& from, const std::string& file, uint64_t size, std::string* what) {
    const std::string dir = scratch_.path() + "/case";
    CopyDir(from, dir);
    fs::resize_file(dir + "/" + file, size);
    absl::StrAppend(what, " truncated to ", size);
    return dir;
  }

  void CountOutcome(const Outcome& o) {
    ++cases_;
    if (o.open_failed) {
      ++open_failures_;
    } else if (o.read_errors > 0) {
      ++read_failures_;
    } else {
      ++exact_;
    }
  }
  void Summary(const char* what) {
    std::cout << what << ": " << cases_ << " cases: " << open_failures_ << " refused at open, " << read_failures_
              << " opened but reads failed cleanly, " << exact_ << " read exactly right\n";
  }

  // Open must fail with DataLoss (or InvalidArgument when allowed), naming the file.
  void ExpectOpenFails(const Outcome& o, const std::string& file, const std::string& what, bool allow_invalid) {
    ASSERT_TRUE(o.open_failed) << what << ": the damaged copy opened";
    const auto code = o.open_status.code();
    EXPECT_TRUE(code == absl::StatusCode::kDataLoss || (allow_invalid && code == absl::StatusCode::kInvalidArgument))
        << what << ": " << o.open_status;
    EXPECT_NE(o.open_status.message().find(file), std::string_view::npos)
        << what << ": error does not name " << file << ": " << o.open_status;
  }

  static uint64_t seed_;
  static testing::TempDir* base_;
  static Model* model_;
  std::mt19937_64 rng_;
  testing::TempDir scratch_;
  Watchdog watchdog_;
  int cases_ = 0, open_failures_ = 0, read_failures_ = 0, exact_ = 0;
};

uint64_t CorruptionTest::seed_ = 0;
testing::TempDir* CorruptionTest::base_ = nullptr;
Model* CorruptionTest::model_ = nullptr;

TEST_F(CorruptionTest, UndamagedReadsExactly) {
  const std::string dir = base_->path() + "/blocks";
  const auto files = BlockFiles(dir);
  EXPECT_GE(files.size(), 12u);  // six families, two or more files each
  size_t blocks = 0;
  for (const auto& f : files) {
    auto l = ParseLayout(dir, f);
    blocks += l.data.size();
    EXPECT_GT(l.data.size(), 0u) << f;
  }
  std::cout << files.size() << " block files, " << blocks << " data blocks, " << model_->size() << " rows\n";
  Outcome o = OpenAndRead(dir, *model_, Rows(*model_), "", "undamaged");
  ASSERT_FALSE(o.open_failed) << o.open_status;
  EXPECT_EQ(o.read_errors, 0);
}

TEST_F(CorruptionTest, VerifyChecksumsOffReadsUndamagedFiles) {
  const std::string dir = base_->path() + "/blocks";
  Outcome o = OpenAndRead(dir, *model_, Rows(*model_), "", "verify_checksums=false", /*verify_checksums=*/false);
  ASSERT_FALSE(o.open_failed) << o.open_status;
  EXPECT_EQ(o.read_errors, 0);
}

// One area kind of one random file per case; `pick` returns the area, or an empty one to skip.
enum class Target { kDataHeader, kDataPayload, kDataChecksums, kIndex, kBloom, kFileInfo, kTrailer };

const char* TargetName(Target t) {
  switch (t) {
    case Target::kDataHeader: return "data block header";
    case Target::kDataPayload: return "data block payload";
    case Target::kDataChecksums: return "data block checksums";
    case Target::kIndex: return "index block";
    case Target::kBloom: return "bloom block";
    case Target::kFileInfo: return "file-info block";
    case Target::kTrailer: return "trailer";
  }
  return "?";
}

class BlockAreaTest : public CorruptionTest, public ::testing::WithParamInterface<Target> {};

TEST_P(BlockAreaTest, FlipBytes) {
  const Target target = GetParam();
  const std::string base = base_->path() + "/blocks";
  const auto files = BlockFiles(base);
  const auto rows = Rows(*model_);
  const int cases = 36 / kCaseDivisor;
  for (int c = 0; c < cases; ++c) {
    const std::string file = files[Uniform(0, files.size() - 1)];
    const BlockFileLayout l = ParseLayout(base, file);
    Area area;
    const size_t b = l.data.empty() ? 0 : Uniform(0, l.data.size() - 1);
    switch (target) {
      case Target::kDataHeader: area = {l.data[b].offset, l.data[b].offset + kBlockHeaderSize}; break;
      case Target::kDataPayload:
        area = {l.data[b].offset + kBlockHeaderSize, l.data[b].offset + l.data_size_with_header[b]};
        break;
      case Target::kDataChecksums:
        area = {l.data[b].offset + l.data_size_with_header[b], l.data[b].offset + l.data[b].size};
        break;
      case Target::kIndex: area = Whole(l.trailer.index); break;
      case Target::kBloom: area = Whole(l.trailer.bloom); break;
      case Target::kFileInfo: area = Whole(l.trailer.file_info); break;
      case Target::kTrailer: area = {l.size - kTrailerSize, l.size}; break;
    }
    if (area.empty()) {
      --c;  // e.g. a family without bloom filters
      continue;
    }
    const int nflips = c % 4 == 3 ? static_cast<int>(Uniform(2, 4)) : 1;
    std::string what = absl::StrCat(TargetName(target), " of ", file, (target <= Target::kDataChecksums ? absl::StrCat(" block ", b) : ""));
    const std::string dir = Damage(base, file, area, nflips, &what);
    watchdog_.Arm(what);
    Outcome o = OpenAndRead(dir, *model_, rows, file, what);
    CountOutcome(o);
    if (target <= Target::kDataChecksums) {
      // Meta blocks are intact: the region opens, and the full scan reads the damaged block.
      ASSERT_FALSE(o.open_failed) << what << ": " << o.open_status;
      EXPECT_TRUE(o.scan_failed) << what << ": damage in a data block went unnoticed by a full scan";
    } else {
      // Trailer, index, bloom and file info are read and verified at open. A damaged trailer
      // magic may make the file "not a block file" (InvalidArgument).
      ExpectOpenFails(o, file, what, /*allow_invalid=*/target == Target::kTrailer);
    }
    if (HasFailure()) return;
  }
  Summary(TargetName(target));
}

INSTANTIATE_TEST_SUITE_P(Areas, BlockAreaTest,
                         ::testing::Values(Target::kDataHeader, Target::kDataPayload, Target::kDataChecksums,
                                           Target::kIndex, Target::kBloom, Target::kFileInfo, Target::kTrailer),
                         [](const auto& info) {
                           std::string n = TargetName(info.param);
                           for (char& ch : n) {
                             if (ch == ' ' || ch == '-') ch = '_';
                           }
                           return n;
                         });

TEST_F(CorruptionTest, RandomBytesAnywhereInABlockFile) {
  const std::string base = base_->path() + "/blocks";
  const auto files = BlockFiles(base);
  const auto rows = Rows(*model_);
  for (int c = 0; c < 40 / kCaseDivisor; ++c) {
    const std::string file = files[Uniform(0, files.size() - 1)];
    const uint64_t size = fs::file_size(base + "/" + file);
    std::string what = absl::StrCat("random bytes of ", file);
    const std::string dir = Damage(base, file, {0, size}, static_cast<int>(Uniform(1, 3)), &what);
    watchdog_.Arm(what);
    Outcome o = OpenAndRead(dir, *model_, rows, file, what);
    CountOutcome(o);
    if (o.open_failed) {
      ExpectOpenFails(o, file, what, /*allow_invalid=*/true);
    } else {
      EXPECT_TRUE(o.scan_failed) << what << ": damage went unnoticed by a full scan";
    }
    if (HasFailure()) return;
  }
  Summary("random bytes");
}

TEST_F(CorruptionTest, TruncatedBlockFile) {
  const std::string base = base_->path() + "/blocks";
  const auto files = BlockFiles(base);
  const auto rows = Rows(*model_);
  for (int c = 0; c < 24 / kCaseDivisor; ++c) {
    const std::string file = files[Uniform(0, files.size() - 1)];
    const uint64_t size = fs::file_size(base + "/" + file);
    // Short of the trailer, a few bytes short, or anywhere.
    const uint64_t to = c % 3 == 0 ? Uniform(0, kTrailerSize - 1) : c % 3 == 1 ? size - Uniform(1, 8) : Uniform(0, size - 1);
    std::string what = absl::StrCat("block file ", file);
    const std::string dir = Truncate(base, file, to, &what);
    watchdog_.Arm(what);
    Outcome o = OpenAndRead(dir, *model_, rows, file, what);
    CountOutcome(o);
    ExpectOpenFails(o, file, what, /*allow_invalid=*/true);
    if (HasFailure()) return;
  }
  Summary("truncated block files");
}

TEST_F(CorruptionTest, Manifest) {
  const std::string base = base_->path() + "/blocks";
  const auto rows = Rows(*model_);
  const uint64_t size = fs::file_size(base + "/MANIFEST");
  for (int c = 0; c < 30 / kCaseDivisor; ++c) {
    std::string what = "MANIFEST";
    const std::string dir = c % 3 == 2 ? Truncate(base, "MANIFEST", Uniform(0, size - 1), &what)
                                       : Damage(base, "MANIFEST", {0, size}, c % 3 == 1 ? 2 : 1, &what);
    watchdog_.Arm(what);
    Outcome o = OpenAndRead(dir, *model_, rows, "MANIFEST", what);
    CountOutcome(o);
    ExpectOpenFails(o, "MANIFEST", what, /*allow_invalid=*/false);
    if (HasFailure()) return;
  }
  Summary("manifest");
}

// A flipped byte in a data block with verification off: the data may be wrong (that is what
// turning verification off means), but decoding must still never crash, hang or read out of
// bounds, and any error is DataLoss.
TEST_F(CorruptionTest, VerifyChecksumsOffNeverCrashesOnDamage) {
  const std::string base = base_->path() + "/blocks";
  const auto files = BlockFiles(base);
  int cases = 0;
  for (int c = 0; c < 40 / kCaseDivisor; ++c) {
    const std::string file = files[Uniform(0, files.size() - 1)];
    const BlockFileLayout l = ParseLayout(base, file);
    const size_t b = Uniform(0, l.data.size() - 1);
    std::string what = absl::StrCat("verify off, data block ", b, " of ", file);
    const std::string dir =
        Damage(base, file, {l.data[b].offset + kBlockHeaderSize, l.data[b].offset + l.data_size_with_header[b]},
               static_cast<int>(Uniform(1, 3)), &what);
    watchdog_.Arm(what);
    BlockCache cache(4 << 20);
    auto region = Region::Open(Options(&cache), Descriptor(/*verify_checksums=*/false), dir);
    ASSERT_TRUE(region.ok()) << what << ": " << region.status();
    for (const auto& row : Rows(*model_)) {
      auto cells = (*region)->Get(row);
      if (!cells.ok()) {
        EXPECT_EQ(cells.status().code(), absl::StatusCode::kDataLoss) << what << ": " << cells.status();
      }
    }
    auto scanner = (*region)->Scan(ScanSpec{});
    ASSERT_TRUE(scanner.ok());
    std::vector<Cell> cells;
    for (int n = 0; n < 100000; ++n) {
      auto more = (*scanner)->NextRow(&cells);
      if (!more.ok()) {
        EXPECT_EQ(more.status().code(), absl::StatusCode::kDataLoss) << what << ": " << more.status();
        break;
      }
      if (!*more) break;
    }
    ++cases;
    if (HasFailure()) return;
  }
  std::cout << cases << " damaged data blocks read with verify_checksums=false without a crash\n";
}

// ------------------------------------------------------------------ write-ahead log

struct WalImage {
  std::string dir;
  std::vector<Model> after;  // after[k]: the expected contents with the first k log records applied
  std::string segment;       // file name under wal/ of the segment holding those records
  std::vector<uint64_t> record_end;  // end offset of each record in the segment
};

// The framing of wal.h: the preamble, then frames of length u32, masked crc u32, payload; the
// segment's header record (region "") first, which is not counted.
std::vector<uint64_t> RecordEnds(const std::string& bytes) {
  std::vector<uint64_t> ends;
  uint64_t pos = WalFramesStart(bytes);
  while (pos + kWalHeaderSize <= bytes.size()) {
    size_t n = 0;
    auto rec = DecodeFramedWalRecord(std::string_view(bytes).substr(pos), &n);
    EXPECT_TRUE(rec.ok()) << rec.status();
    if (!rec.ok()) break;
    pos += n;
    if (!rec->region.empty()) ends.push_back(pos);
  }
  EXPECT_EQ(pos, bytes.size());
  return ends;
}

std::vector<std::string> NonEmptySegments(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir + "/wal")) {
    // Segments holding more than their header record.
    if (e.path().extension() == ".wal" && fs::file_size(e.path()) > 32) out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A region with block files and 40 unflushed writes in its log, copied while open (a crash
// image). The last write overwrites an existing cell and adds a row, so cutting it shows.
void BuildWalImage(const std::string& root, WalImage* img) {
  const std::string live = root + "/live";
  img->dir = root + "/image";
  BlockCache cache(1 << 20);
  auto region = Region::Open(Options(&cache), Descriptor(), live);
  ASSERT_TRUE(region.ok()) << region.status();
  Model model;
  Writer w(region->get(), &model);
  for (int i = 0; i < 60; ++i) w.Put(RowName(i), "f" + std::to_string(i % 6), "q0", 100);
  ASSERT_TRUE((*region)->Flush().ok());
  img->after.push_back(model);
  for (int i = 0; i < 40; ++i) {
    if (i == 39) {
      w.Put(RowName(1), "f1", "q0", 500);  // overwrites a flushed cell
    } else if (i % 10 == 9) {
      w.DeleteColumn(RowName(i), "f" + std::to_string(i % 6), "q0", 300);
    } else {
      w.Put(RowName(100 + i), "f" + std::to_string(i % 6), "q" + std::to_string(i % 3), 100 + i);
    }
    img->after.push_back(model);
  }
  CopyDir(live, img->dir);  // the region is idle and every write is synced: a crash image
  ASSERT_TRUE((*region)->Close().ok());
  const auto segs = NonEmptySegments(img->dir);
  ASSERT_EQ(segs.size(), 1u);
  img->segment = segs[0];
  img->record_end = RecordEnds(ReadFile(img->dir + "/wal/" + img->segment));
  ASSERT_EQ(img->record_end.size(), 40u);
}

TEST_F(CorruptionTest, WalUndamagedReplaysEverything) {
  WalImage img;
  ASSERT_NO_FATAL_FAILURE(BuildWalImage(scratch_.path() + "/w", &img));
  Outcome o = OpenAndRead(img.dir, img.after.back(), Rows(img.after.back()), "", "undamaged WAL image");
  ASSERT_FALSE(o.open_failed) << o.open_status;
  EXPECT_EQ(o.read_errors, 0);
}

// A crash mid-write leaves the last record cut short, never whole with a bad checksum: damage to
// it is refused as DataLoss (strict recovery), or, when a flipped length runs past the end of
// the file (indistinguishable from a torn write), cut. Never applied.
TEST_F(CorruptionTest, WalLastRecordFlipIsRefusedOrCutNeverApplied) {
  WalImage img;
  ASSERT_NO_FATAL_FAILURE(BuildWalImage(scratch_.path() + "/w", &img));
  const size_t n = img.record_end.size();
  const std::string seg = "wal/" + img.segment;
  for (int c = 0; c < 20 / kCaseDivisor; ++c) {
    std::string what = absl::StrCat("last record of ", seg);
    const std::string dir = Damage(img.dir, seg, {img.record_end[n - 2], img.record_end[n - 1]}, c % 3 == 2 ? 2 : 1, &what);
    watchdog_.Arm(what);
    Outcome o = OpenAndRead(dir, img.after[n - 1], Rows(img.after.back()), img.segment, what);
    CountOutcome(o);
    if (o.open_failed) {
      ExpectOpenFails(o, img.segment, what, /*allow_invalid=*/false);
    } else {
      EXPECT_EQ(o.read_errors, 0) << what;
    }
    if (HasFailure()) return;
  }
  Summary("WAL last record");
}

TEST_F(CorruptionTest, WalMiddleRecordFlipIsDataLoss) {
  WalImage img;
  ASSERT_NO_FATAL_FAILURE(BuildWalImage(scratch_.path() + "/w", &img));
  const size_t n = img.record_end.size();
  const std::string seg = "wal/" + img.segment;
  for (int c = 0; c < 20 / kCaseDivisor; ++c) {
    const size_t r = Uniform(0, n - 2);  // any record but the last
    std::string what = absl::StrCat("record ", r, " of ", seg);
    const std::string dir = Damage(img.dir, seg, {r == 0 ? 0 : img.record_end[r - 1], img.record_end[r]}, 1, &what);
    watchdog_.Arm(what);
    Outcome o = OpenAndRead(dir, img.after.back(), Rows(img.after.back()), img.segment, what);
    CountOutcome(o);
    ExpectOpenFails(o, img.segment, what, /*allow_invalid=*/false);
    if (HasFailure()) return;
  }
  Summary("WAL middle record");
}

TEST_F(CorruptionTest, WalTruncatedAnywhereKeepsWholeRecords) {
  WalImage img;
  ASSERT_NO_FATAL_FAILURE(BuildWalImage(scratch_.path() + "/w", &img));
  const std::string seg = "wal/" + img.segment;
  for (int c = 0; c < 20 / kCaseDivisor; ++c) {
    const uint64_t to = Uniform(0, img.record_end.back() - 1);
    size_t whole = 0;
    while (whole < img.record_end.size() && img.record_end[whole] <= to) ++whole;
    std::string what = absl::StrCat(seg, " (", whole, " whole records)");
    const std::string dir = Truncate(img.dir, seg, to, &what);
    watchdog_.Arm(what);
    Outcome o = OpenAndRead(dir, img.after[whole], Rows(img.after.back()), "", what);
    CountOutcome(o);
    ASSERT_FALSE(o.open_failed) << what << ": " << o.open_status;
    EXPECT_EQ(o.read_errors, 0) << what;
    if (HasFailure()) return;
  }
  Summary("WAL truncation");
}

// A crash, a recovery that starts a new segment, more acknowledged writes, another crash: the
// log is now two segments. Damage to the last record of the OLDER segment is not a torn tail
// (that segment was complete and synced before the newer one received anything): cutting it
// and then applying the newer segment would silently lose an acknowledged write while keeping
// later ones. The only acceptable outcomes are DataLoss or every write.
TEST_F(CorruptionTest, WalDamagedTailOfOlderSegmentIsNotSilentlyDropped) {
  const std::string live = scratch_.path() + "/live", crash1 = scratch_.path() + "/crash1",
                    crash2 = scratch_.path() + "/crash2";
  Model model;
  {
    auto region = Region::Open(Options(nullptr), Descriptor(), live);
    ASSERT_TRUE(region.ok()) << region.status();
    Writer w(region->get(), &model);
    for (int i = 0; i < 10; ++i) w.Put(RowName(i), "f0", "q0", 100);
    CopyDir(live, crash1);  // crash 1
  }
  {
    auto region = Region::Open(Options(nullptr), Descriptor(), crash1);  // recovery
    ASSERT_TRUE(region.ok()) << region.status();
    Writer w(region->get(), &model);
    for (int i = 10; i < 15; ++i) w.Put(RowName(i), "f0", "q0", 100);
    CopyDir(crash1, crash2);  // crash 2
  }
  const auto segs = NonEmptySegments(crash2);
  ASSERT_EQ(segs.size(), 2u);
  const auto ends = RecordEnds(ReadFile(crash2 + "/wal/" + segs[0]));
  ASSERT_EQ(ends.size(), 10u);
  Outcome ok = OpenAndRead(crash2, model, Rows(model), "", "two segments, undamaged");
  ASSERT_FALSE(ok.open_failed) << ok.open_status;
  ASSERT_EQ(ok.read_errors, 0);
  std::string what = "last record of older segment " + segs[0];
  const std::string dir = Damage(crash2, "wal/" + segs[0], {ends[8], ends[9]}, 1, &what);
  watchdog_.Arm(what);
  Outcome o = OpenAndRead(dir, model, Rows(model), segs[0], what);
  std::cout << what << ": " << (o.open_failed ? o.open_status.ToString() : "opened") << ", " << o.exact_reads
            << " exact reads, " << o.read_errors << " read errors\n";
  if (o.open_failed) {
    EXPECT_EQ(o.open_status.code(), absl::StatusCode::kDataLoss) << o.open_status;
  } else {
    EXPECT_EQ(o.read_errors, 0) << what;  // wrong data (row r0009 missing) fails inside
  }
}

}  // namespace
}  // namespace basalt
