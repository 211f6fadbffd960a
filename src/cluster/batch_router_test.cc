#include "src/cluster/batch_router.h"

#include "gtest/gtest.h"

namespace basalt::server {
namespace {

rpc::RegionStatus Region(const std::string& start, const std::string& end, const std::string& server,
                         const std::string& state = "OPEN") {
  rpc::RegionStatus r;
  r.set_start_key(start);
  r.set_end_key(end);
  r.set_server(server);
  r.set_state(state);
  r.set_encoded_name("enc-" + start);
  return r;
}

rpc::BatchMutateRequest Batch(const std::vector<std::string>& rows) {
  rpc::BatchMutateRequest b;
  b.set_table("t");
  b.set_durability(rpc::DURABILITY_SYNC_WAL);
  for (const std::string& row : rows) b.add_rows()->set_row(row);
  return b;
}

std::vector<int> All(const rpc::BatchMutateRequest& b) {
  std::vector<int> out;
  for (int i = 0; i < b.rows_size(); ++i) out.push_back(i);
  return out;
}

TEST(RouteRowsTest, EachServerGetsItsRowsInOrderWithTheirRegionsNamed) {
  const std::vector<rpc::RegionStatus> regions = {Region("", "g", "a:1"), Region("g", "p", "b:2"),
                                                  Region("p", "", "a:1")};
  const rpc::BatchMutateRequest b = Batch({"a", "z", "h", "b", "q", "g", "a"});
  std::vector<int> unplaced;
  std::vector<RoutedPart> parts = RouteRows(b, All(b), regions, &unplaced);
  EXPECT_TRUE(unplaced.empty());
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].server, "a:1");
  EXPECT_EQ(parts[0].rows, (std::vector<int>{0, 1, 3, 4, 6}));
  EXPECT_EQ(parts[0].request.table(), "t");
  EXPECT_EQ(parts[0].request.durability(), rpc::DURABILITY_SYNC_WAL);
  // Runs: a (enc-), z (enc-p), b (enc-), q (enc-p), a (enc-): each change of region a new run.
  ASSERT_EQ(parts[0].request.regions_size(), 5);
  EXPECT_EQ(parts[0].request.regions(1).region(), "enc-p");
  uint32_t counted = 0;
  for (const rpc::RegionRun& run : parts[0].request.regions()) counted += run.rows();
  EXPECT_EQ(counted, 5u);
  EXPECT_EQ(parts[1].server, "b:2");
  EXPECT_EQ(parts[1].rows, (std::vector<int>{2, 5}));
  ASSERT_EQ(parts[1].request.regions_size(), 1);
  EXPECT_EQ(parts[1].request.regions(0).rows(), 2u);
  EXPECT_EQ(parts[1].request.rows(0).row(), "h");
  EXPECT_EQ(parts[1].request.rows(1).row(), "g");
}

TEST(RouteRowsTest, RowsOfARegionWithoutAnOpenServerOrOfAGapAreLeftOver) {
  const std::vector<rpc::RegionStatus> regions = {Region("b", "g", "a:1"), Region("g", "p", "", "OPEN"),
                                                  Region("p", "s", "c:3", "CLOSED")};
  const rpc::BatchMutateRequest b = Batch({"a", "c", "h", "q", "t"});
  std::vector<int> unplaced;
  std::vector<RoutedPart> parts = RouteRows(b, {1, 2, 3, 4, 0}, regions, &unplaced);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].rows, (std::vector<int>{1}));
  EXPECT_EQ(unplaced, (std::vector<int>{2, 3, 4, 0}));
}

TEST(RouteRowsTest, NoRegionsLeavesEveryRow) {
  const rpc::BatchMutateRequest b = Batch({"a", "b"});
  std::vector<int> unplaced;
  EXPECT_TRUE(RouteRows(b, All(b), {}, &unplaced).empty());
  EXPECT_EQ(unplaced.size(), 2u);
}

}  // namespace
}  // namespace basalt::server
