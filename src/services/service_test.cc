// DataService/AdminService semantics without gRPC, and admin operations racing data calls.
#include "src/services/service.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "basalt/family_values.h"
#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace basalt::server {
namespace {

std::string BigEndian(int64_t v) {
  std::string s(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) s[i] = static_cast<char>(v & 0xff);
  return s;
}

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Catalog::Options o;
    o.data_dir = dir_.path();
    auto tm = Catalog::Open(o);
    ASSERT_TRUE(tm.ok()) << tm.status();
    tables_ = *std::move(tm);
    data_ = std::make_unique<DataService>(tables_.get(), ServerConfig{});
    admin_ = AdminService::ForStandalone(tables_.get(), &counters_);
    rpc::CreateTableRequest req;
    req.mutable_table()->set_name("t");
    req.mutable_table()->add_families()->set_name("f");
    req.mutable_table()->add_families()->set_name("g");
    rpc::CreateTableResponse resp;
    ASSERT_TRUE(admin_->CreateTable(req, &resp).ok());
  }

  absl::Status Put(const std::string& row, const std::string& q, const std::string& v,
                   std::optional<int64_t> ts = std::nullopt) {
    rpc::MutateRequest req;
    req.set_table("t");
    req.mutable_mutation()->set_row(row);
    auto* m = req.mutable_mutation()->add_mutations();
    m->set_family("f");
    m->set_qualifier(q);
    m->set_value(v);
    if (ts) m->set_timestamp(*ts);
    rpc::MutateResponse resp;
    return data_->Mutate(req, &resp);
  }

  testing::TempDir dir_;
  ServerCounters counters_;
  std::unique_ptr<Catalog> tables_;
  std::unique_ptr<DataService> data_;
  std::unique_ptr<AdminService> admin_;
};

TEST_F(ServiceTest, IncrementTimestampFollowsTheCurrentCell) {
  // A cell from the future: the new version must still be newer (HBase's max(now, ts + 1)).
  const int64_t future = 4102444800000;  // 2100-01-01
  ASSERT_TRUE(Put("r", "n", BigEndian(40), future).ok());
  rpc::IncrementRequest req;
  req.set_table("t");
  req.set_row("r");
  auto* c = req.add_columns();
  c->set_family("f");
  c->set_qualifier("n");
  c->set_amount(2);
  auto* c2 = req.add_columns();  // the same column twice: both amounts apply
  *c2 = *c;
  rpc::IncrementResponse resp;
  ASSERT_TRUE(data_->Increment(req, &resp).ok());
  ASSERT_EQ(resp.row().cells_size(), 1);
  EXPECT_EQ(resp.row().cells(0).value(), BigEndian(44));
  EXPECT_EQ(resp.row().cells(0).timestamp(), future + 1);

  c->set_family("nofam");
  absl::Status s = data_->Increment(req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("'nofam'"), std::string::npos) << s;
}

TEST_F(ServiceTest, CheckAndMutateEmptyValueRules) {
  rpc::CheckAndMutateRequest req;
  req.set_table("t");
  req.set_row("r");
  req.mutable_condition()->set_family("f");
  req.mutable_condition()->set_qualifier("q");
  req.mutable_condition()->set_op(rpc::EQUAL);
  req.mutable_mutation()->set_row("r");
  auto* m = req.mutable_mutation()->add_mutations();
  m->set_family("g");
  m->set_value("done");
  rpc::CheckAndMutateResponse resp;
  // HBase: an empty given value matches a missing column (except NOT_EQUAL).
  ASSERT_TRUE(data_->CheckAndMutate(req, &resp).ok());
  EXPECT_TRUE(resp.processed());
  req.mutable_condition()->set_op(rpc::NOT_EQUAL);
  ASSERT_TRUE(data_->CheckAndMutate(req, &resp).ok());
  EXPECT_FALSE(resp.processed());
  req.mutable_condition()->set_op(static_cast<rpc::CompareOp>(77));
  EXPECT_EQ(data_->CheckAndMutate(req, &resp).code(), absl::StatusCode::kInvalidArgument);
}

// Every value of basalt/family_values.h goes wire -> engine -> wire unchanged, and the engine
// names it as the table does (the first row of a wire number is its printed name).
TEST(FamilyValues, EveryValueRoundTripsThroughTheEngine) {
  for (const FamilyValue& v : kFamilyValues) {
    const FamilyValue* printed = FindFamilyValueByWire(v.setting, v.wire);
    ASSERT_NE(printed, nullptr);
    EXPECT_EQ(FindFamilyValueByDisk(v.setting, v.disk), printed) << v.name;
    rpc::FamilyDescriptor fd;
    fd.set_name("cf");
    switch (v.setting) {
      case FamilySetting::kEncoding: fd.set_encoding(static_cast<rpc::DataBlockEncoding>(v.wire)); break;
      case FamilySetting::kCompression: fd.set_compression(static_cast<rpc::Compression>(v.wire)); break;
      case FamilySetting::kBloom: fd.set_bloom(static_cast<rpc::BloomType>(v.wire)); break;
      case FamilySetting::kChecksum: fd.set_checksum(static_cast<rpc::ChecksumType>(v.wire)); break;
    }
    absl::StatusOr<FamilyOptions> f = FamilyFromProto(fd);
    ASSERT_TRUE(f.ok()) << v.name << ": " << f.status();
    const char* engine_name = "";
    switch (v.setting) {
      case FamilySetting::kEncoding: engine_name = EncodingName(f->encoding); break;
      case FamilySetting::kCompression: engine_name = CompressionName(f->compression); break;
      case FamilySetting::kBloom: engine_name = BloomName(f->bloom); break;
      case FamilySetting::kChecksum: engine_name = ChecksumName(f->checksum); break;
    }
    EXPECT_EQ(std::string_view(engine_name), printed->name);
    const rpc::FamilyDescriptor back = FamilyToProto(*f);
    int wire = -1;
    switch (v.setting) {
      case FamilySetting::kEncoding: wire = back.encoding(); break;
      case FamilySetting::kCompression: wire = back.compression(); break;
      case FamilySetting::kBloom: wire = back.bloom(); break;
      case FamilySetting::kChecksum: wire = back.checksum(); break;
    }
    EXPECT_EQ(wire, v.wire) << v.name;
  }
  // The proto's numbers are the table's.
  EXPECT_EQ(FindFamilyValueByName(FamilySetting::kBloom, "row")->wire, rpc::BLOOM_ROW);
  EXPECT_EQ(FindFamilyValueByName(FamilySetting::kChecksum, "CRC32C")->wire, rpc::CHECKSUM_CRC32C);
  EXPECT_EQ(FindFamilyValueByName(FamilySetting::kCompression, "gz")->wire, rpc::COMPRESSION_ZLIB);
  EXPECT_EQ(FindFamilyValueByName(FamilySetting::kEncoding, "ROW_INDEX")->wire, rpc::ENCODING_ROW_INDEX);
  EXPECT_EQ(FindFamilyValueByName(FamilySetting::kCompression, "LZO"), nullptr);
}

TEST_F(ServiceTest, FamilyNamesMayHaveNonAsciiBytes) {
  // As HBase (and ValidateFamilyName): bytes >= 0x80 are not control characters.
  rpc::CreateTableRequest req;
  req.mutable_table()->set_name("u");
  req.mutable_table()->add_families()->set_name("caf\xc3\xa9");
  rpc::CreateTableResponse resp;
  absl::Status s = admin_->CreateTable(req, &resp);
  EXPECT_TRUE(s.ok()) << s;
  req.mutable_table()->set_name("u2");
  req.mutable_table()->mutable_families(0)->set_name("a\x01");
  EXPECT_EQ(admin_->CreateTable(req, &resp).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ServiceTest, DisableCancelsOpenScans) {
  ASSERT_TRUE(Put("r", "q", "v").ok());
  rpc::ScanRequest req;
  req.set_table("t");
  rpc::TableRequest treq;
  treq.set_table("t");
  rpc::AdminResponse aresp;
  std::atomic<int> cancelled{0};
  auto cursor = data_->OpenScan(req);
  ASSERT_TRUE(cursor.ok()) << cursor.status();
  (*cursor)->CancelOnClose([&] { ++cancelled; });
  ASSERT_TRUE(admin_->DisableTable(treq, &aresp).ok());
  EXPECT_EQ(cancelled.load(), 1);
  cursor->reset();
  ASSERT_TRUE(admin_->EnableTable(treq, &aresp).ok());
  // A cursor that is gone is not called back.
  auto gone = data_->OpenScan(req);
  ASSERT_TRUE(gone.ok()) << gone.status();
  (*gone)->CancelOnClose([&] { ++cancelled; });
  gone->reset();
  ASSERT_TRUE(admin_->DisableTable(treq, &aresp).ok());
  EXPECT_EQ(cancelled.load(), 1);
}

// A scan begun before a split reads the table the split replaced: a disable ends it as it ends
// the scans of the table it closes, and an enable waits until it is gone.
TEST_F(ServiceTest, DisableEndsScansBegunBeforeASplit) {
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(Put(absl::StrCat("r", 10 + i), "q", "v").ok());
  rpc::ScanRequest req;
  req.set_table("t");
  req.set_rows_per_message(5);
  auto cursor = data_->OpenScan(req);
  ASSERT_TRUE(cursor.ok()) << cursor.status();
  std::atomic<int> cancelled{0};
  (*cursor)->CancelOnClose([&] { ++cancelled; });
  rpc::ScanResponse page;
  bool done = false;
  ASSERT_TRUE((*cursor)->Next(&page, &done).ok());
  ASSERT_EQ(page.rows_size(), 5);
  ASSERT_TRUE(tables_->Split("t", "r25").ok());
  page.Clear();
  ASSERT_TRUE((*cursor)->Next(&page, &done).ok());  // the split table still reads
  EXPECT_EQ(page.rows_size(), 5);
  rpc::TableRequest treq;
  treq.set_table("t");
  rpc::AdminResponse aresp;
  ASSERT_TRUE(admin_->DisableTable(treq, &aresp).ok());
  EXPECT_EQ(cancelled.load(), 1);  // a stream waiting on its client ends now
  page.Clear();
  absl::Status s = (*cursor)->Next(&page, &done);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("disabled"), std::string::npos) << s;
  cursor->reset();
  ASSERT_TRUE(admin_->EnableTable(treq, &aresp).ok());
}

TEST_F(ServiceTest, AdminRacesDataCalls) {
  std::atomic<bool> stop{false};
  std::atomic<int> unexpected{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 3; ++w) {
    workers.emplace_back([&, w] {
      int i = 0;
      while (!stop.load()) {
        absl::Status s;
        const std::string row = "r" + std::to_string(i++ % 50);
        if (w == 0) {
          s = Put(row, "q", "v");
        } else if (w == 1) {
          rpc::GetRequest req;
          req.set_table("t");
          req.set_row(row);
          rpc::GetResponse resp;
          s = data_->Get(req, &resp);
        } else {
          rpc::ScanRequest req;
          req.set_table("t");
          req.set_rows_per_message(7);
          auto cursor = data_->OpenScan(req);
          s = cursor.status();
          if (cursor.ok()) {
            bool done = false;
            while (s.ok() && !done) {
              rpc::ScanResponse msg;
              s = (*cursor)->Next(&msg, &done);
            }
          }
        }
        const auto code = s.code();
        if (code != absl::StatusCode::kOk && code != absl::StatusCode::kFailedPrecondition &&
            code != absl::StatusCode::kNotFound) {
          ++unexpected;
          ADD_FAILURE() << s;
        }
      }
    });
  }
  rpc::TableRequest treq;
  treq.set_table("t");
  rpc::AdminResponse aresp;
  for (int round = 0; round < 20; ++round) {
    ASSERT_TRUE(admin_->DisableTable(treq, &aresp).ok());
    absl::Status s = admin_->EnableTable(treq, &aresp);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_TRUE(admin_->Flush(treq, &aresp).ok());
  }
  ASSERT_TRUE(admin_->DisableTable(treq, &aresp).ok());
  ASSERT_TRUE(admin_->DropTable(treq, &aresp).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop = true;
  for (auto& t : workers) t.join();
  EXPECT_EQ(unexpected.load(), 0);
}

// A truncate drops its table and makes it again; a create of the same name from another caller
// waits for it to end (then finds the table there), never lands between the two.
TEST_F(ServiceTest, ATruncatesNameIsNeverFreeToAnotherCreateOfIt) {
  std::atomic<bool> stop{false};
  std::atomic<int> made{0}, tries{0};
  std::thread creator([&] {
    rpc::CreateTableRequest req;
    req.mutable_table()->set_name("t");
    req.mutable_table()->add_families()->set_name("other");
    while (!stop.load()) {
      rpc::CreateTableResponse resp;
      const absl::Status s = admin_->CreateTable(req, &resp);
      ++tries;
      if (s.ok()) {
        ++made;
      } else if (s.code() != absl::StatusCode::kAlreadyExists) {
        ADD_FAILURE() << s;
      }
    }
  });
  rpc::TableRequest treq;
  treq.set_table("t");
  rpc::TruncateTableRequest truncate;
  truncate.set_table("t");
  rpc::AdminResponse aresp;
  for (int round = 0; round < 25; ++round) {
    const absl::Status disabled = admin_->DisableTable(treq, &aresp);
    const absl::Status s = disabled.ok() ? admin_->TruncateTable(truncate, &aresp) : disabled;
    EXPECT_TRUE(s.ok()) << "round " << round << ": " << s;
    if (!s.ok()) break;
  }
  stop = true;
  creator.join();
  EXPECT_EQ(made.load(), 0) << "of " << tries.load() << " creates";
  EXPECT_GT(tries.load(), 25);
  // The table is the truncated one: its own families, not the creator's.
  rpc::DescribeTableResponse described;
  ASSERT_TRUE(admin_->DescribeTable(treq, &described).ok());
  ASSERT_EQ(described.table().families_size(), 2);
  EXPECT_EQ(described.table().families(0).name(), "f");
}

}  // namespace
}  // namespace basalt::server
