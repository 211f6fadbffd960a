// Basalt vs RocksDB, side by side in one process and one thread, on the same logical data (the
// seed-003 table: one RocksDB key per cell = row key + qualifier). Both uncompressed, both with
// 64 KiB blocks, a bloom filter, a block cache big enough for everything, warmed by a full scan.
// Measured in interleaved rounds so both see the same machine load; the best round of each counts.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "src/tools/bench/bench_util.h"
#include "storage/block_cache.h"

#ifdef BASALT_BENCH_HAVE_ROCKSDB
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
#include "rocksdb/write_batch.h"
#endif

namespace basalt::bench {

#ifndef BASALT_BENCH_HAVE_ROCKSDB

int RunRocksDb(const Flags&, Report*) {
  std::fprintf(stderr, "basalt-bench was built without RocksDB (librocksdb-dev not found)\n");
  return 1;
}

#else

namespace {

int Fail(const absl::Status& s) {
  GlobalProgress().Done();
  std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
  return 1;
}

absl::Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("rocksdb ", AV(what), ": ", s.ToString()));
}

// The same cells LoadRegion writes (same generator, same order): row key, then v1, v2 values.
absl::Status LoadRocks(rocksdb::DB* db, uint64_t rows) {
  uint64_t rng = 42;
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  for (uint64_t start = 0; start < rows; start += 1000) {
    rocksdb::WriteBatch batch;
    uint64_t end = std::min(rows, start + 1000);
    for (uint64_t i = start; i < end; ++i) {
      std::string row = SeedRowKey(static_cast<uint32_t>(i));
      for (const char* q : {"v1", "v2"}) {
        float v = static_cast<float>(SplitMix64(&rng) >> 40) / static_cast<float>(1 << 24);
        std::string key = row + q;
        batch.Put(key, rocksdb::Slice(reinterpret_cast<const char*>(&v), sizeof v));
      }
    }
    BASALT_RETURN_IF_ERROR(FromRocks(db->Write(wo, &batch), "write"));
    GlobalProgress().Update(absl::StrFormat("[RocksDB] loading %d/%d rows", end, rows));
  }
  BASALT_RETURN_IF_ERROR(FromRocks(db->Flush(rocksdb::FlushOptions()), "flush"));
  rocksdb::CompactRangeOptions co;
  co.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  return FromRocks(db->CompactRange(co, nullptr, nullptr), "compact");
}

struct Timing {
  double best = 1e300;
  uint64_t ops = 0, bytes = 0;
  void Add(double seconds) { best = std::min(best, seconds); }
};

// The flags of `storage rocksdb`, validated (ParseRocksDbFlags).
struct RocksDbBenchOptions {
  uint64_t rows = 0;  // seed-003 rows, two cells each
  uint64_t gets = 0;  // lookups per kind and round
  int rounds = 0;
  size_t cache_bytes = 0;  // each store's block cache
  std::string base;        // where the scratch directories go ("": the default)
};

// Reads the flags (refusing any other) and checks them; InvalidArgument names what is wrong.
absl::StatusOr<RocksDbBenchOptions> ParseRocksDbFlags(const Flags& flags) {
  RocksDbBenchOptions o;
  o.rows = flags.Int("rows", 1000000);
  o.gets = flags.Int("gets", 300000);
  o.rounds = static_cast<int>(flags.Int("rounds", 3));
  o.cache_bytes = static_cast<size_t>(flags.Int("cache-mb", 2048)) << 20;
  o.base = flags.Str("dir", "");
  flags.RefuseUnused();
  if (o.rows == 0 || o.rows > (1ull << 32)) return absl::InvalidArgumentError("--rows must be in [1, 2^32]");
  return o;
}

// Basalt: one region per encoding, each with its own cache.
struct BasaltStore {
  DataBlockEncoding enc;
  std::unique_ptr<ScratchDir> dir;
  std::shared_ptr<BlockCache> cache;
  std::unique_ptr<Region> region;
  Timing cell_get, row_get, scan;
};

// Opens and loads a Basalt region of the rows for each encoding (NONE, FAST_DIFF) into *basalts.
absl::Status OpenBasaltStores(const RocksDbBenchOptions& o, std::vector<BasaltStore>* basalts) {
  for (DataBlockEncoding e : {DataBlockEncoding::kNone, DataBlockEncoding::kFastDiff}) {
    BasaltStore b;
    b.enc = e;
    b.dir = std::make_unique<ScratchDir>(o.base, "vs-rocksdb");
    b.cache = NewBlockCache(o.cache_bytes);
    BASALT_ASSIGN_OR_RETURN(b.region,
                            OpenBenchRegion(b.dir->path(), SeedFamily(e, Compression::kNone), b.cache.get()));
    BASALT_RETURN_IF_ERROR(LoadRegion(b.region.get(), o.rows, 0, absl::StrCat("Basalt ", EncodingName(e))));
    basalts->push_back(std::move(b));
  }
  return absl::OkStatus();
}

// RocksDB: the database (block cache first, so that the database closes before it goes).
struct RocksStore {
  std::shared_ptr<rocksdb::Cache> cache;
  std::unique_ptr<rocksdb::DB> db;
  Timing cell_get, row_get, scan;
};

// Opens a RocksDB database in dir set up as Basalt's regions are (no compression, 64 KiB
// blocks, a bloom filter, a block cache of --cache-mb) and loads the same cells into it.
absl::Status OpenRocksStore(const std::string& dir, const RocksDbBenchOptions& o, RocksStore* rocks) {
  rocksdb::Options ro;
  ro.create_if_missing = true;
  ro.compression = rocksdb::kNoCompression;
  ro.bottommost_compression = rocksdb::kNoCompression;
  ro.write_buffer_size = 512ull << 20;
  rocksdb::BlockBasedTableOptions to;
  to.block_size = 64 * 1024;  // Basalt's default block size
  to.block_cache = rocksdb::NewLRUCache(o.cache_bytes);
  to.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));  // as Basalt's ROW bloom
  ro.table_factory.reset(rocksdb::NewBlockBasedTableFactory(to));
  rocks->cache = to.block_cache;
  rocksdb::DB* raw_db = nullptr;
  BASALT_RETURN_IF_ERROR(FromRocks(rocksdb::DB::Open(ro, dir + "/db", &raw_db), "open"));
  rocks->db.reset(raw_db);
  return LoadRocks(rocks->db.get(), o.rows);
}

constexpr const char* kQuals[2] = {"v1", "v2"};

// What every round reads, the same for everyone: a random sequence of (row, column) keys and
// the specs of Basalt's Gets; and what a full scan must count, raw bytes.
struct ReadWorkload {
  std::vector<uint32_t> keys;  // row = k/2, column = k%2
  ReadSpec cell_spec[2];       // column v1, v2
  ReadSpec row_spec;           // the whole row
  uint64_t raw_expected = 0;
};

ReadWorkload MakeReadWorkload(const RocksDbBenchOptions& o) {
  ReadWorkload w;
  w.keys.resize(o.gets);
  uint64_t rng = 4242;
  for (auto& k : w.keys) k = static_cast<uint32_t>(SplitMix64(&rng) % (2 * o.rows));
  for (int q = 0; q < 2; ++q) w.cell_spec[q].columns.push_back({kSeedFamily, {kQuals[q]}});
  w.raw_expected = o.rows * SeedRawBytesPerRow();
  return w;
}

// One timed full scan of a Basalt region (blocks cached) into b->scan; a warning when its raw
// bytes are not the expected.
absl::Status ScanBasalt(const ReadWorkload& w, BasaltStore* b, std::vector<std::string>* warnings) {
  BASALT_ASSIGN_OR_RETURN(ScanResult r, FullScan(b->region.get(), true));
  if (r.raw_bytes != w.raw_expected) warnings->push_back("Basalt scan raw bytes differ from expected");
  b->scan.Add(r.seconds);
  b->scan.bytes = r.raw_bytes;
  return absl::OkStatus();
}

// One timed full scan of the RocksDB database (an iterator) into rocks->scan, likewise.
absl::Status ScanRocks(const ReadWorkload& w, RocksStore* rocks, std::vector<std::string>* warnings) {
  double t0 = NowSeconds();
  std::unique_ptr<rocksdb::Iterator> it(rocks->db->NewIterator(rocksdb::ReadOptions()));
  uint64_t raw = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    // key = row (4) + qualifier (2): raw = row + family (1) + qualifier + ts + type + value
    raw += RawCellBytes(4, 1, it->key().size() - 4, it->value().size());
  }
  BASALT_RETURN_IF_ERROR(FromRocks(it->status(), "scan"));
  rocks->scan.Add(NowSeconds() - t0);
  if (raw != w.raw_expected) warnings->push_back("RocksDB scan raw bytes differ from expected");
  rocks->scan.bytes = raw;
  return absl::OkStatus();
}

// The timed cell Gets, then row Gets, of every key from a Basalt region; cells found into
// *found.
absl::Status GetBasalt(const ReadWorkload& w, BasaltStore* b, uint64_t* found) {
  RowResult result;  // reused across Gets, as RocksDB's PinnableSlice is
  double t0 = NowSeconds();
  for (uint32_t k : w.keys) {
    BASALT_RETURN_IF_ERROR(b->region->Get(SeedRowKey(k / 2), w.cell_spec[k % 2], &result));
    *found += result.size();
  }
  b->cell_get.Add(NowSeconds() - t0);
  t0 = NowSeconds();
  for (uint32_t k : w.keys) {
    BASALT_RETURN_IF_ERROR(b->region->Get(SeedRowKey(k / 2), w.row_spec, &result));
    *found += result.size();
  }
  b->row_get.Add(NowSeconds() - t0);
  return absl::OkStatus();
}

// The same from RocksDB: a cell is one Get, a whole row two (one per cell).
absl::Status GetRocks(const ReadWorkload& w, RocksStore* rocks, uint64_t* found) {
  rocksdb::DB* db = rocks->db.get();
  rocksdb::ReadOptions opt;
  rocksdb::PinnableSlice v;
  double t0 = NowSeconds();
  for (uint32_t k : w.keys) {
    std::string key = SeedRowKey(k / 2) + kQuals[k % 2];
    v.Reset();
    rocksdb::Status s = db->Get(opt, db->DefaultColumnFamily(), key, &v);
    if (!s.ok()) return FromRocks(s, "get");
    *found += 1;
  }
  rocks->cell_get.Add(NowSeconds() - t0);
  // A whole row: both of its cells, one Get each.
  t0 = NowSeconds();
  for (uint32_t k : w.keys) {
    std::string row = SeedRowKey(k / 2);
    for (const char* q : kQuals) {
      v.Reset();
      rocksdb::Status s = db->Get(opt, db->DefaultColumnFamily(), row + q, &v);
      if (!s.ok()) return FromRocks(s, "get");
      *found += 1;
    }
  }
  rocks->row_get.Add(NowSeconds() - t0);
  return absl::OkStatus();
}

// Warms every cache with one full scan (not counted).
absl::Status WarmUp(const ReadWorkload& w, std::vector<BasaltStore>* basalts, RocksStore* rocks,
                    std::vector<std::string>* warnings) {
  for (auto& b : *basalts) {
    GlobalProgress().Update(absl::StrCat("[Basalt ", EncodingName(b.enc), "] warm-up scan"), true);
    BASALT_RETURN_IF_ERROR(ScanBasalt(w, &b, warnings));
    b.scan = Timing{};
  }
  GlobalProgress().Update("[RocksDB] warm-up scan", true);
  BASALT_RETURN_IF_ERROR(ScanRocks(w, rocks, warnings));
  rocks->scan = Timing{};
  return absl::OkStatus();
}

// The measured rounds, interleaved: each round the Gets of every Basalt, then RocksDB's, then
// the scans likewise. Cells found into *found.
absl::Status RunRounds(const RocksDbBenchOptions& o, const ReadWorkload& w, std::vector<BasaltStore>* basalts,
                       RocksStore* rocks, std::vector<std::string>* warnings, uint64_t* found) {
  const int rounds = o.rounds;
  for (int round = 0; round < rounds; ++round) {
    for (auto& b : *basalts) {
      GlobalProgress().Update(absl::StrFormat("[round %d/%d] Basalt %s Gets", round + 1, rounds, EncodingName(b.enc)),
                              true);
      BASALT_RETURN_IF_ERROR(GetBasalt(w, &b, found));
    }
    GlobalProgress().Update(absl::StrFormat("[round %d/%d] RocksDB Gets", round + 1, rounds), true);
    BASALT_RETURN_IF_ERROR(GetRocks(w, rocks, found));
    for (auto& b : *basalts) {
      GlobalProgress().Update(absl::StrFormat("[round %d/%d] Basalt %s scan", round + 1, rounds, EncodingName(b.enc)),
                              true);
      BASALT_RETURN_IF_ERROR(ScanBasalt(w, &b, warnings));
    }
    GlobalProgress().Update(absl::StrFormat("[round %d/%d] RocksDB scan", round + 1, rounds), true);
    BASALT_RETURN_IF_ERROR(ScanRocks(w, rocks, warnings));
  }
  return absl::OkStatus();
}

// A record per store: its best rates and their ratios to RocksDB's.
void AddRocksDbRecords(const RocksDbBenchOptions& o, const std::vector<BasaltStore>& basalts, const RocksStore& rocks,
                       Report* report) {
  const uint64_t gets = o.gets;
  auto add = [&](const std::string& system, const Timing& cg, const Timing& rg, const Timing& sc) {
    report->records.push_back({Text("system", system), Num("cell_gets_per_s", gets / cg.best),
                               Num("x_rocksdb_cell_get", rocks.cell_get.best / cg.best, 2),
                               Num("row_gets_per_s", gets / rg.best),
                               Num("x_rocksdb_row_get", rocks.row_get.best / rg.best, 2),
                               Num("scan_MBps_raw", sc.bytes / sc.best / 1e6, 1),
                               Num("x_rocksdb_scan", rocks.scan.best / sc.best, 2)});
  };
  for (auto& b : basalts) add(absl::StrCat("Basalt ", EncodingName(b.enc)), b.cell_get, b.row_get, b.scan);
  add("RocksDB", rocks.cell_get, rocks.row_get, rocks.scan);
}

// The title, the notes on how it was measured, and the warnings.
void AddRocksDbNotes(const RocksDbBenchOptions& o, uint64_t rocks_cache_usage, const std::vector<std::string>& warnings,
                     Report* report) {
  const uint64_t rows = o.rows;
  report->title = absl::StrFormat("storage rocksdb: Basalt vs RocksDB %d.%d.%d, %d rows (%d cells), one thread",
                                  ROCKSDB_MAJOR, ROCKSDB_MINOR, ROCKSDB_PATCH, rows, 2 * rows);
  report->notes.push_back(absl::StrFormat(
      "same data: seed-003 rows; RocksDB holds one key per cell (row key + qualifier); no compression; 64 KiB "
      "blocks; bloom (Basalt ROW, RocksDB 10 bits/key); block caches of %d MiB warmed by a full scan "
      "(RocksDB cache usage %d MB); both stores compacted to one file/level",
      o.cache_bytes >> 20, rocks_cache_usage / 1000000));
  report->notes.push_back(absl::StrFormat(
      "cell get: %d uniformly random (row, column) lookups, the same sequence for all (Basalt Get with one "
      "column selected; RocksDB Get into a PinnableSlice); row get: the whole row (Basalt Get; RocksDB two Gets); "
      "scan: full scan (Basalt Region::Scan; RocksDB iterator), MB/s of raw cell bytes (row+family+qualifier+8+1+value)",
      o.gets));
  report->notes.push_back(absl::StrFormat(
      "x_rocksdb_* = Basalt ops/s (or MB/s) / RocksDB's (>1: Basalt faster); best of %d interleaved rounds each",
      o.rounds));
  for (auto& w : warnings) report->notes.push_back("WARNING: " + w);
}

}  // namespace

int RunRocksDb(const Flags& flags, Report* report) {
  auto o = ParseRocksDbFlags(flags);
  if (!o.ok()) return Fail(o.status());
  std::vector<BasaltStore> basalts;
  if (auto s = OpenBasaltStores(*o, &basalts); !s.ok()) return Fail(s);
  ScratchDir rdir(o->base, "rocksdb");
  RocksStore rocks;
  if (auto s = OpenRocksStore(rdir.path(), *o, &rocks); !s.ok()) return Fail(s);

  const ReadWorkload w = MakeReadWorkload(*o);
  std::vector<std::string> warnings;
  if (auto s = WarmUp(w, &basalts, &rocks, &warnings); !s.ok()) return Fail(s);
  std::vector<uint64_t> basalt_misses0;
  for (auto& b : basalts) basalt_misses0.push_back(GetBlockCacheUsage(*b.cache).misses);
  uint64_t found = 0;
  if (auto s = RunRounds(*o, w, &basalts, &rocks, &warnings, &found); !s.ok()) return Fail(s);

  // Per key and round: one cell (cell get) plus two (row get), for each Basalt and for RocksDB.
  const uint64_t expected_found = static_cast<uint64_t>(o->rounds) * o->gets * 3 * (basalts.size() + 1);
  if (found != expected_found) {
    warnings.push_back(absl::StrFormat("found %d cells, expected %d", found, expected_found));
  }
  for (size_t i = 0; i < basalts.size(); ++i) {
    uint64_t m = GetBlockCacheUsage(*basalts[i].cache).misses - basalt_misses0[i];
    if (m != 0) warnings.push_back(absl::StrFormat("Basalt %s: %d block cache misses in the timed runs",
                                                   EncodingName(basalts[i].enc), m));
  }
  uint64_t rocks_cache_usage = rocks.cache->GetUsage();

  AddRocksDbRecords(*o, basalts, rocks, report);
  for (auto& b : basalts) {
    if (auto s = b.region->Close(); !s.ok()) return Fail(s);
  }
  AddRocksDbNotes(*o, rocks_cache_usage, warnings, report);
  return 0;
}

#endif  // BASALT_BENCH_HAVE_ROCKSDB

}  // namespace basalt::bench
