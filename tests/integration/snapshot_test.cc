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
//   lost+found);
// - export and import (basalt-export-snapshot): to a backup directory and from it into a second
//   server, cloned there with the same digest; a second export copies only the new files; the
//   tool killed part way and run again; a damaged block refused with nothing left behind.
#include <signal.h>
#include <sys/stat.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/env.h"
#include "common/status.h"
#include "absl/synchronization/mutex.h"
#include "common/test_services.h"
#include "tests/integration/integration_util.h"
#include "tests/util/child_process.h"
#include "tests/util/scan_rows.h"

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
    return {"--rados_pool=basalt", absl::StrCat("--ceph_conf=", conf), absl::StrCat("--rados_namespace=", Namespace()),
            "--rados_object_size=64KiB"};
  }
  static std::string Namespace() {
    return absl::StrCat("snapshots-", ::getpid(), "-", ::testing::UnitTest::GetInstance()->random_seed());
  }
  // The server's store as basalt-export-snapshot names it.
  std::string Store() const {
    return local() ? dir_.path() + "/data" : absl::StrCat("rados:basalt/", Namespace(), ":", dir_.path(), "/data");
  }
  // Runs basalt-export-snapshot with `args` (and --from_ceph_conf / --to_ceph_conf), under
  // `env` ("NAME=value" entries); its exit code, and what it printed on stdout and stderr.
  static ChildProcess::Finished Export(std::vector<std::string> args, std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {"/usr/bin/env"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(BASALT_EXPORT_BINARY);
    argv.insert(argv.end(), args.begin(), args.end());
    if (!TestCephConf().empty()) {
      argv.push_back("--from_ceph_conf=" + TestCephConf());
      argv.push_back("--to_ceph_conf=" + TestCephConf());
    }
    absl::StatusOr<ChildProcess::Finished> run = ChildProcess::Run(argv);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.value_or(ChildProcess::Finished{});
  }
  // "copied N file(s), B bytes; M file(s), L bytes, held by the target already" from its summary.
  static std::array<uint64_t, 4> Copied(const std::string& output) {
    std::array<uint64_t, 4> v{};
    const size_t at = output.find("; copied ");
    EXPECT_NE(at, std::string::npos) << output;
    if (at == std::string::npos) return v;
    unsigned long long a = 0, b = 0, c = 0, d = 0;
    EXPECT_EQ(std::sscanf(output.c_str() + at, "; copied %llu file(s), %llu bytes; %llu file(s), %llu bytes", &a, &b,
                          &c, &d),
              4)
        << output;
    v = {a, b, c, d};
    return v;
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
  Rows Scan(const std::string& table) { return ScanCellValues(conn_->GetTable(table).get(), "cf", "q"); }
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

TEST_P(Snapshots, AnExportAndImportClonesTheSameRowsAndASecondExportCopiesOnlyWhatIsNew) {
  Restart();
  CreateTable("t", {"cf"}, {"r01000", "r02000"});
  Load("t", 0, 3000, std::string(200, 'a'));
  ASSERT_TRUE(conn_->GetAdmin()->Snapshot("t", "s1").ok());
  const Rows at_s1 = Scan("t");
  const std::string backup = dir_.path() + "/backup";

  // Out to a directory: every file copied, progress on stderr.
  ChildProcess::Finished out = Export({"--snapshot=s1", "--from=" + Store(), "--to=" + backup});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("export: "), std::string::npos) << "no progress line: " << out.output;
  const std::array<uint64_t, 4> first = Copied(out.output);
  EXPECT_EQ(first[0], 3u) << "one file a region (each flushed by the snapshot)";
  EXPECT_EQ(first[2], 0u);
  // More writes, to the last region only, and a second snapshot: its export copies that region's
  // new file only and names the rest again.
  Load("t", 2500, 3500, std::string(200, 'b'));
  ASSERT_TRUE(conn_->GetAdmin()->Snapshot("t", "s2").ok());
  const Rows at_s2 = Scan("t");
  out = Export({"--snapshot=s2", "--from=" + Store(), "--to=" + backup});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const std::array<uint64_t, 4> second = Copied(out.output);
  EXPECT_EQ(second[2], 3u) << "s1's three files are held by the backup: " << out.output;
  EXPECT_EQ(second[0], 1u) << "only the region written to flushed a new file: " << out.output;
  EXPECT_LT(second[1], first[1]);
  std::printf("export: s1 copied %llu bytes; s2 copied %llu bytes, found %llu bytes in the backup\n",
              static_cast<unsigned long long>(first[1]), static_cast<unsigned long long>(second[1]),
              static_cast<unsigned long long>(second[3]));
  // No such snapshot, and a malformed store: each said, exit 1 and 2.
  out = Export({"--snapshot=nope", "--from=" + Store(), "--to=" + backup});
  EXPECT_EQ(out.exit_code, 1) << out.output;
  EXPECT_NE(out.output.find("no snapshot 'nope'"), std::string::npos) << out.output;
  out = Export({"--snapshot=s1", "--from=rados:basalt", "--to=" + backup});
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("rados:POOL/NAMESPACE:DATA_DIR"), std::string::npos) << out.output;
  // The same name again: refused, the backup unchanged.
  out = Export({"--snapshot=s2", "--from=" + Store(), "--to=" + backup});
  EXPECT_EQ(out.exit_code, 1) << out.output;
  EXPECT_NE(out.output.find("already"), std::string::npos) << out.output;

  // In, to a second server on its own local disk, while it runs: listed at once, cloned, the same
  // rows. The first import is killed after its first file is whole, then run again: it keeps that
  // file and ends with the rest (and a bandwidth limit that is held).
  ServerProcess other(BASALT_SERVER_BINARY, dir_.path() + "/data2", {});
  ASSERT_TRUE(other.Start().ok());
  const std::string second_store = dir_.path() + "/data2";
  out = Export({"--snapshot=s2", "--from=" + backup, "--to=" + second_store}, {"BASALT_FAULT_POINT=copy:file-written"});
  EXPECT_EQ(out.exit_code, -SIGKILL) << out.output;
  out = Export({"--snapshot=s2", "--from=" + backup, "--to=" + second_store, "--bandwidth=2MiB"});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const std::array<uint64_t, 4> resumed = Copied(out.output);
  EXPECT_EQ(resumed[0] + resumed[2], 4u) << out.output;
  EXPECT_GE(resumed[2], 1u) << "the file whole before the kill was kept: " << out.output;
  double seconds = 0;
  ASSERT_EQ(std::sscanf(out.output.c_str() + out.output.find(" bytes, held by the target already; "),
                        " bytes, held by the target already; %lf s", &seconds),
            1)
      << out.output;
  EXPECT_GE(seconds, 0.9 * resumed[1] / (2 << 20)) << "faster than the 2 MiB/s limit: " << out.output;
  out = Export({"--snapshot=s1", "--from=" + backup, "--to=" + second_store});
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_EQ(Copied(out.output)[0], 0u) << "every file of s1 is in s2's import: " << out.output;
  {
    ConnectionOptions o;
    o.address = other.address();
    auto c = Connection::Open(o);
    ASSERT_TRUE(c.ok()) << c.status();
    std::swap(conn_, *c);
    auto listed = conn_->GetAdmin()->ListSnapshots();
    ASSERT_TRUE(listed.ok()) << listed.status();
    ASSERT_EQ(listed->size(), 2u);
    ASSERT_TRUE(conn_->GetAdmin()->CloneSnapshot("s2", "t2").ok());
    ASSERT_TRUE(conn_->GetAdmin()->CloneSnapshot("s1", "t1").ok());
    EXPECT_EQ(Digest(Scan("t2")), Digest(at_s2));
    EXPECT_EQ(Digest(Scan("t1")), Digest(at_s1));
    EXPECT_EQ(Scan("t1").size(), 3000u);
    std::swap(conn_, *c);
  }

  // A block of the backup damaged: the import refused naming the file, nothing left behind.
  std::string victim;
  for (const auto& e : std::filesystem::recursive_directory_iterator(backup + "/snapshots/s1")) {
    if (e.path().extension() == ".blk") victim = e.path().string();
  }
  ASSERT_FALSE(victim.empty());
  std::string bytes = Env::Default()->ReadFileToString(victim).value();
  bytes[28 + 10] ^= 1;  // in the first block's payload (after its 28-byte header)
  ASSERT_TRUE(Env::Default()->WriteFileDurably(victim, bytes).ok());
  const std::string third = dir_.path() + "/data3";  // (second_store holds the files: it would not read them)
  out = Export({"--snapshot=s1", "--from=" + backup, "--to=" + third});
  EXPECT_EQ(out.exit_code, 1) << out.output;
  EXPECT_NE(out.output.find("DATA_LOSS"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find(std::filesystem::path(victim).filename().string()), std::string::npos) << out.output;
  EXPECT_FALSE(std::filesystem::exists(third + "/snapshots/s1"));
  other.Kill();
}

INSTANTIATE_TEST_SUITE_P(Storage, Snapshots, ::testing::Values("local", "rados"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace basalt::testing
