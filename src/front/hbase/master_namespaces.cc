// MasterService's namespace calls (master_service.h) over Basalt's namespaces (a catalogue's:
// docs/DESIGN.md §3): CreateNamespace, ModifyNamespace, DeleteNamespace, GetNamespaceDescriptor,
// ListNamespaces, ListNamespaceDescriptors, ListTableNamesByNamespace and
// ListTableDescriptorsByNamespace. A namespace's configuration is its kept settings.
//
// HBase's clients see Basalt's namespaces and `hbase` (HBase's own, which holds no Basalt table:
// the port serves hbase:meta apart), never `basalt` (Basalt's system tables). Each refusal is the
// exception HBase's master throws for it: NamespaceExistException for one that exists (default
// and hbase always do), NamespaceNotFoundException for one that does not, ConstraintException
// for dropping one that holds tables or is reserved.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "proto/hbase/hbase_master.pb.h"
#include "src/front/hbase/data_convert.h"
#include "src/front/hbase/master_service.h"
#include "src/schema/catalog_file.h"

namespace basalt::hbase {
namespace {

constexpr char kNamespaceExist[] = "org.apache.hadoop.hbase.NamespaceExistException";
constexpr char kConstraint[] = "org.apache.hadoop.hbase.constraint.ConstraintException";

bool Reserved(std::string_view ns) {
  return ns == kDefaultNamespace || ns == kSystemNamespace || ns == server::kBasaltNamespace;
}

// Basalt's errors for a namespace in the classes HBase's client knows.
absl::Status NamespaceException(absl::Status s) {
  switch (s.code()) {
    case absl::StatusCode::kAlreadyExists:
      return AsException(std::move(s), kNamespaceExist);
    case absl::StatusCode::kNotFound:
      return AsException(std::move(s), kNamespaceNotFound);
    case absl::StatusCode::kFailedPrecondition:  // (it holds tables)
      return AsException(std::move(s), kConstraint);
    default:
      return s;
  }
}

void DescriptorOf(const rpc::NamespaceDescriptor& in, NamespaceDescriptor* out) {
  out->set_name(in.name());
  for (const rpc::KeptSetting& k : in.configuration()) {
    NameStringPair* p = out->add_configuration();
    p->set_name(k.key());
    p->set_value(k.value());
  }
}

rpc::NamespaceRequest BasaltRequestOf(const NamespaceDescriptor& in) {
  rpc::NamespaceRequest req;
  rpc::NamespaceDescriptor* d = req.mutable_namespace_();
  d->set_name(in.name());
  for (const NameStringPair& p : in.configuration()) {
    rpc::KeptSetting* k = d->add_configuration();
    k->set_key(p.name());
    k->set_value(p.value());
  }
  return req;
}

}  // namespace

absl::StatusOr<std::vector<rpc::NamespaceDescriptor>> MasterService::Namespaces() {
  rpc::ListNamespacesResponse listed;
  BASALT_RETURN_IF_ERROR(options_.admin->ListNamespaces(rpc::ListNamespacesRequest(), &listed));
  std::vector<rpc::NamespaceDescriptor> out;
  for (const rpc::NamespaceDescriptor& n : listed.namespaces()) {
    if (n.name() != server::kBasaltNamespace && n.name() != kSystemNamespace) out.push_back(n);
  }
  rpc::NamespaceDescriptor hbase;
  hbase.set_name(kSystemNamespace);
  out.push_back(hbase);
  std::sort(out.begin(), out.end(),
            [](const rpc::NamespaceDescriptor& a, const rpc::NamespaceDescriptor& b) { return a.name() < b.name(); });
  return out;
}

absl::Status MasterService::CheckNamespaceExists(std::string_view ns) {
  BASALT_ASSIGN_OR_RETURN(std::vector<rpc::NamespaceDescriptor> all, Namespaces());
  for (const rpc::NamespaceDescriptor& n : all) {
    if (n.name() == ns) return absl::OkStatus();
  }
  return NamespaceNotFound(ns);
}

absl::StatusOr<std::string> MasterService::ListNamespaces(const Request& r) {
  BASALT_ASSIGN_OR_RETURN(std::vector<rpc::NamespaceDescriptor> all, Namespaces());
  ListNamespacesResponse resp;
  for (const rpc::NamespaceDescriptor& n : all) {
    if (AdministersNamespace(r, n.name())) resp.add_namespacename(n.name());
  }
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> MasterService::ListNamespaceDescriptors(const Request& r) {
  BASALT_ASSIGN_OR_RETURN(std::vector<rpc::NamespaceDescriptor> all, Namespaces());
  ListNamespaceDescriptorsResponse resp;
  for (const rpc::NamespaceDescriptor& n : all) {
    if (AdministersNamespace(r, n.name())) DescriptorOf(n, resp.add_namespacedescriptor());
  }
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> MasterService::GetNamespaceDescriptor(const Request& r) {
  GetNamespaceDescriptorRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(std::vector<rpc::NamespaceDescriptor> all, Namespaces());
  for (const rpc::NamespaceDescriptor& n : all) {
    if (n.name() != req.namespacename()) continue;
    GetNamespaceDescriptorResponse resp;
    DescriptorOf(n, resp.mutable_namespacedescriptor());
    return EncodeResponse(r.id(), resp);
  }
  return NamespaceNotFound(req.namespacename());
}

absl::StatusOr<std::string> MasterService::CreateNamespace(const Request& r) {
  CreateNamespaceRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  const std::string& name = req.namespacedescriptor().name();
  if (name == kDefaultNamespace || name == kSystemNamespace) {
    return AsException(absl::AlreadyExistsError(absl::StrCat("namespace ", name, " already exists")), kNamespaceExist);
  }
  const rpc::NamespaceRequest made = BasaltRequestOf(req.namespacedescriptor());
  return Procedure<CreateNamespaceResponse>(r, req.nonce_group(), req.nonce(), [&] {
    rpc::AdminResponse ignored;
    return NamespaceException(options_.admin->CreateNamespace(made, &ignored));
  });
}

// The whole descriptor, as HBase's alter_namespace sends it (its settings as they are, changed).
absl::StatusOr<std::string> MasterService::ModifyNamespace(const Request& r) {
  ModifyNamespaceRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  const std::string& name = req.namespacedescriptor().name();
  if (Reserved(name)) {
    BASALT_RETURN_IF_ERROR(CheckNamespaceExists(name));  // (basalt: not found)
    return AsException(absl::InvalidArgumentError(absl::StrCat("namespace ", name, " keeps no settings on Basalt")),
                       kConstraint);
  }
  const rpc::NamespaceRequest changed = BasaltRequestOf(req.namespacedescriptor());
  return Procedure<ModifyNamespaceResponse>(r, req.nonce_group(), req.nonce(), [&] {
    rpc::AdminResponse ignored;
    return NamespaceException(options_.admin->ModifyNamespace(changed, &ignored));
  });
}

// Only an empty one; its grants and quotas go with it (AdminService's namespace cleanup), as
// through the gRPC port.
absl::StatusOr<std::string> MasterService::DeleteNamespace(const Request& r) {
  DeleteNamespaceRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  const std::string& name = req.namespacename();
  if (Reserved(name)) {
    BASALT_RETURN_IF_ERROR(CheckNamespaceExists(name));
    return AsException(absl::InvalidArgumentError(absl::StrCat("reserved namespace ", name, " cannot be removed")),
                       kConstraint);
  }
  return Procedure<DeleteNamespaceResponse>(r, req.nonce_group(), req.nonce(), [&] {
    rpc::NamespaceNameRequest drop;
    drop.set_name(name);
    rpc::AdminResponse ignored;
    return NamespaceException(options_.admin->DropNamespace(drop, &ignored));
  });
}

absl::StatusOr<std::string> MasterService::ListTableNamesByNamespace(const Request& r) {
  ListTableNamesByNamespaceRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_RETURN_IF_ERROR(CheckNamespaceExists(req.namespacename()));
  ListTableNamesByNamespaceResponse resp;
  BASALT_RETURN_IF_ERROR(ShownTableNames(r, req.namespacename(), nullptr, resp.mutable_tablename()));
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> MasterService::ListTableDescriptorsByNamespace(const Request& r) {
  ListTableDescriptorsByNamespaceRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_RETURN_IF_ERROR(CheckNamespaceExists(req.namespacename()));
  BASALT_ASSIGN_OR_RETURN(std::vector<rpc::TableDescriptor> shown, ShownTables(r, req.namespacename()));
  ListTableDescriptorsByNamespaceResponse resp;
  for (const rpc::TableDescriptor& t : shown) *resp.add_tableschema() = SchemaOf(t);
  return EncodeResponse(r.id(), resp);
}

}  // namespace basalt::hbase
