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

absl::Status Service::Authorize(const Request& r) const {
  return r.access->CheckGlobal(*r.caller, absl::StrCat(name_, ".", r.method()), server::kPermAdmin);
}

absl::StatusOr<server::Identity> AuthenticateConnection(const server::Authenticator& authn,
                                                        const ConnectionHeader& header,
                                                        std::string_view certificate_user, std::string_view peer) {
  if (certificate_user.empty()) {
    server::AccessController::AuditRefusal(
        absl::StrCat("unauthenticated HBase connection from ", AV(peer), ": no client certificate"));
    return absl::UnauthenticatedError(
        "this server requires authentication (auth=true): its HBase port takes a client certificate signed by its "
        "CA (hbase.client.netty.tls.enabled, hbase.rpc.tls.keystore.location)");
  }
  BASALT_ASSIGN_OR_RETURN(server::Identity id, authn.Authenticate("", certificate_user, peer, "HBase connection"));
  const UserInformation& claimed = header.user_info();
  auto refuse = [&](std::string_view field, const std::string& name) {
    server::AccessController::AuditRefusal(absl::StrCat("unauthenticated HBase connection from ", AV(peer), ": its ",
                                                        AV(field), " '", name, "' is not its certificate's user '",
                                                        id.user, "'"));
    return absl::UnauthenticatedError(absl::StrCat(
        "the connection header's ", AV(field), " is '", name, "' but the client certificate is user '", id.user,
        "'s: a client may not call as another user (run it as '", id.user, "', or set HADOOP_USER_NAME=", id.user, ")"));
  };
  if (claimed.has_effective_user() && claimed.effective_user() != id.user) {
    return refuse("user", claimed.effective_user());
  }
  if (claimed.has_real_user() && !claimed.real_user().empty() && claimed.real_user() != id.user) {
    return refuse("real user", claimed.real_user());
  }
  return id;
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
