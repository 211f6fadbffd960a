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

}  // namespace

int RunRocksDb(const Flags& flags, Report* report) {
  const uint64_t rows = flags.Int("rows", 1000000);
  const uint64_t gets = flags.Int("gets", 300000);
  const int rounds = static_cast<int>(flags.Int("rounds", 3));
  const size_t cache_bytes = static_cast<size_t>(flags.Int("cache-mb", 2048)) << 20;
  const std::string base = flags.Str("dir", "");
  flags.RefuseUnused();
  if (rows == 0 || rows > (1ull << 32)) return Fail(absl::InvalidArgumentError("--rows must be in [1, 2^32]"));

  // Basalt: one region per encoding, each with its own cache.
  struct Basalt {
    DataBlockEncoding enc;
    std::unique_ptr<ScratchDir> dir;
    std::shared_ptr<BlockCache> cache;
    std::unique_ptr<Region> region;
    Timing cell_get, row_get, scan;
  };
  std::vector<Basalt> basalts;
  for (DataBlockEncoding e : {DataBlockEncoding::kNone, DataBlockEncoding::kFastDiff}) {
    Basalt b;
    b.enc = e;
    b.dir = std::make_unique<ScratchDir>(base, "vs-rocksdb");
    b.cache = NewBlockCache(cache_bytes);
    auto region = OpenBenchRegion(b.dir->path(), SeedFamily(e, Compression::kNone), b.cache.get());
    if (!region.ok()) return Fail(region.status());
    b.region = std::move(*region);
    if (auto s = LoadRegion(b.region.get(), rows, 0, absl::StrCat("Basalt ", EncodingName(e))); !s.ok()) {
      return Fail(s);
    }
    basalts.push_back(std::move(b));
  }

  ScratchDir rdir(base, "rocksdb");
  rocksdb::Options ro;
  ro.create_if_missing = true;
  ro.compression = rocksdb::kNoCompression;
  ro.bottommost_compression = rocksdb::kNoCompression;
  ro.write_buffer_size = 512ull << 20;
  rocksdb::BlockBasedTableOptions to;
  to.block_size = 64 * 1024;  // Basalt's default block size
  to.block_cache = rocksdb::NewLRUCache(cache_bytes);
  to.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));  // as Basalt's ROW bloom
  ro.table_factory.reset(rocksdb::NewBlockBasedTableFactory(to));
  rocksdb::DB* raw_db = nullptr;
  if (auto s = FromRocks(rocksdb::DB::Open(ro, rdir.path() + "/db", &raw_db), "open"); !s.ok()) return Fail(s);
  std::unique_ptr<rocksdb::DB> db(raw_db);
  if (auto s = LoadRocks(db.get(), rows); !s.ok()) return Fail(s);
  Timing r_cell_get, r_row_get, r_scan;

  // The same random (row, column) sequence for everyone.
  std::vector<uint32_t> keys(gets);
  uint64_t rng = 4242;
  for (auto& k : keys) k = static_cast<uint32_t>(SplitMix64(&rng) % (2 * rows));  // row = k/2, column = k%2
  const char* quals[2] = {"v1", "v2"};
  ReadSpec cell_spec[2];
  for (int q = 0; q < 2; ++q) cell_spec[q].columns.push_back({kSeedFamily, {quals[q]}});
  ReadSpec row_spec;
  const uint64_t raw_expected = rows * SeedRawBytesPerRow();
  std::vector<std::string> warnings;

  auto basalt_scan = [&](Basalt& b) -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(ScanResult r, FullScan(b.region.get(), true));
    if (r.raw_bytes != raw_expected) warnings.push_back("Basalt scan raw bytes differ from expected");
    b.scan.Add(r.seconds);
    b.scan.bytes = r.raw_bytes;
    return absl::OkStatus();
  };
  auto rocks_scan = [&]() -> absl::Status {
    double t0 = NowSeconds();
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    uint64_t raw = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      // key = row (4) + qualifier (2): raw = row + family (1) + qualifier + ts + type + value
      raw += RawCellBytes(4, 1, it->key().size() - 4, it->value().size());
    }
    BASALT_RETURN_IF_ERROR(FromRocks(it->status(), "scan"));
    r_scan.Add(NowSeconds() - t0);
    if (raw != raw_expected) warnings.push_back("RocksDB scan raw bytes differ from expected");
    r_scan.bytes = raw;
    return absl::OkStatus();
  };

  // Warm every cache with one full scan.
  for (auto& b : basalts) {
    GlobalProgress().Update(absl::StrCat("[Basalt ", EncodingName(b.enc), "] warm-up scan"), true);
    if (auto s = basalt_scan(b); !s.ok()) return Fail(s);
    b.scan = Timing{};
  }
  GlobalProgress().Update("[RocksDB] warm-up scan", true);
  if (auto s = rocks_scan(); !s.ok()) return Fail(s);
  r_scan = Timing{};
  std::vector<uint64_t> basalt_misses0;
  for (auto& b : basalts) basalt_misses0.push_back(GetBlockCacheUsage(*b.cache).misses);

  uint64_t found = 0;
  for (int round = 0; round < rounds; ++round) {
    for (auto& b : basalts) {
      GlobalProgress().Update(absl::StrFormat("[round %d/%d] Basalt %s Gets", round + 1, rounds, EncodingName(b.enc)),
                              true);
      RowResult result;  // reused across Gets, as RocksDB's PinnableSlice is
      double t0 = NowSeconds();
      for (uint32_t k : keys) {
        if (auto s = b.region->Get(SeedRowKey(k / 2), cell_spec[k % 2], &result); !s.ok()) return Fail(s);
        found += result.size();
      }
      b.cell_get.Add(NowSeconds() - t0);
      t0 = NowSeconds();
      for (uint32_t k : keys) {
        if (auto s = b.region->Get(SeedRowKey(k / 2), row_spec, &result); !s.ok()) return Fail(s);
        found += result.size();
      }
      b.row_get.Add(NowSeconds() - t0);
    }
    GlobalProgress().Update(absl::StrFormat("[round %d/%d] RocksDB Gets", round + 1, rounds), true);
    {
      rocksdb::ReadOptions opt;
      rocksdb::PinnableSlice v;
      double t0 = NowSeconds();
      for (uint32_t k : keys) {
        std::string key = SeedRowKey(k / 2) + quals[k % 2];
        v.Reset();
        rocksdb::Status s = db->Get(opt, db->DefaultColumnFamily(), key, &v);
        if (!s.ok()) return Fail(FromRocks(s, "get"));
        found += 1;
      }
      r_cell_get.Add(NowSeconds() - t0);
      // A whole row: both of its cells, one Get each.
      t0 = NowSeconds();
      for (uint32_t k : keys) {
        std::string row = SeedRowKey(k / 2);
        for (const char* q : quals) {
          v.Reset();
          rocksdb::Status s = db->Get(opt, db->DefaultColumnFamily(), row + q, &v);
          if (!s.ok()) return Fail(FromRocks(s, "get"));
          found += 1;
        }
      }
      r_row_get.Add(NowSeconds() - t0);
    }
    for (auto& b : basalts) {
      GlobalProgress().Update(absl::StrFormat("[round %d/%d] Basalt %s scan", round + 1, rounds, EncodingName(b.enc)),
                              true);
      if (auto s = basalt_scan(b); !s.ok()) return Fail(s);
    }
    GlobalProgress().Update(absl::StrFormat("[round %d/%d] RocksDB scan", round + 1, rounds), true);
    if (auto s = rocks_scan(); !s.ok()) return Fail(s);
  }
  // Per key and round: one cell (cell get) plus two (row get), for each Basalt and for RocksDB.
  const uint64_t expected_found = static_cast<uint64_t>(rounds) * gets * 3 * (basalts.size() + 1);
  if (found != expected_found) {
    warnings.push_back(absl::StrFormat("found %d cells, expected %d", found, expected_found));
  }
  for (size_t i = 0; i < basalts.size(); ++i) {
    uint64_t m = GetBlockCacheUsage(*basalts[i].cache).misses - basalt_misses0[i];
    if (m != 0) warnings.push_back(absl::StrFormat("Basalt %s: %d block cache misses in the timed runs",
                                                   EncodingName(basalts[i].enc), m));
  }
  uint64_t rocks_cache_usage = to.block_cache->GetUsage();

  auto add = [&](const std::string& system, const Timing& cg, const Timing& rg, const Timing& sc) {
    report->records.push_back({Text("system", system), Num("cell_gets_per_s", gets / cg.best),
                               Num("x_rocksdb_cell_get", r_cell_get.best / cg.best, 2),
                               Num("row_gets_per_s", gets / rg.best), Num("x_rocksdb_row_get", r_row_get.best / rg.best, 2),
                               Num("scan_MBps_raw", sc.bytes / sc.best / 1e6, 1),
                               Num("x_rocksdb_scan", r_scan.best / sc.best, 2)});
  };
  for (auto& b : basalts) add(absl::StrCat("Basalt ", EncodingName(b.enc)), b.cell_get, b.row_get, b.scan);
  add("RocksDB", r_cell_get, r_row_get, r_scan);
  for (auto& b : basalts) {
    if (auto s = b.region->Close(); !s.ok()) return Fail(s);
  }
  report->title = absl::StrFormat("storage rocksdb: Basalt vs RocksDB %d.%d.%d, %d rows (%d cells), one thread",
                                  ROCKSDB_MAJOR, ROCKSDB_MINOR, ROCKSDB_PATCH, rows, 2 * rows);
  report->notes.push_back(absl::StrFormat(
      "same data: seed-003 rows; RocksDB holds one key per cell (row key + qualifier); no compression; 64 KiB "
      "blocks; bloom (Basalt ROW, RocksDB 10 bits/key); block caches of %d MiB warmed by a full scan "
      "(RocksDB cache usage %d MB); both stores compacted to one file/level",
      cache_bytes >> 20, rocks_cache_usage / 1000000));
  report->notes.push_back(absl::StrFormat(
      "cell get: %d uniformly random (row, column) lookups, the same sequence for all (Basalt Get with one "
      "column selected; RocksDB Get into a PinnableSlice); row get: the whole row (Basalt Get; RocksDB two Gets); "
      "scan: full scan (Basalt Region::Scan; RocksDB iterator), MB/s of raw cell bytes (row+family+qualifier+8+1+value)",
      gets));
  report->notes.push_back(absl::StrFormat(
      "x_rocksdb_* = Basalt ops/s (or MB/s) / RocksDB's (>1: Basalt faster); best of %d interleaved rounds each",
      rounds));
  for (auto& w : warnings) report->notes.push_back("WARNING: " + w);
  return 0;
}

#endif  // BASALT_BENCH_HAVE_ROCKSDB

}  // namespace basalt::bench
