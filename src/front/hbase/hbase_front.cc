#include "src/front/hbase/hbase_front.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <optional>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/status.h"
#include "proto/hbase/hbase_master.pb.h"
#include "src/base/flags.h"
#include "src/front/hbase/cell_block.h"
#include "src/front/hbase/client_meta.h"
#include "src/front/hbase/data_convert.h"
#include "src/front/hbase/filter_convert.h"
#include "src/front/hbase/region_names.h"
#include "src/front/hbase/zk_records.h"
#include "src/schema/region_info.h"

namespace basalt::hbase {
namespace {

constexpr char kMasterService[] = "MasterService";
constexpr char kClientService[] = "ClientService";
constexpr char kAdminService[] = "AdminService";
constexpr char kKeyValueCodec[] = "org.apache.hadoop.hbase.codec.KeyValueCodec";
constexpr char kPbufMagic[] = "PBUF";
constexpr uint32_t kMaxRowsPerCall = 10000;

std::string ExceptionFrame(uint32_t call_id, const absl::Status& s) {
  const Exception e = ExceptionOf(s);
  return EncodeException(call_id, e.class_name, e.message, e.do_not_retry, e.server_overloaded);
}

template <typename M>
absl::Status Parse(const Call& call, M* m) {
  if (m->ParsePartialFromString(call.param) && m->IsInitialized()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("the request of ", call.header.method_name(), " does not parse"));
}

std::string BigEndian64(int64_t v) {
  std::string out;
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((static_cast<uint64_t>(v) >> shift) & 0xff));
  return out;
}


// The Basalt region an HBase region name names (its encoded name), and its table.
struct NamedRegion {
  std::string table;   // Basalt's
  std::string region;  // Basalt's encoded name
  bool meta = false;   // hbase:meta
};

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
  TableName tn;
  const size_t colon = ref.table.find(':');
  if (colon != std::string::npos) {
    tn.set_namespace_(ref.table.substr(0, colon));
    tn.set_qualifier(ref.table.substr(colon + 1));
  } else {
    tn.set_qualifier(ref.table);
  }
  BASALT_ASSIGN_OR_RETURN(n.table, BasaltTableOf(tn));
  server::RegionInfo info;
  info.table = n.table;
  info.start_key = ref.start_key;
  info.id = ref.id;
  n.region = ref.id == 0 ? "" : info.EncodedName();
  return n;
}

// A scanner a client holds open between calls.
struct Scanner {
  std::string table;  // Basalt's, for the quotas
  std::unique_ptr<server::ScanCursor> cursor;
  std::deque<rpc::Row> pending;  // read and not yet sent
  bool exhausted = false;        // the cursor has no more rows
  uint64_t next_call_seq = 0;
  int64_t last_used_ms = 0;
  bool in_use = false;
  // A reversed scan with an inclusive lower bound: Basalt's bound is exclusive, so the rows
  // below it are cut here.
  std::string inclusive_floor;
  bool has_floor = false;
  // How a row may be cut: at most `batch` cells per result (Scan.setBatch; 0: no limit), and,
  // when the client stitches partial results, where a reply reaches max_result_size.
  uint32_t batch = 0;
  bool partials = false;
  uint64_t max_result_size = 0;
  int sent_cells = 0;  // of pending.front(), already sent as partial results
};

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

}  // namespace

struct HBaseFront::Impl {
  Options options;
  server::DataService* data;
  server::AdminService* admin;
  std::unique_ptr<HBasePort> port;

  absl::Mutex mu;
  std::map<uint64_t, std::shared_ptr<Scanner>> scanners ABSL_GUARDED_BY(mu);
  uint64_t next_scanner_id ABSL_GUARDED_BY(mu) = 1;
  // Procedures: Basalt's admin calls finish before they answer, so a procedure is done when its
  // id is given; kept so the client's poll finds it. The newest kMaxProcedures are kept.
  std::map<uint64_t, std::string> procedures ABSL_GUARDED_BY(mu);  // id → what it did
  uint64_t next_procedure ABSL_GUARDED_BY(mu) = 1;
  // (nonce group, nonce) of admin calls done or running → their procedure, so a retry gets the
  // first answer; kRunning while the first is under way.
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> admin_nonces ABSL_GUARDED_BY(mu);
  bool nonce_settled ABSL_GUARDED_BY(mu) = false;  // a running admin call finished: waiters look again
  static constexpr uint64_t kRunning = 0;           // (procedure ids start at 1)
  static constexpr size_t kMaxProcedures = 10000;
  // Closes the scanners whose lease lapsed, as HBase's lease thread does, even when no call
  // comes to notice them: an abandoned scanner holds its region's files.
  //
  // A scanner's cursor is never destroyed under `mu`: its destructor takes the table's hook
  // lock, under which a closing table calls the hook below, which takes `mu`. Scanners taken
  // out of the map under `mu` are destroyed after it is released (by whoever holds the last
  // reference, or by the reaper, which buries what it and the hooks take out).
  std::thread reaper;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  bool wake ABSL_GUARDED_BY(mu) = false;  // a table closed under some scanners, or stopping
  std::vector<std::shared_ptr<Scanner>> graveyard ABSL_GUARDED_BY(mu);

  void Reap() {
    const absl::Duration period = absl::Milliseconds(std::clamp<int64_t>(options.scanner_lease_ms / 4, 100, 10000));
    for (;;) {
      std::vector<std::shared_ptr<Scanner>> gone;
      {
        absl::MutexLock l(&mu);
        mu.AwaitWithTimeout(absl::Condition(&wake), period);
        wake = false;
        if (stopping) return;
        ExpireScanners(&gone);
        for (auto& g : graveyard) gone.push_back(std::move(g));
        graveyard.clear();
      }
    }  // `gone` destroyed here, outside mu
  }

  // Called by a scanner's table when it closes (disabled, dropped): the scanner goes at once,
  // so the table need not wait for the scanner's lease (HBase closes a region's scanners with
  // the region). One in use goes when its call ends (its cursor says the table closed).
  void OnTableClosed(uint64_t id) {
    absl::MutexLock l(&mu);
    auto it = scanners.find(id);
    if (it == scanners.end() || it->second->in_use) return;
    graveyard.push_back(std::move(it->second));
    scanners.erase(it);
    wake = true;
  }

  // ---------------------------------------------------------------------------------------
  // The part this port plays in a cluster (Options::role)

  // The region `spec` names, if this port serves it: a master serves hbase:meta only, a region
  // server the regions open here (DataService says which) but not hbase:meta.
  absl::StatusOr<NamedRegion> Served(const RegionSpecifier& spec) const {
    BASALT_ASSIGN_OR_RETURN(NamedRegion region, RegionOf(spec));
    if (options.role == Options::Role::kMaster && !region.meta) {
      return AsException(absl::UnavailableError(absl::StrCat("region ", absl::CHexEscape(spec.value()),
                                                             " is served by a region server, not by the master")),
                         kNotServingRegion);
    }
    if (options.role == Options::Role::kRegionServer && region.meta) {
      return AsException(absl::UnavailableError("hbase:meta is served by the active master, not by a region server"),
                         kNotServingRegion);
    }
    return region;
  }

  // Region servers by their gRPC name, from Options::region_servers, and when they were read.
  absl::Mutex directory_mu;
  std::map<std::string, server::ServerRegistration> directory ABSL_GUARDED_BY(directory_mu);
  absl::Time directory_read ABSL_GUARDED_BY(directory_mu) = absl::InfinitePast();

  // The HBase ServerName of the region server Basalt names `server` (gRPC HOST:PORT); nullopt
  // when it is not live or has no HBase port. A standalone server and a region server name
  // themselves.
  std::optional<ServerName> HBaseServerOf(const std::string& server) {
    if (options.role != Options::Role::kMaster) return Self();
    absl::MutexLock l(&directory_mu);
    const absl::Time now = absl::Now();
    auto it = directory.find(server);
    if (now - directory_read > absl::Seconds(1) || (it == directory.end() && now - directory_read > absl::Milliseconds(100))) {
      ReadDirectory(now);
      it = directory.find(server);
    }
    if (it == directory.end() || it->second.hbase.empty()) return std::nullopt;
    return ServerNameOfRegistration(it->second);
  }
  // Every live region server that has an HBase port.
  std::vector<ServerName> RegionServers() {
    if (options.role != Options::Role::kMaster) return {Self()};
    absl::MutexLock l(&directory_mu);
    if (absl::Now() - directory_read > absl::Seconds(1)) ReadDirectory(absl::Now());
    std::vector<ServerName> out;
    for (const auto& [name, reg] : directory) {
      if (std::optional<ServerName> sn = ServerNameOfRegistration(reg)) out.push_back(*sn);
    }
    return out;
  }
  void ReadDirectory(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(directory_mu) {
    directory_read = now;
    if (!options.region_servers) return;
    absl::StatusOr<std::vector<server::ServerRegistration>> regs = options.region_servers();
    if (!regs.ok()) {
      if (options.port.log) options.port.log(absl::StrCat("listing the region servers: ", regs.status().message()));
      return;  // the copy it has stays
    }
    directory.clear();
    for (server::ServerRegistration& r : *regs) directory[r.name] = std::move(r);
  }
  static std::optional<ServerName> ServerNameOfRegistration(const server::ServerRegistration& r) {
    std::string host;
    int port = 0;
    if (r.hbase.empty() || !server::SplitHostPort(r.hbase, &host, &port).ok()) return std::nullopt;
    return ServerNameOf(host, port, static_cast<uint64_t>(r.start_code));
  }

  // The Basalt region server whose HBase port `sn` names (its gRPC HOST:PORT); InvalidArgument
  // when no live one has that port (HBase's answer to a move to an unknown server).
  absl::StatusOr<std::string> BasaltServerOf(const ServerName& sn) {
    const std::string hbase = absl::StrCat(sn.host_name(), ":", sn.port());
    if (options.role == Options::Role::kMaster) {
      absl::MutexLock l(&directory_mu);
      for (int attempt = 0; attempt < 2; ++attempt) {
        for (const auto& [name, reg] : directory) {
          if (reg.hbase == hbase) return name;
        }
        if (attempt == 0) ReadDirectory(absl::Now());
      }
    }
    return absl::InvalidArgumentError(absl::StrCat("no live region server has the HBase port ", hbase));
  }

  // The region `spec` names, by its full name or (as Admin.move names it) its encoded name alone,
  // which is looked up in hbase:meta.
  absl::StatusOr<NamedRegion> RegionNamedAnyhow(const RegionSpecifier& spec) {
    if (spec.type() != RegionSpecifier::ENCODED_REGION_NAME || spec.value() == kMetaEncodedName) return RegionOf(spec);
    BASALT_ASSIGN_OR_RETURN(std::vector<MetaRow> rows, MetaRows(""));
    for (const MetaRow& row : rows) {
      if (row.row.find(',') == std::string::npos || EncodedNameOf(row.row) != spec.value()) continue;
      RegionSpecifier named;
      named.set_type(RegionSpecifier::REGION_NAME);
      named.set_value(row.row);
      return RegionOf(named);
    }
    return AsException(absl::NotFoundError(absl::StrCat("no region is named ", absl::CHexEscape(spec.value()))),
                       kUnknownRegion);
  }

  // ClientMetaService on a region server (Options::active_master): this cluster's id, and the
  // active master as the master and hbase:meta's server; this server and the master as bootstrap
  // nodes. No master with an HBase port: java.io.IOException, which the client retries.
  void AnswerRegistryForTheMaster(const Call& call, Responder* r) {
    absl::StatusOr<server::ServerRegistration> master = options.active_master();
    std::optional<ServerName> sn;
    if (master.ok()) {
      sn = ServerNameOfRegistration(*master);
      if (!sn.has_value()) {
        master = absl::DataLossError(absl::StrCat("the active master's HBase address '", master->hbase, "' does not parse"));
      }
    }
    if (!master.ok()) {
      r->Send(EncodeException(call.header.call_id(), "java.io.IOException",
                              absl::StrCat("this region server (", SelfAddress(), ") cannot name the active master: ",
                                           master.status().message()),
                              /*do_not_retry=*/false));
      return;
    }
    ClusterFacts facts;
    facts.cluster_id = options.cluster_id;
    facts.active_master = *sn;
    facts.meta_server = *sn;
    facts.bootstrap = {Self(), *sn};
    r->Send(AnswerClientMeta(call, facts));
  }

  ServerName Self() const { return ServerNameOf(options.advertised_host, port->port(), options.start_code); }
  std::string SelfAddress() const { return absl::StrCat(options.advertised_host, ":", port->port()); }

  void Run(std::function<void()> task) {
    if (options.schedule) {
      options.schedule(std::move(task));
    } else {
      task();
    }
  }

  void Handle(Call call, std::unique_ptr<Responder> r) {
    const std::string& service = r->connection_header().service_name();
    if (options.admit) {
      if (absl::Status s = options.admit(); !s.ok()) {
        // A deposed master: hbase:meta is looked up again, the master found again (both retried).
        r->Send(ExceptionFrame(call.header.call_id(),
                               service == kClientService ? AsException(std::move(s), kNotServingRegion) : s));
        return;
      }
    }
    if (options.role == Options::Role::kRegionServer && service == kClientMetaService && options.active_master) {
      // The registry of a region server: the facts are the active master's, read from ZooKeeper
      // (off the loop thread).
      auto shared = std::make_shared<std::pair<Call, std::unique_ptr<Responder>>>(std::move(call), std::move(r));
      Run([this, shared] { AnswerRegistryForTheMaster(shared->first, shared->second.get()); });
      return;
    }
    if (options.role == Options::Role::kRegionServer && (service == kClientMetaService || service == kMasterService)) {
      r->Send(EncodeException(call.header.call_id(), kDoNotRetry,
                              absl::StrCat(service, " is the active master's: this is a region server (",
                                           SelfAddress(), ")"),
                              /*do_not_retry=*/true));
      return;
    }
    if (service == kClientMetaService) {
      ClusterFacts facts;
      facts.cluster_id = options.cluster_id;
      facts.active_master = Self();
      facts.meta_server = Self();
      facts.bootstrap = {Self()};
      r->Send(AnswerClientMeta(call, facts));
      return;
    }
    if (service == kClientService) {
      const std::string& m = call.header.method_name();
      if (m == "Get" || m == "Scan") {
        Client(call, r.get());
        return;
      }
      auto shared = std::make_shared<std::pair<Call, std::unique_ptr<Responder>>>(std::move(call), std::move(r));
      Run([this, shared] { Client(shared->first, shared->second.get()); });
      return;
    }
    if (service == kMasterService) {
      if (call.header.method_name() == "IsMasterRunning") {
        IsMasterRunningResponse resp;
        resp.set_is_master_running(true);
        r->Send(EncodeResponse(call.header.call_id(), resp));
        return;
      }
      auto shared = std::make_shared<std::pair<Call, std::unique_ptr<Responder>>>(std::move(call), std::move(r));
      Run([this, shared] { Master(shared->first, shared->second.get()); });
      return;
    }
    if (service == kAdminService) {
      auto shared = std::make_shared<std::pair<Call, std::unique_ptr<Responder>>>(std::move(call), std::move(r));
      Run([this, shared] { RegionServerAdmin(shared->first, shared->second.get()); });
      return;
    }
    r->Send(AnswerNotServed(call, service));
  }

  // ---------------------------------------------------------------------------------------
  // MasterService

  void Master(const Call& call, Responder* r) {
    std::string answer;
    absl::Status s = MasterCall(call, &answer);
    r->Send(s.ok() ? std::move(answer) : ExceptionFrame(call.header.call_id(), s));
  }

  uint64_t Procedure(const std::string& what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    const uint64_t id = next_procedure++;
    procedures.emplace(id, what);
    if (procedures.size() > kMaxProcedures) procedures.erase(procedures.begin());
    return id;
  }

  absl::StatusOr<rpc::DescribeTableResponse> Describe(const std::string& table) {
    rpc::ListTablesResponse all;
    BASALT_RETURN_IF_ERROR(admin->ListTables(rpc::ListTablesRequest(), &all));
    for (rpc::DescribeTableResponse& t : *all.mutable_tables()) {
      if (t.table().name() == table) return std::move(t);
    }
    return TableNotFound(table);
  }

  // Table `table` as it is (its descriptor, transactional and queue flags kept), changed by
  // `change`, then modified so (AdminService::ModifyTable: its regions reopen).
  absl::Status Modify(const std::string& table, const std::function<absl::Status(rpc::TableDescriptor*)>& change) {
    BASALT_ASSIGN_OR_RETURN(rpc::DescribeTableResponse now, Describe(table));
    rpc::ModifyTableRequest req;
    *req.mutable_table() = now.table();
    BASALT_RETURN_IF_ERROR(change(req.mutable_table()));
    rpc::AdminResponse ignored;
    return admin->ModifyTable(req, &ignored);
  }
  static absl::Status FamilyRefused(std::string_view table, std::string_view family, std::string_view why) {
    return AsException(absl::InvalidArgumentError(absl::StrCat("column family '", AV(family), "' of table '", AV(table),
                                                               "' ", AV(why))),
                       kInvalidFamilyOperation);
  }

  // A procedure's answer: done at once (Basalt's admin calls are synchronous), or, for a call
  // with the nonce of one already done, that one's procedure. A retry that arrives while the
  // first attempt still runs waits for it (as HBase's master): run twice, a create would answer
  // the retry TableExistsException for a table the first attempt made. A first attempt that
  // failed leaves the nonce free, and the retry runs.
  template <typename Response>
  absl::Status ProcedureCall(const Call& call, std::string* answer, uint64_t nonce_group, uint64_t nonce,
                             const std::string& what, const std::function<absl::Status()>& run) {
    Response resp;
    const std::pair<uint64_t, uint64_t> key{nonce_group, nonce};
    std::optional<uint64_t> done;
    if (nonce != 0) {
      absl::MutexLock l(&mu);
      for (;;) {
        auto it = admin_nonces.find(key);
        if (it == admin_nonces.end()) {
          admin_nonces.emplace(key, kRunning);  // ours to run
          break;
        }
        if (it->second != kRunning) {
          done = it->second;
          break;
        }
        mu.AwaitWithTimeout(absl::Condition(&nonce_settled), absl::Milliseconds(50));
        nonce_settled = false;
      }
    }
    if (!done.has_value()) {
      absl::Status s = run();
      absl::MutexLock l(&mu);
      if (s.ok()) done = Procedure(what);
      if (nonce != 0) {
        if (s.ok()) {
          admin_nonces[key] = *done;
        } else {
          admin_nonces.erase(key);
        }
        nonce_settled = true;
        if (admin_nonces.size() > kMaxProcedures) {
          for (auto it = admin_nonces.begin(); it != admin_nonces.end(); ++it) {
            if (it->second != kRunning) {
              admin_nonces.erase(it);
              break;
            }
          }
        }
      }
      BASALT_RETURN_IF_ERROR(s);
    }
    resp.set_proc_id(*done);
    *answer = EncodeResponse(call.header.call_id(), resp);
    return absl::OkStatus();
  }

  absl::Status MasterCall(const Call& call, std::string* answer) {
    const std::string& m = call.header.method_name();
    const uint32_t id = call.header.call_id();
    if (m == "GetTableNames" || m == "GetTableDescriptors") {
      std::string ns;
      bool names_only = m == "GetTableNames";
      GetTableNamesRequest names_req;
      GetTableDescriptorsRequest desc_req;
      std::vector<std::string> wanted;
      if (names_only) {
        BASALT_RETURN_IF_ERROR(Parse(call, &names_req));
        ns = names_req.namespace_();
      } else {
        BASALT_RETURN_IF_ERROR(Parse(call, &desc_req));
        ns = desc_req.namespace_();
        for (const TableName& t : desc_req.table_names()) {
          absl::StatusOr<std::string> name = BasaltTableOf(t);
          // A name of another namespace (hbase:meta's too) is not a Basalt table: not found,
          // never "every table".
          if (!name.ok()) return TableNotFound(TableNameOf(t.namespace_(), t.qualifier()));
          wanted.push_back(*name);
        }
      }
      rpc::ListTablesResponse all;
      BASALT_RETURN_IF_ERROR(admin->ListTables(rpc::ListTablesRequest(), &all));
      GetTableNamesResponse names;
      GetTableDescriptorsResponse descs;
      const bool any_ns = ns.empty() || ns == kDefaultNamespace;
      for (const rpc::DescribeTableResponse& t : all.tables()) {
        const std::string& name = t.table().name();
        if (!any_ns || absl::StartsWith(name, "basalt:")) continue;
        if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), name) == wanted.end()) continue;
        if (names_only) {
          *names.add_table_names() = TableNameOfBasalt(name);
        } else {
          *descs.add_table_schema() = SchemaOf(t.table());
        }
      }
      if (!names_only && !desc_req.table_names().empty() && descs.table_schema().empty()) {
        return TableNotFound(TableNameOf(desc_req.table_names(0).namespace_(), desc_req.table_names(0).qualifier()));
      }
      *answer = names_only ? EncodeResponse(id, names) : EncodeResponse(id, descs);
      return absl::OkStatus();
    }
    if (m == "CreateTable") {
      CreateTableRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      BASALT_ASSIGN_OR_RETURN(rpc::TableDescriptor desc, DescriptorOf(req.table_schema()));
      return ProcedureCall<CreateTableResponse>(call, answer, req.nonce_group(), req.nonce(), "create", [&] {
        rpc::CreateTableRequest c;
        *c.mutable_table() = desc;
        for (const std::string& k : req.split_keys()) c.add_split_keys(k);
        rpc::CreateTableResponse ignored;
        absl::Status s = admin->CreateTable(c, &ignored);
        if (s.code() == absl::StatusCode::kAlreadyExists) return absl::AlreadyExistsError(desc.name());
        return s;
      });
    }
    if (m == "ModifyTable") {
      ModifyTableRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      BASALT_ASSIGN_OR_RETURN(rpc::TableDescriptor wanted, DescriptorOf(req.table_schema()));
      return ProcedureCall<ModifyTableResponse>(call, answer, req.nonce_group(), req.nonce(), m, [&] {
        return Modify(wanted.name(), [&](rpc::TableDescriptor* t) {
          *t->mutable_families() = wanted.families();
          t->set_max_file_size(wanted.max_file_size());
          *t->mutable_kept_attributes() = wanted.kept_attributes();
          *t->mutable_kept_configuration() = wanted.kept_configuration();
          return absl::OkStatus();
        });
      });
    }
    if (m == "GetSchemaAlterStatus") {
      // A modification is done when its call answers: every region has reopened with it.
      GetSchemaAlterStatusRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.table_name()));
      rpc::TableRequest t;
      t.set_table(table);
      rpc::ListRegionsResponse regions;
      absl::Status listed = admin->ListRegions(t, &regions);
      if (absl::IsNotFound(listed)) return TableNotFound(table);
      BASALT_RETURN_IF_ERROR(listed);
      GetSchemaAlterStatusResponse resp;
      resp.set_yet_to_update_regions(0);
      resp.set_total_regions(static_cast<uint32_t>(regions.regions_size()));
      *answer = EncodeResponse(id, resp);
      return absl::OkStatus();
    }
    if (m == "AddColumn" || m == "ModifyColumn") {
      AddColumnRequest req;  // (ModifyColumnRequest has the same fields)
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.table_name()));
      BASALT_ASSIGN_OR_RETURN(rpc::FamilyDescriptor family, FamilyOf(req.column_families()));
      const bool add = m == "AddColumn";
      auto run = [&] {
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
      };
      return add ? ProcedureCall<AddColumnResponse>(call, answer, req.nonce_group(), req.nonce(), m, run)
                 : ProcedureCall<ModifyColumnResponse>(call, answer, req.nonce_group(), req.nonce(), m, run);
    }
    if (m == "DeleteColumn") {
      DeleteColumnRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.table_name()));
      return ProcedureCall<DeleteColumnResponse>(call, answer, req.nonce_group(), req.nonce(), m, [&] {
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
    if (m == "DisableTable" || m == "EnableTable" || m == "DeleteTable") {
      TableName tn;
      uint64_t group = 0;
      uint64_t nonce = 0;
      if (m == "DisableTable") {
        DisableTableRequest req;
        BASALT_RETURN_IF_ERROR(Parse(call, &req));
        tn = req.table_name(), group = req.nonce_group(), nonce = req.nonce();
      } else if (m == "EnableTable") {
        EnableTableRequest req;
        BASALT_RETURN_IF_ERROR(Parse(call, &req));
        tn = req.table_name(), group = req.nonce_group(), nonce = req.nonce();
      } else {
        DeleteTableRequest req;
        BASALT_RETURN_IF_ERROR(Parse(call, &req));
        tn = req.table_name(), group = req.nonce_group(), nonce = req.nonce();
      }
      BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(tn));
      auto run = [&]() -> absl::Status {
        BASALT_ASSIGN_OR_RETURN(rpc::DescribeTableResponse d, Describe(table));
        rpc::TableRequest t;
        t.set_table(table);
        rpc::AdminResponse ignored;
        const bool disabled = d.state() == rpc::TABLE_DISABLED;
        if (m == "DisableTable") {
          if (disabled) return AsException(absl::FailedPreconditionError(table), kTableNotEnabled);
          return admin->DisableTable(t, &ignored);
        }
        if (m == "EnableTable") {
          if (!disabled) return AsException(absl::FailedPreconditionError(table), kTableNotDisabled);
          return admin->EnableTable(t, &ignored);
        }
        if (!disabled) return AsException(absl::FailedPreconditionError(table), kTableNotDisabled);
        return admin->DropTable(t, &ignored);
      };
      if (m == "DisableTable") return ProcedureCall<DisableTableResponse>(call, answer, group, nonce, m, run);
      if (m == "EnableTable") return ProcedureCall<EnableTableResponse>(call, answer, group, nonce, m, run);
      return ProcedureCall<DeleteTableResponse>(call, answer, group, nonce, m, run);
    }
    if (m == "truncateTable") {
      TruncateTableRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.tablename()));
      return ProcedureCall<TruncateTableResponse>(call, answer, req.nonce_group(), req.nonce(), m, [&]() -> absl::Status {
        BASALT_ASSIGN_OR_RETURN(rpc::DescribeTableResponse d, Describe(table));
        if (d.state() != rpc::TABLE_DISABLED) {
          return AsException(absl::FailedPreconditionError(table), kTableNotDisabled);
        }
        rpc::CreateTableRequest c;
        *c.mutable_table() = d.table();
        if (req.preservesplits()) {
          rpc::TableRequest t;
          t.set_table(table);
          rpc::ListRegionsResponse regions;
          BASALT_RETURN_IF_ERROR(admin->ListRegions(t, &regions));
          for (const rpc::RegionStatus& r : regions.regions()) {
            if (!r.start_key().empty()) c.add_split_keys(r.start_key());
          }
        }
        rpc::TableRequest t;
        t.set_table(table);
        rpc::AdminResponse ignored;
        BASALT_RETURN_IF_ERROR(admin->DropTable(t, &ignored));
        rpc::CreateTableResponse created;
        return admin->CreateTable(c, &created);
      });
    }
    if (m == "getProcedureResult") {
      GetProcedureResultRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      GetProcedureResultResponse resp;
      {
        absl::MutexLock l(&mu);
        resp.set_state(procedures.count(req.proc_id()) != 0 ? GetProcedureResultResponse::FINISHED
                                                              : GetProcedureResultResponse::NOT_FOUND);
      }
      *answer = EncodeResponse(id, resp);
      return absl::OkStatus();
    }
    if (m == "GetTableState") {
      GetTableStateRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.table_name()));
      BASALT_ASSIGN_OR_RETURN(rpc::DescribeTableResponse d, Describe(table));
      GetTableStateResponse resp;
      resp.mutable_table_state()->set_state(d.state() == rpc::TABLE_DISABLED ? TableState::DISABLED
                                                                             : TableState::ENABLED);
      *answer = EncodeResponse(id, resp);
      return absl::OkStatus();
    }
    if (m == "ListNamespaceDescriptors" || m == "ListNamespaces" || m == "GetNamespaceDescriptor") {
      const std::vector<std::string> all = {kDefaultNamespace, kSystemNamespace};
      if (m == "ListNamespaces") {
        ListNamespacesResponse resp;
        for (const std::string& n : all) resp.add_namespacename(n);
        *answer = EncodeResponse(id, resp);
      } else if (m == "ListNamespaceDescriptors") {
        ListNamespaceDescriptorsResponse resp;
        for (const std::string& n : all) resp.add_namespacedescriptor()->set_name(n);
        *answer = EncodeResponse(id, resp);
      } else {
        GetNamespaceDescriptorRequest req;
        BASALT_RETURN_IF_ERROR(Parse(call, &req));
        if (std::find(all.begin(), all.end(), req.namespacename()) == all.end()) {
          return NamespaceNotFound(req.namespacename());
        }
        GetNamespaceDescriptorResponse resp;
        resp.mutable_namespacedescriptor()->set_name(req.namespacename());
        *answer = EncodeResponse(id, resp);
      }
      return absl::OkStatus();
    }
    if (m == "FlushTable") {
      FlushTableRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.table_name()));
      return ProcedureCall<FlushTableResponse>(call, answer, req.nonce_group(), req.nonce(), m, [&] {
        return TableOp(table, &server::AdminService::Flush);
      });
    }
    if (m == "MoveRegion") {
      MoveRegionRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      rpc::MoveRequest move;
      BASALT_ASSIGN_OR_RETURN(NamedRegion region, RegionNamedAnyhow(req.region()));
      if (region.meta) return absl::InvalidArgumentError("hbase:meta is the master's: it does not move");
      move.set_region(region.region);
      if (req.has_dest_server_name()) {
        BASALT_ASSIGN_OR_RETURN(std::string to, BasaltServerOf(req.dest_server_name()));
        move.set_server(to);
      }
      rpc::AdminResponse ignored;
      BASALT_RETURN_IF_ERROR(admin->Move(move, &ignored));
      *answer = EncodeResponse(id, MoveRegionResponse());
      return absl::OkStatus();
    }
    if (m == "SplitRegion") {
      SplitTableRegionRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.region_info().table_name()));
      return ProcedureCall<SplitTableRegionResponse>(call, answer, req.nonce_group(), req.nonce(), m, [&] {
        server::RegionInfo info;
        info.table = table;
        info.start_key = req.region_info().start_key();
        info.id = req.region_info().region_id();
        rpc::SplitRequest split;
        split.set_name(info.EncodedName());
        split.set_split_row(req.split_row());
        rpc::AdminResponse ignored;
        return admin->Split(split, &ignored);
      });
    }
    if (m == "GetClusterStatus") {
      GetClusterStatusRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      GetClusterStatusResponse resp;
      ClusterStatus* cs = resp.mutable_cluster_status();
      cs->mutable_cluster_id()->set_cluster_id(options.cluster_id);
      *cs->mutable_master() = Self();
      rpc::StatusResponse status;
      uint64_t requests = 0;
      if (admin->Status(rpc::StatusRequest(), &status).ok()) {
        for (const rpc::TableStatus& t : status.tables()) requests += t.read_requests() + t.write_requests();
      }
      for (const ServerName& rs : RegionServers()) {
        LiveServerInfo* live = cs->add_live_servers();
        *live->mutable_server() = rs;
        // (A cluster's requests are counted per table, not per server: a standalone server's own.)
        if (options.role == Options::Role::kStandalone) live->mutable_server_load()->set_total_number_of_requests(requests);
        else live->mutable_server_load();
        *cs->add_servers_name() = rs;
      }
      cs->set_balancer_on(false);
      if (options.info_port != 0) cs->set_master_info_port(options.info_port);
      // Each table's regions by state, when asked (the shell's alter waits on it).
      if (std::find(req.options().begin(), req.options().end(), TABLE_TO_REGIONS_COUNT) != req.options().end()) {
        rpc::ListTablesResponse all;
        BASALT_RETURN_IF_ERROR(admin->ListTables(rpc::ListTablesRequest(), &all));
        for (const rpc::DescribeTableResponse& t : all.tables()) {
          if (absl::StartsWith(t.table().name(), "basalt:")) continue;
          rpc::TableRequest tr;
          tr.set_table(t.table().name());
          rpc::ListRegionsResponse regions;
          if (!admin->ListRegions(tr, &regions).ok()) continue;  // (dropped meanwhile)
          TableRegionStatesCount* count = cs->add_table_region_states_count();
          *count->mutable_table_name() = TableNameOfBasalt(t.table().name());
          RegionStatesCount* c = count->mutable_region_states_count();
          uint32_t open = 0, closed = 0;
          for (const rpc::RegionStatus& r : regions.regions()) (r.state() == "OPEN" ? open : closed) += 1;
          c->set_open_regions(open);
          c->set_split_regions(0);
          c->set_closed_regions(closed);
          c->set_regions_in_transition(0);
          c->set_total_regions(open + closed);
        }
      }
      *answer = EncodeResponse(id, resp);
      return absl::OkStatus();
    }
    if (m == "IsBalancerEnabled") {
      IsBalancerEnabledResponse resp;
      resp.set_enabled(false);
      *answer = EncodeResponse(id, resp);
      return absl::OkStatus();
    }
    *answer = AnswerNotServed(call, kMasterService);
    return absl::OkStatus();
  }

  // A table-wide admin call of Basalt's (Flush, MajorCompact).
  absl::Status TableOp(const std::string& table,
                       absl::Status (server::AdminService::*op)(const rpc::TableRequest&, rpc::AdminResponse*)) {
    rpc::TableRequest t;
    t.set_table(table);
    rpc::AdminResponse ignored;
    return (admin->*op)(t, &ignored);
  }

  // ---------------------------------------------------------------------------------------
  // The region server's AdminService: what the shell's flush, compact and major_compact of a
  // region, and the client's region queries, ask of a region server.

  void RegionServerAdmin(const Call& call, Responder* r) {
    std::string answer;
    absl::Status s = RegionServerCall(call, &answer);
    r->Send(s.ok() ? std::move(answer) : ExceptionFrame(call.header.call_id(), s));
  }

  // The HBase RegionInfo of the Basalt region an HBase region name names.
  absl::StatusOr<RegionInfo> RegionInfoOf(const RegionSpecifier& spec) {
    BASALT_ASSIGN_OR_RETURN(NamedRegion region, Served(spec));
    if (region.meta) return MetaRegionInfo();
    BASALT_ASSIGN_OR_RETURN(std::vector<MetaRow> rows, MetaRows(region.table));
    for (const MetaRow& row : rows) {
      if (row.row != spec.value()) continue;
      for (const Cell& c : row.result.cell()) {
        if (c.qualifier() != "regioninfo") continue;
        RegionInfo info;
        if (info.ParseFromString(c.value().substr(4))) return info;
      }
    }
    return AsException(absl::UnavailableError(absl::StrCat("region ", absl::CHexEscape(spec.value()),
                                                           " is not served here (it split, merged or moved)")),
                       kNotServingRegion);
  }

  absl::Status RegionServerCall(const Call& call, std::string* answer) {
    const std::string& m = call.header.method_name();
    const uint32_t id = call.header.call_id();
    if (m == "GetRegionInfo") {
      GetRegionInfoRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      GetRegionInfoResponse resp;
      BASALT_ASSIGN_OR_RETURN(*resp.mutable_region_info(), RegionInfoOf(req.region()));
      if (req.compaction_state()) resp.set_compaction_state(GetRegionInfoResponse::NONE);
      resp.set_splittable(true);
      resp.set_mergeable(true);
      *answer = EncodeResponse(id, resp);
      return absl::OkStatus();
    }
    if (m == "GetOnlineRegion") {
      GetOnlineRegionResponse resp;
      BASALT_ASSIGN_OR_RETURN(std::vector<MetaRow> rows, MetaRows(""));
      for (const MetaRow& row : rows) {
        for (const Cell& c : row.result.cell()) {
          if (c.qualifier() == "regioninfo") resp.add_region_info()->ParseFromString(c.value().substr(4));
        }
      }
      *answer = EncodeResponse(id, resp);
      return absl::OkStatus();
    }
    if (m == "GetServerInfo") {
      GetServerInfoResponse resp;
      *resp.mutable_server_info()->mutable_server_name() = Self();
      if (options.info_port != 0) resp.mutable_server_info()->set_webui_port(static_cast<uint32_t>(options.info_port));
      *answer = EncodeResponse(id, resp);
      return absl::OkStatus();
    }
    if (m == "FlushRegion" || m == "CompactRegion") {
      // Basalt flushes and compacts a table's regions together: a region's flush or compaction
      // is its table's (the same data on disk after; a minor compaction is a major one).
      RegionSpecifier spec;
      FlushRegionRequest flush;
      CompactRegionRequest compact;
      if (m == "FlushRegion") {
        BASALT_RETURN_IF_ERROR(Parse(call, &flush));
        spec = flush.region();
      } else {
        BASALT_RETURN_IF_ERROR(Parse(call, &compact));
        spec = compact.region();
      }
      BASALT_ASSIGN_OR_RETURN(NamedRegion region, Served(spec));
      if (region.meta) return absl::InvalidArgumentError("hbase:meta is Basalt's basalt:meta: flush and compact it there");
      if (m == "FlushRegion") {
        BASALT_RETURN_IF_ERROR(TableOp(region.table, &server::AdminService::Flush));
        FlushRegionResponse resp;
        resp.set_last_flush_time(static_cast<uint64_t>(NowMs()));
        resp.set_flushed(true);
        *answer = EncodeResponse(id, resp);
      } else {
        BASALT_RETURN_IF_ERROR(TableOp(region.table, &server::AdminService::MajorCompact));
        *answer = EncodeResponse(id, CompactRegionResponse());
      }
      return absl::OkStatus();
    }
    *answer = AnswerNotServed(call, kAdminService);
    return absl::OkStatus();
  }

  // ---------------------------------------------------------------------------------------
  // hbase:meta, made from basalt:meta's regions on each read

  struct MetaRow {
    std::string row;
    Result result;
  };

  // The rows of hbase:meta for `only_table` (Basalt's name; empty: every table), in meta's order.
  absl::StatusOr<std::vector<MetaRow>> MetaRows(const std::string& only_table) {
    rpc::ListTablesResponse all;
    BASALT_RETURN_IF_ERROR(admin->ListTables(rpc::ListTablesRequest(), &all));
    std::vector<MetaRow> rows;
    for (const rpc::DescribeTableResponse& t : all.tables()) {
      const std::string& name = t.table().name();
      if (absl::StartsWith(name, "basalt:")) continue;
      if (!only_table.empty() && name != only_table) continue;
      const TableName tn = TableNameOfBasalt(name);
      const std::string hbase_name = TableNameOf(tn.namespace_(), tn.qualifier());
      const bool disabled = t.state() == rpc::TABLE_DISABLED;
      {
        MetaRow state;
        state.row = hbase_name;
        TableState ts;
        ts.set_state(disabled ? TableState::DISABLED : TableState::ENABLED);
        // No PBUF magic here: the client parses table:state as the bare message.
        AddCell(&state.result, state.row, "table", "state", 1, ts.SerializeAsString());
        rows.push_back(std::move(state));
      }
      rpc::TableRequest req;
      req.set_table(name);
      rpc::ListRegionsResponse regions;
      BASALT_RETURN_IF_ERROR(admin->ListRegions(req, &regions));
      for (const rpc::RegionStatus& r : regions.regions()) {
        MetaRow row;
        row.row = RegionNameOf(hbase_name, r.start_key(), r.id());
        RegionInfo info;
        info.set_region_id(r.id());
        *info.mutable_table_name() = tn;
        info.set_start_key(r.start_key());
        info.set_end_key(r.end_key());
        info.set_offline(false);
        info.set_split(false);
        info.set_replica_id(0);
        const int64_t ts = static_cast<int64_t>(r.id());
        AddCell(&row.result, row.row, "info", "regioninfo", ts, kPbufMagic + info.SerializeAsString());
        AddCell(&row.result, row.row, "info", "seqnumDuringOpen", ts, BigEndian64(1));
        // Where it serves: a region not open on a server with an HBase port has no server
        // cells, as HBase's meta has none for a region in transition (the client waits).
        // (A disabled table's regions keep the server they had, as in HBase's meta.)
        const std::optional<ServerName> at =
            disabled || r.state() == "OPEN" ? HBaseServerOf(r.server()) : std::nullopt;
        if (at.has_value()) {
          AddCell(&row.result, row.row, "info", "server", ts, absl::StrCat(at->host_name(), ":", at->port()));
          AddCell(&row.result, row.row, "info", "serverstartcode", ts, BigEndian64(static_cast<int64_t>(at->start_code())));
          AddCell(&row.result, row.row, "info", "sn", ts, absl::StrCat(at->host_name(), ",", at->port(), ",", at->start_code()));
        }
        AddCell(&row.result, row.row, "info", "state", ts, disabled ? "CLOSED" : "OPEN");
        rows.push_back(std::move(row));
      }
    }
    std::sort(rows.begin(), rows.end(),
              [](const MetaRow& a, const MetaRow& b) { return CompareMetaRows(a.row, b.row) < 0; });
    return rows;
  }

  // The Basalt table a meta key is about: its text up to the first ',' (a region row), or all
  // of it (a table's state row).
  static std::string MetaTableOf(std::string_view key) {
    std::string_view t = key.substr(0, key.find(','));
    if (t.substr(0, 8) == "default:") t.remove_prefix(8);
    return std::string(t);
  }

  static Result Project(const Result& r, const google::protobuf::RepeatedPtrField<Column>& columns) {
    if (columns.empty()) return r;
    Result out;
    for (const Cell& c : r.cell()) {
      for (const Column& col : columns) {
        if (col.family() != c.family()) continue;
        if (!col.qualifier().empty() &&
            std::find(col.qualifier().begin(), col.qualifier().end(), c.qualifier()) == col.qualifier().end()) {
          continue;
        }
        *out.add_cell() = c;
        break;
      }
    }
    return out;
  }

  absl::Status MetaGet(const Get& get, GetResponse* resp) {
    BASALT_ASSIGN_OR_RETURN(std::vector<MetaRow> rows, MetaRows(MetaTableOf(get.row())));
    for (const MetaRow& r : rows) {
      if (r.row != get.row()) continue;
      Result projected = Project(r.result, get.column());
      if (get.existence_only()) {
        resp->mutable_result()->set_exists(projected.cell_size() > 0);
      } else {
        *resp->mutable_result() = std::move(projected);
      }
      return absl::OkStatus();
    }
    if (get.existence_only()) resp->mutable_result()->set_exists(false);
    else resp->mutable_result();
    return absl::OkStatus();
  }

  // A scan of hbase:meta, answered whole in one call (the client's lookups read a few rows).
  absl::Status MetaScan(const ScanRequest& req, ScanResponse* resp) {
    if (!req.has_scan()) {  // a next or close of a meta scan: the first call answered it all
      resp->set_more_results(false);
      return absl::OkStatus();
    }
    const Scan& scan = req.scan();
    std::string only;
    if (!scan.start_row().empty() && !scan.stop_row().empty() &&
        MetaTableOf(scan.start_row()) == MetaTableOf(scan.stop_row())) {
      only = MetaTableOf(scan.start_row());
    }
    BASALT_ASSIGN_OR_RETURN(std::vector<MetaRow> rows, MetaRows(only));
    if (scan.reversed()) std::reverse(rows.begin(), rows.end());
    const int dir = scan.reversed() ? -1 : 1;
    // The answer is whole (more_results false below): only the scan's own limit cuts it, not its
    // caching, or a listing of a table's regions would stop at the client's caching.
    const uint32_t want = req.limit_of_rows() > 0 ? req.limit_of_rows() : kMaxRowsPerCall;
    for (const MetaRow& r : rows) {
      if (!scan.start_row().empty()) {
        const int c = CompareMetaRows(r.row, scan.start_row()) * dir;
        if (c < 0 || (c == 0 && !scan.include_start_row())) continue;
      }
      if (!scan.stop_row().empty()) {
        const int c = CompareMetaRows(r.row, scan.stop_row()) * dir;
        if (c > 0 || (c == 0 && !scan.include_stop_row())) break;
      }
      Result projected = Project(r.result, scan.column());
      if (projected.cell_size() == 0) continue;
      *resp->add_results() = std::move(projected);
      if (static_cast<uint32_t>(resp->results_size()) >= want) break;
    }
    resp->set_more_results(false);
    resp->set_more_results_in_region(false);
    return absl::OkStatus();
  }

  // ---------------------------------------------------------------------------------------
  // ClientService

  void Client(const Call& call, Responder* r) {
    std::string answer;
    // Read replies carry their cells in a cell block when the client declared HBase's
    // KeyValueCodec (the Java client does) and no compression: HBase's own reply form, which the
    // client reads without decoding a protobuf message per cell.
    const ConnectionHeader& h = r->connection_header();
    const bool cell_blocks = h.cell_block_codec_class() == kKeyValueCodec && !h.has_cell_block_compressor_class();
    absl::Status s = ClientCall(call, cell_blocks, &answer);
    r->Send(s.ok() ? std::move(answer) : ExceptionFrame(call.header.call_id(), s));
  }

  // Appends a result's cells to `block`; false (the block as it was) when one cannot go in a
  // KeyValue (the reply then carries them inline).
  static bool AppendToBlock(const Result& r, std::string* block) {
    const size_t before = block->size();
    for (const Cell& c : r.cell()) {
      const BlockCell cell{c.row(), c.family(), c.qualifier(), static_cast<int64_t>(c.timestamp()), KeyValueType::kPut,
                           c.value()};
      if (!AppendCell(cell, block).ok()) {
        block->resize(before);
        return false;
      }
    }
    return true;
  }

  // Moves a result's cells to `block`, the Result keeping their count (nothing moved on false).
  static bool MoveToBlock(Result* r, std::string* block) {
    if (!AppendToBlock(*r, block)) return false;
    r->set_associated_cell_count(r->cell_size());
    r->clear_cell();
    return true;
  }

  static std::string GetAnswer(uint32_t id, GetResponse* resp, bool cell_blocks) {
    std::string block;
    if (cell_blocks && resp->has_result() && resp->result().cell_size() > 0) {
      MoveToBlock(resp->mutable_result(), &block);
    }
    return EncodeResponse(id, *resp, block);
  }

  // A scan's rows as HBase sends them with a cell block: each result's cell count and partial
  // flag, its cells in the block, no Result messages.
  static std::string ScanAnswer(uint32_t id, ScanResponse* resp, bool cell_blocks) {
    if (!cell_blocks || resp->results().empty()) return EncodeResponse(id, *resp);
    std::string block;
    for (const Result& r : resp->results()) {
      if (!AppendToBlock(r, &block)) return EncodeResponse(id, *resp);  // inline, the whole reply
    }
    for (const Result& r : resp->results()) {
      resp->add_cells_per_result(static_cast<uint32_t>(r.cell_size()));
      resp->add_partial_flag_per_result(r.partial());
    }
    resp->clear_results();
    return EncodeResponse(id, *resp, block);
  }

  // The quotas a data call passes (src/security/quotas.h), as the gRPC front end's calls do. The
  // port does not authenticate, so the table's and its namespace's apply, no user's.
  struct Admission {
    server::Quotas::Ticket ticket;
    bool read = false;  // its reply's bytes are settled after
  };
  absl::Status Admit(const std::string& table, bool write, int64_t count, int64_t bytes, Admission* a) {
    server::Quotas* q = options.quotas;
    if (q == nullptr || q->empty()) return absl::OkStatus();
    server::QuotaCall call;
    call.table = table;
    call.write = write;
    call.count = count;
    call.bytes = bytes;
    absl::Status s = q->Admit(call, &a->ticket);
    if (!s.ok()) return AsException(std::move(s), kRpcThrottling);
    a->read = !write;
    return absl::OkStatus();
  }
  void Settle(const Admission& a, size_t reply_bytes) {
    if (a.read) options.quotas->Settle(a.ticket, static_cast<int64_t>(reply_bytes));
  }

  absl::Status ClientCall(const Call& call, bool cell_blocks, std::string* answer) {
    Admission admission;
    absl::Status s = ClientCall(call, cell_blocks, &admission, answer);
    if (s.ok()) Settle(admission, answer->size());
    return s;
  }

  absl::Status ClientCall(const Call& call, bool cell_blocks, Admission* admission, std::string* answer) {
    const std::string& m = call.header.method_name();
    const uint32_t id = call.header.call_id();
    if (m == "Get") {
      GetRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      BASALT_ASSIGN_OR_RETURN(NamedRegion region, Served(req.region()));
      GetResponse resp;
      if (region.meta) {
        BASALT_RETURN_IF_ERROR(MetaGet(req.get(), &resp));
      } else {
        BASALT_RETURN_IF_ERROR(Admit(region.table, false, 1, 0, admission));
        BASALT_ASSIGN_OR_RETURN(Result result, DoGet(region, req.get()));
        *resp.mutable_result() = std::move(result);
      }
      *answer = GetAnswer(id, &resp, cell_blocks);
      return absl::OkStatus();
    }
    if (m == "Mutate") {
      MutateRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      BASALT_ASSIGN_OR_RETURN(NamedRegion region, Served(req.region()));
      if (region.meta) return absl::PermissionDeniedError("hbase:meta is read-only (Basalt keeps basalt:meta)");
      BASALT_RETURN_IF_ERROR(Admit(region.table, true, 1, static_cast<int64_t>(call.param.size() + call.cell_block.size()),
                                   admission));
      BASALT_ASSIGN_OR_RETURN(CellCursor cells, CellsOf(call));
      MutateResponse resp;
      BASALT_RETURN_IF_ERROR(DoMutate(region, req.mutation(), req.has_condition() ? &req.condition() : nullptr,
                                      req.nonce_group(), &cells, &resp));
      *answer = EncodeResponse(id, resp);
      return absl::OkStatus();
    }
    if (m == "Multi") {
      MultiRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      BASALT_ASSIGN_OR_RETURN(CellCursor cells, CellsOf(call));
      MultiResponse resp;
      for (const RegionAction& action : req.regionaction()) {
        // Each region's actions take their own cells first, so that one that stops early (a
        // refused region, a throttled one, an atomic action that fails) leaves the next region
        // its own cells.
        int n = 0;
        for (const Action& a : action.action()) {
          if (a.has_mutation()) n += std::max(0, a.mutation().associated_cell_count());
        }
        RegionActionResult* out = resp.add_regionactionresult();
        absl::StatusOr<std::vector<BlockCell>> own = cells.Take(n);
        if (!own.ok()) {
          SetException(own.status(), out->mutable_exception());
          continue;
        }
        int64_t cell_bytes = 0;  // what the quotas' write size counts, beside the actions
        for (const BlockCell& c : *own) cell_bytes += static_cast<int64_t>(c.row.size() + c.family.size() + c.qualifier.size() + c.value.size());
        CellCursor own_cells(*std::move(own));
        DoRegionAction(action, req.noncegroup(), cell_bytes, &own_cells, out);
      }
      *answer = EncodeResponse(id, resp);
      return absl::OkStatus();
    }
    if (m == "Scan") {
      ScanRequest req;
      BASALT_RETURN_IF_ERROR(Parse(call, &req));
      ScanResponse resp;
      if (req.has_region()) {
        BASALT_ASSIGN_OR_RETURN(NamedRegion region, Served(req.region()));
        if (region.meta) {
          BASALT_RETURN_IF_ERROR(MetaScan(req, &resp));
          *answer = ScanAnswer(id, &resp, cell_blocks);
          return absl::OkStatus();
        }
        if (req.has_scan()) {
          BASALT_RETURN_IF_ERROR(Admit(region.table, false, 1, 0, admission));
          BASALT_RETURN_IF_ERROR(OpenScanner(region, req, ScanDeadline(call, req), &resp));
          *answer = ScanAnswer(id, &resp, cell_blocks);
          return absl::OkStatus();
        }
      }
      BASALT_RETURN_IF_ERROR(NextScanner(req, ScanDeadline(call, req), admission, &resp));
      *answer = ScanAnswer(id, &resp, cell_blocks);
      return absl::OkStatus();
    }
    *answer = AnswerNotServed(call, kClientService);
    return absl::OkStatus();
  }

  static absl::StatusOr<CellCursor> CellsOf(const Call& call) {
    if (call.cell_block.empty()) return CellCursor();
    BASALT_ASSIGN_OR_RETURN(std::vector<BlockCell> cells, DecodeCellBlock(call.cell_block));
    return CellCursor(std::move(cells));
  }

  absl::StatusOr<rpc::ReadOptions> ReadOf(const google::protobuf::RepeatedPtrField<Column>& columns,
                                          const TimeRange* range, uint32_t max_versions, bool cache_blocks,
                                          const Filter* filter) {
    BASALT_ASSIGN_OR_RETURN(rpc::ReadOptions read, ReadOptionsOf(columns, range, max_versions, cache_blocks));
    if (filter != nullptr) {
      BASALT_ASSIGN_OR_RETURN(*read.mutable_filter(), FilterOf(*filter));
    }
    return read;
  }

  absl::StatusOr<Result> DoGet(const NamedRegion& region, const Get& get) {
    if (get.closest_row_before()) {
      return absl::InvalidArgumentError("Get.closestRowBefore is not supported by Basalt's HBase port");
    }
    rpc::GetRequest g;
    g.set_table(region.table);
    g.set_row(get.row());
    g.set_region(region.region);
    BASALT_ASSIGN_OR_RETURN(*g.mutable_read(), ReadOf(get.column(), get.has_time_range() ? &get.time_range() : nullptr,
                                                      get.max_versions(), get.cache_blocks(),
                                                      get.has_filter() ? &get.filter() : nullptr));
    rpc::GetResponse resp;
    BASALT_RETURN_IF_ERROR(data->Get(g, &resp));
    Result result;
    if (get.existence_only()) {
      result.set_exists(resp.row().cells_size() > 0);
    } else {
      AppendResult(resp.row(), &result);
    }
    return result;
  }

  absl::StatusOr<rpc::Condition> ConditionOf(const Condition& c) {
    if (c.has_filter()) {
      return absl::InvalidArgumentError("checkAndMutate with a filter is not supported by Basalt's HBase port yet");
    }
    const bool all_time = !c.has_time_range() || (c.time_range().from() == 0 &&
                                                   (!c.time_range().has_to() || c.time_range().to() == kLatestTimestamp));
    if (!all_time) {
      return absl::InvalidArgumentError("checkAndMutate with a time range is not supported by Basalt's HBase port");
    }
    rpc::Condition out;
    out.set_family(c.family());
    out.set_qualifier(c.qualifier());
    if (c.comparator().name() == "org.apache.hadoop.hbase.filter.NullComparator") {
      if (c.compare_type() != EQUAL) {
        return absl::InvalidArgumentError("checkAndMutate: a NullComparator condition other than EQUAL (ifNotExists)");
      }
      // HBase's ifNotExists holds for a missing column and for an empty value: Basalt's EQUAL
      // with an empty given value is exactly that (ConditionHolds).
      out.set_op(rpc::EQUAL);
      out.set_value("");
      return out;
    }
    BASALT_ASSIGN_OR_RETURN(rpc::Comparator cmp, ComparatorOf(c.comparator()));
    if (cmp.kind() != rpc::Comparator::BINARY) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkAndMutate compares with ", c.comparator().name(), ", which Basalt's HBase port does not support"));
    }
    BASALT_ASSIGN_OR_RETURN(rpc::CompareOp op, CheckOpOf(c.compare_type()));
    out.set_op(op);
    out.set_value(cmp.value());
    return out;
  }

  absl::Status DoMutate(const NamedRegion& region, const MutationProto& m, const Condition* condition,
                        uint64_t nonce_group, CellCursor* cells, MutateResponse* resp) {
    rpc::Nonce nonce;
    if (m.has_nonce()) {
      nonce.set_group(nonce_group);
      nonce.set_nonce(m.nonce());
    }
    switch (m.mutate_type()) {
      case MutationProto::INCREMENT: {
        rpc::IncrementRequest req;
        req.set_table(region.table);
        req.set_region(region.region);
        *req.mutable_nonce() = nonce;
        BASALT_RETURN_IF_ERROR(IncrementOf(m, cells, &req));
        rpc::IncrementResponse out;
        BASALT_RETURN_IF_ERROR(data->Increment(req, &out));
        AppendResult(out.row(), resp->mutable_result());
        return absl::OkStatus();
      }
      case MutationProto::APPEND: {
        rpc::AppendRequest req;
        req.set_table(region.table);
        req.set_region(region.region);
        *req.mutable_nonce() = nonce;
        BASALT_RETURN_IF_ERROR(AppendOf(m, cells, &req));
        rpc::AppendResponse out;
        BASALT_RETURN_IF_ERROR(data->Append(req, &out));
        AppendResult(out.row(), resp->mutable_result());
        return absl::OkStatus();
      }
      default:
        break;
    }
    rpc::RowMutations mutations;
    BASALT_RETURN_IF_ERROR(RowMutationsOf(m, cells, &mutations));
    if (condition != nullptr) {
      rpc::CheckAndMutateRequest req;
      req.set_table(region.table);
      req.set_region(region.region);
      req.set_row(condition->row());
      BASALT_ASSIGN_OR_RETURN(*req.mutable_condition(), ConditionOf(*condition));
      *req.mutable_mutation() = std::move(mutations);
      req.set_durability(DurabilityOf(m.durability()));
      *req.mutable_nonce() = nonce;
      rpc::CheckAndMutateResponse out;
      BASALT_RETURN_IF_ERROR(data->CheckAndMutate(req, &out));
      resp->set_processed(out.processed());
      return absl::OkStatus();
    }
    rpc::MutateRequest req;
    req.set_table(region.table);
    req.set_region(region.region);
    *req.mutable_mutation() = std::move(mutations);
    req.set_durability(DurabilityOf(m.durability()));
    *req.mutable_nonce() = nonce;
    rpc::MutateResponse out;
    BASALT_RETURN_IF_ERROR(data->Mutate(req, &out));
    resp->set_processed(true);
    return absl::OkStatus();
  }

  static void SetException(const absl::Status& s, NameBytesPair* out) {
    const Exception e = ExceptionOf(s);
    out->set_name(e.class_name);
    out->set_value(e.message);
  }

  void DoRegionAction(const RegionAction& action, uint64_t nonce_group, int64_t cell_bytes, CellCursor* cells,
                      RegionActionResult* out) {
    absl::StatusOr<NamedRegion> region = Served(action.region());
    if (region.ok() && region->meta) region = absl::PermissionDeniedError("hbase:meta is read-only");
    if (!region.ok()) {
      SetException(region.status(), out->mutable_exception());
      return;
    }
    {
      bool writes = false;
      for (const Action& a : action.action()) writes |= a.has_mutation();
      Admission admission;
      absl::Status admitted = Admit(region->table, writes, std::max(1, action.action_size()),
                                    writes ? static_cast<int64_t>(action.ByteSizeLong()) + cell_bytes : 0, &admission);
      if (!admitted.ok()) {
        SetException(admitted, out->mutable_exception());
        return;
      }
    }
    if (action.atomic() || action.has_condition()) {
      // One row's mutations, all or none (mutateRow, checkAndMutate of RowMutations).
      absl::Status s = AtomicActions(*region, action, nonce_group, cells, out);
      if (!s.ok()) {
        out->clear_resultorexception();
        SetException(s, out->mutable_exception());
      }
      return;
    }
    // Puts and Deletes go to the region in one batch (one log sync); the rest one by one.
    rpc::BatchMutateRequest batch;
    batch.set_table(region->table);
    std::vector<std::pair<uint32_t, int>> batched;  // action index, its result's place
    for (const Action& a : action.action()) {
      ResultOrException* r = out->add_resultorexception();
      r->set_index(a.index());
      absl::Status s;
      if (a.has_get()) {
        absl::StatusOr<Result> got = DoGet(*region, a.get());
        if (got.ok()) *r->mutable_result() = *std::move(got);
        s = got.status();
      } else if (a.has_mutation() && (a.mutation().mutate_type() == MutationProto::PUT ||
                                      a.mutation().mutate_type() == MutationProto::DELETE)) {
        s = RowMutationsOf(a.mutation(), cells, batch.add_rows());
        if (s.ok()) {
          batched.emplace_back(a.index(), out->resultorexception_size() - 1);
        } else {
          batch.mutable_rows()->RemoveLast();
        }
        r->mutable_result();
      } else if (a.has_mutation()) {
        MutateResponse resp;
        s = DoMutate(*region, a.mutation(), nullptr, nonce_group, cells, &resp);
        if (s.ok()) *r->mutable_result() = resp.result();
      } else {
        s = absl::InvalidArgumentError("a coprocessor call is not supported by Basalt's HBase port");
      }
      if (!s.ok()) {
        r->clear_result();
        SetException(s, r->mutable_exception());
      }
    }
    if (batch.rows().empty()) return;
    if (!region->region.empty()) {
      rpc::RegionRun* run = batch.add_regions();
      run->set_region(region->region);
      run->set_rows(static_cast<uint32_t>(batch.rows_size()));
    }
    rpc::BatchMutateResponse resp;
    absl::Status s = data->BatchMutate(batch, &resp);
    for (size_t i = 0; i < batched.size(); ++i) {
      ResultOrException* r = out->mutable_resultorexception(batched[i].second);
      absl::Status row = s;
      if (s.ok() && static_cast<int>(i) < resp.results_size() && resp.results(static_cast<int>(i)).code() != 0) {
        const rpc::RowStatus& rs = resp.results(static_cast<int>(i));
        row = absl::Status(static_cast<absl::StatusCode>(rs.code()), rs.message());
        if (!rs.not_serving_region().empty()) {
          row = absl::Status(absl::StatusCode::kUnavailable, rs.message());
          SetException(row, r->mutable_exception());
          r->mutable_exception()->set_name(kNotServingRegion);
          r->clear_result();
          continue;
        }
      }
      if (!row.ok()) {
        r->clear_result();
        SetException(row, r->mutable_exception());
      }
    }
  }

  absl::Status AtomicActions(const NamedRegion& region, const RegionAction& action, uint64_t nonce_group,
                             CellCursor* cells, RegionActionResult* out) {
    rpc::RowMutations all;
    for (const Action& a : action.action()) {
      if (!a.has_mutation() || (a.mutation().mutate_type() != MutationProto::PUT &&
                                a.mutation().mutate_type() != MutationProto::DELETE)) {
        return absl::InvalidArgumentError("an atomic row mutation of other than Puts and Deletes is not supported");
      }
      rpc::RowMutations one;
      BASALT_RETURN_IF_ERROR(RowMutationsOf(a.mutation(), cells, &one));
      if (!all.row().empty() && all.row() != one.row()) {
        return absl::InvalidArgumentError("an atomic row mutation spans more than one row");
      }
      all.set_row(one.row());
      for (rpc::Mutation& m : *one.mutable_mutations()) *all.add_mutations() = std::move(m);
      // As HBase answers an atomic action: one entry per action, by its place in the action,
      // with no result (the client reads RegionActionResult.processed).
      out->add_resultorexception()->set_index(static_cast<uint32_t>(out->resultorexception_size() - 1));
    }
    if (action.has_condition()) {
      rpc::CheckAndMutateRequest req;
      req.set_table(region.table);
      req.set_region(region.region);
      req.set_row(action.condition().row());
      BASALT_ASSIGN_OR_RETURN(*req.mutable_condition(), ConditionOf(action.condition()));
      *req.mutable_mutation() = std::move(all);
      rpc::CheckAndMutateResponse resp;
      BASALT_RETURN_IF_ERROR(data->CheckAndMutate(req, &resp));
      out->set_processed(resp.processed());
      return absl::OkStatus();
    }
    (void)nonce_group;
    rpc::MutateRequest req;
    req.set_table(region.table);
    req.set_region(region.region);
    *req.mutable_mutation() = std::move(all);
    rpc::MutateResponse resp;
    BASALT_RETURN_IF_ERROR(data->Mutate(req, &resp));
    out->set_processed(true);
    return absl::OkStatus();
  }

  // ---------------------------------------------------------------------------------------
  // Scanners

  // Takes the scanners whose lease lapsed out of the map, into *gone (destroyed by the caller
  // once it releases mu).
  void ExpireScanners(std::vector<std::shared_ptr<Scanner>>* gone) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    const int64_t now = NowMs();
    for (auto it = scanners.begin(); it != scanners.end();) {
      if (!it->second->in_use && now - it->second->last_used_ms > options.scanner_lease_ms) {
        gone->push_back(std::move(it->second));
        it = scanners.erase(it);
      } else {
        ++it;
      }
    }
  }

  // When a scan call must answer, rows or not, so that a scan whose filter refuses row after
  // row still answers within the client's time (a heartbeat): half the call's timeout or the
  // scanner's lease, whichever is shorter, as HBase's region server does; never, for a client
  // that does not handle heartbeats.
  absl::Time ScanDeadline(const Call& call, const ScanRequest& req) const {
    if (!req.client_handles_heartbeats()) return absl::InfiniteFuture();
    int64_t limit_ms = options.scanner_lease_ms;
    if (call.header.timeout() > 0) limit_ms = std::min<int64_t>(limit_ms, call.header.timeout());
    return absl::Now() + absl::Milliseconds(limit_ms / 2);
  }

  absl::Status OpenScanner(const NamedRegion& region, const ScanRequest& req, absl::Time deadline, ScanResponse* resp) {
    const Scan& scan = req.scan();
    rpc::ScanRequest s;
    s.set_table(region.table);
    s.set_region(region.region);
    s.set_start_row(scan.start_row());
    s.set_start_exclusive(!scan.include_start_row() && !scan.start_row().empty());
    s.set_reversed(scan.reversed());
    auto scanner = std::make_shared<Scanner>();
    if (scan.include_stop_row() && !scan.stop_row().empty()) {
      if (scan.reversed()) {
        scanner->has_floor = true;
        scanner->inclusive_floor = scan.stop_row();
      } else {
        s.set_stop_row(scan.stop_row() + std::string(1, '\0'));
      }
    } else {
      s.set_stop_row(scan.stop_row());
    }
    if (req.limit_of_rows() > 0) s.set_limit(req.limit_of_rows());
    s.set_rows_per_message(std::clamp<uint32_t>(req.number_of_rows(), 1, 1000));
    BASALT_ASSIGN_OR_RETURN(*s.mutable_read(), ReadOf(scan.column(), scan.has_time_range() ? &scan.time_range() : nullptr,
                                                      scan.max_versions(), scan.cache_blocks(),
                                                      scan.has_filter() ? &scan.filter() : nullptr));
    BASALT_ASSIGN_OR_RETURN(scanner->cursor, data->OpenScan(s));
    scanner->table = region.table;
    scanner->batch = scan.batch_size();
    scanner->partials = req.client_handles_partials();
    scanner->max_result_size = scan.max_result_size();
    scanner->last_used_ms = NowMs();
    scanner->in_use = true;
    uint64_t id;
    std::vector<std::shared_ptr<Scanner>> expired;  // destroyed after mu is released
    {
      absl::MutexLock l(&mu);
      ExpireScanners(&expired);
      if (scanners.size() >= static_cast<size_t>(options.max_scanners)) {
        return absl::ResourceExhaustedError(absl::StrCat("server busy: ", scanners.size(), " scanners open"));
      }
      id = next_scanner_id++;
      scanners.emplace(id, scanner);
    }
    scanner->cursor->CancelOnClose([this, id] { OnTableClosed(id); });  // (not under mu)
    resp->set_scanner_id(id);
    return Fill(id, scanner, req.number_of_rows(), req.close_scanner(), /*counted=*/false, deadline, resp);
  }

  absl::Status NextScanner(const ScanRequest& req, absl::Time deadline, Admission* admission, ScanResponse* resp) {
    std::shared_ptr<Scanner> scanner;
    {
      absl::MutexLock l(&mu);
      auto it = scanners.find(req.scanner_id());
      if (it == scanners.end()) {
        if (req.close_scanner()) {  // closing one already gone is fine
          resp->set_more_results(false);
          return absl::OkStatus();
        }
        return AsException(absl::NotFoundError(absl::StrCat("Unknown scanner '", req.scanner_id(),
                                                "'. This can happen due to any of the following reasons: a) Scanner id "
                                                "given is wrong, b) Scanner lease expired because of long wait between "
                                                "consecutive client checkins")),
                           kUnknownScanner);
      }
      scanner = it->second;
      if (scanner->in_use) {  // the client reopens the scanner where it was
        return AsException(absl::FailedPreconditionError(absl::StrCat("scanner ", req.scanner_id(),
                                                                      " is in use by another call")),
                           kOutOfOrderScannerNext);
      }
      if (req.close_scanner() && !req.has_number_of_rows()) {
        scanners.erase(it);
        resp->set_more_results(false);
        return absl::OkStatus();
      }
      if (req.has_next_call_seq() && req.next_call_seq() != scanner->next_call_seq) {
        scanners.erase(it);  // as HBase: the scanner is closed, the client opens a new one
        return AsException(absl::OutOfRangeError(absl::StrCat("Expected nextCallSeq: ", scanner->next_call_seq,
                                                              " But the nextCallSeq got from client: ",
                                                              req.next_call_seq(), "; request=scanner ",
                                                              req.scanner_id())),
                           kOutOfOrderScannerNext);
      }
      scanner->in_use = true;
      scanner->last_used_ms = NowMs();
    }
    if (!req.renew() && !req.close_scanner()) {
      absl::Status admitted = Admit(scanner->table, false, 1, 0, admission);
      if (!admitted.ok()) {
        absl::MutexLock l(&mu);
        scanner->in_use = false;  // the client waits and asks again with the same call sequence
        return admitted;
      }
    }
    if (req.renew()) {
      absl::MutexLock l(&mu);
      scanner->in_use = false;
      if (req.has_next_call_seq()) ++scanner->next_call_seq;  // the client counts a renewal too
      resp->set_scanner_id(req.scanner_id());
      resp->set_more_results(true);
      resp->set_more_results_in_region(true);
      return absl::OkStatus();
    }
    resp->set_scanner_id(req.scanner_id());
    if (req.has_client_handles_partials()) scanner->partials = req.client_handles_partials();
    return Fill(req.scanner_id(), scanner, req.number_of_rows(), req.close_scanner(), req.has_next_call_seq(), deadline,
                resp);
  }

  // Up to `rows` rows (or about max_bytes) into *resp; the scanner is closed once done.
  // `counted`: the call carried next_call_seq (the calls after the opening one), which the next
  // call must carry plus one.
  //
  // A row is cut into partial results (Result.partial: more of the row follows) at `batch`
  // cells, and, when the client stitches partials, where the reply reaches max_result_size, so
  // no reply holds more than about that much however wide a row is; else a row goes whole.
  //
  // Past `deadline` it answers with what it has (perhaps nothing) and heartbeat_message set.
  absl::Status Fill(uint64_t id, const std::shared_ptr<Scanner>& scanner, uint32_t rows, bool close, bool counted,
                    absl::Time deadline, ScanResponse* resp) {
    // 0 rows: the call only opens (or keeps) the scanner, as HBase's.
    rows = std::min(rows, kMaxRowsPerCall);
    // HBase's hbase.client.scanner.max.result.size, when the scan does not say.
    const uint64_t max_bytes = scanner->max_result_size != 0 ? scanner->max_result_size : 2 << 20;
    uint64_t bytes = 0;
    absl::Status status;
    bool heartbeat = false;
    while (static_cast<uint32_t>(resp->results_size()) < rows && bytes < max_bytes) {
      if (scanner->pending.empty()) {
        if (scanner->exhausted || heartbeat) break;
        rpc::ScanResponse batch;
        bool done = false;
        status = scanner->cursor->Next(&batch, &done, deadline, &heartbeat);
        if (!status.ok()) break;
        for (rpc::Row& r : *batch.mutable_rows()) scanner->pending.push_back(std::move(r));
        if (done) scanner->exhausted = true;
        continue;
      }
      rpc::Row& r = scanner->pending.front();
      if (scanner->has_floor && r.row() < scanner->inclusive_floor) {
        scanner->pending.clear();
        scanner->exhausted = true;
        break;
      }
      Result* result = resp->add_results();
      const int first = scanner->sent_cells;
      int end = r.cells_size();
      if (scanner->batch > 0) end = std::min(end, first + static_cast<int>(scanner->batch));
      for (int i = first; i < end; ++i) {
        const rpc::Cell& c = r.cells(i);
        AddCell(result, r.row(), c.family(), c.qualifier(), c.timestamp(), c.value());
        bytes += r.row().size() + c.family().size() + c.qualifier().size() + c.value().size() + 24;
        if (scanner->partials && bytes >= max_bytes && i + 1 < end) end = i + 1;
      }
      if (end < r.cells_size()) {
        result->set_partial(true);
        scanner->sent_cells = end;
      } else {
        scanner->sent_cells = 0;
        scanner->pending.pop_front();
      }
    }
    const bool finished = rows > 0 && scanner->exhausted && scanner->pending.empty();
    absl::MutexLock l(&mu);
    scanner->in_use = false;
    scanner->last_used_ms = NowMs();
    if (counted) ++scanner->next_call_seq;
    if (!status.ok() || finished || close) scanners.erase(id);
    if (!status.ok()) return status;
    // more_results false ends the client's whole scan; the end of this region's rows is
    // more_results_in_region false, and the client goes on in the next region.
    resp->set_more_results(!close);
    resp->set_more_results_in_region(!finished && !close);
    if (heartbeat && !finished) resp->set_heartbeat_message(true);
    resp->set_ttl(static_cast<uint32_t>(options.scanner_lease_ms));
    return absl::OkStatus();
  }
};

HBaseFront::HBaseFront(const Options& options, server::DataService* data, server::AdminService* admin)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->data = data;
  impl_->admin = admin;
}

HBaseFront::~HBaseFront() { Shutdown(); }

absl::Status HBaseFront::Start() {
  Impl* impl = impl_.get();
  absl::StatusOr<std::unique_ptr<HBasePort>> port = HBasePort::Start(
      impl->options.port, [impl](Call call, std::unique_ptr<Responder> r) { impl->Handle(std::move(call), std::move(r)); });
  if (!port.ok()) return port.status();
  impl->port = *std::move(port);
  impl->reaper = std::thread([impl] { impl->Reap(); });
  return absl::OkStatus();
}

int HBaseFront::port() const { return impl_->port->port(); }
const PortCounters& HBaseFront::counters() const { return impl_->port->counters(); }
void HBaseFront::RegisterMetrics(metrics::Registry* registry) const { impl_->port->RegisterMetrics(registry); }

void HBaseFront::Shutdown() {
  if (impl_->port != nullptr) impl_->port->Shutdown();
  std::map<uint64_t, std::shared_ptr<Scanner>> open;  // destroyed after mu is released
  {
    absl::MutexLock l(&impl_->mu);
    impl_->stopping = true;
    impl_->wake = true;
    open.swap(impl_->scanners);
  }
  if (impl_->reaper.joinable()) impl_->reaper.join();
  open.clear();
  std::vector<std::shared_ptr<Scanner>> buried;  // what table hooks buried since the reaper's last round
  {
    absl::MutexLock l(&impl_->mu);
    buried.swap(impl_->graveyard);
  }
}

}  // namespace basalt::hbase
