#include "src/schema/snapshot_file.h"

#include "common/format_stamp.h"
#include "gtest/gtest.h"

namespace basalt::server {
namespace {

SnapshotInfo Sample() {
  SnapshotInfo s;
  s.name = "nightly-1.0_x";
  s.created_ms = 1795337627893;
  s.ttl_s = 86400;
  s.owner = "alice";
  s.table.name = "users";
  FamilyOptions f;
  f.name = "info";
  f.max_versions = 3;
  s.table.families.push_back(f);
  s.table.kept.attributes = {{"OWNER", "bob"}};
  s.regions.push_back({RegionInfo{"users", "", "m", 17}, 2, 4096});
  s.regions.push_back({RegionInfo{"users", "m", "", 18}, 0, 0});
  return s;
}

TEST(SnapshotFile, RoundTrips) {
  const SnapshotInfo s = Sample();
  absl::StatusOr<SnapshotInfo> back = DecodeSnapshot(EncodeSnapshot(s), "SNAPSHOT");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);
}

// With the table's grants kept (RESTORE_ACL): version 2, which a version-1 reader refuses;
// without, still version 1.
TEST(SnapshotFile, GrantsAreKeptInVersion2AndOnlyThen) {
  SnapshotInfo s = Sample();
  EXPECT_EQ(ReadFormatStamp(EncodeSnapshot(s), "BSLTSNAP", 2, "x")->version, 1u);
  s.grants = {{"bob", "", "", 1 | 2}, {"@ops", "cf", "", 16}, {"carol", "cf", "q", 1}};
  const std::string bytes = EncodeSnapshot(s);
  EXPECT_EQ(ReadFormatStamp(bytes, "BSLTSNAP", 2, "x")->version, 2u);
  EXPECT_EQ(ReadFormatStamp(bytes, "BSLTSNAP", 1, "x").status().code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<SnapshotInfo> back = DecodeSnapshot(bytes, "SNAPSHOT");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);
}

TEST(SnapshotFile, EveryDamageIsRefusedLoudly) {
  SnapshotInfo with_grants = Sample();
  with_grants.grants = {{"bob", "cf", "q", 3}};
  for (const std::string& bytes : {EncodeSnapshot(Sample()), EncodeSnapshot(with_grants)}) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x40);
    absl::StatusOr<SnapshotInfo> s = DecodeSnapshot(bad, "snapshots/x/SNAPSHOT");
    ASSERT_FALSE(s.ok()) << "byte " << i;
    EXPECT_TRUE(s.status().code() == absl::StatusCode::kDataLoss ||
                s.status().code() == absl::StatusCode::kFailedPrecondition)
        << "byte " << i << ": " << s.status();
    EXPECT_NE(s.status().message().find("snapshots/x/SNAPSHOT"), std::string::npos) << s.status();
  }
  for (size_t n : {0ul, 10ul, bytes.size() / 2, bytes.size() - 1}) {
    EXPECT_EQ(DecodeSnapshot(bytes.substr(0, n), "SNAPSHOT").status().code(), absl::StatusCode::kDataLoss) << n;
  }
  }
}

TEST(SnapshotFile, NamesAsHBaseAllows) {
  EXPECT_TRUE(ValidateSnapshotName("a").ok());
  EXPECT_TRUE(ValidateSnapshotName("snap_2026-11-29.v1").ok());
  for (const char* bad : {"", ".hidden", "a b", "a/b", "über"}) {
    EXPECT_EQ(ValidateSnapshotName(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ValidateSnapshotName(std::string(129, 'x')).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace basalt::server
