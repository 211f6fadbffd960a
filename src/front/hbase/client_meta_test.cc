#include "src/front/hbase/client_meta.h"

#include <fstream>
#include <iterator>

#include "gtest/gtest.h"
#include "proto/hbase/hbase_registry.pb.h"
#include "src/front/hbase/zk_records.h"

namespace basalt::hbase {
namespace {

ClusterFacts Facts() {
  ClusterFacts f;
  f.cluster_id = "8a1c0f7e-basalt";
  f.active_master = ServerNameOf("m1", 16000, 11);
  f.meta_server = ServerNameOf("rs1", 16020, 22);
  f.bootstrap = {ServerNameOf("rs1", 16020, 22), ServerNameOf("rs2", 16020, 33)};
  return f;
}

// An answer frame's header and message bytes.
std::pair<ResponseHeader, std::string> Read(std::string_view frame) {
  absl::StatusOr<Answer> a = DecodeAnswer(frame.substr(4));
  EXPECT_TRUE(a.ok()) << a.status();
  if (!a.ok()) return {};
  return {a->header, a->message};
}

Call CallOf(uint32_t id, const std::string& method, const std::string& param = "") {
  Call c;
  c.header.set_call_id(id);
  c.header.set_method_name(method);
  c.header.set_request_param(true);
  c.param = param;
  return c;
}

// The real 2.6.0 client's GetClusterId call (tests/hbase/testdata), answered.
TEST(HBaseClientMeta, AnswersTheJavaClientsGetClusterId) {
  std::ifstream in(std::string(BASALT_SOURCE_DIR) + "/tests/hbase/testdata/client-2.6.0-getclusterid.bin",
                   std::ios::binary);
  ConnectionReader reader(1 << 20);
  reader.Feed(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
  absl::StatusOr<std::optional<Call>> call = reader.Next();
  ASSERT_TRUE(call.ok() && call->has_value()) << call.status();
  ASSERT_EQ(reader.header()->service_name(), kClientMetaService);
  const auto [header, message] = Read(AnswerClientMeta(**call, Facts()));
  EXPECT_EQ(header.call_id(), 0u);
  GetClusterIdResponse resp;
  ASSERT_TRUE(resp.ParseFromString(message));
  EXPECT_EQ(resp.cluster_id(), "8a1c0f7e-basalt");
}

TEST(HBaseClientMeta, MasterMetaAndBootstrapNodes) {
  {
    const auto [header, message] = Read(AnswerClientMeta(CallOf(1, "GetActiveMaster"), Facts()));
    GetActiveMasterResponse resp;
    ASSERT_TRUE(resp.ParseFromString(message));
    EXPECT_EQ(header.call_id(), 1u);
    EXPECT_EQ(resp.server_name().host_name(), "m1");
    EXPECT_EQ(resp.server_name().port(), 16000u);
    EXPECT_EQ(resp.server_name().start_code(), 11u);
  }
  {
    const auto [header, message] = Read(AnswerClientMeta(CallOf(2, "GetMetaRegionLocations"), Facts()));
    GetMetaRegionLocationsResponse resp;
    ASSERT_TRUE(resp.ParseFromString(message));  // required fields present: the Java client parses it too
    ASSERT_EQ(resp.meta_locations_size(), 1);
    const RegionLocation& loc = resp.meta_locations(0);
    EXPECT_EQ(loc.region_info().table_name().namespace_(), "hbase");
    EXPECT_EQ(loc.region_info().table_name().qualifier(), "meta");
    EXPECT_EQ(loc.region_info().region_id(), 1u);
    EXPECT_EQ(loc.server_name().host_name(), "rs1");
  }
  {
    const auto [header, message] = Read(AnswerClientMeta(CallOf(3, "GetBootstrapNodes"), Facts()));
    GetBootstrapNodesResponse resp;
    ASSERT_TRUE(resp.ParseFromString(message));
    ASSERT_EQ(resp.server_name_size(), 2);
    EXPECT_EQ(resp.server_name(1).host_name(), "rs2");
  }
  {  // HBase 2.4's MasterRegistry refreshes its list of masters with GetMasters.
    const auto [header, message] = Read(AnswerClientMeta(CallOf(4, "GetMasters"), Facts()));
    GetMastersResponse resp;
    ASSERT_TRUE(resp.ParseFromString(message));
    ASSERT_EQ(resp.master_servers_size(), 1);
    EXPECT_EQ(resp.master_servers(0).server_name().host_name(), "m1");
    EXPECT_TRUE(resp.master_servers(0).is_active());
  }
}

TEST(HBaseClientMeta, WhatIsNotServedIsSaidAtOnce) {
  const auto [unknown, none] = Read(AnswerClientMeta(CallOf(4, "GetMastersOfTheUniverse"), Facts()));
  EXPECT_EQ(unknown.call_id(), 4u);
  EXPECT_EQ(unknown.exception().exception_class_name(), "org.apache.hadoop.hbase.DoNotRetryIOException");
  EXPECT_EQ(unknown.exception().stack_trace(), "method GetMastersOfTheUniverse of ClientMetaService is not served by Basalt's HBase port");
  EXPECT_TRUE(unknown.exception().do_not_retry());
  const auto [bad, nothing] = Read(AnswerClientMeta(CallOf(5, "GetClusterId", "\x0a\x05"), Facts()));
  EXPECT_EQ(bad.exception().stack_trace(), "the request of GetClusterId does not parse");
  const auto [other, empty] = Read(AnswerNotServed(CallOf(6, "Get"), "ClientService"));
  EXPECT_EQ(other.exception().stack_trace(), "method Get of ClientService is not served by Basalt's HBase port");
}

}  // namespace
}  // namespace basalt::hbase
