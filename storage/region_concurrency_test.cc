// Region under races the review found: Close against a writer in flight, read-your-writes while
// an older write is still syncing, a read across families during a flush, and log edits of a
// family the descriptor lacks. Slow Envs make each window wide enough to hit every time.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "gtest/gtest.h"
#include "common/env.h"
#include "storage/region.h"
#include "tests/util/temp_dir.h"

namespace basalt {
namespace {

using std::chrono::milliseconds;

// Reads of block files (slow_reads) or syncs of log files (slow_syncs) take 300 ms when armed.
class SlowEnv : public EnvWrapper {
 public:
  SlowEnv() : EnvWrapper(Env::Default()) {}
  std::atomic<bool> slow_read_once{false};
  std::atomic<bool> slow_syncs{false};
  std::atomic<int> slow_syncs_started{0};  // syncs that have begun their 300 ms
  // Once `closed` is set, every file created, synced, replaced or deleted is counted.
  std::atomic<bool> closed{false};
  std::atomic<int> changes_after_close{0};
  void CountChange() {
    if (closed) changes_after_close++;
  }
  absl::Status ReplaceFile(const std::string& from, const std::string& to) override {
    CountChange();
    return target()->ReplaceFile(from, to);
  }
  absl::Status DeleteFile(const std::string& p) override {
    CountChange();
    return target()->DeleteFile(p);
  }
  absl::Status SyncDir(const std::string& d) override {
    CountChange();
    return target()->SyncDir(d);
  }

  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& p) override {
    auto f = target()->NewRandomAccessFile(p);
    if (!f.ok()) return f;
    return std::unique_ptr<RandomAccessFile>(new SlowRead(std::move(*f), this));
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& p) override {
    CountChange();
    auto f = target()->NewWritableFile(p);
    if (!f.ok()) return f;
    return std::unique_ptr<WritableFile>(new SlowSync(std::move(*f), this));
  }

 private:
  class SlowRead : public RandomAccessFile {
   public:
    SlowRead(std::unique_ptr<RandomAccessFile> t, SlowEnv* env) : t_(std::move(t)), env_(env) {}
    absl::StatusOr<std::string_view> Read(uint64_t off, size_t n, char* scratch) const override {
      if (env_->slow_read_once.exchange(false)) std::this_thread::sleep_for(milliseconds(300));
      return t_->Read(off, n, scratch);
    }
    uint64_t Size() const override { return t_->Size(); }
    const std::string& name() const override { return t_->name(); }

   private:
    std::unique_ptr<RandomAccessFile> t_;
    SlowEnv* env_;
  };
  class SlowSync : public WritableFileWrapper {
   public:
    SlowSync(std::unique_ptr<WritableFile> t, SlowEnv* env) : WritableFileWrapper(std::move(t)), env_(env) {}
    absl::Status Sync() override {
      env_->CountChange();
      if (env_->slow_syncs) {
        env_->slow_syncs_started++;
        std::this_thread::sleep_for(milliseconds(300));
      }
      return WritableFileWrapper::Sync();
    }

   private:
    SlowEnv* env_;
  };
};

RegionDescriptor Families(std::initializer_list<const char*> names) {
  RegionDescriptor d{"t,,1", {}, "", ""};
  for (const char* n : names) {
    FamilyOptions f;
    f.name = n;
    d.families.push_back(f);
  }
  return d;
}

// A region on a SlowEnv in a fresh directory.
class RegionRaces : public ::testing::Test {
 protected:
  void Open(std::initializer_list<const char*> families) {
    RegionOptions o;
    o.env = &env_;
    o.background_compaction = false;
    auto r = Region::Open(o, Families(families), dir_.path());
    ASSERT_TRUE(r.ok()) << r.status();
    region_ = std::move(*r);
  }
  testing::TempDir dir_;
  SlowEnv env_;
  std::unique_ptr<Region> region_;
};

Mutation DeleteNewest(const char* family, const char* qualifier) {
  Mutation m;
  m.kind = Mutation::Kind::kDelete;
  m.family = family;
  m.qualifier = qualifier;
  return m;
}

TEST_F(RegionRaces, CloseWaitsForAWriterInFlightAndLaterCallsFailCleanly) {
  Open({"f"});
  auto* r = &region_;
  SlowEnv& env = env_;
  ASSERT_TRUE((*r)->Put("y", "f", "q", "v", 100).ok());
  ASSERT_TRUE((*r)->Flush().ok());
  env.slow_read_once = true;  // the writer's delete-latest lookup reads a block slowly
  absl::Status writer;
  std::thread w([&] { writer = (*r)->Mutate({{"y", {DeleteNewest("f", "q")}}}); });
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_TRUE((*r)->Close().ok());
  w.join();
  // Either the write got in before Close (and Close flushed it) or it was refused: no crash.
  EXPECT_TRUE(writer.ok() || writer.code() == absl::StatusCode::kFailedPrecondition) << writer;
  EXPECT_EQ((*r)->Put("z", "f", "q", "v").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*r)->Flush().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*r)->CompactMinor().code(), absl::StatusCode::kFailedPrecondition);
}

// Close waits for a compaction in progress: once Close returns, nothing writes into the
// region's directory any more (the server drops a table's directory after closing it, and a
// table re-created under the same name must not receive a late manifest).
TEST_F(RegionRaces, CloseWaitsForACompactionInProgress) {
  Open({"f"});
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(region_->Put("r" + std::to_string(i), "f", "q", "v").ok());
    ASSERT_TRUE(region_->Flush().ok());
  }
  env_.slow_syncs = true;  // the compaction's file and manifest syncs take 300 ms each
  absl::Status compacted;
  std::thread c([&] { compacted = region_->MajorCompact(); });
  // Close once the compaction is really under way (its first file sync has begun): a fixed
  // sleep was not always enough on a loaded machine under ASan, and Close then ran first.
  for (int i = 0; i < 10000 && env_.slow_syncs_started.load() == 0; ++i) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_GT(env_.slow_syncs_started.load(), 0) << "the compaction never started writing";
  EXPECT_TRUE(region_->Close().ok());
  env_.closed = true;
  c.join();  // the compaction's call may still be returning (its thread preempted), but it
             // must not touch a file any more
  EXPECT_EQ(env_.changes_after_close.load(), 0) << "the compaction wrote after Close returned";
  env_.closed = false;
  env_.slow_syncs = false;
  EXPECT_TRUE(compacted.ok() || compacted.code() == absl::StatusCode::kFailedPrecondition) << compacted;
}

TEST_F(RegionRaces, AWriteIsVisibleWhenMutateReturnsEvenWithAnOlderOneSyncing) {
  Open({"f"});
  auto* r = &region_;
  SlowEnv& env = env_;
  env.slow_syncs = true;
  std::thread a([&] { EXPECT_TRUE((*r)->Put("x", "f", "q", "vx").ok()); });  // SYNC_WAL, slow fsync
  std::this_thread::sleep_for(milliseconds(100));
  ASSERT_TRUE((*r)->Put("y", "f", "q", "vy", 100, Durability::kAsyncWal).ok());
  auto got = (*r)->Get("y");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 1u) << "Put returned OK but the Get after it does not see it";
  ASSERT_TRUE((*r)->Mutate({{"y", {DeleteNewest("f", "q")}}}, Durability::kAsyncWal).ok());
  a.join();
  env.slow_syncs = false;
  got = (*r)->Get("y");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->empty()) << "the delete of the newest version found nothing to delete";
}

TEST_F(RegionRaces, AReadAcrossFamiliesNeverSeesHalfAMutationDuringAFlush) {
  Open({"a", "b"});
  auto* r = &region_;
  SlowEnv& env = env_;
  auto put_both = [&](const std::string& v) {
    Mutation m;
    m.family = "a";
    m.qualifier = "q";
    m.value = v;
    Mutation n = m;
    n.family = "b";
    return (*r)->Mutate({{"r", {m, n}}});
  };
  ASSERT_TRUE(put_both("1").ok());
  ASSERT_TRUE((*r)->Flush().ok());
  env.slow_read_once = true;  // family a's block read stalls the Get between families
  std::vector<Cell> got;
  std::thread reader([&] {
    ReadSpec spec;
    spec.cache_blocks = false;
    auto cells = (*r)->Get("r", spec);
    ASSERT_TRUE(cells.ok());
    got = *cells;
  });
  std::this_thread::sleep_for(milliseconds(100));
  ASSERT_TRUE(put_both("2").ok());
  ASSERT_TRUE((*r)->Flush().ok());
  reader.join();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].value, got[1].value) << "a=" << got[0].value << " b=" << got[1].value;
}

TEST(RegionReplay, LogEditsOfAFamilyTheDescriptorLacksRefuseToOpen) {
  testing::TempDir dir;
  std::string crashed = dir.path() + "/crashed";
  {
    auto r = Region::Open(RegionOptions{}, Families({"a", "b"}), dir.path() + "/live");
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE((*r)->Put("row", "b", "q", "acked").ok());
    std::filesystem::copy(dir.path() + "/live", crashed, std::filesystem::copy_options::recursive);  // a crash
  }
  auto a_only = Region::Open(RegionOptions{}, Families({"a"}), crashed);
  EXPECT_EQ(a_only.status().code(), absl::StatusCode::kFailedPrecondition) << a_only.status();
  auto both = Region::Open(RegionOptions{}, Families({"a", "b"}), crashed);
  ASSERT_TRUE(both.ok()) << both.status();
  auto got = (*both)->Get("row");
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].value, "acked");
}

// A family dropped from the descriptor (a modify of the table) takes its cells with it: opened
// without it, its block files go aside to lost+found/; opened with it again, it starts empty
// (as HBase's). The other family keeps its cells, and a reopen changes nothing more.
TEST(RegionReplay, AFamilyDroppedFromTheDescriptorIsEmptyWhenAddedAgain) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/r";
  {
    auto r = Region::Open(RegionOptions{}, Families({"a", "b"}), path);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE((*r)->Put("row", "a", "q", "kept").ok());
    ASSERT_TRUE((*r)->Put("row", "b", "q", "dropped").ok());
    ASSERT_TRUE((*r)->Flush().ok());
    ASSERT_TRUE((*r)->Put("row2", "b", "q", "dropped too").ok());
    ASSERT_TRUE((*r)->Close().ok());  // flushes: b has two block files
  }
  auto aside = [&] {
    std::vector<std::string> names;
    if (!std::filesystem::exists(path + "/lost+found")) return names;
    for (const auto& e : std::filesystem::directory_iterator(path + "/lost+found")) {
      names.push_back(e.path().filename().string());
    }
    return names;
  };
  for (int open = 0; open < 2; ++open) {
    auto a_only = Region::Open(RegionOptions{}, Families({"a"}), path);
    ASSERT_TRUE(a_only.ok()) << a_only.status();
    auto got = (*a_only)->Get("row");
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), 1u);
    EXPECT_EQ((*got)[0].value, "kept");
    ASSERT_TRUE((*a_only)->Close().ok());
    EXPECT_EQ(aside().size(), 2u) << "open " << open;  // b's two files, once
  }
  auto both = Region::Open(RegionOptions{}, Families({"a", "b"}), path);
  ASSERT_TRUE(both.ok()) << both.status();
  for (const char* row : {"row", "row2"}) {
    ReadSpec spec;
    spec.columns.push_back({"b", {}});
    auto got = (*both)->Get(row, spec);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(got->empty()) << row << ": a cell of the dropped family came back";
  }
  auto a = (*both)->Get("row");
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 1u);
  EXPECT_EQ((*a)[0].value, "kept");
}

// Read-modify-write under the row lock: concurrent counters never lose an update, and an error
// from the update function writes nothing.
TEST_F(RegionRaces, MutateRowWithIsAtomicAgainstConcurrentUpdates) {
  Open({"f"});
  ReadSpec spec;
  spec.columns.push_back({"f", {"n"}});
  auto bump = [](const RowResult& cur, std::vector<Mutation>* out) -> absl::Status {
    int v = cur.empty() ? 0 : std::stoi(std::string(cur.cells()[0].value));
    Mutation m;
    m.family = "f";
    m.qualifier = "n";
    m.value = std::to_string(v + 1);
    out->push_back(std::move(m));
    return absl::OkStatus();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) ASSERT_TRUE(region_->MutateRowWith("r", spec, bump, Durability::kAsyncWal).ok());
    });
  }
  for (auto& t : threads) t.join();
  auto got = region_->Get("r", spec);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].value, "400");

  absl::Status s = region_->MutateRowWith(
      "r", spec, [](const RowResult&, std::vector<Mutation>* out) {
        out->push_back(Mutation{Mutation::Kind::kPut, "f", "n", kLatestTimestamp, "x"});
        return absl::FailedPreconditionError("changed my mind");
      });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*region_->Get("r", spec))[0].value, "400");
  // Mutations the function produces are validated like any other.
  s = region_->MutateRowWith("r", spec, [](const RowResult&, std::vector<Mutation>* out) {
    out->push_back(Mutation{Mutation::Kind::kPut, "nope", "n", kLatestTimestamp, "x"});
    return absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace basalt
