#include "src/front/hbase/master_service.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "re2/re2.h"
#include "proto/hbase/hbase_master.pb.h"
#include "src/front/hbase/client_meta.h"
#include "src/front/hbase/data_convert.h"
#include "src/front/hbase/region_names.h"
#include "src/schema/catalog_file.h"
#include "src/schema/region_info.h"

namespace basalt::hbase {
namespace {

absl::Status FamilyRefused(std::string_view table, std::string_view family, std::string_view why) {
  return AsException(absl::InvalidArgumentError(absl::StrCat("column family '", AV(family), "' of table '", AV(table),
                                                             "' ", AV(why))),
                     kInvalidFamilyOperation);
}

// A table-wide admin call of Basalt's that takes only the table's name.
absl::Status TableOp(server::AdminService* admin, const std::string& table,
                     absl::Status (server::AdminService::*op)(const rpc::TableRequest&, rpc::AdminResponse*)) {
  rpc::TableRequest t;
  t.set_table(table);
  rpc::AdminResponse ignored;
  return (admin->*op)(t, &ignored);
}

}  // namespace

absl::StatusOr<uint64_t> Procedures::Run(uint64_t nonce_group, uint64_t nonce, const std::string& what,
                                         const std::function<absl::Status()>& run) {
  const std::pair<uint64_t, uint64_t> key{nonce_group, nonce};
  if (nonce != 0) {
    absl::MutexLock l(&mu_);
    for (;;) {
      auto it = nonces_.find(key);
      if (it == nonces_.end()) {
        nonces_.emplace(key, kRunning);  // ours to run
        break;
      }
      if (it->second != kRunning) return it->second;
      mu_.AwaitWithTimeout(absl::Condition(&settled_), absl::Milliseconds(50));
      settled_ = false;
    }
  }
  absl::Status s = run();
  absl::MutexLock l(&mu_);
  const uint64_t id = s.ok() ? Add(what) : 0;
  if (nonce != 0) {
    if (s.ok()) {
      nonces_[key] = id;
    } else {
      nonces_.erase(key);
    }
    settled_ = true;
    if (nonces_.size() > kMax) {
      for (auto it = nonces_.begin(); it != nonces_.end(); ++it) {
        if (it->second != kRunning) {
          nonces_.erase(it);
          break;
        }
      }
    }
  }
  BASALT_RETURN_IF_ERROR(s);
  return id;
}

bool Procedures::Known(uint64_t id) const {
  absl::MutexLock l(&mu_);
  return done_.count(id) != 0;
}

uint64_t Procedures::Add(const std::string& what) {
  const uint64_t id = next_++;
  done_.emplace(id, what);
  if (done_.size() > kMax) done_.erase(done_.begin());
  return id;
}

MasterService::MasterService(const Options& options) : Service("MasterService"), options_(options) {
  static constexpr Row<MasterService> kMethods[] = {
      {"IsMasterRunning", RunOn::kLoop, &MasterService::IsMasterRunning},
      {"GetTableNames", RunOn::kPool, &MasterService::GetTableNames},
      {"GetTableDescriptors", RunOn::kPool, &MasterService::GetTableDescriptors},
      {"CreateTable", RunOn::kPool, &MasterService::CreateTable},
      {"ModifyTable", RunOn::kPool, &MasterService::ModifyTable},
      {"GetSchemaAlterStatus", RunOn::kPool, &MasterService::GetSchemaAlterStatus},
      {"AddColumn", RunOn::kPool, &MasterService::AddColumn},
      {"ModifyColumn", RunOn::kPool, &MasterService::ModifyColumn},
      {"DeleteColumn", RunOn::kPool, &MasterService::DeleteColumn},
      {"DisableTable", RunOn::kPool, &MasterService::DisableTable},
      {"EnableTable", RunOn::kPool, &MasterService::EnableTable},
      {"DeleteTable", RunOn::kPool, &MasterService::DeleteTable},
      {"truncateTable", RunOn::kPool, &MasterService::TruncateTable},
      {"getProcedureResult", RunOn::kPool, &MasterService::GetProcedureResult},
      {"GetTableState", RunOn::kPool, &MasterService::GetTableState},
      {"ListNamespaces", RunOn::kPool, &MasterService::ListNamespaces},
      {"ListNamespaceDescriptors", RunOn::kPool, &MasterService::ListNamespaceDescriptors},
      {"GetNamespaceDescriptor", RunOn::kPool, &MasterService::GetNamespaceDescriptor},
      {"CreateNamespace", RunOn::kPool, &MasterService::CreateNamespace},
      {"ModifyNamespace", RunOn::kPool, &MasterService::ModifyNamespace},
      {"DeleteNamespace", RunOn::kPool, &MasterService::DeleteNamespace},
      {"ListTableNamesByNamespace", RunOn::kPool, &MasterService::ListTableNamesByNamespace},
      {"ListTableDescriptorsByNamespace", RunOn::kPool, &MasterService::ListTableDescriptorsByNamespace},
      {"FlushTable", RunOn::kPool, &MasterService::FlushTable},
      {"ExecProcedure", RunOn::kPool, &MasterService::ExecProcedure},
      {"IsProcedureDone", RunOn::kPool, &MasterService::IsProcedureDone},
      {"MoveRegion", RunOn::kPool, &MasterService::MoveRegion},
      {"SplitRegion", RunOn::kPool, &MasterService::SplitRegion},
      {"GetClusterStatus", RunOn::kPool, &MasterService::GetClusterStatus},
      {"IsBalancerEnabled", RunOn::kPool, &MasterService::IsBalancerEnabled},
      {"Balance", RunOn::kPool, &MasterService::Balance},
      {"Snapshot", RunOn::kPool, &MasterService::Snapshot},
      {"IsSnapshotDone", RunOn::kPool, &MasterService::IsSnapshotDone},
      {"GetCompletedSnapshots", RunOn::kPool, &MasterService::GetCompletedSnapshots},
      {"DeleteSnapshot", RunOn::kPool, &MasterService::DeleteSnapshot},
      {"RestoreSnapshot", RunOn::kPool, &MasterService::RestoreSnapshot},
      {"AddReplicationPeer", RunOn::kPool, &MasterService::AddReplicationPeer},
      {"RemoveReplicationPeer", RunOn::kPool, &MasterService::RemoveReplicationPeer},
      {"EnableReplicationPeer", RunOn::kPool, &MasterService::EnableReplicationPeer},
      {"DisableReplicationPeer", RunOn::kPool, &MasterService::DisableReplicationPeer},
      {"UpdateReplicationPeerConfig", RunOn::kPool, &MasterService::UpdateReplicationPeerConfig},
      {"GetReplicationPeerConfig", RunOn::kPool, &MasterService::GetReplicationPeerConfig},
      {"IsReplicationPeerEnabled", RunOn::kPool, &MasterService::IsReplicationPeerEnabled},
      {"ListReplicationPeers", RunOn::kPool, &MasterService::ListReplicationPeers},
  };
  Serve(this, kMethods);
}

absl::StatusOr<rpc::DescribeTableResponse> MasterService::Describe(const std::string& table) {
  rpc::ListTablesResponse all;
  BASALT_RETURN_IF_ERROR(options_.admin->ListTables(rpc::ListTablesRequest(), &all));
  for (rpc::DescribeTableResponse& t : *all.mutable_tables()) {
    if (t.table().name() == table) return std::move(t);
  }
  return TableNotFound(table);
}

absl::Status MasterService::Modify(const std::string& table,
                                   const std::function<absl::Status(rpc::TableDescriptor*)>& change) {
  BASALT_ASSIGN_OR_RETURN(rpc::DescribeTableResponse now, Describe(table));
  rpc::ModifyTableRequest req;
  *req.mutable_table() = now.table();
  BASALT_RETURN_IF_ERROR(change(req.mutable_table()));
  rpc::AdminResponse ignored;
  return options_.admin->ModifyTable(req, &ignored);
}

absl::StatusOr<std::string> MasterService::IsMasterRunning(const Request& r) {
  IsMasterRunningResponse resp;
  resp.set_is_master_running(true);
  return EncodeResponse(r.id(), resp);
}

NamePattern::NamePattern(std::unique_ptr<re2::RE2> re) : re_(std::move(re)) {}
NamePattern::~NamePattern() = default;

absl::StatusOr<std::unique_ptr<NamePattern>> NamePattern::Compile(std::string_view what, const std::string& pattern) {
  re2::RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(1 << 20);  // as a filter's regex (README "Filters")
  auto re = std::make_unique<re2::RE2>(pattern, options);
  if (!re->ok()) {
    return AsException(absl::InvalidArgumentError(absl::StrCat(AV(what), " pattern '", pattern, "': ", re->error(),
                                                               " (RE2's syntax: no backreferences or lookaround)")),
                       kDoNotRetry);
  }
  return std::unique_ptr<NamePattern>(new NamePattern(std::move(re)));
}

bool NamePattern::Matches(std::string_view name) const { return re2::RE2::FullMatch(name, *re_); }

bool NamePattern::TableMatches(std::string_view table) const {
  if (Matches(table)) return true;
  return server::TableNamespace(table) == "default" && Matches(absl::StrCat("default:", AV(table)));
}

absl::StatusOr<std::vector<rpc::TableDescriptor>> MasterService::ShownTables(const Request& r, std::string_view ns,
                                                                             const NamePattern* pattern) {
  rpc::ListTablesResponse all;
  BASALT_RETURN_IF_ERROR(options_.admin->ListTables(rpc::ListTablesRequest(), &all));
  std::vector<rpc::TableDescriptor> out;
  for (const rpc::DescribeTableResponse& t : all.tables()) {
    const std::string& name = t.table().name();
    if (!ShownOnThePort(name) || !Sees(r, name)) continue;
    if (!ns.empty() && server::TableNamespace(name) != ns) continue;
    if (pattern != nullptr && !pattern->TableMatches(name)) continue;
    out.push_back(t.table());
  }
  return out;
}

absl::Status MasterService::ShownTableNames(const Request& r, std::string_view ns, const NamePattern* pattern,
                                            google::protobuf::RepeatedPtrField<TableName>* out) {
  BASALT_ASSIGN_OR_RETURN(std::vector<rpc::TableDescriptor> shown, ShownTables(r, ns, pattern));
  for (const rpc::TableDescriptor& t : shown) *out->Add() = TableNameOfBasalt(t.name());
  return absl::OkStatus();
}

namespace {

// The pattern of a listing that has one: null when it has none or matches everything (".*", the
// shell's `list` without one).
absl::StatusOr<std::unique_ptr<NamePattern>> ListingPattern(bool has, const std::string& regex) {
  if (!has || regex == ".*") return nullptr;
  return NamePattern::Compile("table name", regex);
}

}  // namespace

absl::StatusOr<std::string> MasterService::GetTableNames(const Request& r) {
  GetTableNamesRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<NamePattern> pattern, ListingPattern(req.has_regex(), req.regex()));
  GetTableNamesResponse resp;
  BASALT_RETURN_IF_ERROR(ShownTableNames(r, req.namespace_(), pattern.get(), resp.mutable_table_names()));
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> MasterService::GetTableDescriptors(const Request& r) {
  GetTableDescriptorsRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  std::vector<std::string> wanted;
  for (const TableName& t : req.table_names()) {
    absl::StatusOr<std::string> name = BasaltTableOf(t);
    // A name of HBase's namespace (hbase:meta's) is not a Basalt table: not found, never "every
    // table".
    if (!name.ok()) return TableNotFound(TableNameOf(t.namespace_(), t.qualifier()));
    wanted.push_back(*name);
  }
  GetTableDescriptorsResponse resp;
  if (wanted.empty()) {
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<NamePattern> pattern, ListingPattern(req.has_regex(), req.regex()));
    BASALT_ASSIGN_OR_RETURN(std::vector<rpc::TableDescriptor> shown, ShownTables(r, req.namespace_(), pattern.get()));
    for (const rpc::TableDescriptor& t : shown) *resp.add_table_schema() = SchemaOf(t);
    return EncodeResponse(r.id(), resp);
  }
  // Named tables: Authorize asked for each.
  rpc::ListTablesResponse all;
  BASALT_RETURN_IF_ERROR(options_.admin->ListTables(rpc::ListTablesRequest(), &all));
  for (const rpc::DescribeTableResponse& t : all.tables()) {
    if (std::find(wanted.begin(), wanted.end(), t.table().name()) != wanted.end()) {
      *resp.add_table_schema() = SchemaOf(t.table());
    }
  }
  if (resp.table_schema().empty()) {
    return TableNotFound(TableNameOf(req.table_names(0).namespace_(), req.table_names(0).qualifier()));
  }
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> MasterService::CreateTable(const Request& r) {
  CreateTableRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(rpc::TableDescriptor desc, DescriptorOf(req.table_schema()));
  return Procedure<CreateTableResponse>(r, req.nonce_group(), req.nonce(), [&] {
    rpc::CreateTableRequest c;
    *c.mutable_table() = desc;
    for (const std::string& k : req.split_keys()) c.add_split_keys(k);
    rpc::CreateTableResponse ignored;
    absl::Status s = options_.admin->CreateTable(c, &ignored);
    if (s.code() == absl::StatusCode::kAlreadyExists) return absl::AlreadyExistsError(desc.name());
    const std::string_view ns = server::TableNamespace(desc.name());
    if (s.code() == absl::StatusCode::kNotFound && ns != kDefaultNamespace) return NamespaceNotFound(ns);
    return s;
  });
}

absl::StatusOr<std::string> MasterService::ModifyTable(const Request& r) {
  ModifyTableRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(rpc::TableDescriptor wanted, DescriptorOf(req.table_schema()));
  return Procedure<ModifyTableResponse>(r, req.nonce_group(), req.nonce(), [&] {
    return Modify(wanted.name(), [&](rpc::TableDescriptor* t) {
      *t->mutable_families() = wanted.families();
      t->set_max_file_size(wanted.max_file_size());
      *t->mutable_kept_attributes() = wanted.kept_attributes();
      *t->mutable_kept_configuration() = wanted.kept_configuration();
      return absl::OkStatus();
    });
  });
}

// A modification is done when its call answers: every region has reopened with it.
absl::StatusOr<std::string> MasterService::GetSchemaAlterStatus(const Request& r) {
  GetSchemaAlterStatusRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.table_name()));
  rpc::TableRequest t;
  t.set_table(table);
  rpc::ListRegionsResponse regions;
  absl::Status listed = options_.admin->ListRegions(t, &regions);
  if (absl::IsNotFound(listed)) return TableNotFound(table);
  BASALT_RETURN_IF_ERROR(listed);
  GetSchemaAlterStatusResponse resp;
  resp.set_yet_to_update_regions(0);
  resp.set_total_regions(static_cast<uint32_t>(regions.regions_size()));
  return EncodeResponse(r.id(), resp);
}

absl::Status MasterService::ChangeFamily(const std::string& table, const rpc::FamilyDescriptor& family, bool add) {
  return Modify(table, [&](rpc::TableDescriptor* t) -> absl::Status {
    for (rpc::FamilyDescriptor& f : *t->mutable_families()) {
      if (f.name() != family.name()) continue;
      if (add) return FamilyRefused(table, family.name(), "already exists");
      f = family;
      return absl::OkStatus();
    }
    if (!add) return FamilyRefused(table, family.name(), "does not exist");
    *t->add_families() = family;
    return absl::OkStatus();
  });
}

absl::StatusOr<std::string> MasterService::AddColumn(const Request& r) {
  AddColumnRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.table_name()));
  BASALT_ASSIGN_OR_RETURN(rpc::FamilyDescriptor family, FamilyOf(req.column_families()));
  return Procedure<AddColumnResponse>(r, req.nonce_group(), req.nonce(),
                                      [&] { return ChangeFamily(table, family, /*add=*/true); });
}

absl::StatusOr<std::string> MasterService::ModifyColumn(const Request& r) {
  ModifyColumnRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.table_name()));
  BASALT_ASSIGN_OR_RETURN(rpc::FamilyDescriptor family, FamilyOf(req.column_families()));
  return Procedure<ModifyColumnResponse>(r, req.nonce_group(), req.nonce(),
                                         [&] { return ChangeFamily(table, family, /*add=*/false); });
}

absl::StatusOr<std::string> MasterService::DeleteColumn(const Request& r) {
  DeleteColumnRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.table_name()));
  return Procedure<DeleteColumnResponse>(r, req.nonce_group(), req.nonce(), [&] {
    return Modify(table, [&](rpc::TableDescriptor* t) -> absl::Status {
      auto* families = t->mutable_families();
      auto it = std::find_if(families->begin(), families->end(),
                             [&](const rpc::FamilyDescriptor& f) { return f.name() == req.column_name(); });
      if (it == families->end()) return FamilyRefused(table, req.column_name(), "does not exist");
      if (families->size() == 1) return FamilyRefused(table, req.column_name(), "is the table's only family");
      families->erase(it);
      return absl::OkStatus();
    });
  });
}

template <typename Req, typename Resp>
absl::StatusOr<std::string> MasterService::ChangeState(const Request& r, bool from_disabled,
                                                       absl::Status (server::AdminService::*op)(const rpc::TableRequest&,
                                                                                                rpc::AdminResponse*)) {
  Req req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.table_name()));
  return Procedure<Resp>(r, req.nonce_group(), req.nonce(), [&]() -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(rpc::DescribeTableResponse d, Describe(table));
    if ((d.state() == rpc::TABLE_DISABLED) != from_disabled) {
      return AsException(absl::FailedPreconditionError(table), from_disabled ? kTableNotDisabled : kTableNotEnabled);
    }
    return TableOp(options_.admin, table, op);
  });
}

absl::StatusOr<std::string> MasterService::DisableTable(const Request& r) {
  return ChangeState<DisableTableRequest, DisableTableResponse>(r, /*from_disabled=*/false,
                                                                &server::AdminService::DisableTable);
}

absl::StatusOr<std::string> MasterService::EnableTable(const Request& r) {
  return ChangeState<EnableTableRequest, EnableTableResponse>(r, /*from_disabled=*/true,
                                                              &server::AdminService::EnableTable);
}

// (HBase deletes a disabled table only.)
absl::StatusOr<std::string> MasterService::DeleteTable(const Request& r) {
  return ChangeState<DeleteTableRequest, DeleteTableResponse>(r, /*from_disabled=*/true,
                                                              &server::AdminService::DropTable);
}

absl::StatusOr<std::string> MasterService::TruncateTable(const Request& r) {
  TruncateTableRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.tablename()));
  return Procedure<TruncateTableResponse>(r, req.nonce_group(), req.nonce(), [&]() -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(rpc::DescribeTableResponse d, Describe(table));
    if (d.state() != rpc::TABLE_DISABLED) return AsException(absl::FailedPreconditionError(table), kTableNotDisabled);
    // (AdminService's: the table's grants and quotas stay, as HBase's truncate keeps them.)
    rpc::TruncateTableRequest t;
    t.set_table(table);
    t.set_preserve_splits(req.preservesplits());
    rpc::AdminResponse ignored;
    return options_.admin->TruncateTable(t, &ignored);
  });
}

absl::StatusOr<std::string> MasterService::GetProcedureResult(const Request& r) {
  GetProcedureResultRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  GetProcedureResultResponse resp;
  resp.set_state(procedures_.Known(req.proc_id()) ? GetProcedureResultResponse::FINISHED
                                                  : GetProcedureResultResponse::NOT_FOUND);
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> MasterService::GetTableState(const Request& r) {
  GetTableStateRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.table_name()));
  BASALT_ASSIGN_OR_RETURN(rpc::DescribeTableResponse d, Describe(table));
  GetTableStateResponse resp;
  resp.mutable_table_state()->set_state(d.state() == rpc::TABLE_DISABLED ? TableState::DISABLED : TableState::ENABLED);
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> MasterService::FlushTable(const Request& r) {
  FlushTableRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.table_name()));
  return Procedure<FlushTableResponse>(r, req.nonce_group(), req.nonce(),
                                       [&] { return TableOp(options_.admin, table, &server::AdminService::Flush); });
}

// The 2.6 client's way to flush when FlushTable fails with a DoNotRetryIOException (a master
// without it, or a refusal such as AccessDeniedException, whose answer the client then takes from
// here): the "flush-table-proc" procedure, done when it answers. No other is served.
absl::StatusOr<std::string> MasterService::ExecProcedure(const Request& r) {
  ExecProcedureRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(std::string table, FlushProcedureTable(req.procedure()));
  BASALT_RETURN_IF_ERROR(TableOp(options_.admin, table, &server::AdminService::Flush));
  ExecProcedureResponse resp;
  resp.set_expected_timeout(0);
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> MasterService::IsProcedureDone(const Request& r) {
  IsProcedureDoneRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_RETURN_IF_ERROR(FlushProcedureTable(req.procedure()).status());
  IsProcedureDoneResponse resp;
  resp.set_done(true);
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> MasterService::FlushProcedureTable(const ProcedureDescription& p) {
  if (p.signature() != "flush-table-proc") {
    return absl::UnimplementedError(  // (DoNotRetryIOException)
        absl::StrCat("procedure '", p.signature(), "' is not served by Basalt's HBase port (flush-table-proc is)"));
  }
  return BasaltTableOfText(p.instance());
}

absl::StatusOr<std::string> MasterService::MoveRegion(const Request& r) {
  MoveRegionRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  rpc::MoveRequest move;
  BASALT_ASSIGN_OR_RETURN(NamedRegion region, options_.meta->NamedAnyhow(req.region()));
  if (region.meta) return absl::InvalidArgumentError("hbase:meta is the master's: it does not move");
  move.set_region(region.region);
  if (req.has_dest_server_name()) {
    BASALT_ASSIGN_OR_RETURN(std::string to, options_.directory->BasaltServerOf(req.dest_server_name()));
    move.set_server(to);
  }
  rpc::AdminResponse ignored;
  BASALT_RETURN_IF_ERROR(options_.admin->Move(move, &ignored));
  return EncodeResponse(r.id(), MoveRegionResponse());
}

absl::StatusOr<std::string> MasterService::SplitRegion(const Request& r) {
  SplitTableRegionRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.region_info().table_name()));
  return Procedure<SplitTableRegionResponse>(r, req.nonce_group(), req.nonce(), [&] {
    server::RegionInfo info;
    info.table = table;
    info.start_key = req.region_info().start_key();
    info.id = req.region_info().region_id();
    rpc::SplitRequest split;
    split.set_name(info.EncodedName());
    split.set_split_row(req.split_row());
    rpc::AdminResponse ignored;
    return options_.admin->Split(split, &ignored);
  });
}

namespace {

// HBase's ReplicationLoadSink of what a sink applied (the shell's status 'replication').
void SinkLoad(const SinkFigures& f, ReplicationLoadSink* load) {
  load->set_ageoflastappliedop(static_cast<uint64_t>(std::max<int64_t>(0, f.age_ms.load(std::memory_order_relaxed))));
  load->set_timestampsoflastappliedop(static_cast<uint64_t>(f.last_write_time_ms.load(std::memory_order_relaxed)));
  load->set_timestampstarted(static_cast<uint64_t>(f.started_ms));
  load->set_totalopsprocessed(f.cells.load(std::memory_order_relaxed));
}

}  // namespace

absl::StatusOr<std::string> MasterService::GetClusterStatus(const Request& r) {
  GetClusterStatusRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  GetClusterStatusResponse resp;
  ClusterStatus* cs = resp.mutable_cluster_status();
  cs->mutable_cluster_id()->set_cluster_id(options_.cluster_id);
  *cs->mutable_master() = options_.self->name();
  rpc::StatusResponse status;
  uint64_t requests = 0;
  if (options_.admin->Status(rpc::StatusRequest(), &status).ok()) {
    for (const rpc::TableStatus& t : status.tables()) requests += t.read_requests() + t.write_requests();
  }
  for (const LiveServer& rs : options_.directory->RegionServers()) {
    LiveServerInfo* live = cs->add_live_servers();
    *live->mutable_server() = rs.name;
    // (A cluster's requests are counted per table, not per server: only this process's own.)
    if (rs.this_process) {
      live->mutable_server_load()->set_total_number_of_requests(requests);
      if (options_.sink != nullptr) SinkLoad(*options_.sink, live->mutable_server_load()->mutable_replloadsink());
    } else {
      live->mutable_server_load();
    }
    *cs->add_servers_name() = rs.name;
  }
  // The HBase release whose RPC the port speaks (the client prints it; Basalt has no release
  // number of its own yet).
  cs->mutable_hbase_version()->set_version("2.6.0");
  cs->set_balancer_on(options_.balancer_on);
  if (options_.info_port != 0) cs->set_master_info_port(options_.info_port);
  auto asked = [&](Option o) { return std::find(req.options().begin(), req.options().end(), o) != req.options().end(); };
  // Each region's figures under its server (the shell's status 'detailed' and list_regions), and
  // each table's regions by state when asked (the shell's alter waits on it): one pass over them.
  const bool loads = req.options().empty() || asked(LIVE_SERVERS);
  const bool counts = asked(TABLE_TO_REGIONS_COUNT);
  if (loads || counts) BASALT_RETURN_IF_ERROR(AddRegionFigures(r, loads, counts, cs));
  return EncodeResponse(r.id(), resp);
}

namespace {

// Table `t`'s regions by state (TABLE_TO_REGIONS_COUNT).
void CountRegions(const rpc::TableDescriptor& t, const rpc::ListRegionsResponse& regions, ClusterStatus* cs) {
  TableRegionStatesCount* count = cs->add_table_region_states_count();
  *count->mutable_table_name() = TableNameOfBasalt(t.name());
  RegionStatesCount* c = count->mutable_region_states_count();
  uint32_t open = 0, closed = 0;
  for (const rpc::RegionStatus& region : regions.regions()) (region.state() == "OPEN" ? open : closed) += 1;
  c->set_open_regions(open);
  c->set_split_regions(0);
  c->set_closed_regions(closed);
  c->set_regions_in_transition(0);
  c->set_total_regions(open + closed);
}

// One open region's figures, as HBase's RegionLoad.
void LoadOf(const rpc::TableDescriptor& t, const rpc::RegionStatus& region, RegionLoad* load) {
  constexpr uint64_t kMB = 1 << 20;
  load->mutable_region_specifier()->set_type(RegionSpecifier::REGION_NAME);
  load->mutable_region_specifier()->set_value(RegionNameOf(t.name(), region.start_key(), region.id()));
  load->set_stores(static_cast<uint32_t>(t.families_size()));
  load->set_storefiles(static_cast<uint32_t>(region.store_files()));
  load->set_storefile_size_mb(static_cast<uint32_t>(region.store_file_bytes() / kMB));
  load->set_store_uncompressed_size_mb(static_cast<uint32_t>(region.store_file_bytes() / kMB));  // (not known)
  load->set_mem_store_size_mb(static_cast<uint32_t>(region.memstore_bytes() / kMB));
  load->set_region_size_mb(static_cast<uint32_t>((region.store_file_bytes() + region.memstore_bytes()) / kMB));
  load->set_read_requests_count(region.read_requests());
  load->set_write_requests_count(region.write_requests());
  load->set_data_locality(1.0f);  // (its files are where its server reads them: local disk or RADOS)
}

}  // namespace

absl::Status MasterService::AddRegionFigures(const Request& r, bool loads, bool counts, ClusterStatus* cs) {
  auto key = [](const ServerName& sn) { return absl::StrCat(sn.host_name(), ":", sn.port(), ",", sn.start_code()); };
  std::map<std::string, ServerLoad*> by_server;
  for (LiveServerInfo& live : *cs->mutable_live_servers()) by_server[key(live.server())] = live.mutable_server_load();
  BASALT_ASSIGN_OR_RETURN(std::vector<rpc::TableDescriptor> shown, ShownTables(r, ""));
  for (const rpc::TableDescriptor& t : shown) {
    rpc::TableRequest tr;
    tr.set_table(t.name());
    rpc::ListRegionsResponse regions;
    if (!options_.admin->ListRegions(tr, &regions).ok()) continue;  // (dropped meanwhile)
    if (counts) CountRegions(t, regions, cs);
    if (!loads) continue;
    for (const rpc::RegionStatus& region : regions.regions()) {
      if (region.state() != "OPEN") continue;
      const std::optional<ServerName> sn = options_.directory->HBaseServerOf(region.server());
      auto it = sn.has_value() ? by_server.find(key(*sn)) : by_server.end();
      if (it != by_server.end()) LoadOf(t, region, it->second->add_region_loads());
    }
  }
  return absl::OkStatus();
}

// A cluster's master runs Basalt's balancer once (regions move until no two servers differ by
// more than one); a standalone server, the one server there is, has nothing to balance.
absl::StatusOr<std::string> MasterService::Balance(const Request& r) {
  BalanceRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  if (req.dry_run()) {
    return absl::InvalidArgumentError("balancer 'dry_run' is not built: Basalt's balancer plans and moves in one step");
  }
  BalanceResponse resp;
  const std::vector<LiveServer> servers = options_.directory->RegionServers();
  const bool standalone = servers.size() == 1 && servers[0].this_process;
  if (standalone) {
    resp.set_balancer_ran(false);
    return EncodeResponse(r.id(), resp);
  }
  rpc::BalanceResponse ran;
  BASALT_RETURN_IF_ERROR(options_.admin->Balance(rpc::BalanceRequest(), &ran));
  resp.set_balancer_ran(true);
  resp.set_moves_calculated(ran.moves());
  resp.set_moves_executed(ran.moves());
  return EncodeResponse(r.id(), resp);
}

// HBase's balancer switch: on when the master balances on its own (a standalone server has
// nothing to balance; a cluster's master with balancer_period_ms = 0 balances only when asked).
// Turning it on or off (SetBalancerRunning) is refused by name: Basalt's is a setting.
absl::StatusOr<std::string> MasterService::IsBalancerEnabled(const Request& r) {
  IsBalancerEnabledResponse resp;
  resp.set_enabled(options_.balancer_on);
  return EncodeResponse(r.id(), resp);
}

}  // namespace basalt::hbase
