// Recovery from damaged or missing files, as an operator meets it: a real basalt-server killed
// with SIGKILL, its files damaged, restarted. Nothing is deleted, what may have lost data stays
// closed with a reason that names what is lost, the rest serves, and 'assign' brings it back
// once its files are repaired.
#include <filesystem>
#include <fstream>

#include "tests/integration/integration_util.h"

namespace basalt::testing {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

class Recovery : public ServerTest {
 protected:
  std::string Data() const { return dir_.path() + "/data"; }
  void WriteRows(const std::string& table, int n) {
    auto t = conn_->GetTable(table);
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(t->Put(Put(absl::StrCat("row", 1000 + i)).Add("cf", "q", std::string(40, 'v'))).ok());
    }
  }
  int CountRows(const std::string& table, int n) {
    auto t = conn_->GetTable(table);
    int found = 0;
    for (int i = 0; i < n; ++i) {
      auto r = t->Get(Get(absl::StrCat("row", 1000 + i)));
      EXPECT_TRUE(r.ok()) << r.status();
      found += r.ok() && !r->empty();
    }
    return found;
  }
  // The server log's newest segment holding records (more than its header).
  std::string NewestSegment() {
    std::string newest;
    for (const auto& e : fs::directory_iterator(Data() + "/wal")) {
      if (e.path().extension() == ".wal" && fs::file_size(e.path()) > 64 && e.path().string() > newest) {
        newest = e.path().string();
      }
    }
    return newest;
  }
};

// The regions of a server share one log, so a damaged record in it could be any region's: in
// strict mode every region of the previous run stays closed (as HBase leaves a dead server's
// regions unassigned while its log cannot be split), naming what is lost; nothing is cut or
// deleted; basalt:meta (its own log) and tables made since serve; once the file is restored,
// assign splits the log and reopens each table with every acknowledged write.
TEST_F(Recovery, ADamagedServerLogKeepsThePreviousRunsRegionsClosedUntilRepairedAndAssigned) {
  StartServer();
  CreateTable("t1");
  CreateTable("t2");
  WriteRows("t1", 300);
  WriteRows("t2", 300);
  server_->Kill();
  const std::string seg = NewestSegment();
  ASSERT_FALSE(seg.empty());
  const std::string good = ReadAll(seg);
  std::string bad = good;
  bad[bad.size() / 2] ^= 0x08;  // a synced record in the middle of the log
  WriteAll(seg, bad);

  ASSERT_TRUE(server_->Start().ok());
  Connect();
  auto status = conn_->GetAdmin()->Status();
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_EQ(status->tables.size(), 2u);
  for (const TableStatus& s : status->tables) {
    EXPECT_TRUE(s.failed_open) << s.name;
    EXPECT_NE(s.error.find("WAL segment " + seg), std::string::npos) << s.error;
    EXPECT_NE(s.error.find("may have edits in the server log"), std::string::npos) << s.error;
    EXPECT_NE(s.error.find("wal_recovery=point_in_time"), std::string::npos) << s.error;
  }
  auto got = conn_->GetTable("t1")->Get(Get("row1000"));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition) << got.status();
  EXPECT_NE(got.status().message().find("FAILED_OPEN"), std::string::npos) << got.status();
  EXPECT_EQ(ReadAll(seg), bad);  // nothing cut or deleted
  // A table made since has no records in the old log: it serves.
  CreateTable("t3");
  WriteRows("t3", 10);
  EXPECT_EQ(CountRows("t3", 10), 10);

  WriteAll(seg, good);  // the operator restores the file
  ASSERT_TRUE(conn_->GetAdmin()->AssignTable("t1").ok());
  ASSERT_TRUE(conn_->GetAdmin()->AssignTable("t2").ok());
  EXPECT_EQ(CountRows("t1", 300), 300);
  EXPECT_EQ(CountRows("t2", 300), 300);
  EXPECT_FALSE(fs::exists(seg));  // split whole, then removed
}

// The operator may instead go on without what the damage took: point_in_time replays what
// precedes it, and the old segments are kept in lost+found.
TEST_F(Recovery, PointInTimeOpensEveryRegionWithWhatPrecedesTheServerLogDamage) {
  StartServer();
  CreateTable("t1");
  WriteRows("t1", 300);
  server_->Kill();
  const std::string seg = NewestSegment();
  std::string bad = ReadAll(seg);
  bad[bad.size() / 2] ^= 0x08;
  WriteAll(seg, bad);

  server_ = std::make_unique<ServerProcess>(BASALT_SERVER_BINARY, Data(),
                                            std::vector<std::string>{"--wal_recovery=point_in_time"});
  ASSERT_TRUE(server_->Start().ok());
  Connect();
  const int found = CountRows("t1", 300);
  EXPECT_GT(found, 100);
  EXPECT_LT(found, 300);
  // Rows written in order: what survives is a prefix.
  for (int i = 0; i < found; ++i) {
    auto r = conn_->GetTable("t1")->Get(Get(absl::StrCat("row", 1000 + i)));
    ASSERT_TRUE(r.ok() && !r->empty()) << i;
  }
  EXPECT_FALSE(fs::exists(seg));
  bool kept = false;
  for (const auto& e : fs::recursive_directory_iterator(Data() + "/lost+found")) {
    kept |= e.path().filename() == fs::path(seg).filename();
  }
  EXPECT_TRUE(kept);
  WriteRows("t1", 300);  // and it takes writes again
  EXPECT_EQ(CountRows("t1", 300), 300);
}

TEST_F(Recovery, AMissingCatalogStopsStartUpDeletingNothingAndRebuildCatalogRestoresIt) {
  StartServer();
  CreateTable("t1");
  WriteRows("t1", 100);
  ASSERT_TRUE(conn_->GetAdmin()->Flush("t1").ok());
  WriteRows("t1", 150);
  server_->Kill();
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(Data() + "/tables")) files += e.is_regular_file();
  fs::remove(Data() + "/CATALOG");

  ServerProcess refused(BASALT_SERVER_BINARY, Data());
  absl::Status s = refused.Start();
  EXPECT_FALSE(s.ok());  // exits at start-up with the reason on stderr
  size_t after = 0;
  for (const auto& e : fs::recursive_directory_iterator(Data() + "/tables")) after += e.is_regular_file();
  EXPECT_EQ(after, files);

  server_ = std::make_unique<ServerProcess>(BASALT_SERVER_BINARY, Data(), std::vector<std::string>{"--rebuild_catalog=true"});
  ASSERT_TRUE(server_->Start().ok());
  Connect();
  EXPECT_EQ(CountRows("t1", 150), 150);
}

}  // namespace
}  // namespace basalt::testing
