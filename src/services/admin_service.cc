// AdminService (service.h): tables, regions and the server's status, and a cluster's region
// server calls from its master.
#include "src/services/service.h"

#include <sys/resource.h>

#include <algorithm>
#include <set>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"
#include "proto/kept_settings.h"
#include "src/schema/meta.h"
#include "src/base/process_stats.h"
#include "storage/block_cache.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {

namespace {

constexpr char kVersion[] = "basalt 0.1";

// Block files of every family.
uint64_t StoreFiles(const RegionStats& st) {
  uint64_t files = 0;
  for (const auto& [f, n] : st.files_per_family) files += n;
  return files;
}

}  // namespace

absl::Status NotServedHere::Catalogue(std::string_view what) const {
  return absl::FailedPreconditionError(
      absl::StrCat(AV(what), " is the cluster master's (connect through ZooKeeper); this server is ", process_));
}

absl::Status NotServedHere::Master(std::string_view what) const {
  return absl::FailedPreconditionError(
      absl::StrCat(AV(what), " is a cluster master's (basalt-master); this server is ", process_));
}

absl::Status NotServedHere::RegionServer(std::string_view what) const {
  return absl::FailedPreconditionError(
      absl::StrCat(AV(what), " is for a cluster's region server; this server is ", process_));
}

absl::Status NotServedHere::Peers(std::string_view what) const {
  return absl::UnimplementedError(absl::StrCat(AV(what), ": this process keeps no replication peers (it is ",
                                               process_, ")"));
}

// One lock per table name, held while a call makes, drops or remakes the table: a second call on
// the name waits for the first to end. A name is held by one call at a time and each call holds
// one name, so no two calls wait on each other.
class AdminService::TableNameLocks {
 public:
  class Held {
   public:
    Held(TableNameLocks* locks, std::string name) : locks_(locks), name_(std::move(name)) {}
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    ~Held() {
      absl::MutexLock l(&locks_->mu_);
      locks_->held_.erase(name_);
    }

   private:
    TableNameLocks* const locks_;
    const std::string name_;
  };

  // Waits until no call holds `name`, then holds it until the returned value is destroyed.
  std::unique_ptr<Held> Lock(std::string_view name) {
    absl::MutexLock l(&mu_);
    const auto free = [this, name]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return held_.count(name) == 0; };
    mu_.Await(absl::Condition(&free));
    held_.emplace(name);
    return std::make_unique<Held>(this, std::string(name));
  }

 private:
  absl::Mutex mu_;
  std::set<std::string, std::less<>> held_ ABSL_GUARDED_BY(mu_);
};

AdminService::AdminService(Parts parts, const ServerCounters* counters)
    : parts_(std::move(parts)), name_locks_(std::make_unique<TableNameLocks>()), counters_(counters) {}

std::unique_ptr<AdminService> AdminService::ForStandalone(Catalog* catalog, const ServerCounters* counters,
                                                          ReplicationPeers* peers) {
  auto refused = std::make_shared<NotServedHere>("standalone and holds every region itself");
  return std::make_unique<AdminService>(
      Parts{catalog, catalog, refused.get(), refused.get(), peers != nullptr ? peers : refused.get(), "standalone",
            {refused}},
      counters);
}

std::unique_ptr<AdminService> AdminService::ForMaster(Catalog* catalog, ClusterAdmin* master,
                                                      const ServerCounters* counters, ReplicationPeers* peers) {
  auto refused = std::make_shared<NotServedHere>("the cluster's master");
  return std::make_unique<AdminService>(
      Parts{catalog, catalog, master, refused.get(), peers != nullptr ? peers : refused.get(), "master", {refused}},
      counters);
}

std::unique_ptr<AdminService> AdminService::ForRegionServer(RegionHost* host, const ServerCounters* counters,
                                                            ReplicationPeers* peers) {
  auto refused = std::make_shared<NotServedHere>("a region server");
  auto calls = std::make_shared<RegionServerAdmin>(host);
  return std::make_unique<AdminService>(Parts{host, refused.get(), refused.get(), calls.get(),
                                              peers != nullptr ? peers : refused.get(), "region server",
                                              {refused, calls}},
                                        counters);
}

AdminService::~AdminService() = default;

absl::Status AdminService::CreateTable(const rpc::CreateTableRequest& req, rpc::CreateTableResponse*) {
  BASALT_ASSIGN_OR_RETURN(TableSpec spec, TableFromProto(req.table()));
  const auto held = name_locks_->Lock(spec.name);
  return parts_.changes->Create(spec, std::vector<std::string>(req.split_keys().begin(), req.split_keys().end()));
}

namespace {
rpc::TableState StateOf(const TableSpec& spec, const absl::Status& open_error) {
  if (!spec.enabled) return rpc::TABLE_DISABLED;
  return open_error.ok() ? rpc::TABLE_ENABLED : rpc::TABLE_FAILED_OPEN;
}

void DescribeToProto(const TableSpec& spec, const absl::Status& open_error, size_t regions,
                     rpc::DescribeTableResponse* out) {
  out->set_regions(static_cast<uint32_t>(regions));
  *out->mutable_table() = TableToProto(spec);
  out->set_state(StateOf(spec, open_error));
  if (!open_error.ok()) out->set_error(open_error.ToString());
}
}  // namespace

absl::Status AdminService::DescribeTable(const rpc::TableRequest& req, rpc::DescribeTableResponse* resp) {
  BASALT_RETURN_IF_ERROR(ValidateTableRef(req.table()));
  BASALT_ASSIGN_OR_RETURN(TableSpec spec, parts_.tables->Describe(req.table()));
  DescribeToProto(spec, parts_.tables->OpenError(spec.name), parts_.tables->RegionCount(spec.name), resp);
  return absl::OkStatus();
}

absl::Status AdminService::ListTables(const rpc::ListTablesRequest&, rpc::ListTablesResponse* resp) {
  for (const TableSpec& spec : parts_.tables->List()) DescribeToProto(spec, parts_.tables->OpenError(spec.name), parts_.tables->RegionCount(spec.name), resp->add_tables());
  return absl::OkStatus();
}

namespace {

NamespaceSpec NamespaceFromProto(const rpc::NamespaceDescriptor& d) {
  NamespaceSpec spec;
  spec.name = d.name();
  spec.kept.configuration = rpc::KeptFromProto(d.configuration());
  return spec;
}

void NamespaceToProto(const NamespaceSpec& spec, rpc::NamespaceDescriptor* d) {
  d->set_name(spec.name);
  rpc::KeptToProto(spec.kept.configuration, d->mutable_configuration());
}

}  // namespace

absl::Status AdminService::CreateNamespace(const rpc::NamespaceRequest& req, rpc::AdminResponse*) {
  return parts_.changes->CreateNamespace(NamespaceFromProto(req.namespace_()));
}

absl::Status AdminService::ModifyNamespace(const rpc::NamespaceRequest& req, rpc::AdminResponse*) {
  return parts_.changes->ModifyNamespace(NamespaceFromProto(req.namespace_()));
}

namespace {

// Runs `cleanup` (when set) after `what` (a namespace, a table) named `name` was dropped; its
// failure says what is left to do by hand (`scope`: user_permission's argument).
absl::Status CleanUpAfter(const std::function<absl::Status(const std::string&)>& cleanup, std::string_view what,
                          const std::string& name, std::string_view scope) {
  if (!cleanup) return absl::OkStatus();
  if (absl::Status s = cleanup(name); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(AV(what), " '", name, "' was dropped, but its grants or quotas were "
                                               "not all removed (", s.message(), "): remove the rest by hand "
                                               "(user_permission '", AV(scope), "', list_quotas)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status AdminService::DropNamespace(const rpc::NamespaceNameRequest& req, rpc::AdminResponse*) {
  BASALT_RETURN_IF_ERROR(parts_.changes->DropNamespace(req.name()));
  return CleanUpAfter(namespace_cleanup_, "namespace", req.name(), absl::StrCat("@", req.name()));
}

absl::Status AdminService::DescribeNamespace(const rpc::NamespaceNameRequest& req,
                                             rpc::DescribeNamespaceResponse* resp) {
  BASALT_ASSIGN_OR_RETURN(NamespaceSpec spec, parts_.changes->DescribeNamespace(req.name()));
  NamespaceToProto(spec, resp->mutable_namespace_());
  for (const TableSpec& t : parts_.tables->List()) {
    if (TableNamespace(t.name) == spec.name) resp->add_tables(t.name);
  }
  return absl::OkStatus();
}

absl::Status AdminService::ListNamespaces(const rpc::ListNamespacesRequest&, rpc::ListNamespacesResponse* resp) {
  BASALT_ASSIGN_OR_RETURN(std::vector<NamespaceSpec> all, parts_.changes->ListNamespaces());
  for (const NamespaceSpec& ns : all) NamespaceToProto(ns, resp->add_namespaces());
  return absl::OkStatus();
}

absl::Status AdminService::DisableTable(const rpc::TableRequest& req, rpc::AdminResponse*) {
  BASALT_RETURN_IF_ERROR(ValidateTableName(req.table()));
  return parts_.changes->Disable(req.table());
}

absl::Status AdminService::ModifyTable(const rpc::ModifyTableRequest& req, rpc::AdminResponse*) {
  BASALT_ASSIGN_OR_RETURN(TableSpec spec, TableFromProto(req.table()));
  return parts_.changes->Modify(spec);
}

absl::Status AdminService::EnableTable(const rpc::TableRequest& req, rpc::AdminResponse*) {
  BASALT_RETURN_IF_ERROR(ValidateTableName(req.table()));
  return parts_.changes->Enable(req.table());
}

absl::Status AdminService::DropTable(const rpc::TableRequest& req, rpc::AdminResponse*) {
  BASALT_RETURN_IF_ERROR(ValidateTableName(req.table()));
  // Held through the cleanup too: a table made again under the name keeps what is granted on it.
  const auto held = name_locks_->Lock(req.table());
  BASALT_RETURN_IF_ERROR(parts_.changes->Drop(req.table()));
  return CleanUpAfter(table_cleanup_, "table", req.table(), req.table());
}

absl::Status AdminService::TruncateTable(const rpc::TruncateTableRequest& req, rpc::AdminResponse*) {
  const std::string& table = req.table();
  BASALT_RETURN_IF_ERROR(ValidateTableName(table));
  const auto held = name_locks_->Lock(table);  // no other create of it until it is made again
  BASALT_ASSIGN_OR_RETURN(TableSpec spec, parts_.tables->Describe(table));
  if (spec.enabled) {
    return absl::FailedPreconditionError(absl::StrCat("table '", table, "' is enabled: disable it to truncate it"));
  }
  std::vector<std::string> split_keys;
  if (req.preserve_splits()) {
    rpc::TableRequest named;
    named.set_table(table);
    rpc::ListRegionsResponse regions;
    BASALT_RETURN_IF_ERROR(ListRegions(named, &regions));
    for (const rpc::RegionStatus& r : regions.regions()) {
      if (!r.start_key().empty()) split_keys.push_back(r.start_key());
    }
  }
  // Made again from its descriptor as a client would give it (what the catalogue adds, it adds
  // again). What the create would refuse is refused before the drop, so that a truncate does not
  // end with no table.
  BASALT_ASSIGN_OR_RETURN(TableSpec fresh, TableFromProto(TableToProto(spec)));
  BASALT_RETURN_IF_ERROR(ValidateTableSpec(fresh));
  if (split_keys.size() >= Catalog::kMaxRegionsAtCreate) {
    return absl::FailedPreconditionError(absl::StrCat("table '", table, "' has ", split_keys.size() + 1,
                                                      " regions; a truncate that keeps them makes at most ",
                                                      Catalog::kMaxRegionsAtCreate, ": truncate it without"));
  }
  BASALT_RETURN_IF_ERROR(parts_.changes->Drop(table));
  if (absl::Status made = parts_.changes->Create(fresh, split_keys); !made.ok()) {
    return absl::Status(made.code(), absl::StrCat("table '", table, "' was dropped but could not be made again (",
                                                  made.message(), "): its grants and quotas are kept; create it "
                                                  "again with its descriptor"));
  }
  return absl::OkStatus();
}

absl::Status AdminService::Flush(const rpc::TableRequest& req, rpc::AdminResponse*) {
  BASALT_RETURN_IF_ERROR(ValidateTableName(req.table()));
  return parts_.tables->Flush(req.table());
}

absl::Status AdminService::MajorCompact(const rpc::TableRequest& req, rpc::AdminResponse*) {
  BASALT_RETURN_IF_ERROR(ValidateTableName(req.table()));
  return parts_.tables->MajorCompact(req.table());
}

absl::Status AdminService::AssignTable(const rpc::TableRequest& req, rpc::AdminResponse*) {
  BASALT_RETURN_IF_ERROR(ValidateTableName(req.table()));
  return parts_.changes->Assign(req.table());
}

absl::Status AdminService::Split(const rpc::SplitRequest& req, rpc::AdminResponse*) {
  if (req.name().empty()) return absl::InvalidArgumentError("split names no table or region");
  if (req.name().find(',') == std::string::npos) BASALT_RETURN_IF_ERROR(ValidateTableRef(req.name()));
  if (req.split_row().size() > kMaxRowLength) {
    return absl::InvalidArgumentError(absl::StrCat("split row longer than ", kMaxRowLength, " bytes"));
  }
  return parts_.changes->Split(req.name(), req.split_row());
}

absl::Status AdminService::Merge(const rpc::MergeRequest& req, rpc::AdminResponse*) {
  if (req.first().empty() || req.second().empty()) return absl::InvalidArgumentError("merge needs two regions");
  return parts_.changes->Merge(req.first(), req.second());
}

absl::Status AdminService::Status(const rpc::StatusRequest&, rpc::StatusResponse* resp) {
  resp->set_version(kVersion);
  resp->set_mode(parts_.mode);
  resp->set_uptime_seconds(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - counters_->start).count());
  resp->set_requests(counters_->requests.load(std::memory_order_relaxed));
  if (counters_->block_cache != nullptr) {
    BlockCacheUsage u = GetBlockCacheUsage(*counters_->block_cache);
    resp->set_block_cache_bytes(u.usage_bytes);
    resp->set_block_cache_capacity(u.capacity_bytes);
    resp->set_block_cache_hits(u.hits);
    resp->set_block_cache_misses(u.misses);
    resp->set_block_cache_evictions(u.evictions);
  }
  resp->set_resident_bytes(ResidentBytes());
  resp->set_http_address(counters_->http_address);
  resp->set_connections_accepted(counters_->connections_accepted.load(std::memory_order_relaxed));
  resp->set_connections_refused(counters_->connections_refused.load(std::memory_order_relaxed));
  resp->set_open_descriptors(OpenDescriptors());
  if (rlimit r{}; ::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
    resp->set_descriptor_limit(r.rlim_cur);
  }
  if (const VerbsControl* v = counters_->verbs.load(); v != nullptr) {
    resp->set_verbs(v->state);
    if (v->fill_status) v->fill_status(resp);
  } else {
    resp->set_verbs("off");
  }
  if (const VerbsControl* t = counters_->tcp.load(); t != nullptr) {
    resp->set_tcp(t->state);
    if (t->fill_status) t->fill_status(resp);
  } else {
    resp->set_tcp("off");
  }
  for (const TableInfo& info : parts_.tables->Stats()) {
    rpc::TableStatus* ts = resp->add_tables();
    ts->set_name(info.spec.name);
    ts->set_state(StateOf(info.spec, info.open_error));
    if (!info.open_error.ok()) ts->set_error(info.open_error.ToString());
    if (!info.stats.failed.empty()) ts->set_error(info.stats.failed);
    ts->set_log_truncated_bytes(info.stats.replay_truncated_bytes);
    ts->set_log_skipped_records(info.stats.replay_skipped_records);
    ts->set_log_skipped_bytes(info.stats.replay_skipped_bytes);
    ts->set_memstore_bytes(info.stats.memstore_bytes);
    ts->set_store_files(StoreFiles(info.stats));
    ts->set_flushes(info.stats.flushes);
    ts->set_compactions(info.stats.minor_compactions + info.stats.major_compactions);
    ts->set_regions(static_cast<uint32_t>(info.regions));
    ts->set_compactions_running(info.stats.compactions_running);
    ts->set_compactions_queued(info.stats.compactions_queued);
    ts->set_store_file_bytes(info.stats.store_file_bytes);
    ts->set_read_requests(info.stats.read_requests);
    ts->set_write_requests(info.stats.write_requests);
  }
  const LogStats log = parts_.tables->ServerLogStats();
  rpc::WalStatus* wal = resp->mutable_wal();
  wal->set_records(log.records);
  wal->set_bytes(log.bytes);
  wal->set_syncs(log.syncs);
  wal->set_synced_records(log.synced_records);
  wal->set_live_segments(log.live_segments);
  wal->set_sync_micros(log.sync_micros);
  resp->set_calls_in_flight(counters_->calls_in_flight.load(std::memory_order_relaxed));
  parts_.cluster->FillStatus(resp);
  return absl::OkStatus();
}

absl::Status AdminService::ListRegions(const rpc::TableRequest& req, rpc::ListRegionsResponse* resp) {
  BASALT_RETURN_IF_ERROR(ValidateTableRef(req.table()));
  BASALT_ASSIGN_OR_RETURN(std::vector<RegionStatus> regions, parts_.tables->Regions(req.table()));
  for (const RegionStatus& r : regions) {
    rpc::RegionStatus* out = resp->add_regions();
    out->set_name(r.info.Name());
    out->set_encoded_name(r.info.EncodedName());
    out->set_start_key(r.info.start_key);
    out->set_end_key(r.info.end_key);
    out->set_id(r.info.id);
    out->set_state(r.state);
    out->set_server(r.server);
    out->set_store_file_bytes(r.stats.store_file_bytes);
    out->set_store_files(StoreFiles(r.stats));
    out->set_memstore_bytes(r.stats.memstore_bytes);
    out->set_read_requests(r.stats.read_requests);
    out->set_write_requests(r.stats.write_requests);
  }
  return absl::OkStatus();
}

absl::Status AdminService::OpenVerbsSession(const Identity& caller, const rpc::VerbsSessionRequest& req,
                                            rpc::VerbsSessionResponse* resp) {
  // The frame version is checked by the client against the response's.
  const bool tcp = req.path() == rpc::FAST_PATH_TCP;
  const VerbsControl* v = tcp ? counters_->tcp.load() : counters_->verbs.load();
  if (v == nullptr || !v->open_session) {
    return absl::FailedPreconditionError(absl::StrCat("this server serves no ", tcp ? "TCP path" : "verbs transport",
                                                      " (", v == nullptr ? "off" : v->state, ")"));
  }
  BASALT_ASSIGN_OR_RETURN(*resp, v->open_session(std::make_shared<const Identity>(caller)));
  resp->set_path(req.path());
  return absl::OkStatus();
}

absl::Status AdminService::SetVerbs(const rpc::SetVerbsRequest& req, rpc::AdminResponse* resp) {
  (void)resp;
  const VerbsControl* v = counters_->verbs.load();
  if (v == nullptr || !v->set_enabled) {
    return absl::FailedPreconditionError(
        absl::StrCat("this server serves no verbs transport (", v == nullptr ? "off" : v->state, ")"));
  }
  v->set_enabled(req.enabled());
  return absl::OkStatus();
}

namespace {
void DescribeSnapshot(const SnapshotInfo& info, uint64_t bytes, uint64_t only_bytes, rpc::SnapshotDescription* out) {
  out->set_name(info.name);
  out->set_table(info.table.name);
  out->set_created_ms(info.created_ms);
  out->set_ttl_seconds(info.ttl_s);
  out->set_regions(static_cast<uint32_t>(info.regions.size()));
  out->set_files(info.files());
  out->set_bytes(bytes);
  out->set_only_bytes(only_bytes);
  out->set_owner(info.owner);
}
}  // namespace

absl::Status AdminService::Snapshot(const rpc::SnapshotRequest& req, rpc::SnapshotResponse* resp) {
  BASALT_RETURN_IF_ERROR(ValidateTableName(req.table()));
  SnapshotOptions options{req.ttl_seconds(), req.owner(), {}};
  for (const rpc::GrantRequest& g : req.grants()) {
    BASALT_ASSIGN_OR_RETURN(uint8_t perms, ParsePerms(g.permissions()));
    options.grants.push_back(SnapshotGrant{g.principal(), g.scope().family(), g.scope().qualifier(), perms});
  }
  BASALT_ASSIGN_OR_RETURN(SnapshotInfo info, parts_.changes->Snapshot(req.table(), req.name(), options));
  DescribeSnapshot(info, info.bytes(), 0, resp->mutable_snapshot());  // (every byte the table's too, now)
  return absl::OkStatus();
}

absl::Status AdminService::ListSnapshots(const rpc::ListSnapshotsRequest& req, rpc::ListSnapshotsResponse* resp) {
  BASALT_ASSIGN_OR_RETURN(std::vector<SnapshotListing> all, parts_.changes->ListSnapshots());
  for (const SnapshotListing& l : all) {
    if (!req.table().empty() && l.info.table.name != req.table()) continue;
    DescribeSnapshot(l.info, l.bytes, l.only_bytes, resp->add_snapshots());
  }
  return absl::OkStatus();
}

absl::Status AdminService::DeleteSnapshot(const rpc::DeleteSnapshotRequest& req, rpc::AdminResponse*) {
  return parts_.changes->DeleteSnapshot(req.name());
}

absl::Status AdminService::CloneSnapshot(const rpc::CloneSnapshotRequest& req, rpc::AdminResponse*) {
  BASALT_RETURN_IF_ERROR(ValidateTableName(req.table()));
  const auto held = name_locks_->Lock(req.table());
  return parts_.changes->CloneSnapshot(req.snapshot(), req.table());
}

absl::Status AdminService::RestoreSnapshot(const rpc::RestoreSnapshotRequest& req, rpc::AdminResponse*) {
  // A restore of a dropped table makes it again under its name: held as a create's.
  BASALT_ASSIGN_OR_RETURN(const SnapshotInfo info, parts_.changes->ReadSnapshot(req.snapshot()));
  const auto held = name_locks_->Lock(info.table.name);
  return parts_.changes->RestoreSnapshot(req.snapshot());
}

absl::Status AdminService::Move(const rpc::MoveRequest& req, rpc::AdminResponse*) {
  if (req.region().empty()) return absl::InvalidArgumentError("move: name a region (its encoded name or region name)");
  return parts_.cluster->Move(req.region(), req.server());
}

absl::Status AdminService::Unassign(const rpc::RegionRequest& req, rpc::AdminResponse*) {
  if (req.region().empty()) return absl::InvalidArgumentError("unassign: name a region (its encoded name or region name)");
  return parts_.cluster->Unassign(req.region());
}

absl::Status AdminService::AssignRegion(const rpc::RegionRequest& req, rpc::AdminResponse*) {
  if (req.region().empty()) return absl::InvalidArgumentError("assign: name a region (its encoded name or region name)");
  return parts_.cluster->AssignRegion(req.region());
}

absl::Status AdminService::Balance(const rpc::BalanceRequest&, rpc::BalanceResponse* resp) {
  return parts_.cluster->Balance(resp);
}

absl::Status AdminService::OpenRegion(const rpc::OpenRegionRequest& req, rpc::OpenRegionResponse* resp) {
  return parts_.region_server->OpenRegion(req, resp);
}

absl::Status AdminService::CloseRegion(const rpc::CloseRegionRequest& req, rpc::AdminResponse* resp) {
  return parts_.region_server->CloseRegion(req, resp);
}

absl::Status AdminService::RegionOperation(const rpc::RegionOpRequest& req, rpc::RegionOpResponse* resp) {
  return parts_.region_server->RegionOperation(req, resp);
}

absl::Status AdminService::HostedRegions(const rpc::HostedRegionsRequest& req, rpc::HostedRegionsResponse* resp) {
  return parts_.region_server->HostedRegions(req, resp);
}

absl::Status AdminService::AddPeer(const rpc::AddPeerRequest& req, rpc::AdminResponse*) {
  return parts_.peers->AddPeer(req.peer());
}

absl::Status AdminService::RemovePeer(const rpc::PeerRequest& req, rpc::AdminResponse*) {
  return parts_.peers->RemovePeer(req.id());
}

absl::Status AdminService::UpdatePeer(const rpc::AddPeerRequest& req, rpc::AdminResponse*) {
  return parts_.peers->UpdatePeer(req.peer());
}

absl::Status AdminService::EnablePeer(const rpc::PeerRequest& req, rpc::AdminResponse*) {
  return parts_.peers->SetPeerEnabled(req.id(), true);
}

absl::Status AdminService::DisablePeer(const rpc::PeerRequest& req, rpc::AdminResponse*) {
  return parts_.peers->SetPeerEnabled(req.id(), false);
}

absl::Status AdminService::ListPeers(const rpc::ListPeersRequest& req, rpc::ListPeersResponse* resp) {
  return req.settings_only() ? parts_.peers->ListPeers(resp) : parts_.peers->ListPeersGathered(resp);
}

absl::Status AdminService::GenerateConsistencyToken(const rpc::ConsistencyTokenRequest& req,
                                                    rpc::ConsistencyTokenResponse* resp) {
  BASALT_RETURN_IF_ERROR(ValidateTableName(req.table()));
  BASALT_ASSIGN_OR_RETURN(rpc::ConsistencyToken token, parts_.peers->ConsistencyToken());
  resp->set_token(token.SerializeAsString());
  return absl::OkStatus();
}

absl::Status AdminService::CheckConsistency(const rpc::CheckConsistencyRequest& req,
                                            rpc::CheckConsistencyResponse* resp) {
  BASALT_RETURN_IF_ERROR(ValidateTableName(req.table()));
  rpc::ConsistencyToken token;
  if (!token.ParseFromString(req.token())) {
    return absl::InvalidArgumentError("CheckConsistency: the token does not parse (give it back as GenerateConsistencyToken made it)");
  }
  BASALT_ASSIGN_OR_RETURN(std::string waiting, parts_.peers->NotReplicated(req.table(), token));
  resp->set_consistent(waiting.empty());
  resp->set_waiting_for(waiting);
  return absl::OkStatus();
}

}  // namespace basalt::server
