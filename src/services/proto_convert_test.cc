#include "src/services/proto_convert.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace basalt::server {
namespace {

// RegionLoad (proto/basalt.proto) carries every counter of storage/region.h's list, under its
// name, and nothing the list lacks: a counter added to one and not the other fails here.
TEST(RegionLoad, ItsFieldsAreTheRegionCountersList) {
  std::set<std::string> listed;
#define BASALT_NAME(name, how) listed.insert(#name);
  BASALT_REGION_COUNTERS(BASALT_NAME)
#undef BASALT_NAME
  std::set<std::string> fields;
  const google::protobuf::Descriptor* d = rpc::RegionLoad::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    if (f->name() == "failed" || f->name() == "files_per_family") continue;
    EXPECT_EQ(f->type(), google::protobuf::FieldDescriptor::TYPE_UINT64) << f->name();
    fields.insert(std::string(f->name()));
  }
  EXPECT_EQ(fields, listed);
}

TEST(RegionLoad, EveryCounterMakesTheRoundTrip) {
  RegionStats st;
  uint64_t n = 1;
#define BASALT_SET(name, how) st.name = n++ * 1000003;
  BASALT_REGION_COUNTERS(BASALT_SET)
#undef BASALT_SET
  st.failed = "disk";
  st.files_per_family["cf"] = 3;
  const RegionStats back = RegionStatsFromProto(RegionLoadToProto(st));
#define BASALT_CHECK(name, how) EXPECT_EQ(back.name, st.name) << #name;
  BASALT_REGION_COUNTERS(BASALT_CHECK)
#undef BASALT_CHECK
  EXPECT_EQ(back.failed, "disk");
  EXPECT_EQ(back.files_per_family, st.files_per_family);
}

}  // namespace
}  // namespace basalt::server
