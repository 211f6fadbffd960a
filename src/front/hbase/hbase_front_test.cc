// The HBase front end without a JVM: a real port on loopback over a real catalogue in a temporary
// directory, spoken to with the project's own wire client (wire_client.h) as HBase's client
// speaks: request bytes in, answer bytes out. Every MasterService, ClientService, AdminService and
// ClientMetaService method is answered here, and each refusal: of a service a process does not
// serve, of a method no service has, of a request that does not parse. The unmodified Java client
// drives the same port in tests/hbase/ (the `hbase` tier).
#include "src/front/hbase/hbase_front.h"
#include "src/front/hbase/hbase_services.h"

#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "gtest/gtest.h"
#include "proto/hbase/hbase_master.pb.h"
#include "proto/hbase/hbase_registry.pb.h"
#include "proto/hbase/hbase_replication.pb.h"
#include "src/catalog/catalog.h"
#include "src/front/hbase/cell_block.h"
#include "src/front/hbase/client_meta.h"
#include "src/front/hbase/data_convert.h"
#include "src/front/hbase/region_names.h"
#include "src/front/hbase/wire_client.h"
#include "src/services/service.h"
#include "tests/util/temp_dir.h"

namespace basalt::hbase {
namespace {

constexpr char kDoNotRetryClass[] = "org.apache.hadoop.hbase.DoNotRetryIOException";

// One answer as a test reads it: the exception's class and text, or the message's bytes.
struct Reply {
  std::string exception;  // empty: the call succeeded
  std::string text;
  bool do_not_retry = false;
  std::string message;
  std::string cell_block;
  bool ok() const { return exception.empty(); }
};

std::ostream& operator<<(std::ostream& os, const Reply& r) {
  return os << (r.ok() ? "OK" : r.exception + ": " + r.text);
}

template <typename M>
M Parsed(const Reply& r) {
  M m;
  EXPECT_TRUE(r.ok()) << r;
  EXPECT_TRUE(m.ParseFromString(r.message)) << "the answer does not parse as " << m.GetTypeName();
  return m;
}

// The processes a front end is assembled for: what each serves (docs/DESIGN.md §15).
enum class Process { kStandalone, kMaster, kRegionServer };

class HBaseFrontTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::Catalog::Options o;
    o.data_dir = dir_.path();
    o.log = [](std::string_view) {};
    absl::StatusOr<std::unique_ptr<server::Catalog>> catalog = server::Catalog::Open(o);
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    catalog_ = *std::move(catalog);
    ASSERT_TRUE(catalog_->SetServerName("127.0.0.1:16020").ok());
    data_ = std::make_unique<server::DataService>(catalog_.get(), server::ServerConfig{});
    admin_ = server::AdminService::ForStandalone(catalog_.get(), &counters_);
  }
  void TearDown() override {
    if (front_ != nullptr) front_->Shutdown();
  }

  // Starts the front end as `process` assembles it (hbase_services.h). Writes and admin calls run
  // on a thread of their own each, as on the gRPC pool (never on the loop).
  void Start(Process process) {
    HBaseFront::Options o;
    o.port.log = [](std::string_view) {};
    o.start_code = 1234;
    o.schedule = [](std::function<void()> task) { std::thread(std::move(task)).detach(); };
    front_ = std::make_unique<HBaseFront>(o);
    ServiceParts parts;
    parts.data = data_.get();
    parts.admin = admin_.get();
    parts.cluster_id = "test-cluster";
    parts.info_port = 16030;
    parts.scanner_lease_ms = scanner_lease_ms_;
    parts.max_scanners = max_scanners_;
    parts.balancer_on = balancer_on_;
    switch (process) {
      case Process::kStandalone:
        ServeAsStandalone(front_.get(), parts);
        break;
      case Process::kMaster:
        ServeAsMaster(front_.get(), parts, [] {
          server::ServerRegistration rs;
          rs.name = "127.0.0.1:16020";
          rs.start_code = 77;
          rs.hbase = "127.0.0.1:16025";
          return absl::StatusOr<std::vector<server::ServerRegistration>>({rs});
        });
        break;
      case Process::kRegionServer:
        ServeAsRegionServer(front_.get(), parts, [this]() -> absl::StatusOr<server::ServerRegistration> {
          if (!master_known_) return absl::UnavailableError("no master has published its HBase port");
          server::ServerRegistration m;
          m.name = "master-host:1";
          m.start_code = 99;
          m.hbase = "127.0.0.1:16000";
          return m;
        });
        break;
    }
    ASSERT_TRUE(front_->Start().ok());
  }

  std::unique_ptr<WireClient> Connect(std::string_view service) {
    auto c = std::make_unique<WireClient>(front_->port(), service);
    EXPECT_TRUE(c->connected());
    return c;
  }

  Reply Ask(WireClient* c, std::string_view method, const google::protobuf::MessageLite& req,
            std::string_view cell_block = {}) {
    const uint32_t id = next_call_++;
    Reply r;
    if (!c->Call(id, method, req, cell_block)) {
      r.exception = "(send failed)";
      return r;
    }
    absl::StatusOr<Answer> a = c->Read();
    if (!a.ok()) {
      r.exception = absl::StrCat("(no answer: ", a.status().message(), ")");
      return r;
    }
    EXPECT_EQ(a->header.call_id(), id);
    if (a->header.has_exception()) {
      r.exception = a->header.exception().exception_class_name();
      r.text = a->header.exception().stack_trace();
      r.do_not_retry = a->header.exception().do_not_retry();
      return r;
    }
    r.message = a->message;
    r.cell_block = a->cell_block;
    return r;
  }
  Reply Master(std::string_view method, const google::protobuf::MessageLite& req) {
    if (master_ == nullptr) master_ = Connect("MasterService");
    return Ask(master_.get(), method, req);
  }
  Reply Client(std::string_view method, const google::protobuf::MessageLite& req, std::string_view cell_block = {}) {
    if (client_ == nullptr) client_ = Connect("ClientService");
    return Ask(client_.get(), method, req, cell_block);
  }
  Reply Admin(std::string_view method, const google::protobuf::MessageLite& req, std::string_view cell_block = {}) {
    if (admin_client_ == nullptr) admin_client_ = Connect("AdminService");
    return Ask(admin_client_.get(), method, req, cell_block);
  }

  // Made through Basalt's own admin service (not the port), so a test of one call leans on no other.
  void MakeTable(const std::string& name, std::vector<std::string> splits = {}) {
    rpc::CreateTableRequest req;
    req.mutable_table()->set_name(name);
    req.mutable_table()->add_families()->set_name("f");
    for (std::string& s : splits) req.add_split_keys(std::move(s));
    rpc::CreateTableResponse resp;
    ASSERT_TRUE(admin_->CreateTable(req, &resp).ok());
  }
  rpc::ListRegionsResponse RegionsOf(const std::string& table) {
    rpc::TableRequest t;
    t.set_table(table);
    rpc::ListRegionsResponse regions;
    EXPECT_TRUE(admin_->ListRegions(t, &regions).ok());
    return regions;
  }
  // The HBase name of the region of `table` holding `row`.
  std::string RegionName(const std::string& table, const std::string& row = "") {
    std::string name;
    const rpc::ListRegionsResponse regions = RegionsOf(table);
    for (const rpc::RegionStatus& r : regions.regions()) {
      if (r.start_key() <= row) name = RegionNameOf(table, r.start_key(), r.id());
    }
    return name;
  }
  static RegionSpecifier Region(const std::string& name) {
    RegionSpecifier s;
    s.set_type(RegionSpecifier::REGION_NAME);
    s.set_value(name);
    return s;
  }
  static TableName Table(const std::string& name) {
    TableName t;
    t.set_namespace_("default");
    t.set_qualifier(name);
    return t;
  }
  static MutationProto PutOf(const std::string& row, const std::string& q, const std::string& v) {
    MutationProto m;
    m.set_row(row);
    m.set_mutate_type(MutationProto::PUT);
    MutationProto::ColumnValue* cv = m.add_column_value();
    cv->set_family("f");
    MutationProto::ColumnValue::QualifierValue* qv = cv->add_qualifier_value();
    qv->set_qualifier(q);
    qv->set_value(v);
    return m;
  }
  Reply Put(const std::string& table, const std::string& row, const std::string& q, const std::string& v) {
    MutateRequest req;
    *req.mutable_region() = Region(RegionName(table, row));
    *req.mutable_mutation() = PutOf(row, q, v);
    return Client("Mutate", req);
  }
  // The value of f:q in `row` through the port ("" when absent).
  std::string ValueOf(const std::string& table, const std::string& row, const std::string& q) {
    GetRequest req;
    *req.mutable_region() = Region(RegionName(table, row));
    req.mutable_get()->set_row(row);
    const GetResponse resp = Parsed<GetResponse>(Client("Get", req));
    for (const Cell& c : resp.result().cell()) {
      if (c.qualifier() == q) return c.value();
    }
    return "";
  }
  TableSchema Schema(const std::string& table) {
    GetTableDescriptorsRequest req;
    *req.add_table_names() = Table(table);
    GetTableDescriptorsResponse resp = Parsed<GetTableDescriptorsResponse>(Master("GetTableDescriptors", req));
    EXPECT_EQ(resp.table_schema_size(), 1);
    return resp.table_schema_size() == 1 ? resp.table_schema(0) : TableSchema();
  }
  static std::string Attribute(const ColumnFamilySchema& f, const std::string& key) {
    for (const BytesBytesPair& p : f.attributes()) {
      if (p.first() == key) return p.second();
    }
    return "";
  }

  testing::TempDir dir_;
  server::ServerCounters counters_;
  std::unique_ptr<server::Catalog> catalog_;
  std::unique_ptr<server::DataService> data_;
  std::unique_ptr<server::AdminService> admin_;
  std::unique_ptr<HBaseFront> front_;
  std::unique_ptr<WireClient> master_, client_, admin_client_;
  uint32_t next_call_ = 1;
  bool master_known_ = true;
  int64_t scanner_lease_ms_ = 60000;
  int max_scanners_ = 10000;
  bool balancer_on_ = false;
};

// ---------------------------------------------------------------------------------------------
// ClientMetaService (the RPC registry)

TEST_F(HBaseFrontTest, RegistryNamesThisServerAsMasterAndMetaServer) {
  Start(Process::kStandalone);
  auto c = Connect(kClientMetaService);
  EXPECT_EQ(Parsed<GetClusterIdResponse>(Ask(c.get(), "GetClusterId", GetClusterIdRequest())).cluster_id(),
            "test-cluster");
  const GetActiveMasterResponse master =
      Parsed<GetActiveMasterResponse>(Ask(c.get(), "GetActiveMaster", GetActiveMasterRequest()));
  EXPECT_EQ(master.server_name().port(), front_->port());
  EXPECT_EQ(master.server_name().start_code(), 1234u);
  const GetMetaRegionLocationsResponse meta =
      Parsed<GetMetaRegionLocationsResponse>(Ask(c.get(), "GetMetaRegionLocations", GetMetaRegionLocationsRequest()));
  ASSERT_EQ(meta.meta_locations_size(), 1);
  EXPECT_EQ(meta.meta_locations(0).server_name().port(), front_->port());
  const GetBootstrapNodesResponse nodes =
      Parsed<GetBootstrapNodesResponse>(Ask(c.get(), "GetBootstrapNodes", GetBootstrapNodesRequest()));
  ASSERT_EQ(nodes.server_name_size(), 1);
  const GetMastersResponse masters = Parsed<GetMastersResponse>(Ask(c.get(), "GetMasters", GetMastersRequest()));
  ASSERT_EQ(masters.master_servers_size(), 1);
  EXPECT_TRUE(masters.master_servers(0).is_active());
  const Reply unknown = Ask(c.get(), "GetNoSuchThing", GetClusterIdRequest());
  EXPECT_EQ(unknown.exception, kDoNotRetryClass) << unknown;
  EXPECT_TRUE(unknown.do_not_retry);
}

TEST_F(HBaseFrontTest, RegionServerRegistryNamesTheActiveMaster) {
  Start(Process::kRegionServer);
  auto c = Connect(kClientMetaService);
  const GetActiveMasterResponse master =
      Parsed<GetActiveMasterResponse>(Ask(c.get(), "GetActiveMaster", GetActiveMasterRequest()));
  EXPECT_EQ(master.server_name().port(), 16000u);
  EXPECT_EQ(master.server_name().start_code(), 99u);
  const GetBootstrapNodesResponse nodes =
      Parsed<GetBootstrapNodesResponse>(Ask(c.get(), "GetBootstrapNodes", GetBootstrapNodesRequest()));
  ASSERT_EQ(nodes.server_name_size(), 2);  // itself and the master
  EXPECT_EQ(nodes.server_name(0).port(), front_->port());
  // No master with an HBase port: an IOException the client retries.
  master_known_ = false;
  const Reply none = Ask(c.get(), "GetActiveMaster", GetActiveMasterRequest());
  EXPECT_EQ(none.exception, "java.io.IOException") << none;
  EXPECT_FALSE(none.do_not_retry);
  EXPECT_NE(none.text.find("cannot name the active master"), std::string::npos) << none.text;
}

// ---------------------------------------------------------------------------------------------
// MasterService

TEST_F(HBaseFrontTest, IsMasterRunning) {
  Start(Process::kStandalone);
  EXPECT_TRUE(Parsed<IsMasterRunningResponse>(Master("IsMasterRunning", IsMasterRunningRequest())).is_master_running());
}

TEST_F(HBaseFrontTest, CreateListDescribeAndStateOfATable) {
  Start(Process::kStandalone);
  CreateTableRequest req;
  *req.mutable_table_schema()->mutable_table_name() = Table("t1");
  ColumnFamilySchema* f = req.mutable_table_schema()->add_column_families();
  f->set_name("f");
  BytesBytesPair* versions = f->add_attributes();
  versions->set_first("VERSIONS");
  versions->set_second("3");
  req.add_split_keys("m");
  req.set_nonce_group(1);
  req.set_nonce(10);
  const CreateTableResponse created = Parsed<CreateTableResponse>(Master("CreateTable", req));
  EXPECT_GT(created.proc_id(), 0u);
  EXPECT_EQ(RegionsOf("t1").regions_size(), 2);
  // The same nonce again (a retry): the first procedure, nothing made twice.
  EXPECT_EQ(Parsed<CreateTableResponse>(Master("CreateTable", req)).proc_id(), created.proc_id());
  // A new nonce: the table exists.
  req.set_nonce(11);
  EXPECT_EQ(Master("CreateTable", req).exception, kTableExists);

  GetTableNamesRequest names_req;
  const GetTableNamesResponse names = Parsed<GetTableNamesResponse>(Master("GetTableNames", names_req));
  ASSERT_EQ(names.table_names_size(), 1);  // (basalt:meta and the other system tables are not listed)
  EXPECT_EQ(names.table_names(0).qualifier(), "t1");
  const TableSchema schema = Schema("t1");
  ASSERT_EQ(schema.column_families_size(), 1);
  EXPECT_EQ(Attribute(schema.column_families(0), "VERSIONS"), "3");
  GetTableDescriptorsRequest missing;
  *missing.add_table_names() = Table("nope");
  EXPECT_EQ(Master("GetTableDescriptors", missing).exception, kTableNotFound);

  GetTableStateRequest state;
  *state.mutable_table_name() = Table("t1");
  EXPECT_EQ(Parsed<GetTableStateResponse>(Master("GetTableState", state)).table_state().state(), TableState::ENABLED);
  GetProcedureResultRequest proc;
  proc.set_proc_id(created.proc_id());
  EXPECT_EQ(Parsed<GetProcedureResultResponse>(Master("getProcedureResult", proc)).state(),
            GetProcedureResultResponse::FINISHED);
  proc.set_proc_id(created.proc_id() + 1000);
  EXPECT_EQ(Parsed<GetProcedureResultResponse>(Master("getProcedureResult", proc)).state(),
            GetProcedureResultResponse::NOT_FOUND);
}

// `list 'app_.*'` and its kin: the listings' regex must match the whole name as HBase writes it
// (a default table also as "default:q"), in RE2's syntax; one RE2 cannot take is refused by name.
TEST_F(HBaseFrontTest, TableListingsKeepTheNamesTheirPatternMatches) {
  Start(Process::kStandalone);
  rpc::NamespaceRequest ns;
  ns.mutable_namespace_()->set_name("ns1");
  rpc::AdminResponse made;
  ASSERT_TRUE(admin_->CreateNamespace(ns, &made).ok());
  for (const char* t : {"app_one", "app_two", "other", "ns1:app_x"}) MakeTable(t);
  auto names = [&](const std::string& regex, const std::string& in_ns = "") {
    GetTableNamesRequest req;
    req.set_regex(regex);
    if (!in_ns.empty()) req.set_namespace_(in_ns);
    std::vector<std::string> out;
    const GetTableNamesResponse resp = Parsed<GetTableNamesResponse>(Master("GetTableNames", req));
    for (const TableName& t : resp.table_names()) {
      out.push_back(t.namespace_() + ":" + t.qualifier());
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(names(".*"), (Names{"default:app_one", "default:app_two", "default:other", "ns1:app_x"}));
  EXPECT_EQ(names("app_.*"), (Names{"default:app_one", "default:app_two"}));  // the whole name: not ns1:app_x
  EXPECT_EQ(names("app"), Names{});
  EXPECT_EQ(names("default:app_t.*"), Names{"default:app_two"});
  EXPECT_EQ(names(".*:app_.*"), (Names{"default:app_one", "default:app_two", "ns1:app_x"}));
  EXPECT_EQ(names("ns1:.*"), Names{"ns1:app_x"});
  EXPECT_EQ(names("app_.*|other"), (Names{"default:app_one", "default:app_two", "default:other"}));
  EXPECT_EQ(names(".*", "ns1"), Names{"ns1:app_x"});
  EXPECT_EQ(names("app_.*", "ns1"), Names{});

  GetTableDescriptorsRequest described;
  described.set_regex("app_t.*|ns1:.*");
  const GetTableDescriptorsResponse schemas = Parsed<GetTableDescriptorsResponse>(Master("GetTableDescriptors", described));
  Names got;
  for (const TableSchema& t : schemas.table_schema()) got.push_back(t.table_name().namespace_() + ":" + t.table_name().qualifier());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (Names{"default:app_two", "ns1:app_x"}));

  // A backreference (Java has it, RE2 does not), and a pattern that does not parse.
  for (const char* bad : {"(a)\\1", "app_[", "(?<=x)app"}) {
    GetTableNamesRequest req;
    req.set_regex(bad);
    const Reply r = Master("GetTableNames", req);
    EXPECT_EQ(r.exception, kDoNotRetryClass) << bad;
    EXPECT_NE(r.text.find(std::string("table name pattern '") + bad + "'"), std::string::npos) << r.text;
  }
}

TEST_F(HBaseFrontTest, DisableEnableTruncateAndDelete) {
  Start(Process::kStandalone);
  MakeTable("t2", {"k"});
  ASSERT_TRUE(Put("t2", "a", "q", "1").ok());
  DeleteTableRequest del;
  *del.mutable_table_name() = Table("t2");
  EXPECT_EQ(Master("DeleteTable", del).exception, kTableNotDisabled);
  EnableTableRequest enable;
  *enable.mutable_table_name() = Table("t2");
  EXPECT_EQ(Master("EnableTable", enable).exception, kTableNotDisabled);
  DisableTableRequest disable;
  *disable.mutable_table_name() = Table("t2");
  EXPECT_TRUE(Master("DisableTable", disable).ok());
  EXPECT_EQ(Master("DisableTable", disable).exception, kTableNotEnabled);
  GetTableStateRequest state;
  *state.mutable_table_name() = Table("t2");
  EXPECT_EQ(Parsed<GetTableStateResponse>(Master("GetTableState", state)).table_state().state(), TableState::DISABLED);
  // Truncate, keeping the splits: empty, two regions.
  TruncateTableRequest truncate;
  *truncate.mutable_tablename() = Table("t2");
  truncate.set_preservesplits(true);
  EXPECT_TRUE(Master("truncateTable", truncate).ok());
  EXPECT_EQ(RegionsOf("t2").regions_size(), 2);
  EXPECT_EQ(ValueOf("t2", "a", "q"), "");
  EXPECT_TRUE(Master("DisableTable", disable).ok());
  truncate.set_preservesplits(false);
  EXPECT_TRUE(Master("truncateTable", truncate).ok());
  EXPECT_EQ(RegionsOf("t2").regions_size(), 1);
  EXPECT_EQ(Master("truncateTable", truncate).exception, kTableNotDisabled);
  EXPECT_TRUE(Master("DisableTable", disable).ok());
  EXPECT_TRUE(Master("EnableTable", enable).ok());
  EXPECT_TRUE(Master("DisableTable", disable).ok());
  EXPECT_TRUE(Master("DeleteTable", del).ok());
  EXPECT_EQ(Master("GetTableState", state).exception, kTableNotFound);
}

TEST_F(HBaseFrontTest, ModifyTableAndTheColumnCalls) {
  Start(Process::kStandalone);
  MakeTable("t3");
  AddColumnRequest add;
  *add.mutable_table_name() = Table("t3");
  add.mutable_column_families()->set_name("g");
  EXPECT_TRUE(Master("AddColumn", add).ok());
  EXPECT_EQ(Master("AddColumn", add).exception, kInvalidFamilyOperation);
  EXPECT_EQ(Schema("t3").column_families_size(), 2);

  ModifyColumnRequest modify;
  *modify.mutable_table_name() = Table("t3");
  modify.mutable_column_families()->set_name("g");
  BytesBytesPair* v = modify.mutable_column_families()->add_attributes();
  v->set_first("VERSIONS");
  v->set_second("5");
  EXPECT_TRUE(Master("ModifyColumn", modify).ok());
  const TableSchema after = Schema("t3");
  ASSERT_EQ(after.column_families_size(), 2);
  EXPECT_EQ(Attribute(after.column_families(1), "VERSIONS"), "5");
  modify.mutable_column_families()->set_name("nope");
  EXPECT_EQ(Master("ModifyColumn", modify).exception, kInvalidFamilyOperation);

  DeleteColumnRequest drop;
  *drop.mutable_table_name() = Table("t3");
  drop.set_column_name("g");
  EXPECT_TRUE(Master("DeleteColumn", drop).ok());
  EXPECT_EQ(Master("DeleteColumn", drop).exception, kInvalidFamilyOperation);
  drop.set_column_name("f");
  EXPECT_EQ(Master("DeleteColumn", drop).exception, kInvalidFamilyOperation);  // the only family

  ModifyTableRequest table;
  *table.mutable_table_name() = Table("t3");
  *table.mutable_table_schema() = Schema("t3");
  table.mutable_table_schema()->add_column_families()->set_name("h");
  BytesBytesPair* kept = table.mutable_table_schema()->add_attributes();
  kept->set_first("OWNER");
  kept->set_second("someone");
  EXPECT_TRUE(Master("ModifyTable", table).ok());
  const TableSchema modified = Schema("t3");
  EXPECT_EQ(modified.column_families_size(), 2);
  bool owner = false;
  for (const BytesBytesPair& p : modified.attributes()) owner |= p.first() == "OWNER" && p.second() == "someone";
  EXPECT_TRUE(owner);

  GetSchemaAlterStatusRequest status;
  *status.mutable_table_name() = Table("t3");
  const GetSchemaAlterStatusResponse s = Parsed<GetSchemaAlterStatusResponse>(Master("GetSchemaAlterStatus", status));
  EXPECT_EQ(s.yet_to_update_regions(), 0u);
  EXPECT_EQ(s.total_regions(), 1u);
  *status.mutable_table_name() = Table("nope");
  EXPECT_EQ(Master("GetSchemaAlterStatus", status).exception, kTableNotFound);
}

TEST_F(HBaseFrontTest, FlushSplitAndMove) {
  Start(Process::kStandalone);
  MakeTable("t4");
  for (const char* row : {"a", "b", "c", "d"}) ASSERT_TRUE(Put("t4", row, "q", row).ok());
  FlushTableRequest flush;
  *flush.mutable_table_name() = Table("t4");
  EXPECT_TRUE(Master("FlushTable", flush).ok());
  const rpc::RegionStatus region = RegionsOf("t4").regions(0);
  EXPECT_GT(region.store_files(), 0u);
  // The older flush the 2.6 client falls back to: the flush-table-proc procedure, and no other.
  ASSERT_TRUE(Put("t4", "e", "q", "e").ok());
  ExecProcedureRequest proc;
  proc.mutable_procedure()->set_signature("flush-table-proc");
  proc.mutable_procedure()->set_instance("t4");
  EXPECT_TRUE(Master("ExecProcedure", proc).ok());
  EXPECT_GT(RegionsOf("t4").regions(0).store_files(), region.store_files());
  IsProcedureDoneRequest done;
  *done.mutable_procedure() = proc.procedure();
  EXPECT_TRUE(Parsed<IsProcedureDoneResponse>(Master("IsProcedureDone", done)).done());
  proc.mutable_procedure()->set_signature("online-snapshot");
  const Reply other = Master("ExecProcedure", proc);
  EXPECT_EQ(other.exception, kDoNotRetryClass) << other;
  EXPECT_NE(other.text.find("procedure 'online-snapshot' is not served"), std::string::npos) << other.text;
  proc.mutable_procedure()->set_signature("flush-table-proc");
  proc.mutable_procedure()->set_instance("nope");
  EXPECT_EQ(Master("ExecProcedure", proc).exception, kTableNotFound);

  SplitTableRegionRequest split;
  split.mutable_region_info()->set_region_id(region.id());
  *split.mutable_region_info()->mutable_table_name() = Table("t4");
  split.set_split_row("c");
  EXPECT_TRUE(Master("SplitRegion", split).ok());
  EXPECT_EQ(RegionsOf("t4").regions_size(), 2);
  EXPECT_EQ(ValueOf("t4", "d", "q"), "d");

  // A standalone server holds every region itself: a move is a cluster master's.
  MoveRegionRequest move;
  move.mutable_region()->set_type(RegionSpecifier::ENCODED_REGION_NAME);
  move.mutable_region()->set_value(EncodedNameOf(RegionName("t4", "a")));
  const Reply moved = Master("MoveRegion", move);
  EXPECT_EQ(moved.exception, kDoNotRetryClass) << moved;
  EXPECT_NE(moved.text.find("move is a cluster master's"), std::string::npos) << moved.text;
  move.mutable_region()->set_value("0123456789abcdef0123456789abcdef");
  EXPECT_EQ(Master("MoveRegion", move).exception, kUnknownRegion);
}

TEST_F(HBaseFrontTest, ClusterStatusBalancerAndNamespaces) {
  Start(Process::kStandalone);
  MakeTable("t5", {"m"});
  GetClusterStatusRequest status;
  status.add_options(TABLE_TO_REGIONS_COUNT);
  status.add_options(LIVE_SERVERS);
  const ClusterStatus cs = Parsed<GetClusterStatusResponse>(Master("GetClusterStatus", status)).cluster_status();
  EXPECT_EQ(cs.cluster_id().cluster_id(), "test-cluster");
  EXPECT_EQ(cs.master().port(), front_->port());
  ASSERT_EQ(cs.live_servers_size(), 1);
  EXPECT_EQ(cs.live_servers(0).server().port(), front_->port());
  EXPECT_EQ(cs.master_info_port(), 16030);
  ASSERT_EQ(cs.table_region_states_count_size(), 1);
  EXPECT_EQ(cs.table_region_states_count(0).region_states_count().open_regions(), 2u);
  EXPECT_EQ(cs.hbase_version().version(), "2.6.0");
  // Each region's figures under its server (status 'detailed', list_regions).
  const ServerLoad& load = cs.live_servers(0).server_load();
  ASSERT_EQ(load.region_loads_size(), 2);
  EXPECT_EQ(load.region_loads(0).region_specifier().value(), RegionName("t5", "a"));
  EXPECT_EQ(load.region_loads(1).region_specifier().value(), RegionName("t5", "m"));
  EXPECT_EQ(load.region_loads(0).stores(), 1u);
  EXPECT_FALSE(Parsed<IsBalancerEnabledResponse>(Master("IsBalancerEnabled", IsBalancerEnabledRequest())).enabled());
  // The balancer: a standalone server is the one server there is; nothing to move.
  EXPECT_FALSE(Parsed<BalanceResponse>(Master("Balance", BalanceRequest())).balancer_ran());
  BalanceRequest dry;
  dry.set_dry_run(true);
  const Reply refused = Master("Balance", dry);
  EXPECT_EQ(refused.exception, kDoNotRetryClass) << refused;
  EXPECT_NE(refused.text.find("'dry_run' is not built"), std::string::npos) << refused.text;

  const ListNamespacesResponse ns = Parsed<ListNamespacesResponse>(Master("ListNamespaces", ListNamespacesRequest()));
  ASSERT_EQ(ns.namespacename_size(), 2);
  EXPECT_EQ(ns.namespacename(0), "default");
  EXPECT_EQ(Parsed<ListNamespaceDescriptorsResponse>(Master("ListNamespaceDescriptors", ListNamespaceDescriptorsRequest()))
                .namespacedescriptor_size(),
            2);
  GetNamespaceDescriptorRequest one;
  one.set_namespacename("hbase");
  EXPECT_EQ(Parsed<GetNamespaceDescriptorResponse>(Master("GetNamespaceDescriptor", one)).namespacedescriptor().name(),
            "hbase");
  one.set_namespacename("app");
  EXPECT_EQ(Master("GetNamespaceDescriptor", one).exception, kNamespaceNotFound);
  // A table of HBase's own namespace is not Basalt's, nor is one of a namespace never made.
  GetTableStateRequest other;
  other.mutable_table_name()->set_namespace_("hbase");
  other.mutable_table_name()->set_qualifier("namespace");
  EXPECT_EQ(Master("GetTableState", other).exception, kNamespaceNotFound);
  other.mutable_table_name()->set_namespace_("app");
  other.mutable_table_name()->set_qualifier("t5");
  EXPECT_EQ(Master("GetTableState", other).exception, kTableNotFound);
}

TEST_F(HBaseFrontTest, NamespacesAreMadeListedAndDroppedAsHBasesMasterAnswers) {
  constexpr char kExists[] = "org.apache.hadoop.hbase.NamespaceExistException";
  constexpr char kConstraint[] = "org.apache.hadoop.hbase.constraint.ConstraintException";
  Start(Process::kStandalone);
  MakeTable("plain");
  CreateNamespaceRequest create;
  create.mutable_namespacedescriptor()->set_name("app");
  NameStringPair* max_tables = create.mutable_namespacedescriptor()->add_configuration();
  max_tables->set_name("hbase.namespace.quota.maxtables");
  max_tables->set_value("5");
  create.set_nonce_group(3);
  create.set_nonce(1);
  const uint64_t made = Parsed<CreateNamespaceResponse>(Master("CreateNamespace", create)).proc_id();
  EXPECT_GT(made, 0u);
  EXPECT_EQ(Parsed<CreateNamespaceResponse>(Master("CreateNamespace", create)).proc_id(), made);  // (a retry)
  create.set_nonce(2);
  EXPECT_EQ(Master("CreateNamespace", create).exception, kExists);
  for (const char* always : {"default", "hbase"}) {
    create.mutable_namespacedescriptor()->set_name(always);
    EXPECT_EQ(Master("CreateNamespace", create).exception, kExists) << always;
  }
  create.mutable_namespacedescriptor()->set_name("basalt");  // Basalt's system tables'
  EXPECT_EQ(Master("CreateNamespace", create).exception, kDoNotRetryClass);
  create.mutable_namespacedescriptor()->set_name("bad-name");
  EXPECT_EQ(Master("CreateNamespace", create).exception, kDoNotRetryClass);

  const ListNamespacesResponse listed = Parsed<ListNamespacesResponse>(Master("ListNamespaces", ListNamespacesRequest()));
  const std::vector<std::string> names(listed.namespacename().begin(), listed.namespacename().end());
  EXPECT_EQ(names, (std::vector<std::string>{"app", "default", "hbase"}));  // (never basalt)
  GetNamespaceDescriptorRequest get;
  get.set_namespacename("app");
  NamespaceDescriptor app = Parsed<GetNamespaceDescriptorResponse>(Master("GetNamespaceDescriptor", get)).namespacedescriptor();
  ASSERT_EQ(app.configuration_size(), 1);
  EXPECT_EQ(app.configuration(0).value(), "5");
  get.set_namespacename("basalt");
  EXPECT_EQ(Master("GetNamespaceDescriptor", get).exception, kNamespaceNotFound);

  // alter_namespace sends the whole descriptor back, changed.
  ModifyNamespaceRequest modify;
  *modify.mutable_namespacedescriptor() = app;
  modify.mutable_namespacedescriptor()->mutable_configuration(0)->set_value("7");
  EXPECT_TRUE(Master("ModifyNamespace", modify).ok());
  get.set_namespacename("app");
  EXPECT_EQ(Parsed<GetNamespaceDescriptorResponse>(Master("GetNamespaceDescriptor", get))
                .namespacedescriptor()
                .configuration(0)
                .value(),
            "7");
  modify.mutable_namespacedescriptor()->set_name("nope");
  EXPECT_EQ(Master("ModifyNamespace", modify).exception, kNamespaceNotFound);

  // A table in it, named as HBase names it, through every call.
  CreateTableRequest table;
  table.mutable_table_schema()->mutable_table_name()->set_namespace_("app");
  table.mutable_table_schema()->mutable_table_name()->set_qualifier("events");
  table.mutable_table_schema()->add_column_families()->set_name("f");
  EXPECT_TRUE(Master("CreateTable", table).ok());
  EXPECT_EQ(RegionsOf("app:events").regions_size(), 1);
  ASSERT_TRUE(Put("app:events", "r1", "q", "v1").ok());
  EXPECT_EQ(ValueOf("app:events", "r1", "q"), "v1");
  table.mutable_table_schema()->mutable_table_name()->set_namespace_("nope");
  EXPECT_EQ(Master("CreateTable", table).exception, kNamespaceNotFound);
  ListTableNamesByNamespaceRequest by_ns;
  by_ns.set_namespacename("app");
  const ListTableNamesByNamespaceResponse in_app =
      Parsed<ListTableNamesByNamespaceResponse>(Master("ListTableNamesByNamespace", by_ns));
  ASSERT_EQ(in_app.tablename_size(), 1);
  EXPECT_EQ(in_app.tablename(0).namespace_(), "app");
  EXPECT_EQ(in_app.tablename(0).qualifier(), "events");
  by_ns.set_namespacename("default");
  EXPECT_EQ(Parsed<ListTableNamesByNamespaceResponse>(Master("ListTableNamesByNamespace", by_ns)).tablename_size(), 1);
  by_ns.set_namespacename("nope");
  EXPECT_EQ(Master("ListTableNamesByNamespace", by_ns).exception, kNamespaceNotFound);
  ListTableDescriptorsByNamespaceRequest schemas;
  schemas.set_namespacename("app");
  const ListTableDescriptorsByNamespaceResponse described =
      Parsed<ListTableDescriptorsByNamespaceResponse>(Master("ListTableDescriptorsByNamespace", schemas));
  ASSERT_EQ(described.tableschema_size(), 1);
  EXPECT_EQ(described.tableschema(0).table_name().qualifier(), "events");
  GetTableNamesRequest filtered;
  filtered.set_namespace_("app");
  EXPECT_EQ(Parsed<GetTableNamesResponse>(Master("GetTableNames", filtered)).table_names_size(), 1);
  EXPECT_EQ(Parsed<GetTableNamesResponse>(Master("GetTableNames", GetTableNamesRequest())).table_names_size(), 2);

  // Dropped only when empty; default and hbase never; a missing one is not found.
  DeleteNamespaceRequest drop;
  drop.set_namespacename("app");
  const Reply held = Master("DeleteNamespace", drop);
  EXPECT_EQ(held.exception, kConstraint) << held;
  EXPECT_NE(held.text.find("app:events"), std::string::npos) << held.text;
  for (const char* reserved : {"default", "hbase"}) {
    drop.set_namespacename(reserved);
    EXPECT_EQ(Master("DeleteNamespace", drop).exception, kConstraint) << reserved;
  }
  drop.set_namespacename("basalt");
  EXPECT_EQ(Master("DeleteNamespace", drop).exception, kNamespaceNotFound);
  drop.set_namespacename("nope");
  EXPECT_EQ(Master("DeleteNamespace", drop).exception, kNamespaceNotFound);
  DisableTableRequest disable;
  *disable.mutable_table_name() = in_app.tablename(0);
  ASSERT_TRUE(Master("DisableTable", disable).ok());
  DeleteTableRequest remove;
  *remove.mutable_table_name() = in_app.tablename(0);
  ASSERT_TRUE(Master("DeleteTable", remove).ok());
  drop.set_namespacename("app");
  EXPECT_TRUE(Master("DeleteNamespace", drop).ok());
  get.set_namespacename("app");
  EXPECT_EQ(Master("GetNamespaceDescriptor", get).exception, kNamespaceNotFound);
}

TEST_F(HBaseFrontTest, MasterMethodsNotServedAreRefusedByName) {
  Start(Process::kStandalone);
  const Reply r = Master("ListDecommissionedRegionServers", IsMasterRunningRequest());
  EXPECT_EQ(r.exception, kDoNotRetryClass) << r;
  EXPECT_TRUE(r.do_not_retry);
  EXPECT_NE(r.text.find("ListDecommissionedRegionServers"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("MasterService"), std::string::npos) << r.text;
}

// ---------------------------------------------------------------------------------------------
// ClientService

TEST_F(HBaseFrontTest, GetAndMutateInlineAndWithCellBlocks) {
  Start(Process::kStandalone);
  MakeTable("d1");
  EXPECT_TRUE(Put("d1", "r1", "q", "v1").ok());
  EXPECT_EQ(ValueOf("d1", "r1", "q"), "v1");
  // A Put whose cell travels in the call's cell block, as the Java client sends it.
  MutateRequest req;
  *req.mutable_region() = Region(RegionName("d1"));
  req.mutable_mutation()->set_row("r2");
  req.mutable_mutation()->set_mutate_type(MutationProto::PUT);
  req.mutable_mutation()->set_associated_cell_count(1);
  std::string block;
  ASSERT_TRUE(AppendCell(BlockCell{"r2", "f", "q", 5, KeyValueType::kPut, "v2"}, &block).ok());
  EXPECT_TRUE(Parsed<MutateResponse>(Client("Mutate", req, block)).processed());
  // Read back through a connection that declares HBase's KeyValueCodec: the cells come in a block.
  ConnectionHeader h;
  h.set_service_name("ClientService");
  h.set_cell_block_codec_class("org.apache.hadoop.hbase.codec.KeyValueCodec");
  WireClient c(front_->port(), "");
  ASSERT_TRUE(c.Write(EncodeHello(h)));
  GetRequest get;
  *get.mutable_region() = Region(RegionName("d1"));
  get.mutable_get()->set_row("r2");
  const Reply got = Ask(&c, "Get", get);
  const GetResponse resp = Parsed<GetResponse>(got);
  EXPECT_EQ(resp.result().cell_size(), 0);
  EXPECT_EQ(resp.result().associated_cell_count(), 1);
  absl::StatusOr<std::vector<BlockCell>> cells = DecodeCellBlock(got.cell_block);
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->size(), 1u);
  EXPECT_EQ((*cells)[0].value, "v2");
  EXPECT_EQ((*cells)[0].timestamp, 5);
  // existence_only
  get.mutable_get()->set_existence_only(true);
  EXPECT_TRUE(Parsed<GetResponse>(Client("Get", get)).result().exists());
  get.mutable_get()->set_row("absent");
  EXPECT_FALSE(Parsed<GetResponse>(Client("Get", get)).result().exists());
  // Delete, then the row is empty.
  MutateRequest del;
  *del.mutable_region() = Region(RegionName("d1"));
  del.mutable_mutation()->set_row("r1");
  del.mutable_mutation()->set_mutate_type(MutationProto::DELETE);
  EXPECT_TRUE(Client("Mutate", del).ok());
  EXPECT_EQ(ValueOf("d1", "r1", "q"), "");
}

TEST_F(HBaseFrontTest, IncrementAppendAndCheckAndMutate) {
  Start(Process::kStandalone);
  MakeTable("d2");
  MutateRequest inc;
  *inc.mutable_region() = Region(RegionName("d2"));
  inc.set_nonce_group(7);
  MutationProto* m = inc.mutable_mutation();
  m->set_row("c");
  m->set_mutate_type(MutationProto::INCREMENT);
  m->set_nonce(42);
  MutationProto::ColumnValue::QualifierValue* qv = m->add_column_value()->add_qualifier_value();
  m->mutable_column_value(0)->set_family("f");
  qv->set_qualifier("n");
  qv->set_value(std::string("\0\0\0\0\0\0\0\x05", 8));
  const MutateResponse first = Parsed<MutateResponse>(Client("Mutate", inc));
  ASSERT_EQ(first.result().cell_size(), 1);
  EXPECT_EQ(first.result().cell(0).value(), std::string("\0\0\0\0\0\0\0\x05", 8));
  // The same nonce again: applied once.
  EXPECT_EQ(Parsed<MutateResponse>(Client("Mutate", inc)).result().cell(0).value(), std::string("\0\0\0\0\0\0\0\x05", 8));
  m->set_nonce(43);
  EXPECT_EQ(Parsed<MutateResponse>(Client("Mutate", inc)).result().cell(0).value(), std::string("\0\0\0\0\0\0\0\x0a", 8));

  MutateRequest app = inc;
  app.mutable_mutation()->set_mutate_type(MutationProto::APPEND);
  app.mutable_mutation()->set_nonce(44);
  app.mutable_mutation()->mutable_column_value(0)->mutable_qualifier_value(0)->set_qualifier("s");
  app.mutable_mutation()->mutable_column_value(0)->mutable_qualifier_value(0)->set_value("ab");
  EXPECT_EQ(Parsed<MutateResponse>(Client("Mutate", app)).result().cell(0).value(), "ab");
  app.mutable_mutation()->set_nonce(45);
  EXPECT_EQ(Parsed<MutateResponse>(Client("Mutate", app)).result().cell(0).value(), "abab");

  // checkAndPut: compared with a BinaryComparator; a NullComparator is ifNotExists.
  MutateRequest cas;
  *cas.mutable_region() = Region(RegionName("d2"));
  *cas.mutable_mutation() = PutOf("c", "t", "new");
  Condition* cond = cas.mutable_condition();
  cond->set_row("c");
  cond->set_family("f");
  cond->set_qualifier("s");
  cond->set_compare_type(EQUAL);
  cond->mutable_comparator()->set_name("org.apache.hadoop.hbase.filter.BinaryComparator");
  BinaryComparator bc;
  bc.mutable_comparable()->set_value("nope");
  cond->mutable_comparator()->set_serialized_comparator(bc.SerializeAsString());
  EXPECT_FALSE(Parsed<MutateResponse>(Client("Mutate", cas)).processed());
  bc.mutable_comparable()->set_value("abab");
  cond->mutable_comparator()->set_serialized_comparator(bc.SerializeAsString());
  EXPECT_TRUE(Parsed<MutateResponse>(Client("Mutate", cas)).processed());
  EXPECT_EQ(ValueOf("d2", "c", "t"), "new");
  cond->mutable_comparator()->set_name("org.apache.hadoop.hbase.filter.NullComparator");
  cond->mutable_comparator()->clear_serialized_comparator();
  EXPECT_FALSE(Parsed<MutateResponse>(Client("Mutate", cas)).processed());
  // Refused: a condition with a time range.
  cond->mutable_time_range()->set_from(5);
  const Reply refused = Client("Mutate", cas);
  EXPECT_EQ(refused.exception, kDoNotRetryClass) << refused;
  EXPECT_NE(refused.text.find("time range"), std::string::npos) << refused.text;
}

TEST_F(HBaseFrontTest, MultiBatchesAtomicAndConditionalActions) {
  Start(Process::kStandalone);
  MakeTable("d3", {"m"});
  ASSERT_TRUE(Put("d3", "before", "q", "v").ok());
  MultiRequest req;
  RegionAction* low = req.add_regionaction();
  *low->mutable_region() = Region(RegionName("d3", "a"));
  for (uint32_t i = 0; i < 3; ++i) {
    Action* a = low->add_action();
    a->set_index(i);
    *a->mutable_mutation() = PutOf(absl::StrCat("a", i), "q", absl::StrCat("v", i));
  }
  Action* get = low->add_action();  // (a Get sees what was written before the call)
  get->set_index(3);
  get->mutable_get()->set_row("before");
  RegionAction* high = req.add_regionaction();
  *high->mutable_region() = Region(RegionName("d3", "z"));
  high->set_atomic(true);
  for (uint32_t i = 0; i < 2; ++i) {
    Action* a = high->add_action();
    a->set_index(i);
    *a->mutable_mutation() = PutOf("z", absl::StrCat("q", i), "w");
  }
  // A region the table does not have (it split or moved): refused alone, action by action.
  RegionAction* gone = req.add_regionaction();
  *gone->mutable_region() = Region(RegionNameOf("d3", "x", 1));
  *gone->add_action()->mutable_mutation() = PutOf("x", "q", "lost");
  const MultiResponse resp = Parsed<MultiResponse>(Client("Multi", req));
  ASSERT_EQ(resp.regionactionresult_size(), 3);
  EXPECT_FALSE(resp.regionactionresult(0).has_exception());
  ASSERT_EQ(resp.regionactionresult(0).resultorexception_size(), 4);
  EXPECT_EQ(resp.regionactionresult(0).resultorexception(3).result().cell_size(), 1);
  EXPECT_TRUE(resp.regionactionresult(1).processed());
  ASSERT_EQ(resp.regionactionresult(2).resultorexception_size(), 1);
  EXPECT_EQ(resp.regionactionresult(2).resultorexception(0).exception().name(), kNotServingRegion);
  EXPECT_EQ(ValueOf("d3", "a2", "q"), "v2");
  EXPECT_EQ(ValueOf("d3", "z", "q1"), "w");

  // checkAndMutate of RowMutations: all or none.
  MultiRequest cond_req;
  RegionAction* c = cond_req.add_regionaction();
  *c->mutable_region() = Region(RegionName("d3", "z"));
  c->set_atomic(true);
  Condition* cond = c->mutable_condition();
  cond->set_row("z");
  cond->set_family("f");
  cond->set_qualifier("q0");
  cond->set_compare_type(EQUAL);
  cond->mutable_comparator()->set_name("org.apache.hadoop.hbase.filter.BinaryComparator");
  BinaryComparator bc;
  bc.mutable_comparable()->set_value("w");
  cond->mutable_comparator()->set_serialized_comparator(bc.SerializeAsString());
  *c->add_action()->mutable_mutation() = PutOf("z", "q0", "x");
  EXPECT_TRUE(Parsed<MultiResponse>(Client("Multi", cond_req)).regionactionresult(0).processed());
  EXPECT_FALSE(Parsed<MultiResponse>(Client("Multi", cond_req)).regionactionresult(0).processed());
  EXPECT_EQ(ValueOf("d3", "z", "q0"), "x");
}

TEST_F(HBaseFrontTest, ScanOpensNextsRenewsAndCloses) {
  Start(Process::kStandalone);
  MakeTable("s1");
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Put("s1", absl::StrCat("r", i), "q", "v").ok());
  ScanRequest open;
  *open.mutable_region() = Region(RegionName("s1"));
  open.mutable_scan();
  open.set_number_of_rows(4);
  const ScanResponse first = Parsed<ScanResponse>(Client("Scan", open));
  EXPECT_EQ(first.results_size(), 4);
  EXPECT_TRUE(first.more_results_in_region());
  const uint64_t id = first.scanner_id();
  ScanRequest next;
  next.set_scanner_id(id);
  next.set_number_of_rows(4);
  next.set_next_call_seq(0);
  EXPECT_EQ(Parsed<ScanResponse>(Client("Scan", next)).results_size(), 4);
  ScanRequest renew;
  renew.set_scanner_id(id);
  renew.set_renew(true);
  renew.set_next_call_seq(1);
  EXPECT_TRUE(Parsed<ScanResponse>(Client("Scan", renew)).more_results());
  next.set_next_call_seq(2);
  const ScanResponse last = Parsed<ScanResponse>(Client("Scan", next));
  EXPECT_EQ(last.results_size(), 2);
  EXPECT_FALSE(last.more_results_in_region());  // done: the scanner is closed
  next.set_next_call_seq(3);
  EXPECT_EQ(Client("Scan", next).exception, kUnknownScanner);
  // Out of order: the scanner is closed, the client opens another.
  const uint64_t again = Parsed<ScanResponse>(Client("Scan", open)).scanner_id();
  next.set_scanner_id(again);
  next.set_next_call_seq(5);
  EXPECT_EQ(Client("Scan", next).exception, kOutOfOrderScannerNext);
  EXPECT_EQ(Client("Scan", next).exception, kUnknownScanner);
  // Closing one: fine, also once it is gone.
  ScanRequest close;
  close.set_scanner_id(Parsed<ScanResponse>(Client("Scan", open)).scanner_id());
  close.set_close_scanner(true);
  EXPECT_FALSE(Parsed<ScanResponse>(Client("Scan", close)).more_results());
  EXPECT_FALSE(Parsed<ScanResponse>(Client("Scan", close)).more_results());
}

TEST_F(HBaseFrontTest, ScanCutsWideRowsIntoPartialsAndBoundsScanners) {
  max_scanners_ = 1;
  Start(Process::kStandalone);
  MakeTable("s2");
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Put("s2", "wide", absl::StrCat("q", i), "v").ok());
  ScanRequest open;
  *open.mutable_region() = Region(RegionName("s2"));
  open.mutable_scan()->set_batch_size(2);
  open.set_number_of_rows(10);
  const ScanResponse resp = Parsed<ScanResponse>(Client("Scan", open));
  ASSERT_EQ(resp.results_size(), 3);  // 2 + 2 + 1 cells
  EXPECT_TRUE(resp.results(0).partial());
  EXPECT_FALSE(resp.results(2).partial());
  // One scanner open at most: the second is refused while the first stays.
  open.set_number_of_rows(0);
  ASSERT_TRUE(Client("Scan", open).ok());
  const Reply busy = Client("Scan", open);
  EXPECT_FALSE(busy.ok());
  EXPECT_NE(busy.text.find("scanners open"), std::string::npos) << busy;
}

TEST_F(HBaseFrontTest, MetaIsReadByGetAndReversedScan) {
  Start(Process::kStandalone);
  MakeTable("m1", {"k"});
  // The client's region lookup: a reversed scan from "table,row,99999999999999".
  ScanRequest lookup;
  *lookup.mutable_region() = Region(std::string(kMetaRegionName));
  lookup.mutable_scan()->set_start_row("m1,p,99999999999999");
  lookup.mutable_scan()->set_reversed(true);
  lookup.set_limit_of_rows(1);
  lookup.set_number_of_rows(1);
  const ScanResponse found = Parsed<ScanResponse>(Client("Scan", lookup));
  ASSERT_EQ(found.results_size(), 1);
  EXPECT_EQ(found.results(0).cell(0).row(), RegionName("m1", "k"));
  bool server = false;
  for (const Cell& c : found.results(0).cell()) {
    if (c.qualifier() == "server") server = c.value() == absl::StrCat("127.0.0.1:", front_->port());
  }
  EXPECT_TRUE(server);
  // The table's state row.
  GetRequest get;
  *get.mutable_region() = Region(std::string(kMetaRegionName));
  get.mutable_get()->set_row("m1");
  const GetResponse state = Parsed<GetResponse>(Client("Get", get));
  ASSERT_EQ(state.result().cell_size(), 1);
  EXPECT_EQ(state.result().cell(0).qualifier(), "state");
  // Read-only.
  MutateRequest write;
  *write.mutable_region() = Region(std::string(kMetaRegionName));
  *write.mutable_mutation() = PutOf("m1", "q", "v");
  EXPECT_EQ(Client("Mutate", write).exception, kAccessDenied);
}

TEST_F(HBaseFrontTest, ARegionThatMovedOrSplitIsNotServed) {
  Start(Process::kStandalone);
  MakeTable("n1");
  GetRequest get;
  *get.mutable_region() = Region(RegionNameOf("n1", "", 1));  // an id the table never had
  get.mutable_get()->set_row("a");
  EXPECT_EQ(Client("Get", get).exception, kNotServingRegion);
  *get.mutable_region() = Region(RegionNameOf("nope", "", 1));
  EXPECT_EQ(Client("Get", get).exception, kTableNotFound);
  get.mutable_region()->set_type(RegionSpecifier::ENCODED_REGION_NAME);
  const Reply encoded = Client("Get", get);
  EXPECT_EQ(encoded.exception, kDoNotRetryClass) << encoded;
}

// ---------------------------------------------------------------------------------------------
// AdminService (a region server's)

TEST_F(HBaseFrontTest, RegionServerAdminCalls) {
  Start(Process::kStandalone);
  MakeTable("a1", {"m"});
  ASSERT_TRUE(Put("a1", "b", "q", "v").ok());
  GetRegionInfoRequest info;
  *info.mutable_region() = Region(RegionName("a1", "z"));
  info.set_compaction_state(true);
  const GetRegionInfoResponse r = Parsed<GetRegionInfoResponse>(Admin("GetRegionInfo", info));
  EXPECT_EQ(r.region_info().start_key(), "m");
  EXPECT_EQ(r.compaction_state(), GetRegionInfoResponse::NONE);
  *info.mutable_region() = Region(RegionNameOf("a1", "m", 1));
  EXPECT_EQ(Admin("GetRegionInfo", info).exception, kNotServingRegion);
  EXPECT_EQ(Parsed<GetOnlineRegionResponse>(Admin("GetOnlineRegion", GetOnlineRegionRequest())).region_info_size(), 2);
  const GetServerInfoResponse si = Parsed<GetServerInfoResponse>(Admin("GetServerInfo", GetServerInfoRequest()));
  EXPECT_EQ(si.server_info().server_name().port(), front_->port());
  EXPECT_EQ(si.server_info().webui_port(), 16030u);
  FlushRegionRequest flush;
  *flush.mutable_region() = Region(RegionName("a1", "b"));
  EXPECT_TRUE(Parsed<FlushRegionResponse>(Admin("FlushRegion", flush)).flushed());
  EXPECT_GT(RegionsOf("a1").regions(0).store_files(), 0u);
  CompactRegionRequest compact;
  *compact.mutable_region() = Region(RegionName("a1", "b"));
  compact.set_major(true);
  EXPECT_TRUE(Admin("CompactRegion", compact).ok());
  *flush.mutable_region() = Region(std::string(kMetaRegionName));
  EXPECT_EQ(Admin("FlushRegion", flush).exception, kDoNotRetryClass);
  const Reply other = Admin("StopServer", GetServerInfoRequest());
  EXPECT_EQ(other.exception, kDoNotRetryClass);
  EXPECT_NE(other.text.find("StopServer"), std::string::npos) << other.text;
}

// An HBase cluster replicating into this one (ReplicateWALEntry, replication_sink.h): every cell
// applied with its own timestamp and kind, durably before the answer; the same batch again (the
// source resends after a lost answer) changes nothing; a table Basalt lacks is HBase's
// TableNotFoundException, which the source retries; a damaged block is refused whole.
TEST_F(HBaseFrontTest, ReplicatedEditsKeepTheirTimestampsAndTwiceChangeNothing) {
  Start(Process::kStandalone);
  MakeTable("rp");
  auto request = [](const std::string& table, const std::vector<BlockCell>& cells, std::string* block) {
    ReplicateWALEntryRequest req;
    WALEntry* e = req.add_entry();
    e->mutable_key()->set_encoded_region_name("0123456789abcdef0123456789abcdef");
    e->mutable_key()->set_table_name(table);
    e->mutable_key()->set_log_sequence_number(1);
    e->mutable_key()->set_write_time(1);
    e->set_associated_cell_count(static_cast<int>(cells.size()));
    for (const BlockCell& c : cells) EXPECT_TRUE(AppendCell(c, block).ok());
    return req;
  };
  std::string block;
  const ReplicateWALEntryRequest req = request("rp",
                                               {{"r1", "f", "a", 100, KeyValueType::kPut, "old"},
                                                {"r1", "f", "a", 200, KeyValueType::kPut, "new"},
                                                {"r2", "f", "a", 100, KeyValueType::kPut, "gone"},
                                                {"r2", "f", "a", 150, KeyValueType::kDeleteColumn, ""},
                                                {"r3", "f", "b", 300, KeyValueType::kPut, "kept"}},
                                               &block);
  for (int i = 0; i < 2; ++i) {
    const Reply r = Admin("ReplicateWALEntry", req, block);
    ASSERT_TRUE(r.ok()) << r;
    GetRequest get;
    *get.mutable_region() = Region(RegionName("rp", "r1"));
    get.mutable_get()->set_row("r1");
    get.mutable_get()->set_max_versions(5);
    const GetResponse newest = Parsed<GetResponse>(Client("Get", get));  // (the family keeps one version)
    ASSERT_EQ(newest.result().cell_size(), 1) << "round " << i;
    EXPECT_EQ(newest.result().cell(0).timestamp(), 200u);
    EXPECT_EQ(newest.result().cell(0).value(), "new");
    EXPECT_EQ(ValueOf("rp", "r2", "a"), "");
    EXPECT_EQ(ValueOf("rp", "r3", "b"), "kept");
  }
  std::string other_block;
  const ReplicateWALEntryRequest other = request("nope", {{"r", "f", "a", 1, KeyValueType::kPut, "v"}}, &other_block);
  const Reply missing = Admin("ReplicateWALEntry", other, other_block);
  EXPECT_EQ(missing.exception, kTableNotFound) << missing;
  // A family the table lacks fails the call (the source keeps the batch and resends it); rows
  // of the batch applied meanwhile are applied again as they were, so a reader sees no difference.
  std::string family_block;
  const ReplicateWALEntryRequest family = request("rp", {{"r4", "f", "a", 400, KeyValueType::kPut, "four"},
                                                         {"r5", "nofamily", "a", 500, KeyValueType::kPut, "five"}},
                                                  &family_block);
  for (int i = 0; i < 2; ++i) {
    const Reply no_family = Admin("ReplicateWALEntry", family, family_block);
    EXPECT_FALSE(no_family.ok());
    EXPECT_NE(no_family.text.find("nofamily"), std::string::npos) << no_family;
  }
  const Reply damaged = Admin("ReplicateWALEntry", req, block.substr(0, block.size() - 3));
  EXPECT_FALSE(damaged.ok());
  EXPECT_NE(damaged.text.find("malformed cell block"), std::string::npos) << damaged;
  EXPECT_EQ(ValueOf("rp", "r3", "b"), "kept");
  // On /metrics: the cells of the two whole batches, and the four refused.
  metrics::Registry registry;
  front_->RegisterMetrics(&registry);
  const std::string text = registry.Render();
  EXPECT_NE(text.find("basalt_replication_sink_cells_total 10\n"), std::string::npos) << text;
  EXPECT_NE(text.find("basalt_replication_sink_batches_total 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("basalt_replication_sink_failed_batches_total 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("basalt_replication_sink_age_ms "), std::string::npos) << text;
  // And in the cluster status, as HBase's shell reads it for status 'replication'.
  const GetClusterStatusResponse status = Parsed<GetClusterStatusResponse>(Master("GetClusterStatus", GetClusterStatusRequest()));
  ASSERT_EQ(status.cluster_status().live_servers_size(), 1);
  const ReplicationLoadSink& sink = status.cluster_status().live_servers(0).server_load().replloadsink();
  EXPECT_EQ(sink.totalopsprocessed(), 10u);
  EXPECT_EQ(sink.timestampsoflastappliedop(), 1u);  // the entries' write_time
  EXPECT_GT(sink.ageoflastappliedop(), 0u);
  EXPECT_GT(sink.timestampstarted(), 0u);
}

// ---------------------------------------------------------------------------------------------
// What each process serves, and the refusals

TEST_F(HBaseFrontTest, AMasterServesMetaAndMasterServiceButNoTableRegion) {
  Start(Process::kMaster);
  MakeTable("p1");
  EXPECT_TRUE(Parsed<IsMasterRunningResponse>(Master("IsMasterRunning", IsMasterRunningRequest())).is_master_running());
  EXPECT_EQ(Parsed<GetTableNamesResponse>(Master("GetTableNames", GetTableNamesRequest())).table_names_size(), 1);
  GetRequest get;
  *get.mutable_region() = Region(RegionName("p1"));
  get.mutable_get()->set_row("a");
  const Reply data = Client("Get", get);
  EXPECT_EQ(data.exception, kNotServingRegion) << data;
  EXPECT_NE(data.text.find("not by the master"), std::string::npos) << data.text;
  // Its hbase:meta names the region server's HBase port (its registration), not the master's.
  ScanRequest meta;
  *meta.mutable_region() = Region(std::string(kMetaRegionName));
  meta.mutable_scan();
  meta.set_number_of_rows(100);
  const ScanResponse rows = Parsed<ScanResponse>(Client("Scan", meta));
  bool named = false;
  for (const Result& r : rows.results()) {
    for (const Cell& c : r.cell()) named |= c.qualifier() == "server" && c.value() == "127.0.0.1:16025";
  }
  EXPECT_TRUE(named);
  // The live servers are the region servers.
  const ClusterStatus cs =
      Parsed<GetClusterStatusResponse>(Master("GetClusterStatus", GetClusterStatusRequest())).cluster_status();
  ASSERT_EQ(cs.live_servers_size(), 1);
  EXPECT_EQ(cs.live_servers(0).server().port(), 16025u);
  EXPECT_EQ(cs.live_servers(0).server().start_code(), 77u);
  EXPECT_FALSE(cs.balancer_on());  // (this master's balancer runs only when asked)
  EXPECT_FALSE(Parsed<IsBalancerEnabledResponse>(Master("IsBalancerEnabled", IsBalancerEnabledRequest())).enabled());
}

// A cluster's master that balances on its own says so, as HBase's with its balancer switch on.
TEST_F(HBaseFrontTest, AMasterThatBalancesOnItsOwnSaysItsBalancerIsOn) {
  balancer_on_ = true;
  Start(Process::kMaster);
  EXPECT_TRUE(Parsed<IsBalancerEnabledResponse>(Master("IsBalancerEnabled", IsBalancerEnabledRequest())).enabled());
  const ClusterStatus cs =
      Parsed<GetClusterStatusResponse>(Master("GetClusterStatus", GetClusterStatusRequest())).cluster_status();
  EXPECT_TRUE(cs.balancer_on());
}

TEST_F(HBaseFrontTest, ARegionServerServesItsRegionsButNotMetaOrMasterService) {
  Start(Process::kRegionServer);
  MakeTable("p2");
  ASSERT_TRUE(Put("p2", "a", "q", "v").ok());
  EXPECT_EQ(ValueOf("p2", "a", "q"), "v");
  GetRequest meta;
  *meta.mutable_region() = Region(std::string(kMetaRegionName));
  meta.mutable_get()->set_row("p2");
  const Reply m = Client("Get", meta);
  EXPECT_EQ(m.exception, kNotServingRegion) << m;
  EXPECT_NE(m.text.find("active master"), std::string::npos) << m.text;
  const Reply master = Master("IsMasterRunning", IsMasterRunningRequest());
  EXPECT_EQ(master.exception, kDoNotRetryClass) << master;
  EXPECT_TRUE(master.do_not_retry);
  EXPECT_NE(master.text.find("MasterService"), std::string::npos) << master.text;
  EXPECT_TRUE(Parsed<GetServerInfoResponse>(Admin("GetServerInfo", GetServerInfoRequest())).has_server_info());
}

TEST_F(HBaseFrontTest, AnUnknownServiceIsRefusedByName) {
  Start(Process::kStandalone);
  auto c = Connect("RegionServerStatusService");
  const Reply r = Ask(c.get(), "RegionServerReport", GetClusterIdRequest());
  EXPECT_EQ(r.exception, kDoNotRetryClass) << r;
  EXPECT_TRUE(r.do_not_retry);
  EXPECT_NE(r.text.find("RegionServerStatusService"), std::string::npos) << r.text;
}

TEST_F(HBaseFrontTest, MalformedRequestsAreAnsweredAndTheConnectionGoesOn) {
  Start(Process::kStandalone);
  MakeTable("x1");
  auto c = Connect("MasterService");
  // A request whose bytes are not the method's message.
  RequestHeader h;
  h.set_call_id(1);
  h.set_method_name("CreateTable");
  h.set_request_param(true);
  ASSERT_TRUE(c->Write(EncodeCall(h, std::string("\xff\xff\xff", 3))));
  absl::StatusOr<Answer> a = c->Read();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(a->header.has_exception());
  EXPECT_EQ(a->header.exception().exception_class_name(), kDoNotRetryClass);
  EXPECT_NE(a->header.exception().stack_trace().find("CreateTable"), std::string::npos);
  // A required field missing (CreateTable without a schema) likewise.
  h.set_call_id(2);
  ASSERT_TRUE(c->Write(EncodeCall(h, "")));
  a = c->Read();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->header.has_exception());
  // A cell block that does not decode: the Mutate is refused, the connection serves on.
  auto d = Connect("ClientService");
  MutateRequest put;
  *put.mutable_region() = Region(RegionName("x1"));
  put.mutable_mutation()->set_row("r");
  put.mutable_mutation()->set_mutate_type(MutationProto::PUT);
  put.mutable_mutation()->set_associated_cell_count(1);
  const Reply bad = Ask(d.get(), "Mutate", put, std::string("\0\0\0\x40garbage", 11));
  EXPECT_EQ(bad.exception, kDoNotRetryClass) << bad;
  EXPECT_TRUE(Parsed<IsMasterRunningResponse>(Ask(c.get(), "IsMasterRunning", IsMasterRunningRequest()))
                  .is_master_running());
  // A frame whose length runs past what the server takes ends the connection with a
  // FatalConnectionException (hbase_port.h's bounds).
  ASSERT_TRUE(c->Write(std::string("\x7f\xff\xff\xff", 4)));
  a = c->Read();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->header.exception().exception_class_name(), "org.apache.hadoop.hbase.ipc.FatalConnectionException");
  EXPECT_TRUE(c->ClosedByServer());
}

TEST_F(HBaseFrontTest, ADeposedProcessRefusesEveryCall) {
  // (A master that lost its leadership: Options::admit.)
  HBaseFront::Options o;
  o.port.log = [](std::string_view) {};
  o.admit = [] { return absl::UnavailableError("this master was deposed"); };
  front_ = std::make_unique<HBaseFront>(o);
  ServiceParts parts;
  parts.data = data_.get();
  parts.admin = admin_.get();
  ServeAsStandalone(front_.get(), parts);
  ASSERT_TRUE(front_->Start().ok());
  MakeTable("z1");
  const Reply m = Master("GetTableNames", GetTableNamesRequest());
  EXPECT_EQ(m.exception, "java.io.IOException") << m;
  EXPECT_NE(m.text.find("deposed"), std::string::npos);
  GetRequest get;
  *get.mutable_region() = Region(std::string(kMetaRegionName));
  get.mutable_get()->set_row("z1");
  EXPECT_EQ(Client("Get", get).exception, kNotServingRegion);  // looked up again elsewhere
}

}  // namespace
}  // namespace basalt::hbase
