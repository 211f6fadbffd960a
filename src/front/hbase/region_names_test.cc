#include "src/front/hbase/region_names.h"

#include "gtest/gtest.h"

namespace basalt::hbase {
namespace {

// Every expected value below is what hbase-shaded-client 2.6.0 computed for the same input
// (RegionInfoBuilder, RegionInfo.getEncodedName, MetaCellComparator.compareRows).
TEST(HBaseRegionNames, AsTheJavaClientComputesThem) {
  EXPECT_EQ(TableNameOf("default", "t1"), "t1");
  EXPECT_EQ(TableNameOf("", "t1"), "t1");
  EXPECT_EQ(TableNameOf("ns", "t"), "ns:t");
  const std::string r1 = RegionNameOf("t1", "", 1700000000000);
  EXPECT_EQ(r1, "t1,,1700000000000.43ae7364b4a555b93267937f9bc49ec1.");
  EXPECT_EQ(EncodedNameOf(r1), "43ae7364b4a555b93267937f9bc49ec1");
  const std::string r2 = RegionNameOf("ns:t", std::string("row\x00\xff", 5), 42);
  EXPECT_EQ(r2, std::string("ns:t,row\x00\xff,42.f32e7ec67b6c79365dbec0e3cf6a83cc.", 47));
  EXPECT_EQ(EncodedNameOf(r2), "f32e7ec67b6c79365dbec0e3cf6a83cc");
  EXPECT_EQ(EncodedNameOf(kMetaRegionName), "1588230740");
  EXPECT_EQ(EncodedNameOf("t1,,17"), "");
  EXPECT_EQ(EncodedNameOf("t1,,17.abc."), "");
}

TEST(HBaseRegionNames, MetaRowsSortAsHBaseSortsThem) {
  struct Pair {
    const char* a;
    const char* b;
    int want;
  };
  const Pair pairs[] = {
      {"t", "t,,1", -1},           {"t,a,1", "t,a,2", -1},           {"t,a,9", "t,ab,1", -1},
      {"t,a,b,1", "t,a,1", 1},     {"t,,1", "t ,,1", -1},            {"t,,99999999999999", "t,a,1", -1},
      {"u", "t,z,1", 1},           {"t,x", "t,x,1", -1},
  };
  for (const Pair& p : pairs) {
    EXPECT_EQ(CompareMetaRows(p.a, p.b), p.want) << p.a << " vs " << p.b;
    EXPECT_EQ(CompareMetaRows(p.b, p.a), -p.want) << p.b << " vs " << p.a;
    EXPECT_EQ(CompareMetaRows(p.a, p.a), 0) << p.a;
  }
  // Bytes compare unsigned: a start key of 0xff sorts after 'z'.
  EXPECT_LT(CompareMetaRows("t,z,1", "t,\xff,1"), 0);
}

}  // namespace
}  // namespace basalt::hbase
