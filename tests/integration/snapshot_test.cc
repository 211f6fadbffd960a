// Snapshots, clones and restores against a real server (docs/DESIGN.md §16), on local disk and
// with every file on Ceph RADOS (the tests' cluster, tests/services/):
// - the cut: under concurrent writers, every write acknowledged before the Snapshot call began
//   is in it and none begun after it returned is; each writer's rows in it are a prefix of what
//   it wrote. A clone and a restore after the table was split, compacted, merged and dropped
//   give back exactly those rows (one digest of the ordered scan);
// - a server killed at each step of a snapshot, a clone and a restore: after a restart the
//   operation is done or undone, a retry works, and no name of a block file is left that no
//   table or listed snapshot owns (on local disk every file's link count is the number of names
//   found for it, and none is under an unlisted snapshot, a table not in the catalogue, or
//   lost+found).
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "absl/synchronization/mutex.h"
#include "common/test_services.h"
#include "tests/integration/integration_util.h"

namespace basalt::testing {
namespace {

using Rows = std::map<std::string, std::string>;

class Snapshots : public ServerTest, public ::testing::WithParamInterface<std::string> {
 protected:
  bool local() const { return GetParam() == "local"; }
  std::vector<std::string> Args() {
    if (local()) return {};
    const std::string conf = TestCephConf();
    EXPECT_FALSE(conf.empty()) << kTestServicesHelp;
    return {"--rados_pool=basalt", absl::StrCat("--ceph_conf=", conf),
            absl::StrCat("--rados_namespace=snapshots-", ::getpid(), "-", ::testing::UnitTest::GetInstance()->random_seed()),
            "--rados_object_size=64KiB"};
  }
  // (Re)starts the server on the same data, killing itself at `fault_point` when one is given.
  void Restart(const std::string& fault_point = "") {
    if (server_ != nullptr) server_->Kill();
    server_ = std::make_unique<ServerProcess>(BASALT_SERVER_BINARY, dir_.path() + "/data", Args());
    if (!fault_point.empty()) server_->set_launcher({"env", "BASALT_FAULT_POINT=" + fault_point});
    absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
    Connect(fault_point.empty() ? absl::Seconds(20) : absl::Seconds(3));
  }
  Rows Scan(const std::string& table) {
    Rows rows;
    auto sc = conn_->GetTable(table)->GetScanner(basalt::Scan());
    EXPECT_TRUE(sc.ok()) << sc.status();
    if (!sc.ok()) return rows;
    Result r;
    for (;;) {
      auto more = (*sc)->Next(&r);
      EXPECT_TRUE(more.ok()) << more.status();
      if (!more.ok() || !*more) break;
      rows[r.row()] = std::string(r.Value("cf", "q").value_or(""));
    }
    return rows;
  }
  // FNV-1a over the ordered scan: the figure the note quotes for "the same rows".
  static uint64_t Digest(const Rows& rows) {
    uint64_t h = 1469598103934665603ull;
    for (const auto& [k, v] : rows) {
      for (char c : absl::StrCat(k, "=", v, ";")) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    }
    return h;
  }
  void Load(const std::string& table, int from, int to, const std::string& value) {
    std::vector<RowMutationsBase> batch;
    for (int i = from; i < to; ++i) batch.push_back(Put(absl::StrFormat("r%05d", i)).Add("cf", "q", value));
    auto st = conn_->GetTable(table)->Batch(batch);
    ASSERT_TRUE(st.ok()) << st.status();
    for (const absl::Status& s : *st) ASSERT_TRUE(s.ok()) << s;
  }
  absl::Status Restore(const std::string& table, const std::string& snapshot) {
    BASALT_RETURN_IF_ERROR(conn_->GetAdmin()->DisableTable(table));
    BASALT_RETURN_IF_ERROR(conn_->GetAdmin()->RestoreSnapshot(snapshot));
    return conn_->GetAdmin()->EnableTable(table);
  }

  // Names of block files no catalogued table or listed snapshot owns (local disk only; see the
  // top of the file). Each is described in `problems`.
  size_t OrphanPins(std::vector<std::string>* problems) {
    if (!local()) return 0;
    auto listed = conn_->GetAdmin()->ListSnapshots();
    EXPECT_TRUE(listed.ok()) << listed.status();
    std::set<std::string> snapshots, tables;
    for (const SnapshotDescription& d : listed.value_or(std::vector<SnapshotDescription>{})) snapshots.insert(d.name);
    auto list = conn_->GetAdmin()->ListTables();
    EXPECT_TRUE(list.ok()) << list.status();
    for (const TableInfo& t : list.value_or(std::vector<TableInfo>{})) tables.insert(t.name);
    const std::filesystem::path data = dir_.path() + "/data";
    std::map<ino_t, std::pair<nlink_t, std::vector<std::string>>> inodes;
    for (const auto& e : std::filesystem::recursive_directory_iterator(data)) {
      if (!e.is_regular_file() || e.path().extension() != ".blk") continue;
      struct stat st;
      if (::stat(e.path().c_str(), &st) != 0) continue;
      auto& [links, names] = inodes[st.st_ino];
      links = st.st_nlink;
      names.push_back(std::filesystem::relative(e.path(), data).string());
    }
    size_t orphans = 0;
    for (const auto& [ino, entry] : inodes) {
      const auto& [links, names] = entry;
      if (links != names.size()) {
        ++orphans;
        problems->push_back(absl::StrCat(names[0], " has ", links, " links but ", names.size(), " names here"));
      }
      for (const std::string& n : names) {
        const std::filesystem::path p(n);
        const std::string top = p.begin()->string();
        const std::string owner = std::next(p.begin())->string();
        const bool owned = (top == "snapshots" && snapshots.count(owner)) || (top == "tables" && tables.count(owner));
        if (!owned) {
          ++orphans;
          problems->push_back(absl::StrCat(n, " is owned by no listed snapshot or table"));
        }
      }
    }
    return orphans;
  }
  void ExpectNoOrphanPins() {
    std::vector<std::string> problems;
    EXPECT_EQ(OrphanPins(&problems), 0u) << absl::StrJoin(problems, "\n");
  }
};

// A writer's rows: "w<writer>-<seq>", written one at a time, each with when its call began and
// whether and when it was acknowledged.
struct Write {
  absl::Time began, acked = absl::InfiniteFuture();
};

TEST_P(Snapshots, TheCutHoldsEveryWriteAckedBeforeAndNoneBegunAfterThroughCloneAndRestore) {
  Restart();
  CreateTable("t", {"cf"}, {"w1", "w2", "w3"});
  constexpr int kWriters = 4;
  std::vector<std::vector<Write>> writes(kWriters);
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      auto t = conn_->GetTable("t");
      for (int seq = 0; !stop.load(); ++seq) {
        Write x;
        x.began = absl::Now();
        const bool ok = t->Put(Put(absl::StrFormat("w%d-%06d", w, seq)).Add("cf", "q", "v")).ok();
        if (ok) x.acked = absl::Now();
        writes[w].push_back(x);
        if (!ok) break;
      }
    });
  }
  absl::SleepFor(absl::Milliseconds(400));
  const absl::Time began = absl::Now();
  absl::StatusOr<SnapshotDescription> taken = conn_->GetAdmin()->Snapshot("t", "s1");
  const absl::Time returned = absl::Now();
  ASSERT_TRUE(taken.ok()) << taken.status();
  absl::SleepFor(absl::Milliseconds(300));
  stop = true;
  for (std::thread& th : writers) th.join();
  EXPECT_EQ(taken->regions, 4u);

  // The table changes every way after it, then goes.
  ASSERT_TRUE(conn_->GetAdmin()->Split("t", "w1-000010").ok());
  ASSERT_TRUE(conn_->GetAdmin()->MajorCompact("t").ok());
  auto regions = conn_->GetAdmin()->ListRegions("t");
  ASSERT_TRUE(regions.ok() && regions->size() == 5u);
  ASSERT_TRUE(conn_->GetAdmin()->MergeRegions((*regions)[3].encoded_name, (*regions)[4].encoded_name).ok());
  ASSERT_TRUE(conn_->GetAdmin()->DisableTable("t").ok());
  ASSERT_TRUE(conn_->GetAdmin()->DropTable("t").ok());

  ASSERT_TRUE(conn_->GetAdmin()->CloneSnapshot("s1", "c1").ok());
  const Rows cloned = Scan("c1");
  size_t before = 0, after = 0, between = 0;
  for (int w = 0; w < kWriters; ++w) {
    bool gap = false;
    for (size_t seq = 0; seq < writes[w].size(); ++seq) {
      const Write& x = writes[w][seq];
      const bool in = cloned.count(absl::StrFormat("w%d-%06d", w, seq)) > 0;
      if (x.acked < began) {
        ++before;
        EXPECT_TRUE(in) << "w" << w << "-" << seq << " was acknowledged before the snapshot began";
      } else if (x.began > returned) {
        ++after;
        EXPECT_FALSE(in) << "w" << w << "-" << seq << " began after the snapshot returned";
      } else {
        ++between;
      }
      if (!in) gap = true;
      EXPECT_FALSE(in && gap) << "w" << w << "-" << seq << " is in it but an earlier write of its writer is not";
    }
  }
  EXPECT_GT(before, 0u);
  EXPECT_GT(after, 0u);
  std::printf("cut: %zu writes acknowledged before, %zu begun after, %zu during; %zu rows, digest %016llx\n", before,
              after, between, cloned.size(), static_cast<unsigned long long>(Digest(cloned)));
  for (const auto& [row, value] : cloned) ASSERT_TRUE(row.starts_with("w")) << row;

  // Restore of the dropped table (a clone under its own name), then of a disabled one.
  ASSERT_TRUE(conn_->GetAdmin()->RestoreSnapshot("s1").ok());
  EXPECT_EQ(Digest(Scan("t")), Digest(cloned));
  Load("t", 0, 100, "later");
  ASSERT_TRUE(Restore("t", "s1").ok());
  EXPECT_EQ(Scan("t"), cloned);
  // The clone's writes never reach the snapshot.
  Load("c1", 0, 100, "clone");
  ASSERT_TRUE(conn_->GetAdmin()->CloneSnapshot("s1", "c2").ok());
  EXPECT_EQ(Scan("c2"), cloned);
  ExpectNoOrphanPins();
}

TEST_P(Snapshots, AKillAtEachStepLeavesItDoneOrUndoneAndARetryWorks) {
  Restart();
  CreateTable("t", {"cf"}, {"r00100"});
  Load("t", 0, 200, "base");
  ASSERT_TRUE(conn_->GetAdmin()->Snapshot("t", "base").ok());
  const Rows base = Scan("t");
  Load("t", 0, 50, "changed");
  ASSERT_TRUE(conn_->GetAdmin()->Flush("t").ok());
  const Rows changed = Scan("t");
  ASSERT_NE(changed, base);

  // A snapshot killed before its manifest: gone after the restart, and taken again.
  Restart("snapshot:regions-linked");
  EXPECT_FALSE(conn_->GetAdmin()->Snapshot("t", "s2").ok()) << "the server did not stop";
  Restart();
  auto listed = conn_->GetAdmin()->ListSnapshots();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name, "base");
  ExpectNoOrphanPins();
  ASSERT_TRUE(conn_->GetAdmin()->Snapshot("t", "s2").ok());
  ASSERT_TRUE(conn_->GetAdmin()->DeleteSnapshot("s2").ok());

  // A clone killed after its files were linked, before its commit: no table, nothing pinned.
  Restart("clone:linked");
  EXPECT_FALSE(conn_->GetAdmin()->CloneSnapshot("base", "c").ok()) << "the server did not stop";
  Restart();
  EXPECT_EQ(conn_->GetAdmin()->DescribeTable("c").status().code(), absl::StatusCode::kNotFound);
  if (local()) {
    EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/data/tables/c"));
  }
  ExpectNoOrphanPins();
  ASSERT_TRUE(conn_->GetAdmin()->CloneSnapshot("base", "c").ok());
  EXPECT_EQ(Scan("c"), base);

  // A restore killed before its commit: the table as it was; after it: the snapshot's.
  for (const auto& [point, committed] : {std::pair<std::string, bool>{"restore:staged", false},
                                         std::pair<std::string, bool>{"restore:meta-committed", true}}) {
    SCOPED_TRACE(point);
    ASSERT_TRUE(Restore("t", "base").ok());
    Load("t", 0, 50, "changed");
    ASSERT_EQ(Scan("t"), changed);
    ASSERT_TRUE(conn_->GetAdmin()->DisableTable("t").ok());
    Restart(point);
    EXPECT_FALSE(conn_->GetAdmin()->RestoreSnapshot("base").ok()) << "the server did not stop";
    Restart();
    ASSERT_TRUE(conn_->GetAdmin()->EnableTable("t").ok());
    EXPECT_EQ(Scan("t"), committed ? base : changed);
    auto regions = conn_->GetAdmin()->ListRegions("t");
    ASSERT_TRUE(regions.ok()) << regions.status();
    EXPECT_EQ(regions->size(), 2u);
    if (local()) {
      size_t region_dirs = 0;
      for (const auto& e : std::filesystem::directory_iterator(dir_.path() + "/data/tables/t")) {
        region_dirs += std::filesystem::exists(e.path() / "REGIONINFO");
        EXPECT_NE(e.path().filename(), "RESTORING");
        EXPECT_NE(e.path().filename(), ".splits");
      }
      EXPECT_EQ(region_dirs, 2u);
    }
    ExpectNoOrphanPins();
    ASSERT_TRUE(Restore("t", "base").ok());
    EXPECT_EQ(Scan("t"), base);
  }
  // Deleted, the snapshot's bytes go with its names: the clone and the table keep their own.
  ASSERT_TRUE(conn_->GetAdmin()->DeleteSnapshot("base").ok());
  ExpectNoOrphanPins();
  EXPECT_EQ(Scan("c"), base);
}

INSTANTIATE_TEST_SUITE_P(Storage, Snapshots, ::testing::Values("local", "rados"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace basalt::testing
