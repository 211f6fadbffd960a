// The cluster id (src/schema/cluster_id.h): a UUID as Java's UUID.fromString reads it, made once
// and kept; starts racing to make it agree on one; a damaged file is refused, never replaced.
#include "src/schema/cluster_id.h"

#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace basalt::server {
namespace {

TEST(ClusterId, IsARandomVersion4Uuid) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = NewUuid();
    ASSERT_TRUE(IsUuid(id)) << id;
    EXPECT_EQ(id[14], '4') << id;                                  // version 4
    EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos) << id;  // RFC 4122 variant
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
  for (const char* bad : {"", "basalt-127.0.0.1:16020", "8a1c0f7e-1d2b-4c3d-9e4f-5a6b7c8d9e0", "8A1C0F7E-1D2B-4C3D-9E4F-5A6B7C8D9E0F",
                          "8a1c0f7e11d2b-4c3d-9e4f-5a6b7c8d9e0f"}) {
    EXPECT_FALSE(IsUuid(bad)) << bad;
  }
}

TEST(ClusterId, MadeOnceKeptAndAgreedOnByRacingStarts) {
  testing::TempDir dir;
  const std::string data = dir.path() + "/data";
  Env* env = Env::Default();
  std::vector<std::string> ids(8);
  std::vector<std::thread> starts;
  for (size_t i = 0; i < ids.size(); ++i) {
    starts.emplace_back([&, i] { ids[i] = LoadOrCreateClusterId(env, data).value_or("failed"); });
  }
  for (auto& t : starts) t.join();
  ASSERT_TRUE(IsUuid(ids[0])) << ids[0];
  for (const std::string& id : ids) EXPECT_EQ(id, ids[0]);
  EXPECT_EQ(LoadOrCreateClusterId(env, data).value_or(""), ids[0]) << "the next start reads the same";
  EXPECT_EQ(env->ListDir(data).value_or(std::vector<std::string>{}), std::vector<std::string>{kClusterIdFileName})
      << "no temporary left";
  // Damaged: refused, and not replaced by a new id.
  ASSERT_TRUE(env->WriteFileDurably(data + "/" + kClusterIdFileName, "basalt-127.0.0.1:16020\n").ok());
  absl::StatusOr<std::string> bad = LoadOrCreateClusterId(env, data);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss) << bad.status();
  EXPECT_NE(bad.status().message().find(kClusterIdFileName), std::string::npos) << bad.status();
  EXPECT_EQ(env->ReadFileToString(data + "/" + kClusterIdFileName).value_or(""), "basalt-127.0.0.1:16020\n");
}

}  // namespace
}  // namespace basalt::server
