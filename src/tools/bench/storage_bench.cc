// Storage benchmarks of one Region in one process: checksum throughput (crc), the seed-003 table
// over every encoding and compression (seed003), checksums' share of a major compaction
// (compaction) and write throughput with group commit (write). See BENCHMARKS.md.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/crc.h"
#include "common/status.h"
#include "src/tools/bench/bench_util.h"
#include "storage/block_cache.h"

namespace basalt::bench {
namespace {

int Fail(const absl::Status& s) {
  GlobalProgress().Done();
  std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

// ------------------------------------------------------------------ crc

int RunCrc(const Flags& flags, Report* report) {
  const size_t buffer = static_cast<size_t>(flags.Int("buffer-mb", 64)) << 20;
  const size_t chunk = static_cast<size_t>(flags.Int("chunk-kb", 16)) << 10;
  const double seconds = flags.Double("seconds", 1.0);
  flags.RefuseUnused();
  if (chunk == 0 || buffer < chunk) return Fail(absl::InvalidArgumentError("need 0 < chunk <= buffer"));
  if (Crc32c("123456789", 9) != 0xE3069283u || Crc32cTableLoop("123456789", 9) != 0xE3069283u ||
      Crc32("123456789", 9) != 0xCBF43926u) {
    return Fail(absl::InternalError("CRC check values are wrong"));
  }
  std::string buf(buffer, '\0');
  uint64_t rng = 7;
  for (size_t i = 0; i + 8 <= buf.size(); i += 8) {
    uint64_t v = SplitMix64(&rng);
    std::memcpy(&buf[i], &v, 8);
  }
  const size_t chunks = buffer / chunk;
  struct Algo {
    const char* name;
    uint32_t (*fn)(const void*, size_t);
  };
  const Algo algos[] = {
      {"CRC32C (ISA-L crc32_iscsi)", [](const void* p, size_t n) { return Crc32c(p, n); }},
      {"CRC32C (table loop)", [](const void* p, size_t n) { return Crc32cTableLoop(p, n); }},
      {"CRC32 (ISA-L crc32_gzip_refl)", [](const void* p, size_t n) { return Crc32(p, n); }},
  };
  std::vector<double> gbps;
  uint32_t sink = 0;
  for (const Algo& a : algos) {
    // One untimed pass warms the buffer into the caches it fits in and the code path.
    for (size_t c = 0; c < chunks; ++c) sink ^= a.fn(buf.data() + c * chunk, chunk);
    uint64_t bytes = 0;
    double t0 = NowSeconds(), cpu0 = ThreadCpuSeconds(), t;
    do {
      for (size_t c = 0; c < chunks; ++c) sink ^= a.fn(buf.data() + c * chunk, chunk);
      bytes += chunks * chunk;
      t = NowSeconds() - t0;
      GlobalProgress().Update(absl::StrFormat("[crc] %s: %.1f GB in %.1f s", a.name, bytes / 1e9, t));
    } while (t < seconds);
    double cpu = ThreadCpuSeconds() - cpu0;
    gbps.push_back(bytes / t / 1e9);
    report->records.push_back({Text("algorithm", a.name), Num("chunk_bytes", chunk),
                               Num("GB_per_s", bytes / t / 1e9, 2), Num("GB_per_cpu_s", bytes / cpu / 1e9, 2),
                               Num("seconds", t, 2)});
  }
  for (size_t i = 0; i < gbps.size(); ++i) {
    report->records[i].push_back(Num("x_table_loop", gbps[i] / gbps[1], 2));
  }
  report->title = "storage crc: checksum throughput, one thread";
  report->notes.push_back(absl::StrFormat("buffer %d MiB of random bytes, checksummed in %d KiB chunks "
                                          "(one checksum per chunk, as bytes_per_checksum); GB = 1e9 bytes; "
                                          "sink=%08x",
                                          buffer >> 20, chunk >> 10, sink));
  report->notes.push_back("GB_per_s is wall-clock; GB_per_cpu_s divides by this thread's CPU time "
                          "(robust to other load on a shared machine)");
  return 0;
}

// ------------------------------------------------------------------ seed003

namespace {

struct GetResult {
  uint64_t ops = 0, cells = 0, misses = 0;
  double seconds = 0;
  double PerSecond() const { return seconds > 0 ? ops / seconds : 0; }
};

// Random whole-row Gets of existing rows for about `seconds` (at least 1000 Gets).
absl::StatusOr<GetResult> RandomGets(Region* region, uint64_t rows, double seconds, bool cache_blocks,
                                     const std::string& label) {
  ReadSpec spec;
  spec.cache_blocks = cache_blocks;
  uint64_t rng = 1234;
  GetResult r;
  RowResult result;  // reused across Gets
  double t0 = NowSeconds();
  for (;;) {
    for (int i = 0; i < 256; ++i) {
      std::string row = SeedRowKey(static_cast<uint32_t>(SplitMix64(&rng) % rows));
      BASALT_RETURN_IF_ERROR(region->Get(row, spec, &result));
      if (result.empty()) ++r.misses;
      r.cells += result.size();
    }
    r.ops += 256;
    r.seconds = NowSeconds() - t0;
    GlobalProgress().Update(absl::StrFormat("[%s] %d Gets, %.0f/s", label, r.ops, r.PerSecond()));
    if (r.seconds >= seconds && r.ops >= 1000) break;
  }
  return r;
}

}  // namespace

int RunSeed003(const Flags& flags, Report* report) {
  const uint64_t rows = flags.Int("rows", 4000000);
  const double op_seconds = flags.Double("op-seconds", 2.0);
  const size_t cache_bytes = static_cast<size_t>(flags.Int("cache-mb", 2048)) << 20;
  const std::string base = flags.Str("dir", "");
  bool with_cache = false, without_cache = false;
  for (const auto& m : flags.List("modes", "cache,nocache")) {
    if (m == "cache") {
      with_cache = true;
    } else if (m == "nocache") {
      without_cache = true;
    } else {
      return Fail(absl::InvalidArgumentError(absl::StrCat("unknown mode '", m, "' (cache, nocache)")));
    }
  }
  std::vector<DataBlockEncoding> encodings;
  std::vector<Compression> compressions;
  for (const auto& s : flags.List("encodings", "NONE,PREFIX,FAST_DIFF,ROW_INDEX")) {
    auto e = ParseEncoding(s);
    if (!e.ok()) return Fail(e.status());
    encodings.push_back(*e);
  }
  for (const auto& s : flags.List("compressions", "NONE,SNAPPY,ZLIB")) {
    auto c = ParseCompression(s);
    if (!c.ok()) return Fail(c.status());
    compressions.push_back(*c);
  }
  flags.RefuseUnused();
  if (rows == 0 || rows > (1ull << 32)) return Fail(absl::InvalidArgumentError("--rows must be in [1, 2^32]"));

  report->title = absl::StrFormat("storage seed003: %d rows (pk int, v1 float, v2 float), one thread", rows);
  const uint64_t raw_expected = rows * SeedRawBytesPerRow();
  std::vector<std::string> warnings;
  for (DataBlockEncoding enc : encodings) {
    for (Compression comp : compressions) {
      const std::string label = absl::StrCat(EncodingName(enc), "/", CompressionName(comp));
      ScratchDir dir(base, "seed003");
      FamilyOptions fam = SeedFamily(enc, comp);
      double t_load = NowSeconds();
      uint64_t disk = 0;
      ScanResult warm;
      GetResult gets_warm;
      {
        std::shared_ptr<BlockCache> cache = NewBlockCache(cache_bytes);
        auto region = OpenBenchRegion(dir.path(), fam, cache.get());
        if (!region.ok()) return Fail(region.status());
        if (auto s = LoadRegion(region->get(), rows, 0, label); !s.ok()) return Fail(s);
        t_load = NowSeconds() - t_load;
        disk = BlockFileBytes(dir.path());
        if (with_cache) {
          // Warm: one untimed scan fills the cache; the timed one must then not miss.
          GlobalProgress().Update(absl::StrCat("[", label, "] warm-up scan"), true);
          auto w = FullScan(region->get(), true);
          if (!w.ok()) return Fail(w.status());
          uint64_t misses0 = GetBlockCacheUsage(*cache).misses;
          GlobalProgress().Update(absl::StrCat("[", label, "] scan, block cache"), true);
          auto sc = FullScan(region->get(), true);
          if (!sc.ok()) return Fail(sc.status());
          warm = *sc;
          auto g = RandomGets(region->get(), rows, op_seconds, true, label + " Gets, block cache");
          if (!g.ok()) return Fail(g.status());
          gets_warm = *g;
          BlockCacheUsage cs = GetBlockCacheUsage(*cache);
          if (cs.misses != misses0) {
            warnings.push_back(absl::StrFormat("%s: %d block cache misses during the warm runs (cache %d MiB, used %d)",
                                               label, cs.misses - misses0, cache_bytes >> 20, cs.usage_bytes));
          }
        }
        if (auto s = (*region)->Close(); !s.ok()) return Fail(s);
      }
      ScanResult cold;
      GetResult gets_cold;
      if (without_cache) {
        // Cache off: no block cache at all, so every block is read (from the OS page cache),
        // verified, decompressed and decoded on each visit.
        auto region = OpenBenchRegion(dir.path(), fam, nullptr);
        if (!region.ok()) return Fail(region.status());
        GlobalProgress().Update(absl::StrCat("[", label, "] scan, no block cache"), true);
        auto sc = FullScan(region->get(), false);
        if (!sc.ok()) return Fail(sc.status());
        cold = *sc;
        auto g = RandomGets(region->get(), rows, op_seconds, false, label + " Gets, no block cache");
        if (!g.ok()) return Fail(g.status());
        gets_cold = *g;
        if (auto s = (*region)->Close(); !s.ok()) return Fail(s);
      }
      std::vector<const ScanResult*> scans;
      std::vector<const GetResult*> get_runs;
      if (with_cache) scans.push_back(&warm), get_runs.push_back(&gets_warm);
      if (without_cache) scans.push_back(&cold), get_runs.push_back(&gets_cold);
      for (const ScanResult* s : scans) {
        if (s->rows != rows || s->raw_bytes != raw_expected) {
          warnings.push_back(absl::StrFormat("%s: scan saw %d rows / %d raw bytes, expected %d / %d", label, s->rows,
                                             s->raw_bytes, rows, raw_expected));
        }
      }
      for (const GetResult* g : get_runs) {
        if (g->misses != 0 || g->cells != 2 * g->ops) {
          warnings.push_back(absl::StrFormat("%s: %d Gets found nothing; %d cells for %d Gets", label, g->misses,
                                             g->cells, g->ops));
        }
      }
      Record rec = {Text("encoding", EncodingName(enc)), Text("compression", CompressionName(comp)),
                    Num("disk_bytes_per_row", static_cast<double>(disk) / rows, 2)};
      if (with_cache) rec.push_back(Num("scan_cache_MBps", warm.MBps(), 1));
      if (without_cache) rec.push_back(Num("scan_nocache_MBps", cold.MBps(), 1));
      if (with_cache) rec.push_back(Num("get_cache_per_s", gets_warm.PerSecond()));
      if (without_cache) rec.push_back(Num("get_nocache_per_s", gets_cold.PerSecond()));
      rec.push_back(Num("load_s", t_load, 1));
      report->records.push_back(std::move(rec));
    }
  }
  // Ratios the targets ask for (FAST_DIFF vs NONE on disk, both uncompressed).
  auto find = [&](const char* e, const char* c) -> const Record* {
    for (const auto& r : report->records) {
      if (r[0].text == e && r[1].text == c) return &r;
    }
    return nullptr;
  };
  for (const char* comp : {"NONE", "SNAPPY", "ZLIB"}) {
    const Record* none = find("NONE", "NONE");
    const Record* fd = find("FAST_DIFF", comp);
    if (none != nullptr && fd != nullptr) {
      report->notes.push_back(absl::StrFormat("on disk, FAST_DIFF/%s is %.2fx NONE/NONE's bytes per row", comp,
                                              (*fd)[2].num / (*none)[2].num));
    }
  }
  report->notes.push_back(absl::StrFormat(
      "raw bytes = row + family + qualifier + 8-byte timestamp + 1-byte type + value per cell (an HBase "
      "KeyValue's content without its length fields): %d bytes per row here; MB = 1e6 bytes",
      SeedRawBytesPerRow()));
  report->notes.push_back(absl::StrFormat(
      "load: SKIP_WAL, one memstore, Flush + MajorCompact (one file); block size 64 KiB, ROW bloom, CRC32C; "
      "cache: %d MiB, blocks cached decoded, one warm-up scan first; no cache: Region opened without a block "
      "cache (blocks from the OS page cache); Gets: whole rows, uniformly random existing rows, ~%.1f s each",
      cache_bytes >> 20, op_seconds));
  for (auto& w : warnings) report->notes.push_back("WARNING: " + w);
  return 0;
}

// ------------------------------------------------------------------ compaction

int RunCompaction(const Flags& flags, Report* report) {
  const uint64_t rows = flags.Int("rows", 2000000);
  const size_t value_size = flags.Int("value-size", 0);
  const int repeats = static_cast<int>(flags.Int("repeats", 3));
  const std::string base = flags.Str("dir", "");
  auto enc = ParseEncoding(flags.Str("encoding", "NONE"));
  if (!enc.ok()) return Fail(enc.status());
  auto comp = ParseCompression(flags.Str("compression", "NONE"));
  if (!comp.ok()) return Fail(comp.status());
  flags.RefuseUnused();

  struct Side {
    ChecksumType ck;
    std::unique_ptr<ScratchDir> dir;
    std::unique_ptr<Region> region;
    double best_cpu = 1e300, best_user = 0, best_sys = 0, best_wall = 0;
    uint64_t disk = 0;
  };
  Side sides[2] = {{ChecksumType::kCrc32c, nullptr, nullptr}, {ChecksumType::kNull, nullptr, nullptr}};
  for (Side& s : sides) {
    s.dir = std::make_unique<ScratchDir>(base, "compaction");
    auto region = OpenBenchRegion(s.dir->path(), SeedFamily(*enc, *comp, s.ck), nullptr);
    if (!region.ok()) return Fail(region.status());
    s.region = std::move(*region);
    if (auto st = LoadRegion(s.region.get(), rows, value_size, ChecksumName(s.ck)); !st.ok()) return Fail(st);
    s.disk = BlockFileBytes(s.dir->path());
  }
  // Interleaved (CRC32C, NULL, CRC32C, NULL, ...) so both see the same machine load; the least
  // CPU of each is kept (noise from other processes only ever adds time).
  for (int rep = 0; rep < repeats; ++rep) {
    for (Side& s : sides) {
      GlobalProgress().Update(absl::StrFormat("[compaction] %s, run %d/%d", ChecksumName(s.ck), rep + 1, repeats),
                              true);
      double u0, s0, u1, s1;
      ThreadRusage(&u0, &s0);
      double w0 = NowSeconds();
      if (auto st = s.region->MajorCompact(); !st.ok()) return Fail(st);
      double wall = NowSeconds() - w0;
      ThreadRusage(&u1, &s1);
      double cpu = (u1 - u0) + (s1 - s0);
      if (cpu < s.best_cpu) {
        s.best_cpu = cpu;
        s.best_user = u1 - u0;
        s.best_sys = s1 - s0;
        s.best_wall = wall;
      }
    }
  }
  for (Side& s : sides) {
    report->records.push_back({Text("checksum", ChecksumName(s.ck)), Num("cpu_s", s.best_cpu, 3),
                               Num("user_s", s.best_user, 3), Num("sys_s", s.best_sys, 3),
                               Num("wall_s", s.best_wall, 3), Num("file_MB", s.disk / 1e6, 1)});
    if (auto st = s.region->Close(); !st.ok()) return Fail(st);
  }
  double share = (sides[0].best_cpu - sides[1].best_cpu) / sides[0].best_cpu;
  report->records[0].push_back(Num("checksum_share_pct", 100 * share, 1));
  report->title = absl::StrFormat("storage compaction: major compaction CPU, %d rows, %s/%s, %s", rows,
                                  EncodingName(*enc), CompressionName(*comp),
                                  value_size == 0 ? "seed-003 cells" : absl::StrCat(value_size, "-byte values"));
  report->notes.push_back(absl::StrFormat(
      "MajorCompact of one file (rewritten in place each run) on the calling thread; CPU = getrusage(RUSAGE_THREAD) "
      "user+sys, least of %d interleaved runs; checksum share = (CRC32C - NULL) / CRC32C", repeats));
  return 0;
}

// ------------------------------------------------------------------ write

int RunWrite(const Flags& flags, Report* report) {
  std::vector<int> threads;
  for (const auto& s : flags.List("threads", "1,16,64")) threads.push_back(std::atoi(s.c_str()));
  std::vector<Durability> durs;
  for (const auto& s : flags.List("durability", "sync,async")) {
    if (s == "sync") {
      durs.push_back(Durability::kSyncWal);
    } else if (s == "async") {
      durs.push_back(Durability::kAsyncWal);
    } else if (s == "skip") {
      durs.push_back(Durability::kSkipWal);
    } else {
      return Fail(absl::InvalidArgumentError(absl::StrCat("unknown durability '", s, "' (sync, async, skip)")));
    }
  }
  const double seconds = flags.Double("seconds", 5);
  const size_t value_size = flags.Int("value-size", 100);
  const std::string base = flags.Str("dir", "");
  flags.RefuseUnused();
  const char* dur_names[] = {"SYNC_WAL", "ASYNC_WAL", "SKIP_WAL"};

  std::string values(value_size + 4096, '\0');
  uint64_t vr = 99;
  for (char& c : values) c = static_cast<char>(SplitMix64(&vr));
  for (Durability dur : durs) {
    for (int n : threads) {
      if (n <= 0) return Fail(absl::InvalidArgumentError("--threads must be positive"));
      ScratchDir dir(base, "write");
      RegionOptions o;  // defaults: 128 MiB memstore, background flush and compaction
      FamilyOptions fam = SeedFamily(DataBlockEncoding::kFastDiff, Compression::kNone);
      RegionDescriptor d{"bench,,1", {fam}, "", ""};
      auto region = Region::Open(o, d, dir.path());
      if (!region.ok()) return Fail(region.status());
      Region* r = region->get();
      RegionStats st0 = r->GetStats();
      struct alignas(64) Counter {
        std::atomic<uint64_t> ops{0};
      };
      std::vector<Counter> counters(n);
      std::atomic<bool> stop{false}, go{false};
      std::atomic<int> errors{0};
      std::vector<std::thread> ts;
      for (int t = 0; t < n; ++t) {
        ts.emplace_back([&, t] {
          uint64_t rng = 1000 + t;
          while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
          while (!stop.load(std::memory_order_relaxed)) {
            char key[16];
            uint64_t a = SplitMix64(&rng), b = SplitMix64(&rng);
            std::memcpy(key, &a, 8);
            std::memcpy(key + 8, &b, 8);
            std::string_view v(values.data() + (a % 4096), value_size);
            if (!r->Put(std::string_view(key, 16), kSeedFamily, "v", v, kLatestTimestamp, dur).ok()) {
              errors.fetch_add(1);
              return;
            }
            counters[t].ops.fetch_add(1, std::memory_order_relaxed);
          }
        });
      }
      const std::string label = absl::StrFormat("write %s x%d", dur_names[static_cast<int>(dur)], n);
      double t0 = NowSeconds();
      go.store(true, std::memory_order_release);
      double t;
      while ((t = NowSeconds() - t0) < seconds) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        uint64_t ops = 0;
        for (auto& c : counters) ops += c.ops.load(std::memory_order_relaxed);
        GlobalProgress().Update(absl::StrFormat("[%s] %d writes, %.1f s", label, ops, t));
      }
      stop.store(true);
      for (auto& th : ts) th.join();
      t = NowSeconds() - t0;
      uint64_t ops = 0;
      for (auto& c : counters) ops += c.ops.load();
      RegionStats st1 = r->GetStats();
      if (auto s = r->Close(); !s.ok()) return Fail(s);
      if (errors.load() != 0) return Fail(absl::InternalError(absl::StrCat(errors.load(), " writers failed")));
      uint64_t syncs = st1.wal_syncs - st0.wal_syncs;
      uint64_t synced = st1.wal_synced_records - st0.wal_synced_records;
      report->records.push_back({Text("durability", dur_names[static_cast<int>(dur)]), Num("threads", n),
                                 Num("ops_per_s", ops / t), Num("fdatasyncs", syncs),
                                 Num("writes_per_sync", syncs ? static_cast<double>(synced) / syncs : 0, 1),
                                 Num("flushes", st1.flushes)});
    }
  }
  report->title = absl::StrFormat("storage write: one Put (16-byte random row, %d-byte value) per op", value_size);
  report->notes.push_back(absl::StrFormat(
      "each writer thread loops on Region::Put for %.0f s; writes_per_sync = RegionStats wal_synced_records / "
      "wal_syncs over the run; region defaults (128 MiB memstore, background flush), FAST_DIFF family",
      seconds));
  return 0;
}

}  // namespace basalt::bench
