// The transaction service alone (transactions.h): snapshots, conflicts, timeouts, and its
// state log replayed after a reopen, across checkpoints and a torn tail.
#include "src/transactions/transactions.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/status.h"
#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace basalt::server {
namespace {

class TxManagerTest : public ::testing::Test {
 protected:
  std::unique_ptr<TransactionManager> Open(uint64_t checkpoint_bytes = 4 << 20, int per_owner = 1000) {
    TransactionManager::Options o;
    o.dir = dir_.path() + "/tx";
    o.checkpoint_bytes = checkpoint_bytes;
    o.max_in_progress_per_owner = per_owner;
    o.now_ms = [this] { return now_.load(); };
    auto m = TransactionManager::Open(o);
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? std::move(*m) : nullptr;
  }
  static bool Excludes(const TxSnapshot& s, int64_t wp) {
    return std::binary_search(s.excluded.begin(), s.excluded.end(), wp);
  }
  basalt::testing::TempDir dir_;
  std::atomic<int64_t> now_{1700000000000};
};

TEST_F(TxManagerTest, SnapshotsExcludeWhatWasInProgress) {
  auto m = Open();
  TxSnapshot a = *m->Start(0);
  TxSnapshot b = *m->Start(0);
  EXPECT_GT(b.write_pointer, a.write_pointer);
  EXPECT_TRUE(Excludes(b, a.write_pointer));
  EXPECT_TRUE(b.Visible(b.write_pointer));   // its own
  EXPECT_FALSE(b.Visible(a.write_pointer));  // in progress when it started
  EXPECT_FALSE(a.Visible(b.write_pointer));  // started after it
  ASSERT_TRUE(m->Commit(a.write_pointer, {1}).ok());
  EXPECT_FALSE(b.Visible(a.write_pointer));  // still: snapshots do not move
  TxSnapshot c = *m->Start(0);
  EXPECT_TRUE(c.Visible(a.write_pointer));
  EXPECT_FALSE(c.Visible(b.write_pointer));
  TxSnapshot outside = m->ReadSnapshot();
  EXPECT_EQ(outside.write_pointer, 0);
  EXPECT_TRUE(outside.Visible(a.write_pointer));
  EXPECT_FALSE(outside.Visible(b.write_pointer));
}

// A transaction belongs to the user who started it (docs/DESIGN.md §12): another user's commit, abort or
// invalidate is refused (an abort by another used to take it out of the in-progress list
// without invalidating it, showing its half-written cells), a user with global A may end it,
// and the owner survives a reopen and a checkpoint.
TEST_F(TxManagerTest, OnlyItsOwnerOrAnAdminEndsATransactionAcrossReopens) {
  const TxCaller alice{"alice", false}, bob{"bob", false}, admin{"root", true};
  int64_t a, b, c;
  {
    auto m = Open();
    a = m->Start(0, "alice")->write_pointer;
    b = m->Start(0, "alice")->write_pointer;
    c = m->Start(0, "alice")->write_pointer;
    EXPECT_EQ(m->Commit(a, {1}, bob).code(), absl::StatusCode::kPermissionDenied);
    absl::Status s = m->Abort(a, bob);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
    EXPECT_NE(s.message().find("user 'bob' may not abort transaction"), std::string::npos) << s;
    EXPECT_EQ(m->Invalidate(a, bob).code(), absl::StatusCode::kPermissionDenied);
    EXPECT_TRUE(Excludes(m->ReadSnapshot(), a)) << "still in progress, still hidden";
    ASSERT_TRUE(m->Commit(a, {1}, alice).ok());
  }
  {
    auto m = Open();  // the owners replayed from the log's start records
    EXPECT_EQ(m->Abort(b, bob).code(), absl::StatusCode::kPermissionDenied);
    ASSERT_TRUE(m->Invalidate(b, admin).ok());
  }
  auto m = Open();  // (each reopen starts the log afresh from a checkpoint: owners kept through it)
  EXPECT_EQ(m->Commit(c, {}, bob).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(m->Commit(c, {}, alice).ok());
  // With authentication off every caller is "" and may end any: as before owners.
  TxSnapshot d = *m->Start(0);
  EXPECT_TRUE(m->Abort(d.write_pointer).ok());
}

// A region server asks before a transactional write: the write pointer is the client's word.
TEST_F(TxManagerTest, OnlyTheOwnerWritesInATransactionInProgressAndNobodyInOneOver) {
  const TxCaller alice{"alice", false}, bob{"bob", false}, admin{"root", true};
  auto m = Open();
  const int64_t a = m->Start(0, "alice")->write_pointer;
  EXPECT_TRUE(m->CheckWriter(a, alice).ok());
  EXPECT_TRUE(m->CheckWriter(a, admin).ok());
  absl::Status s = m->CheckWriter(a, bob);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find("user 'bob' may not write in transaction"), std::string::npos) << s;
  // Committed or aborted: a write would show at once (its pointer is below later read
  // pointers and excluded by none): refused to everyone, the owner too.
  ASSERT_TRUE(m->Commit(a, {1}, alice).ok());
  EXPECT_EQ(m->CheckWriter(a, alice).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(m->CheckWriter(a, admin).code(), absl::StatusCode::kFailedPrecondition);
  const int64_t b = m->Start(0, "alice")->write_pointer;
  ASSERT_TRUE(m->Abort(b, alice).ok());
  EXPECT_EQ(m->CheckWriter(b, alice).code(), absl::StatusCode::kFailedPrecondition);
  // Never started (a pointer from the future would show once the read pointers pass it).
  EXPECT_EQ(m->CheckWriter(b + 1000, admin).code(), absl::StatusCode::kFailedPrecondition);
  // Invalid: its writes are never seen, so a rollback after a time-out may still run.
  const int64_t c = m->Start(0, "alice")->write_pointer;
  ASSERT_TRUE(m->Invalidate(c, alice).ok());
  EXPECT_TRUE(m->CheckWriter(c, alice).ok());
}

// One user cannot fill the in-progress list that every snapshot copies (docs/DESIGN.md §12).
TEST_F(TxManagerTest, AUserMayHaveAtMostItsCapInProgress) {
  auto m = Open(4 << 20, /*per_owner=*/3);
  std::vector<int64_t> mine;
  for (int i = 0; i < 3; ++i) mine.push_back(m->Start(0, "mallory")->write_pointer);
  absl::StatusOr<TxSnapshot> more = m->Start(0, "mallory");
  EXPECT_EQ(more.status().code(), absl::StatusCode::kResourceExhausted) << more.status();
  EXPECT_TRUE(m->Start(0, "alice").ok()) << "another user is not held back";
  EXPECT_TRUE(m->Start(0).ok()) << "nor a transaction without an owner (auth off)";
  ASSERT_TRUE(m->Abort(mine[0], TxCaller{"mallory", false}).ok());
  EXPECT_TRUE(m->Start(0, "mallory").ok()) << "one ended, one more may start";
}

TEST_F(TxManagerTest, FirstCommitterWins) {
  auto m = Open();
  TxSnapshot a = *m->Start(0), b = *m->Start(0);
  ASSERT_TRUE(m->Commit(b.write_pointer, {7, 8}).ok());
  absl::Status s = m->Commit(a.write_pointer, {8, 9});
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  // The loser is still in progress until it aborts; then it is over.
  ASSERT_TRUE(m->Abort(a.write_pointer).ok());
  EXPECT_EQ(m->Commit(a.write_pointer, {}).code(), absl::StatusCode::kFailedPrecondition);
  // Disjoint change sets, and a transaction that started after the commit, do not conflict.
  TxSnapshot c = *m->Start(0), d = *m->Start(0);
  ASSERT_TRUE(m->Commit(c.write_pointer, {8}).ok());
  EXPECT_TRUE(m->Commit(d.write_pointer, {9}).ok());
  TxSnapshot e = *m->Start(0);
  EXPECT_TRUE(m->Commit(e.write_pointer, {8}).ok());
  // Nothing in progress: no change set is kept.
  EXPECT_EQ(m->GetStats().change_sets, 0u);
  EXPECT_EQ(m->GetStats().conflicts, 1u);
}

// An Env whose log syncs wait while `hold` is set: a commit caught between taking its commit
// pointer and its record becoming durable.
class HeldSyncs : public EnvWrapper {
 public:
  HeldSyncs() : EnvWrapper(Env::Default()) {}
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& p) override {
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f, target()->NewWritableFile(p));
    return std::unique_ptr<WritableFile>(new File(std::move(f), this));
  }
  std::atomic<bool> hold{false};
  std::atomic<int> held{0};

 private:
  class File : public WritableFileWrapper {
   public:
    File(std::unique_ptr<WritableFile> f, HeldSyncs* env) : WritableFileWrapper(std::move(f)), env_(env) {}
    absl::Status Sync() override {
      if (env_->hold.load()) {
        ++env_->held;
        while (env_->hold.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      return WritableFileWrapper::Sync();
    }

   private:
    HeldSyncs* env_;
  };
};

TEST_F(TxManagerTest, ATransactionStartedDuringACommitConflictsWithIt) {
  // The queue test's duplicate: B starts while A's commit record is being written, so B's
  // snapshot does not see A, yet A's commit pointer is below B's write pointer.
  HeldSyncs env;
  TransactionManager::Options o;
  o.env = &env;
  o.dir = dir_.path() + "/tx";
  auto m = *TransactionManager::Open(o);
  TxSnapshot a = *m->Start(0);
  env.hold = true;
  std::thread committer([&] { EXPECT_TRUE(m->Commit(a.write_pointer, {5}).ok()); });
  while (env.held.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Start's own record waits for the same sync: start it on another thread, then let both go.
  absl::StatusOr<TxSnapshot> b;
  std::thread starter([&] { b = m->Start(0); });
  // B has its pointer and snapshot (it counts as started) and waits for its record's sync.
  while (m->GetStats().started < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  env.hold = false;
  committer.join();
  starter.join();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_FALSE(b->Visible(a.write_pointer));  // A was not durable when B started
  EXPECT_GT(b->write_pointer, a.write_pointer);
  EXPECT_EQ(m->Commit(b->write_pointer, {5}).code(), absl::StatusCode::kAborted);
}

TEST_F(TxManagerTest, TimeoutMakesATransactionInvalid) {
  auto m = Open();
  TxSnapshot a = *m->Start(1000);
  now_ += 1001;
  absl::Status s = m->Commit(a.write_pointer, {1});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("invalid"), std::string::npos) << s;
  TxSnapshot b = *m->Start(0);
  EXPECT_TRUE(Excludes(b, a.write_pointer));
  EXPECT_EQ(m->GetStats().timed_out, 1u);
  EXPECT_TRUE(m->Abort(a.write_pointer).ok());  // invalid either way
  EXPECT_EQ(m->Start(-1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TxManagerTest, StateSurvivesReopenAcrossCheckpoints) {
  int64_t committed, in_progress, invalid, loser, last;
  {
    // A tiny checkpoint size: the log is compacted many times over.
    auto m = Open(/*checkpoint_bytes=*/64);
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(m->Commit(m->Start(0)->write_pointer, {100u + i}).ok());
    TxSnapshot l = *m->Start(0);
    loser = l.write_pointer;
    TxSnapshot w = *m->Start(0);
    ASSERT_TRUE(m->Commit(w.write_pointer, {42}).ok());
    committed = w.write_pointer;
    in_progress = m->Start(60000)->write_pointer;
    TxSnapshot inv = *m->Start(0);
    invalid = inv.write_pointer;
    ASSERT_TRUE(m->Invalidate(invalid).ok());
    last = m->GetStats().last_write_pointer;
  }
  auto m = Open();
  ASSERT_NE(m, nullptr);
  TransactionManager::Stats st = m->GetStats();
  EXPECT_GE(st.last_write_pointer, last);
  EXPECT_EQ(st.in_progress, 2u);  // the loser and in_progress
  EXPECT_EQ(st.invalid, 1u);
  TxSnapshot s = *m->Start(0);
  EXPECT_GT(s.write_pointer, last);
  EXPECT_TRUE(s.Visible(committed));
  EXPECT_FALSE(s.Visible(in_progress));
  EXPECT_FALSE(s.Visible(invalid));
  // The change set that beats the loser was kept.
  EXPECT_EQ(m->Commit(loser, {42}).code(), absl::StatusCode::kAborted);
  // One that started after the winner committed does not conflict with it.
  EXPECT_TRUE(m->Commit(in_progress, {42}).ok());
}

TEST_F(TxManagerTest, ATornTailIsCutAndDamageRefusesToOpen) {
  int64_t wp;
  {
    auto m = Open();
    wp = m->Start(0)->write_pointer;
  }
  // A crash mid-append: a partial frame at the end of the newest segment.
  Env* env = Env::Default();
  auto names = env->ListDir(dir_.path() + "/tx");
  ASSERT_TRUE(names.ok());
  std::string newest;
  for (const std::string& n : *names) {
    if (n.size() > 4 && n.substr(n.size() - 4) == ".wal" && n > newest) newest = n;
  }
  ASSERT_FALSE(newest.empty());
  {
    std::ofstream f(dir_.path() + "/tx/" + newest, std::ios::app | std::ios::binary);
    f.write("\x30\x00\x00\x00\x01\x02", 6);
  }
  {
    auto m = Open();
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->GetStats().in_progress, 1u);
    ASSERT_TRUE(m->Commit(wp, {1}).ok());
  }
  // Damage inside a record: DataLoss, and the service does not start.
  names = env->ListDir(dir_.path() + "/tx");
  ASSERT_TRUE(names.ok());
  for (const std::string& n : *names) {
    if (n.size() <= 4 || n.substr(n.size() - 4) != ".wal") continue;
    const std::string path = dir_.path() + "/tx/" + n;
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const auto size = static_cast<int64_t>(f.tellg());
    if (size < 40) continue;
    f.seekp(size - 3);
    f.put('\x5a');
  }
  TransactionManager::Options o;
  o.dir = dir_.path() + "/tx";
  auto damaged = TransactionManager::Open(o);
  EXPECT_EQ(damaged.status().code(), absl::StatusCode::kDataLoss) << damaged.status();
}

TEST_F(TxManagerTest, ConcurrentTransactionsGetUniquePointers) {
  auto m = Open(/*checkpoint_bytes=*/256);
  std::vector<std::thread> threads;
  std::vector<std::vector<int64_t>> got(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        absl::StatusOr<TxSnapshot> s = m->Start(0);
        ASSERT_TRUE(s.ok()) << s.status();
        got[t].push_back(s->write_pointer);
        // Each thread writes its own cells: never a conflict.
        ASSERT_TRUE(m->Commit(s->write_pointer, {static_cast<uint64_t>(t * 1000 + i)}).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<int64_t> all;
  for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_EQ(m->GetStats().committed, 400u);
  EXPECT_EQ(m->GetStats().in_progress, 0u);
}

}  // namespace
}  // namespace basalt::server
