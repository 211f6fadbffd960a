// The crash test's victim: opens a Region and writes from several threads with SYNC_WAL until it
// is killed, reporting every operation on stdout before Mutate and again after Mutate returned
// OK (protocol in workload.h). Optionally a maintenance thread runs Flush / CompactMinor /
// MajorCompact in a loop.
//
//   crash_writer <dir> <run id> <seed> <maintenance 0|1> <memstore flush size>
//
// The memstore arena allocates 256 KiB blocks, so a flush size below that flushes after every
// write (flush races at their densest); larger sizes leave acknowledged data in the memstore and
// the log for a while.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "storage/block_cache.h"
#include "storage/region.h"
#include "tests/crash/workload.h"

namespace basalt::crash {
namespace {

// One line, one write(2): a pipe write of at most PIPE_BUF bytes is atomic, so threads never
// interleave inside a line.
void Report(const std::string& line) {
  std::string s = line + "\n";
  if (s.size() > 4000) std::abort();
  const char* p = s.data();
  size_t n = s.size();
  while (n > 0) {
    ssize_t w = ::write(1, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      std::_Exit(5);  // the parent is gone
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

[[noreturn]] void Die(const std::string& what) {
  Report("E " + what);
  std::_Exit(3);
}

struct ColumnKnowledge {
  bool last_was_put = false;
  int64_t ts = 0;
};

void WriterThread(Region* region, int run, int thread, uint64_t seed, std::atomic<bool>* stop) {
  std::mt19937_64 rng(seed * 7919 + static_cast<uint64_t>(thread));
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* families[] = {"a", "b"};
  uint64_t counter = 1;
  // What this run knows of its own columns: "row/family/qualifier" -> last op was a put at ts.
  std::map<std::string, ColumnKnowledge> known;
  for (uint64_t n = 0; !stop->load(std::memory_order_relaxed); ++n) {
    std::vector<RowMutation> batch;
    std::string line = absl::StrCat("B ", thread, " ", n);
    std::vector<std::pair<std::string, int64_t>> puts_made;  // column key, ts
    std::vector<std::string> columns_touched;
    const int dice = uniform(0, 99);
    std::vector<std::string> rows;
    if (dice < 70) {
      // Puts (and sometimes column deletes) on 1-3 own rows, sometimes plus a shared row.
      const int nrows = uniform(1, 3);
      for (int i = 0; i < nrows; ++i) {
        std::string r = ThreadRow(thread, uniform(0, kRowsPerThread - 1));
        if (std::find(rows.begin(), rows.end(), r) == rows.end()) rows.push_back(r);
      }
      if (uniform(0, 4) == 0) rows.push_back(SharedRow(uniform(0, kSharedRows - 1)));
    } else {
      rows.push_back(ThreadRow(thread, uniform(0, kRowsPerThread - 1)));
    }
    std::string body;
    for (const std::string& r : rows) {
      const bool shared = r[0] == 's';
      RowMutation rm;
      rm.row = r;
      std::string muts;
      int count = 0;
      if (!shared && dice >= 70 && dice < 78) {
        // Delete a whole family of the row.
        Mutation m;
        m.kind = Mutation::Kind::kDeleteFamily;
        m.family = families[uniform(0, 1)];
        m.timestamp = MakeTs(run, counter++, thread);
        absl::StrAppend(&muts, " F ", m.family, " - ", m.timestamp, " 0");
        for (int q = 0; q < kQualifiers; ++q) columns_touched.push_back(absl::StrCat(r, "/", m.family, "/q", q));
        rm.mutations.push_back(std::move(m));
        ++count;
      } else {
        // Up to three distinct columns of the row.
        std::vector<std::pair<int, int>> cols;
        const int ncols = uniform(1, 3);
        for (int i = 0; i < ncols; ++i) {
          std::pair<int, int> c{uniform(0, 1), uniform(0, kQualifiers - 1)};
          if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
        }
        for (auto [f, q] : cols) {
          Mutation m;
          m.family = families[f];
          m.qualifier = absl::StrCat("q", q);
          const std::string col = absl::StrCat(r, "/", m.family, "/", m.qualifier);
          int pad = 0;
          char kind = 'P';
          if (!shared && dice >= 78 && dice < 88) {
            kind = 'C';
            m.kind = Mutation::Kind::kDeleteColumn;
            m.timestamp = MakeTs(run, counter++, thread);
            columns_touched.push_back(col);
          } else if (!shared && dice >= 88 && known[col].last_was_put) {
            kind = 'D';
            m.kind = Mutation::Kind::kDelete;
            m.timestamp = known[col].ts;  // exactly the newest version, which this run wrote
            columns_touched.push_back(col);
          } else {
            m.timestamp = MakeTs(run, counter++, thread);
            pad = uniform(0, 3) == 0 ? uniform(100, 400) : uniform(0, 40);
            m.value = ValueOf(m.timestamp, pad);
            if (!shared) puts_made.push_back({col, m.timestamp});
          }
          absl::StrAppend(&muts, " ", std::string(1, kind), " ", m.family, " ", m.qualifier, " ", m.timestamp, " ",
                          pad);
          rm.mutations.push_back(std::move(m));
          ++count;
        }
      }
      absl::StrAppend(&body, " ", r, " ", count, muts);
      batch.push_back(std::move(rm));
    }
    absl::StrAppend(&line, " ", batch.size(), body);
    Report(line);
    absl::Status s = region->Mutate(batch, Durability::kSyncWal);
    if (!s.ok()) Die(absl::StrCat("Mutate of thread ", thread, " op ", n, ": ", s.ToString()));
    Report(absl::StrCat("A ", thread, " ", n));
    for (const auto& c : columns_touched) known[c].last_was_put = false;
    for (const auto& [c, ts] : puts_made) known[c] = ColumnKnowledge{true, ts};
  }
}

void MaintenanceThread(Region* region, uint64_t seed, std::atomic<bool>* stop) {
  std::mt19937_64 rng(seed ^ 0x5eed);
  while (!stop->load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 15)(rng)));
    const int what = std::uniform_int_distribution<int>(0, 9)(rng);
    absl::Status s;
    if (what < 5) {
      s = region->Flush();
    } else if (what < 8) {
      s = region->CompactMinor();
    } else {
      s = region->MajorCompact();
    }
    if (!s.ok()) Die(absl::StrCat("maintenance op ", what, ": ", s.ToString()));
  }
}

int Main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: crash_writer <dir> <run id> <seed> <maintenance 0|1> <flush size>\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int run = std::atoi(argv[2]);
  const uint64_t seed = std::strtoull(argv[3], nullptr, 10);
  const bool maintenance = std::atoi(argv[4]) != 0;
  const uint64_t flush_size = std::strtoull(argv[5], nullptr, 10);

  std::shared_ptr<BlockCache> cache = NewBlockCache(4 << 20);
  RegionOptions options;
  options.block_cache = cache.get();
  options.memstore_flush_size = flush_size;
  auto region = Region::Open(options, Descriptor(), dir);
  if (!region.ok()) Die(absl::StrCat("Open: ", region.status().ToString()));
  Report("O");

  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(WriterThread, region->get(), run, t, seed, &stop);
  if (maintenance) threads.emplace_back(MaintenanceThread, region->get(), seed, &stop);
  // The parent kills us long before this; the limit only keeps an orphan from running forever.
  std::this_thread::sleep_for(std::chrono::seconds(20));
  Die("not killed within 20 s");
}

}  // namespace
}  // namespace basalt::crash

int main(int argc, char** argv) { return basalt::crash::Main(argc, argv); }
