// Recovery from damaged or missing files, as an operator meets it: a real basalt-server killed
// with SIGKILL, its files damaged, restarted. Nothing is deleted, a damaged table fails alone
// with a reason that names what is lost, the other tables serve, and 'assign' brings the table
// back once its files are repaired.
#include <filesystem>
#include <fstream>

#include "tests/integration/integration_util.h"
#include "tests/util/region_dir.h"

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
  std::string NewestSegment(const std::string& table) {
    std::string newest;
    for (const auto& e : fs::directory_iterator(testing::OnlyRegionDir(Data(), table) + "/wal")) {
      if (e.path().extension() == ".wal" && e.path().string() > newest) newest = e.path().string();
    }
    return newest;
  }
};

TEST_F(Recovery, ADamagedLogFailsItsTableAloneUntilRepairedAndAssigned) {
  StartServer();
  CreateTable("t1");
  CreateTable("t2");
  WriteRows("t1", 300);
  WriteRows("t2", 300);
  server_->Kill();
  const std::string seg = NewestSegment("t1");
  const std::string good = ReadAll(seg);
  std::string bad = good;
  bad[bad.size() / 2] ^= 0x08;  // a synced record in the middle of the log
  WriteAll(seg, bad);

  ASSERT_TRUE(server_->Start().ok());
  Connect();
  auto status = conn_->GetAdmin()->Status();
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_EQ(status->tables.size(), 2u);
  const TableStatus& s1 = status->tables[0];
  EXPECT_TRUE(s1.failed_open);
  EXPECT_NE(s1.error.find("WAL segment " + seg), std::string::npos) << s1.error;
  EXPECT_NE(s1.error.find("region t1,,"), std::string::npos) << s1.error;  // its region's name
  EXPECT_NE(s1.error.find("'s records after seq "), std::string::npos) << s1.error;
  EXPECT_FALSE(status->tables[1].failed_open);
  EXPECT_EQ(CountRows("t2", 300), 300);  // the other table serves

  auto got = conn_->GetTable("t1")->Get(Get("row1000"));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition) << got.status();
  EXPECT_NE(got.status().message().find("FAILED_OPEN"), std::string::npos) << got.status();
  auto list = conn_->GetAdmin()->ListTables();
  ASSERT_TRUE(list.ok());
  EXPECT_FALSE((*list)[0].open_error.empty());
  EXPECT_EQ(ReadAll(seg), bad);  // nothing cut or deleted

  WriteAll(seg, good);  // the operator restores the file
  ASSERT_TRUE(conn_->GetAdmin()->AssignTable("t1").ok());
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
