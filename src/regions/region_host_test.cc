// A cluster's region server's regions (RegionHost), in process: opened and closed as the
// master asks, the rows of other servers' regions refused as not served here, a lapsed lease
// serving nothing, a region past the split size asking the master, and a close whose flush
// fails aborting the server.
#include "src/regions/region_host.h"

#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/env.h"
#include "common/zookeeper.h"
#include "gtest/gtest.h"
#include "transport/grpc/grpc_settings.h"
#include "tests/util/temp_dir.h"

namespace basalt::server {
namespace {

TableSpec Spec(std::string name) {
  TableSpec t;
  t.name = std::move(name);
  FamilyOptions f;
  f.name = "f";
  t.families.push_back(f);
  return t;
}

RowMutation PutRow(std::string row, std::string value) {
  RowMutation m;
  m.row = std::move(row);
  Mutation put;
  put.family = "f";
  put.qualifier = "q";
  put.value = std::move(value);
  m.mutations.push_back(std::move(put));
  return m;
}

class RegionHostTest : public ::testing::Test {
 protected:
  RegionHost::Options Options() {
    RegionHost::Options o;
    o.data_dir = dir_.path();
    o.log_dir = dir_.path() + "/wals/host1,1,1";
    o.start_code = 7;
    o.log = [this](std::string_view line) {
      absl::MutexLock l(&mu_);
      lines_.emplace_back(line);
    };
    return o;
  }
  std::unique_ptr<RegionHost> Open(const RegionHost::Options& o) {
    absl::StatusOr<std::unique_ptr<RegionHost>> h = RegionHost::Open(o);
    EXPECT_TRUE(h.ok()) << h.status();
    return h.ok() ? *std::move(h) : nullptr;
  }

  testing::TempDir dir_;
  absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

TEST_F(RegionHostTest, ServesTheRegionsOpenedHereAndRefusesTheRowsOfOthers) {
  std::unique_ptr<RegionHost> host = Open(Options());
  ASSERT_NE(host, nullptr);
  ASSERT_TRUE(host->SetServerName("host1:16020").ok());
  const TableSpec spec = Spec("t1");
  const RegionInfo b_to_m{"t1", "b", "m", 11};
  ASSERT_TRUE(host->OpenRegion(spec, b_to_m).ok());

  absl::StatusOr<std::shared_ptr<Table>> t = host->Find("t1");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE((*t)->Mutate({PutRow("c", "v1")}, Durability::kSyncWal).ok());
  // Placeholders cover [, b) and [m, ): routed as before, refused as not served here.
  absl::Status elsewhere = (*t)->Mutate({PutRow("x", "v2")}, Durability::kSyncWal);
  EXPECT_TRUE(absl::IsUnavailable(elsewhere)) << elsewhere;
  EXPECT_NE(elsewhere.message().find("not served here"), std::string_view::npos) << elsewhere;
  absl::StatusOr<std::vector<Cell>> got = (*t)->RegionFor("c")->Get("c", ReadSpec{});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].value, "v1");

  // A table with no region here: Unavailable, or not serving the region a call named.
  absl::StatusOr<std::shared_ptr<Table>> none = host->Find("t2");
  EXPECT_TRUE(absl::IsUnavailable(none.status())) << none.status();
  absl::StatusOr<std::shared_ptr<Table>> named = host->Find("t2", "0123456789abcdef");
  EXPECT_EQ(NotServingRegionOf(named.status()), "0123456789abcdef") << named.status();

  EXPECT_TRUE(absl::IsAlreadyExists(host->OpenRegion(spec, b_to_m)));
  EXPECT_TRUE(absl::IsFailedPrecondition(host->OpenRegion(spec, RegionInfo{"t1", "a", "c", 12})));
  ASSERT_TRUE(host->OpenRegion(spec, RegionInfo{"t1", "m", "", 13}).ok());
  // The table opened anew: calls begun on the one before are retried on this one.
  EXPECT_TRUE((*t)->superseded());

  std::vector<std::pair<TableSpec, RegionInfo>> hosted = host->HostedRegions();
  ASSERT_EQ(hosted.size(), 2u);
  EXPECT_EQ(hosted[0].second, b_to_m);
  EXPECT_EQ(host->RegionCount("t1"), 2u);
  absl::StatusOr<std::vector<RegionStatus>> regions = host->Regions("t1");
  ASSERT_TRUE(regions.ok()) << regions.status();
  ASSERT_EQ(regions->size(), 2u);
  EXPECT_EQ((*regions)[0].info, b_to_m);
  EXPECT_EQ((*regions)[0].server, "host1:16020");
  EXPECT_GT((*regions)[0].stats.memstore_bytes, 0u);
  ASSERT_TRUE(host->HostedRegionNamed(b_to_m.EncodedName()).ok());

  ASSERT_TRUE(host->CloseRegion(b_to_m.EncodedName()).ok());
  EXPECT_TRUE(absl::IsNotFound(host->CloseRegion(b_to_m.EncodedName())));
  EXPECT_TRUE(absl::IsNotFound(host->HostedRegionNamed(b_to_m.EncodedName()).status()));
  ASSERT_TRUE(host->CloseRegion(RegionInfo{"t1", "m", "", 13}.EncodedName()).ok());
  EXPECT_TRUE(absl::IsUnavailable(host->Find("t1").status()));
  EXPECT_EQ(host->size(), 0u);

  // The closed region flushed: opened again (as on another server), it has its row.
  ASSERT_TRUE(host->OpenRegion(spec, b_to_m).ok());
  t = host->Find("t1");
  ASSERT_TRUE(t.ok());
  got = (*t)->RegionFor("c")->Get("c", ReadSpec{});
  ASSERT_TRUE(got.ok() && got->size() == 1) << got.status();
  ASSERT_TRUE(host->CloseAll().ok());
  EXPECT_TRUE(absl::IsUnavailable(host->Find("t1").status()));
  EXPECT_TRUE(absl::IsUnavailable(host->OpenRegion(spec, RegionInfo{"t1", "", "b", 14})));
}

TEST_F(RegionHostTest, ALapsedLeaseServesNoRegion) {
  SessionLease lease;
  RegionHost::Options o = Options();
  o.lease = &lease;
  std::unique_ptr<RegionHost> host = Open(o);
  ASSERT_NE(host, nullptr);
  ASSERT_TRUE(host->OpenRegion(Spec("t1"), RegionInfo{"t1", "", "", 21}).ok());
  ASSERT_TRUE(host->Find("t1").ok());
  lease.Bound(SessionLease::NowNs() - 1);
  absl::StatusOr<std::shared_ptr<Table>> t = host->Find("t1", "abc");
  EXPECT_EQ(NotServingRegionOf(t.status()), "abc") << t.status();
  EXPECT_NE(t.status().message().find("lost its ZooKeeper session lease"), std::string_view::npos) << t.status();
}

TEST_F(RegionHostTest, ARegionPastTheSplitSizeAsksTheMasterToSplitIt) {
  RegionHost::Options o = Options();
  o.region.memstore_flush_size = 64 << 10;  // the first region splits past 128 KiB
  absl::Mutex mu;
  std::vector<std::string> asked;
  o.request_split = [&](const std::string& encoded) {
    absl::MutexLock l(&mu);
    asked.push_back(encoded);
    return absl::OkStatus();
  };
  std::unique_ptr<RegionHost> host = Open(o);
  ASSERT_NE(host, nullptr);
  const RegionInfo all{"t1", "", "", 31};
  ASSERT_TRUE(host->OpenRegion(Spec("t1"), all).ok());
  absl::StatusOr<std::shared_ptr<Table>> t = host->Find("t1");
  ASSERT_TRUE(t.ok());
  const std::string value(1024, 'x');
  for (int i = 0; i < 400; ++i) {
    ASSERT_TRUE((*t)->Mutate({PutRow(absl::StrCat("row", i), value)}, Durability::kSyncWal).ok());
  }
  ASSERT_TRUE(host->Flush("t1").ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  absl::MutexLock l(&mu);
  mu.AwaitWithDeadline(absl::Condition(+[](std::vector<std::string>* a) { return !a->empty(); }, &asked), deadline);
  ASSERT_FALSE(asked.empty()) << "no split asked";
  EXPECT_EQ(asked[0], all.EncodedName());
}

// Fails every block file's creation once `full` is set: a flush cannot write.
class FullEnv : public EnvWrapper {
 public:
  FullEnv() : EnvWrapper(Env::Default()) {}
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& p) override {
    if (full.load() && p.find(".blk") != std::string::npos) {
      return absl::ResourceExhaustedError(absl::StrCat("write ", p, ": No space left on device (injected)"));
    }
    return EnvWrapper::NewWritableFile(p);
  }
  std::atomic<bool> full{false};
};

TEST_F(RegionHostTest, ACloseWhoseFlushFailsAbortsTheServer) {
  FullEnv env;
  RegionHost::Options o = Options();
  o.env = &env;
  std::vector<std::string> aborted;
  o.abort = [&](const absl::Status& why) { aborted.emplace_back(why.message()); };
  std::unique_ptr<RegionHost> host = Open(o);
  ASSERT_NE(host, nullptr);
  const RegionInfo all{"t1", "", "", 41};
  ASSERT_TRUE(host->OpenRegion(Spec("t1"), all).ok());
  absl::StatusOr<std::shared_ptr<Table>> t = host->Find("t1");
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->Mutate({PutRow("a", "v")}, Durability::kSyncWal).ok());
  env.full = true;
  absl::Status closed = host->CloseRegion(all.EncodedName());
  EXPECT_FALSE(closed.ok());
  ASSERT_EQ(aborted.size(), 1u);
  EXPECT_NE(aborted[0].find("its flush failed"), std::string::npos) << aborted[0];
  // Closed all the same: it is served no more.
  EXPECT_TRUE(absl::IsUnavailable(host->Find("t1").status()));
  env.full = false;
}

}  // namespace
}  // namespace basalt::server
