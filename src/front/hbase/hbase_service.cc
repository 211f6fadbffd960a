#include "src/front/hbase/hbase_service.h"

#include "common/status.h"
#include "src/front/hbase/client_meta.h"
#include "src/front/hbase/data_convert.h"
#include "src/front/hbase/region_names.h"
#include "src/front/hbase/zk_records.h"
#include "src/schema/region_info.h"

namespace basalt::hbase {

const Service::Method* Service::Find(std::string_view method) const {
  auto it = methods_.find(absl::string_view(method.data(), method.size()));
  return it == methods_.end() ? nullptr : &it->second;
}

std::string ExceptionFrame(uint32_t call_id, const absl::Status& s) {
  const Exception e = ExceptionOf(s);
  return EncodeException(call_id, e.class_name, e.message, e.do_not_retry, e.server_overloaded);
}

std::string ServiceNotServed(const Call& call, std::string_view service, std::string_view process) {
  return EncodeException(call.header.call_id(), kDoNotRetry,
                         absl::StrCat(AV(service), " is not served here (", AV(process), "): method ",
                                      call.header.method_name(), " refused"),
                         /*do_not_retry=*/true);
}

ServerName ThisServer::name() const { return ServerNameOf(host_, port(), static_cast<uint64_t>(start_code_)); }

absl::StatusOr<NamedRegion> RegionOf(const RegionSpecifier& spec) {
  NamedRegion n;
  if (spec.value() == kMetaRegionName || spec.value() == kMetaEncodedName) {
    n.meta = true;
    return n;
  }
  if (spec.type() != RegionSpecifier::REGION_NAME) {
    return absl::InvalidArgumentError("a region named by its encoded name alone is not served by Basalt's HBase port");
  }
  BASALT_ASSIGN_OR_RETURN(RegionRef ref, ParseRegionName(spec.value()));
  BASALT_ASSIGN_OR_RETURN(n.table, BasaltTableOfText(ref.table));
  server::RegionInfo info;
  info.table = n.table;
  info.start_key = ref.start_key;
  info.id = ref.id;
  n.region = ref.id == 0 ? "" : info.EncodedName();
  return n;
}

}  // namespace basalt::hbase
