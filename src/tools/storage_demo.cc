// basalt-storage-demo: a short tour of the storage engine, run by the README's first command
// until the server exists. Creates a region with a FAST_DIFF + SNAPPY family in a directory,
// writes, reads, deletes, flushes, compacts, reopens (replaying the log) and prints each step.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/synchronization/mutex.h"
#include "storage/internal/block_cache.h"
#include "storage/region.h"

namespace {

using basalt::Cell;
using basalt::Region;

void Die(const absl::Status& s, const char* what) {
  std::fprintf(stderr, "basalt-storage-demo: %s: %s\n", what, std::string(s.ToString()).c_str());
  std::exit(1);
}

void Show(Region* r, const std::string& row, int versions = 1) {
  basalt::ReadSpec spec;
  spec.max_versions = versions;
  auto cells = r->Get(row, spec);
  if (!cells.ok()) Die(cells.status(), "get");
  std::printf("  get '%s' (versions=%d):", row.c_str(), versions);
  if (cells->empty()) std::printf(" (no cells)");
  for (const Cell& c : *cells) {
    std::printf(" %s:%s@%lld='%s'", c.family.c_str(), c.qualifier.c_str(), static_cast<long long>(c.timestamp),
                c.value.c_str());
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  std::string dir = argc > 1 ? argv[1] : "/tmp/basalt-demo";
  basalt::BlockCache cache(64 << 20);
  basalt::RegionOptions opts;
  opts.block_cache = &cache;
  basalt::FamilyOptions cf;
  cf.name = "cf";
  cf.max_versions = 3;
  cf.encoding = basalt::DataBlockEncoding::kFastDiff;
  cf.compression = basalt::Compression::kSnappy;
  basalt::RegionDescriptor desc{"demo,,1", {cf}};

  auto opened = Region::Open(opts, desc, dir);
  if (!opened.ok()) Die(opened.status(), "open");
  std::unique_ptr<Region> r = std::move(*opened);
  std::printf("opened region %s in %s (family cf: FAST_DIFF, SNAPPY, CRC32C, 3 versions)\n", desc.name.c_str(),
              dir.c_str());

  for (int i = 0; i < 10000; ++i) {
    char row[16];
    std::snprintf(row, sizeof row, "user%05d", i);
    if (auto s = r->Put(row, "cf", "name", "name-" + std::to_string(i)); !s.ok()) Die(s, "put");
  }
  std::printf("put 10000 rows (SYNC_WAL: each acknowledged write is on disk)\n");
  for (int v = 1; v <= 4; ++v) {
    if (auto s = r->Put("user00042", "cf", "visits", std::to_string(v), 1000 + v); !s.ok()) Die(s, "put");
  }
  Show(r.get(), "user00042", 5);

  basalt::Mutation del;
  del.kind = basalt::Mutation::Kind::kDelete;
  del.family = "cf";
  del.qualifier = "visits";
  if (auto s = r->Mutate({{"user00042", {del}}}); !s.ok()) Die(s, "delete");
  std::printf("delete 'user00042', 'cf:visits' (the newest version)\n");
  Show(r.get(), "user00042", 5);

  if (auto s = r->Flush(); !s.ok()) Die(s, "flush");
  if (auto s = r->MajorCompact(); !s.ok()) Die(s, "major_compact");
  std::printf("flushed and major-compacted\n");
  Show(r.get(), "user00042", 5);

  basalt::ScanSpec scan;
  scan.start_row = "user00100";
  scan.limit = 3;
  auto sc = r->Scan(scan);
  if (!sc.ok()) Die(sc.status(), "scan");
  std::vector<Cell> cells;
  std::printf("scan from 'user00100', limit 3:\n");
  for (;;) {
    auto more = (*sc)->NextRow(&cells);
    if (!more.ok()) Die(more.status(), "scan");
    if (!*more) break;
    for (const Cell& c : cells) std::printf("  %s cf:%s='%s'\n", c.row.c_str(), c.qualifier.c_str(), c.value.c_str());
  }
  if (auto s = r->Put("user99999", "cf", "name", "after-compaction"); !s.ok()) Die(s, "put");
  r.reset();  // closes: flushes memstores
  auto again = Region::Open(opts, desc, dir);
  if (!again.ok()) Die(again.status(), "reopen");
  std::printf("reopened\n");
  Show(again->get(), "user99999");
  basalt::RegionStats st = (*again)->GetStats();
  std::printf("files in cf: %zu, flushes this run: %llu\n", st.files_per_family["cf"],
              static_cast<unsigned long long>(st.flushes));
  std::printf("demo OK\n");
  return 0;
}
