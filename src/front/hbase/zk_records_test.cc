#include "src/front/hbase/zk_records.h"

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace basalt::hbase {
namespace {

TEST(HBaseZkRecords, PrefixMagicAndMessage) {
  const std::string rec = ZkRecord("w", MasterRecordOf(ServerNameOf("h", 16000, 5), 16010));
  // 0xff, u32 1, "w", "PBUF", then Master{master{host "h", port 16000, start code 5}, rpc 0, info 16010}.
  EXPECT_EQ(absl::BytesToHexString(rec), "ff0000000177" "50425546" "0a080a0168" "10807d" "1805" "1000" "188a7d");
  Master back;
  ASSERT_TRUE(ParseZkRecord(rec, &back).ok());
  EXPECT_EQ(back.master().host_name(), "h");
  EXPECT_EQ(back.master().port(), 16000u);
  EXPECT_EQ(back.master().start_code(), 5u);
  EXPECT_EQ(back.info_port(), 16010u);
  // Without the prefix, as the Java client also reads it.
  ClusterId id;
  ASSERT_TRUE(ParseZkRecord(std::string("PBUF") + ClusterIdOf("c-1").SerializeAsString(), &id).ok());
  EXPECT_EQ(id.cluster_id(), "c-1");
  MetaRegionServer meta;
  ASSERT_TRUE(ParseZkRecord(ZkRecord("w", MetaRecordOf(ServerNameOf("rs", 16020, 7))), &meta).ok());
  EXPECT_EQ(meta.state(), RegionState::OPEN);
}

TEST(HBaseZkRecords, DamageIsRefused) {
  Master m;
  EXPECT_EQ(ParseZkRecord(std::string("\xff\x00\x00", 3), &m).message(), "a ZooKeeper record whose prefix is cut short");
  EXPECT_EQ(ParseZkRecord(std::string("\xff\x00\x00\x00\x09w", 6), &m).message(),
            "a ZooKeeper record whose prefix runs past it");
  EXPECT_EQ(ParseZkRecord("PBU", &m).message(), "not a ZooKeeper record of HBase's (no PBUF magic)");
  EXPECT_EQ(ParseZkRecord("PBUF\x0a", &m).message(), "a ZooKeeper record whose basalt.hbase.Master does not parse");
}

}  // namespace
}  // namespace basalt::hbase
