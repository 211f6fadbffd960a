// The verbs front end's Get (verbs_front.h) without a device: a request frame read in place and
// answered into the very buffer it came in (as the server does from its shared receive buffer)
// gives what the gRPC Get gives for the same request: the same cells, the same errors, the same
// visibility on a transactional table, the caller's permissions. The wire itself:
// tests/rxe/verbs_test.cc.
#include "src/front/verbs_front.h"

#include <memory>
#include <vector>

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "src/security/access_control.h"
#include "tests/util/temp_dir.h"
#include "transport/verbs/frame.h"

namespace basalt::server {
namespace {

using google::protobuf::util::MessageDifferencer;

rpc::GetRequest Get(std::string table, std::string row) {
  rpc::GetRequest req;
  req.set_table(std::move(table));
  req.set_row(std::move(row));
  req.mutable_read();  // always there, as the client sends it
  return req;
}

void Select(rpc::GetRequest* req, std::string family, std::vector<std::string> qualifiers = {}) {
  rpc::ColumnSelection* c = req->mutable_read()->add_columns();
  c->set_family(std::move(family));
  for (std::string& q : qualifiers) c->add_qualifiers(std::move(q));
}

class VerbsFrontTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Catalog::Options o;
    o.data_dir = dir_.path() + "/data";
    auto tm = Catalog::Open(o);
    ASSERT_TRUE(tm.ok()) << tm.status();
    tables_ = *std::move(tm);
    TransactionManager::Options xo;
    xo.dir = dir_.path() + "/transactions";
    auto xm = TransactionManager::Open(xo);
    ASSERT_TRUE(xm.ok()) << xm.status();
    transactions_ = *std::move(xm);
    data_ = std::make_unique<DataService>(tables_.get(), ServerConfig{}, transactions_.get());
    admin_ = AdminService::ForStandalone(tables_.get(), &counters_);
    Create("t", {"f", "g"}, false);
    Create("tx", {"f"}, true);
    handlers_ = VerbsHandlersFor(data_.get(), nullptr);
  }

  void Create(const std::string& name, std::vector<std::string> families, bool transactional) {
    rpc::CreateTableRequest req;
    req.mutable_table()->set_name(name);
    req.mutable_table()->set_transactional(transactional);
    for (const std::string& f : families) {
      rpc::FamilyDescriptor* d = req.mutable_table()->add_families();
      d->set_name(f);
      d->set_max_versions(3);
    }
    rpc::CreateTableResponse resp;
    ASSERT_TRUE(admin_->CreateTable(req, &resp).ok());
  }

  absl::Status Put(const std::string& table, const std::string& row, const std::string& family, const std::string& q,
                   const std::string& value, int64_t ts = 0, int64_t transaction = 0) {
    rpc::MutateRequest req;
    req.set_table(table);
    req.set_transaction(transaction);
    req.mutable_mutation()->set_row(row);
    rpc::Mutation* m = req.mutable_mutation()->add_mutations();
    m->set_family(family);
    m->set_qualifier(q);
    m->set_value(value);
    if (ts != 0) m->set_timestamp(ts);
    rpc::MutateResponse resp;
    return data_->Mutate(req, &resp);
  }

  // `req` as a verbs Get: encoded, read in place by the one DecodedRequest this test reuses (as a
  // helper thread does), served by the handler into the same buffer, and the reply decoded.
  absl::Status ViaFrame(const rpc::GetRequest& req, rpc::GetResponse* resp, const verbs::VerbsHandlers& h,
                        const Identity* caller = nullptr) {
    std::vector<uint8_t> buffer(64 << 10);
    absl::StatusOr<size_t> n = verbs::EncodeGetRequest(41, req, absl::MakeSpan(buffer));
    if (!n.ok()) return n.status();
    absl::Status decoded = verbs::DecodeRequest({buffer.data(), *n}, &decoded_);
    EXPECT_TRUE(decoded.ok()) << decoded;
    const size_t m = h.get(caller, 41, decoded_.get, absl::MakeSpan(buffer), nullptr);
    return verbs::DecodeGetReply({buffer.data(), m}, 41, resp);
  }

  // The frame's answer is the gRPC Get's: status, message, and cells.
  static constexpr size_t kRefused = ~size_t{0};
  void ExpectAsGrpc(const rpc::GetRequest& req, size_t want_cells) {
    SCOPED_TRACE(req.ShortDebugString());
    rpc::GetResponse want, got;
    const absl::Status ws = data_->Get(req, &want);
    const absl::Status gs = ViaFrame(req, &got, handlers_);
    EXPECT_EQ(gs.code(), ws.code()) << gs << " vs " << ws;
    EXPECT_EQ(gs.message(), ws.message());
    if (want_cells == kRefused) {
      EXPECT_FALSE(ws.ok());
      return;
    }
    ASSERT_TRUE(ws.ok()) << ws;
    EXPECT_TRUE(MessageDifferencer::Equals(got.row(), want.row()))
        << got.row().ShortDebugString() << "\nvs\n"
        << want.row().ShortDebugString();
    EXPECT_EQ(static_cast<size_t>(got.row().cells_size()), want_cells);
  }

  testing::TempDir dir_;
  ServerCounters counters_;
  std::unique_ptr<Catalog> tables_;
  std::unique_ptr<TransactionManager> transactions_;
  std::unique_ptr<DataService> data_;
  std::unique_ptr<AdminService> admin_;
  verbs::VerbsHandlers handlers_;
  verbs::DecodedRequest decoded_;
};

TEST_F(VerbsFrontTest, AGetReadInPlaceAnswersAsTheGrpcGet) {
  ASSERT_TRUE(Put("t", "r1", "f", "a", "old", 100).ok());
  ASSERT_TRUE(Put("t", "r1", "f", "a", "new", 200).ok());
  ASSERT_TRUE(Put("t", "r1", "f", "b", "bee", 200).ok());
  ASSERT_TRUE(Put("t", "r1", "g", "c", "sea", 300).ok());

  ExpectAsGrpc(Get("t", "r1"), 3);  // the newest version of each column
  rpc::GetRequest req = Get("t", "r1");
  Select(&req, "f");
  ExpectAsGrpc(req, 2);
  Select(&req, "g", {"c", "zz"});
  ExpectAsGrpc(req, 3);
  req = Get("t", "r1");
  Select(&req, "f", {"a"});
  req.mutable_read()->set_max_versions(3);
  ExpectAsGrpc(req, 2);  // both versions of f:a
  req.mutable_read()->set_max_timestamp(150);
  ExpectAsGrpc(req, 1);  // [0, 150): the old one
  req.mutable_read()->set_min_timestamp(150);
  req.mutable_read()->set_max_timestamp(201);
  req.mutable_read()->set_skip_block_cache(true);
  ExpectAsGrpc(req, 1);
  ExpectAsGrpc(Get("t", "nope"), 0);  // a missing row: OK and empty

  req = Get("t", "r1");  // a filter: f:b only
  rpc::Filter* filter = req.mutable_read()->mutable_filter();
  filter->set_kind(rpc::Filter::QUALIFIER);
  filter->set_op(rpc::FILTER_EQUAL);
  filter->mutable_comparator()->set_value("b");
  ExpectAsGrpc(req, 1);
  ExpectAsGrpc(Get("t", "r1"), 3);  // nothing of the last request's filter stays

  // The same errors, word for word.
  req = Get("t", "r1");
  Select(&req, "zz");
  ExpectAsGrpc(req, kRefused);
  ExpectAsGrpc(Get("nope", "r1"), kRefused);
  ExpectAsGrpc(Get("bad name!", "r1"), kRefused);
  ExpectAsGrpc(Get("t", ""), kRefused);
  req = Get("t", "r1");
  req.mutable_read()->set_min_timestamp(10);
  req.mutable_read()->set_max_timestamp(5);
  ExpectAsGrpc(req, kRefused);
  req = Get("t", "r1");
  req.mutable_read()->set_min_timestamp(-1);
  ExpectAsGrpc(req, kRefused);
  req = Get("t", "r1");
  req.mutable_read()->set_max_versions(-2);
  ExpectAsGrpc(req, kRefused);
  req = Get("t", "r1");
  req.mutable_read()->mutable_filter()->set_kind(rpc::Filter::VALUE);
  req.mutable_read()->mutable_filter()->set_op(rpc::FILTER_NO_OP);  // refused
  ExpectAsGrpc(req, kRefused);
  req = Get("t", "r1");
  req.mutable_read()->mutable_transaction()->set_read_pointer(1);
  ExpectAsGrpc(req, kRefused);  // a snapshot on a table that is not transactional
}

TEST_F(VerbsFrontTest, ATransactionalTablesGetSeesWhatItsSnapshotSees) {
  rpc::StartTransactionRequest start;
  rpc::StartTransactionResponse first;
  ASSERT_TRUE(data_->StartTransaction({}, start, &first).ok());
  ASSERT_TRUE(Put("tx", "r", "f", "q", "committed", 0, first.transaction().write_pointer()).ok());
  rpc::CommitTransactionRequest commit;
  commit.set_write_pointer(first.transaction().write_pointer());
  rpc::CommitTransactionResponse committed;
  ASSERT_TRUE(data_->CommitTransaction({}, commit, &committed).ok());

  rpc::StartTransactionResponse reader, writer;
  ASSERT_TRUE(data_->StartTransaction({}, start, &reader).ok());
  ASSERT_TRUE(data_->StartTransaction({}, start, &writer).ok());
  ASSERT_TRUE(Put("tx", "r", "f", "q", "uncommitted", 0, writer.transaction().write_pointer()).ok());
  rpc::GetRequest plain = Get("tx", "r");  // outside a transaction: what has committed
  ExpectAsGrpc(plain, 1);
  rpc::GetResponse resp;
  ASSERT_TRUE(ViaFrame(plain, &resp, handlers_).ok());
  ASSERT_EQ(resp.row().cells_size(), 1);
  EXPECT_EQ(resp.row().cells(0).value(), "committed");
  rpc::GetRequest own = Get("tx", "r");
  *own.mutable_read()->mutable_transaction() = writer.transaction();
  ExpectAsGrpc(own, 1);
  ASSERT_TRUE(ViaFrame(own, &resp, handlers_).ok());
  EXPECT_EQ(resp.row().cells(0).value(), "uncommitted");  // its own write
  rpc::GetRequest other = Get("tx", "r");
  *other.mutable_read()->mutable_transaction() = reader.transaction();
  ExpectAsGrpc(other, 1);
  ASSERT_TRUE(ViaFrame(other, &resp, handlers_).ok());
  EXPECT_EQ(resp.row().cells(0).value(), "committed");  // not the other's
  rpc::GetRequest malformed = Get("tx", "r");
  malformed.mutable_read()->mutable_transaction()->set_read_pointer(-1);
  ExpectAsGrpc(malformed, kRefused);
}

TEST_F(VerbsFrontTest, AGetIsNarrowedToWhatTheCallerMayRead) {
  AccessController::Options ao;
  ao.enabled = true;
  ao.superusers = {"root"};
  auto ac = AccessController::Open(ao, tables_->acl_region());
  ASSERT_TRUE(ac.ok()) << ac.status();
  Identity root;
  root.user = "root";
  (*ac)->Resolve(&root);
  ASSERT_TRUE((*ac)->Grant(root, PermGrant{"dave", PermScope{"", "t", "f", ""}, kPermRead}).ok());
  ASSERT_TRUE((*ac)->Grant(root, PermGrant{"erin", PermScope{"", "t", "", ""}, kPermRead}).ok());
  ASSERT_TRUE(Put("t", "r", "f", "a", "1").ok());
  ASSERT_TRUE(Put("t", "r", "g", "b", "2").ok());
  const verbs::VerbsHandlers h = VerbsHandlersFor(data_.get(), ac->get());
  Identity dave, erin, frank;
  dave.user = "dave";
  erin.user = "erin";
  frank.user = "frank";
  rpc::GetResponse resp;
  ASSERT_TRUE(ViaFrame(Get("t", "r"), &resp, h, &erin).ok());  // the whole table: as it is
  EXPECT_EQ(resp.row().cells_size(), 2);
  ASSERT_TRUE(ViaFrame(Get("t", "r"), &resp, h, &dave).ok());  // family f only
  ASSERT_EQ(resp.row().cells_size(), 1);
  EXPECT_EQ(resp.row().cells(0).family(), "f");
  rpc::GetRequest only_g = Get("t", "r");
  Select(&only_g, "g");
  EXPECT_EQ(ViaFrame(only_g, &resp, h, &dave).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ViaFrame(Get("t", "r"), &resp, h, &frank).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ViaFrame(Get("t", "r"), &resp, h, nullptr).code(), absl::StatusCode::kPermissionDenied);
  ASSERT_TRUE(ViaFrame(Get("t", "r"), &resp, h, &erin).ok());  // nothing of dave's narrowing stays
  EXPECT_EQ(resp.row().cells_size(), 2);
}

// Quotas hold on the verbs path as on gRPC (quotas.h): the session's caller's, and the table's.
TEST_F(VerbsFrontTest, AGetOrPutPastAQuotaIsRefusedWithTheWait) {
  ASSERT_TRUE(Put("t", "r1", "f", "a", "v").ok());
  auto quotas = Quotas::Open(tables_->quota_region());
  ASSERT_TRUE(quotas.ok()) << quotas.status();
  const verbs::VerbsHandlers h = VerbsHandlersFor(data_.get(), nullptr, nullptr, quotas->get());
  rpc::SetQuotaRequest q;
  q.set_user("alice");
  q.set_limit("2req/min");
  ASSERT_TRUE(SetQuota(quotas->get(), q).ok());
  Identity alice;
  alice.user = "alice";
  Identity bob;
  bob.user = "bob";
  rpc::GetResponse resp;
  EXPECT_TRUE(ViaFrame(Get("t", "r1"), &resp, h, &alice).ok());
  EXPECT_TRUE(ViaFrame(Get("t", "r1"), &resp, h, &alice).ok());
  absl::Status refused = ViaFrame(Get("t", "r1"), &resp, h, &alice);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("number of requests exceeded - wait "), std::string::npos) << refused;
  EXPECT_TRUE(ViaFrame(Get("t", "r1"), &resp, h, &bob).ok());
  rpc::MutateRequest put;
  put.set_table("t");
  put.mutable_mutation()->set_row("r2");
  rpc::Mutation* m = put.mutable_mutation()->add_mutations();
  m->set_family("f");
  m->set_qualifier("a");
  m->set_value("v");
  EXPECT_EQ(h.mutate(&alice, put).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(h.mutate(&bob, put).ok());
  // A table's quota counts every caller's, the anonymous one's too (authentication off).
  q.set_user("");
  q.set_table("t");
  q.set_throttle("WRITE");
  q.set_limit("1req/min");
  ASSERT_TRUE(SetQuota(quotas->get(), q).ok());
  EXPECT_TRUE(h.mutate(nullptr, put).ok());
  EXPECT_EQ(h.mutate(&bob, put).code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace basalt::server
