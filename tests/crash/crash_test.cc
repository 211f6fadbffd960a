// Crash test (docs/DESIGN.md, §8): a writer process (crash_writer) writes to a Region with SYNC_WAL
// from several threads while flushes and compactions run; we SIGKILL it at a random moment,
// reopen the region ourselves and check that every acknowledged write is there and that nothing
// that was never written appears. Many kill cycles run on the same directory, some without a
// check in between, so recovery of a recovered region (old log segments, truncated tails, files
// half-written by a killed flush or compaction) is exercised too.
//
// The checker models each row as a set of possible states: an acknowledged operation applies to
// every state, an operation that was begun but not acknowledged when the kill came may or may
// not have happened (each row of it atomically). After a check the observed state is the only one.
//
// BASALT_CRASH_SEED=<n> replays a run.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "common/status.h"
#include "storage/block_cache.h"
#include "storage/region.h"
#include "tests/crash/workload.h"
#include "tests/util/child_process.h"
#include "tests/util/temp_dir.h"

namespace basalt::crash {
namespace {

// A row's visible contents: "family/qualifier" -> (timestamp, value).
using RowState = std::map<std::string, std::pair<int64_t, std::string>>;

std::string Describe(const RowState& s) {
  std::string out = "{";
  for (const auto& [col, tv] : s) absl::StrAppend(&out, " ", col, "@", tv.first, "=", tv.second.substr(0, 24));
  return out + " }";
}

struct Mut {
  char kind;
  std::string family, qualifier;
  int64_t ts;
  int pad;
};
struct RowOp {
  std::string row;
  std::vector<Mut> muts;
};
struct Op {
  int thread;
  uint64_t n;
  std::vector<RowOp> rows;
  bool acked = false;
};

RowState Apply(const RowOp& op, RowState s) {
  for (const Mut& m : op.muts) {
    const std::string col = m.family + "/" + m.qualifier;
    switch (m.kind) {
      case 'P': {
        auto it = s.find(col);
        if (it == s.end() || it->second.first < m.ts) s[col] = {m.ts, ValueOf(m.ts, m.pad)};
        break;
      }
      case 'C': {
        auto it = s.find(col);
        if (it != s.end() && it->second.first <= m.ts) s.erase(it);
        break;
      }
      case 'D': {
        auto it = s.find(col);
        if (it != s.end() && it->second.first == m.ts) s.erase(it);
        break;
      }
      case 'F':
        for (auto it = s.begin(); it != s.end();) {
          if (it->first.compare(0, m.family.size() + 1, m.family + "/") == 0 && it->second.first <= m.ts) {
            it = s.erase(it);
          } else {
            ++it;
          }
        }
        break;
    }
  }
  return s;
}

// Parses the writer's report. Only complete lines count.
struct Report {
  bool opened = false;
  std::vector<Op> ops;  // in the order they were begun
  std::string error;
  size_t acked = 0;
};

Report ParseReport(const std::string& out) {
  Report r;
  std::map<std::pair<int, uint64_t>, size_t> index;
  size_t pos = 0;
  while (true) {
    size_t nl = out.find('\n', pos);
    if (nl == std::string::npos) break;  // a cut last line: not a report
    std::string line = out.substr(pos, nl - pos);
    pos = nl + 1;
    std::istringstream in(line);
    std::string tag;
    in >> tag;
    if (tag == "O") {
      r.opened = true;
    } else if (tag == "E") {
      r.error = line;
    } else if (tag == "B") {
      Op op;
      size_t nrows = 0;
      in >> op.thread >> op.n >> nrows;
      for (size_t i = 0; i < nrows; ++i) {
        RowOp ro;
        size_t nm = 0;
        in >> ro.row >> nm;
        for (size_t j = 0; j < nm; ++j) {
          Mut m;
          std::string kind;
          in >> kind >> m.family >> m.qualifier >> m.ts >> m.pad;
          m.kind = kind.empty() ? '?' : kind[0];
          ro.muts.push_back(m);
        }
        op.rows.push_back(std::move(ro));
      }
      EXPECT_FALSE(in.fail()) << "unparsable report line: " << line;
      index[{op.thread, op.n}] = r.ops.size();
      r.ops.push_back(std::move(op));
    } else if (tag == "A") {
      int t;
      uint64_t n;
      in >> t >> n;
      auto it = index.find({t, n});
      EXPECT_TRUE(it != index.end()) << "ack without begin: " << line;
      if (it != index.end()) {
        r.ops[it->second].acked = true;
        ++r.acked;
      }
    } else {
      ADD_FAILURE() << "unknown report line: " << line;
    }
  }
  return r;
}

struct RunResult {
  std::string output;
  bool killed_by_us = false;
  int exit_code = 0;  // -signal if one ended it
};

// Starts crash_writer, lets it run for kill_after_ms, SIGKILLs it, collects its report.
RunResult RunWriter(const std::string& dir, int run, uint64_t seed, bool maintenance, uint64_t flush_size,
                    int kill_after_ms) {
  RunResult res;
  testing::ChildProcess::Output output;
  output.pipe = true;
  output.keep_stderr = true;
  absl::StatusOr<std::unique_ptr<testing::ChildProcess>> spawned = testing::ChildProcess::Spawn(
      {CRASH_WRITER, dir, std::to_string(run), std::to_string(seed), maintenance ? "1" : "0", std::to_string(flush_size)},
      output);
  if (!spawned.ok()) {
    ADD_FAILURE() << spawned.status();
    return res;
  }
  testing::ChildProcess& writer = **spawned;
  // Drain the pipe while the writer runs (it blocks when the pipe is full), then kill it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kill_after_ms);
  char buf[65536];
  bool eof = false;
  bool killed = false;
  while (!eof) {
    int timeout = -1;
    if (!killed) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        writer.Signal(SIGKILL);
        killed = true;
      } else {
        timeout = static_cast<int>(left.count());
      }
    }
    pollfd p{writer.read_fd(), POLLIN, 0};
    int pr = ::poll(&p, 1, timeout);
    if (pr < 0 && errno != EINTR) break;
    if (pr <= 0) continue;
    ssize_t n = ::read(writer.read_fd(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof = true;
    } else {
      res.output.append(buf, static_cast<size_t>(n));
    }
  }
  if (!killed) writer.Signal(SIGKILL);  // exited early (EOF before the deadline); reaped below
  res.exit_code = writer.Wait();
  res.killed_by_us = res.exit_code == -SIGKILL;
  return res;
}

class CrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* env = std::getenv("BASALT_CRASH_SEED");
    seed_ = env != nullptr ? std::strtoull(env, nullptr, 10)
                           : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    rng_.seed(seed_);
    std::cout << "BASALT_CRASH_SEED=" << seed_ << "\n";
  }

  void ResetModel() {
    model_.clear();
    for (const auto& r : AllRows()) model_[r] = {RowState{}};
  }

  int KillDelay() {
    // A third of the kills land early: during recovery, the first flushes, or at once.
    if (std::uniform_int_distribution<int>(0, 2)(rng_) == 0) return std::uniform_int_distribution<int>(1, 25)(rng_);
    return std::uniform_int_distribution<int>(25, 300)(rng_);
  }

  // One writer run on dir, killed; folds its report into the model.
  void Cycle(const std::string& dir, bool maintenance) {
    const int run = ++run_;
    const int delay = KillDelay();
    // 24 KiB: a flush after every write (the memstore arena's first block is 256 KiB); 320 KiB:
    // a flush every ~1500 writes, so acknowledged edits live in memstore and log for a while.
    const uint64_t flush_size = std::uniform_int_distribution<int>(0, 2)(rng_) == 0 ? 24 << 10 : 320 << 10;
    RunResult res = RunWriter(dir, run, seed_ + static_cast<uint64_t>(run), maintenance, flush_size, delay);
    Report rep = ParseReport(res.output);
    ASSERT_TRUE(res.killed_by_us) << "writer run " << run << " ended by itself (exit code " << res.exit_code
                                  << "): " << rep.error;
    ASSERT_TRUE(rep.error.empty()) << rep.error;
    ++cycles_;
    total_acked_ += rep.acked;
    total_ops_ += rep.ops.size();
    if (rep.opened) ++opened_;
    for (const Op& op : rep.ops) {
      for (const RowOp& ro : op.rows) {
        auto it = model_.find(ro.row);
        ASSERT_TRUE(it != model_.end()) << ro.row;
        std::set<RowState> next;
        for (const RowState& s : it->second) {
          next.insert(Apply(ro, s));
          if (!op.acked) next.insert(s);  // in flight at the kill: may or may not have happened
        }
        it->second = std::move(next);
      }
    }
    std::cout << "run " << run << (maintenance ? " (flush/compact loop)" : "") << ", flush size " << flush_size
              << ": killed after " << delay
              << " ms, " << rep.ops.size() << " ops begun, " << rep.acked << " acknowledged\n";
  }

  // Opens the region, checks every row against the model (Get and a full Scan), then adopts what
  // it saw as the only state.
  void Verify(const std::string& dir) {
    std::shared_ptr<BlockCache> cache = NewBlockCache(1 << 20);
    RegionOptions options;
    options.block_cache = cache.get();
    options.memstore_flush_size = 24 << 10;
    auto region = Region::Open(options, Descriptor(), dir);
    ASSERT_TRUE(region.ok()) << "reopen after run " << run_ << ": " << region.status();
    ReadSpec spec;
    spec.max_versions = 3;  // the families keep one version: more must never show
    std::map<std::string, RowState> seen;
    int bad = 0;
    for (auto& [row, states] : model_) {
      auto cells = (*region)->Get(row, spec);
      ASSERT_TRUE(cells.ok()) << row << ": " << cells.status();
      RowState got;
      for (const Cell& c : *cells) {
        EXPECT_EQ(c.type, CellType::kPut) << DebugString(c);
        const std::string col = c.family + "/" + c.qualifier;
        EXPECT_EQ(got.count(col), 0u) << "two versions of " << row << " " << col << " (max_versions 1)";
        got[col] = {c.timestamp, c.value};
      }
      if (!states.count(got)) {
        if (++bad <= 5) {
          std::string want;
          for (const auto& s : states) absl::StrAppend(&want, "\n    ", Describe(s));
          ADD_FAILURE() << "after run " << run_ << " row " << row << " reads " << Describe(got)
                        << "\n  expected one of:" << want;
        }
      }
      if (!got.empty()) seen[row] = got;
      states = {got};
    }
    ASSERT_EQ(bad, 0) << bad << " rows differ after run " << run_ << " (seed " << seed_ << ")";
    // A full scan sees exactly the same rows, and no row that was never written.
    ScanSpec scan;
    scan.max_versions = 3;
    scan.cache_blocks = false;
    auto scanner = (*region)->Scan(scan);
    ASSERT_TRUE(scanner.ok()) << scanner.status();
    std::map<std::string, RowState> scanned;
    std::vector<Cell> cells;
    while (true) {
      auto more = (*scanner)->NextRow(&cells);
      ASSERT_TRUE(more.ok()) << more.status();
      if (!*more) break;
      RowState st;
      for (const Cell& c : cells) st[c.family + "/" + c.qualifier] = {c.timestamp, c.value};
      ASSERT_FALSE(cells.empty());
      EXPECT_FALSE(scanned.count(cells[0].row)) << "row twice in a scan: " << cells[0].row;
      scanned[cells[0].row] = st;
    }
    EXPECT_EQ(scanned, seen) << "scan and gets disagree after run " << run_;
    ++verifies_;
    ASSERT_TRUE((*region)->Close().ok());
  }

  void Summary(const char* what) {
    std::cout << what << ": " << cycles_ << " kill cycles (" << opened_ << " after recovery finished), "
              << verifies_ << " checks, " << total_ops_ << " ops begun, " << total_acked_ << " acknowledged\n";
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::map<std::string, std::set<RowState>> model_;
  int run_ = 0;
  int cycles_ = 0, verifies_ = 0, opened_ = 0;
  uint64_t total_ops_ = 0, total_acked_ = 0;
};

TEST_F(CrashTest, KillReopenContinueSameDirectory) {
  testing::TempDir dir;
  ResetModel();
  for (int i = 0; i < 40; ++i) {
    const bool maintenance = std::uniform_int_distribution<int>(0, 1)(rng_) == 1;
    ASSERT_NO_FATAL_FAILURE(Cycle(dir.path(), maintenance));
    // Every third cycle or so the next writer recovers a region nobody checked (or closed)
    // since the last crash: recovery of recovery.
    if (i == 39 || std::uniform_int_distribution<int>(0, 2)(rng_) != 0) {
      ASSERT_NO_FATAL_FAILURE(Verify(dir.path()));
    }
  }
  Summary("same directory");
}

TEST_F(CrashTest, KillDuringFlushAndCompactionLoop) {
  testing::TempDir dir;
  ResetModel();
  for (int i = 0; i < 16; ++i) {
    ASSERT_NO_FATAL_FAILURE(Cycle(dir.path(), /*maintenance=*/true));
    if (i % 2 == 1) {
      ASSERT_NO_FATAL_FAILURE(Verify(dir.path()));
    }
  }
  Summary("flush/compaction loop");
}

TEST_F(CrashTest, FreshDirectories) {
  for (int d = 0; d < 8; ++d) {
    testing::TempDir dir;
    ResetModel();
    const int cycles = 1 + d % 3;
    for (int i = 0; i < cycles; ++i) {
      ASSERT_NO_FATAL_FAILURE(Cycle(dir.path(), d % 2 == 1));
    }
    ASSERT_NO_FATAL_FAILURE(Verify(dir.path()));
  }
  Summary("fresh directories");
}

}  // namespace
}  // namespace basalt::crash
