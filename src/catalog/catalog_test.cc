// The standalone catalogue (format, atomic replace, corruption) and the table manager on top
// of it (create/disable/enable/drop, restart, leftovers).
#include "src/schema/catalog_file.h"

#include <filesystem>
#include <fstream>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "common/crc.h"
#include "common/format_stamp.h"
#include "common/env.h"
#include "src/schema/meta.h"
#include "src/schema/region_info.h"
#include "src/catalog/catalog.h"
#include "src/catalog/test_catalog.h"
#include "tests/util/region_dir.h"
#include "tests/util/temp_dir.h"

namespace basalt::server {
namespace {

TableSpec SampleTable(std::string name) {
  TableSpec t;
  t.name = std::move(name);
  FamilyOptions f;
  f.name = "f";
  t.families.push_back(f);
  FamilyOptions g;
  g.name = "g-2";
  g.max_versions = 5;
  g.min_versions = 2;
  g.ttl_ms = 86400000;
  g.block_size = 4096;
  g.encoding = DataBlockEncoding::kFastDiff;
  g.compression = Compression::kSnappy;
  g.bloom = BloomType::kRowCol;
  g.checksum = ChecksumType::kCrc32;
  g.bytes_per_checksum = 512;
  g.cache_blocks = false;
  g.cache_encoded = true;
  t.families.push_back(g);
  return t;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

TEST(Catalog, RoundTrip) {
  std::vector<TableSpec> tables = {SampleTable("a"), SampleTable("b.c_d-e")};
  tables[1].enabled = false;
  std::string bytes = EncodeCatalog(tables);
  auto back = DecodeCatalog(bytes, "CATALOG");
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_TRUE((*back)[0] == tables[0]);
  EXPECT_TRUE((*back)[1] == tables[1]);
  EXPECT_FALSE((*back)[1].enabled);

  auto empty = DecodeCatalog(EncodeCatalog({}), "CATALOG");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(Catalog, MaxFileSizeNeedsVersionTwoOnlyWhenATableSetsIt) {
  std::vector<TableSpec> tables = {SampleTable("a"), SampleTable("b")};
  const std::string v1 = EncodeCatalog(tables);
  tables[1].max_file_size = 5 << 20;
  const std::string v2 = EncodeCatalog(tables);
  auto stamp1 = ReadFormatStamp(v1, "BSLTCATG", kCatalogVersion, "catalogue");
  auto stamp2 = ReadFormatStamp(v2, "BSLTCATG", kCatalogVersion, "catalogue");
  ASSERT_TRUE(stamp1.ok() && stamp2.ok());
  EXPECT_EQ(stamp1->min_reader_version, 1u);  // an older build still reads it
  EXPECT_EQ(stamp2->min_reader_version, 2u);
  auto back = DecodeCatalog(v2, "CATALOG");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ((*back)[0].max_file_size, 0u);
  EXPECT_EQ((*back)[1].max_file_size, 5u << 20);
  EXPECT_TRUE((*back)[1] == tables[1]);
  // Too small a size is refused, in a spec and in a file.
  tables[1].max_file_size = 1000;
  EXPECT_EQ(ValidateTableSpec(tables[1]).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeCatalog(EncodeCatalog(tables), "CATALOG").status().code(), absl::StatusCode::kDataLoss);
}

TEST(Catalog, TransactionalNeedsVersionThreeOnlyWhenATableIs) {
  std::vector<TableSpec> tables = {SampleTable("a"), SampleTable("b")};
  tables[0].families[1].ttl_ms = 0;  // a transactional table takes no TTL
  tables[0].transactional = true;
  const std::string v3 = EncodeCatalog(tables);
  auto stamp = ReadFormatStamp(v3, "BSLTCATG", kCatalogVersion, "catalogue");
  ASSERT_TRUE(stamp.ok());
  EXPECT_EQ(stamp->min_reader_version, 3u);  // an older build must not read it as a plain table
  auto back = DecodeCatalog(v3, "CATALOG");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE((*back)[0].transactional);
  EXPECT_FALSE((*back)[1].transactional);
  EXPECT_TRUE((*back)[0] == tables[0]);
  EXPECT_FALSE((*back)[0] == tables[1]);
  // A queue's table: transactional too, or refused.
  tables[0].queue = true;
  back = DecodeCatalog(EncodeCatalog(tables), "CATALOG");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE((*back)[0].queue && (*back)[0].transactional);
  EXPECT_TRUE((*back)[0] == tables[0]);
  tables[0].transactional = false;
  EXPECT_EQ(ValidateTableSpec(tables[0]).code(), absl::StatusCode::kInvalidArgument);
  tables[0].transactional = true;
  tables[0].queue = false;
  // A TTL on a transactional table is refused: its timestamps are write pointers.
  tables[0].families[1].ttl_ms = 1000;
  EXPECT_EQ(ValidateTableSpec(tables[0]).code(), absl::StatusCode::kInvalidArgument);
  // Unknown table flags are damage.
  tables[0].families[1].ttl_ms = 0;
  std::string bad = EncodeCatalog({tables[0]});
  const size_t flags_at = bad.size() - 4 - 1;  // the last table's flags, before the checksum
  ASSERT_EQ(bad[flags_at], 1);
  bad[flags_at] = 4;
  const uint32_t crc = MaskCrc(Crc32c(std::string_view(bad).substr(0, bad.size() - 4)));
  bad.replace(bad.size() - 4, 4, std::string(reinterpret_cast<const char*>(&crc), 4));
  EXPECT_EQ(DecodeCatalog(bad, "CATALOG").status().code(), absl::StatusCode::kDataLoss);
}

TEST(Catalog, KeptSettingsNeedVersionFourOnlyWhenATableKeepsOne) {
  std::vector<TableSpec> tables = {SampleTable("a"), SampleTable("b")};
  auto stamp = ReadFormatStamp(EncodeCatalog(tables), "BSLTCATG", kCatalogVersion, "catalogue");
  ASSERT_TRUE(stamp.ok());
  EXPECT_EQ(stamp->min_reader_version, 1u);
  tables[1].kept.attributes = {{"OWNER", "ops"}, {std::string("bin\0key", 7), std::string(70000 - 5535, 'v')}};
  tables[1].kept.configuration = {{"hbase.hstore.blockingStoreFiles", "20"}};
  tables[1].kept_by_family["g-2"].attributes = {{"IN_MEMORY", "true"}, {"REPLICATION_SCOPE", "1"}};
  tables[1].kept_by_family["f"].configuration = {{"k", ""}};
  const std::string v4 = EncodeCatalog(tables);
  stamp = ReadFormatStamp(v4, "BSLTCATG", kCatalogVersion, "catalogue");
  ASSERT_TRUE(stamp.ok());
  EXPECT_EQ(stamp->min_reader_version, 4u);  // an older build would drop what the table keeps
  auto back = DecodeCatalog(v4, "CATALOG");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE((*back)[0] == tables[0]);
  EXPECT_TRUE((*back)[1] == tables[1]);
  EXPECT_EQ((*back)[1].kept_by_family.at("g-2").attributes[0].second, "true");
  // Order is kept: a list given in another order is another spec.
  TableSpec swapped = tables[1];
  std::swap(swapped.kept.attributes[0], swapped.kept.attributes[1]);
  EXPECT_FALSE(swapped == tables[1]);

  // Bounds and names, checked when a spec is validated (and so when the file is read).
  TableSpec t = tables[1];
  t.kept_by_family["nope"].attributes = {{"a", "b"}};
  EXPECT_NE(ValidateTableSpec(t).message().find("column family 'nope' keeps settings but is not a family"),
            std::string::npos)
      << ValidateTableSpec(t);
  EXPECT_EQ(DecodeCatalog(EncodeCatalog({t}), "CATALOG").status().code(), absl::StatusCode::kDataLoss);
  t = tables[1];
  t.kept.attributes.emplace_back("OWNER", "again");
  EXPECT_NE(ValidateTableSpec(t).message().find("attribute 'OWNER' given twice"), std::string::npos)
      << ValidateTableSpec(t);
  t = tables[1];
  t.kept_by_family["f"].configuration.emplace_back("", "x");
  EXPECT_EQ(ValidateTableSpec(t).code(), absl::StatusCode::kInvalidArgument);
  t = tables[1];
  t.kept.attributes.emplace_back("big", std::string(kMaxKeptValueBytes + 1, 'x'));
  EXPECT_EQ(ValidateTableSpec(t).code(), absl::StatusCode::kInvalidArgument);
  t = tables[1];
  for (size_t i = 0; i < kMaxKeptEntries; ++i) t.kept.configuration.emplace_back(absl::StrCat("k", i), "v");
  EXPECT_NE(ValidateTableSpec(t).message().find("more than 256"), std::string::npos) << ValidateTableSpec(t);
  // HBase's attributes whose meaning Basalt would not honour: kept at what Basalt does anyway,
  // refused otherwise, naming them.
  t = tables[1];
  t.kept_by_family["f"].attributes = {{"KEEP_DELETED_CELLS", "FALSE"}, {"NEW_VERSION_BEHAVIOR", "false"}};
  t.kept.attributes.emplace_back("READONLY", "false");
  t.kept.attributes.emplace_back("REGION_REPLICATION", "1");
  EXPECT_TRUE(ValidateTableSpec(t).ok()) << ValidateTableSpec(t);
  for (auto [family, key, value, want] : std::vector<std::tuple<bool, std::string, std::string, std::string>>{
           {true, "KEEP_DELETED_CELLS", "TRUE", "column family 'f': KEEP_DELETED_CELLS => 'TRUE' is not supported"},
           {true, "NEW_VERSION_BEHAVIOR", "true", "NEW_VERSION_BEHAVIOR => 'true'"},
           {true, "ENCRYPTION", "AES", "does not encrypt"},
           {false, "READONLY", "true", "table 'b': READONLY => 'true'"},
           {false, "REGION_REPLICATION", "3", "one replica"},
           {false, "coprocessor$1", "|org.example.Observer|1073741823|", "no coprocessors"}}) {
    t = tables[1];
    (family ? t.kept_by_family["f"] : t.kept).attributes.emplace_back(key, value);
    const absl::Status st = ValidateTableSpec(t);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << key;
    EXPECT_NE(st.message().find(want), std::string::npos) << st;
  }
  // Truncated kept settings are damage.
  std::string bad = EncodeCatalog({tables[1]});
  bad.erase(bad.size() - 4 - 3, 3);
  const uint32_t len = static_cast<uint32_t>(bad.size() - kFormatStampSize - 4 - 4);
  bad.replace(kFormatStampSize, 4, std::string(reinterpret_cast<const char*>(&len), 4));
  const uint32_t crc = MaskCrc(Crc32c(std::string_view(bad).substr(0, bad.size() - 4)));
  bad.replace(bad.size() - 4, 4, std::string(reinterpret_cast<const char*>(&crc), 4));
  EXPECT_NE(DecodeCatalog(bad, "CATALOG").status().message().find("malformed kept settings"), std::string::npos)
      << DecodeCatalog(bad, "CATALOG").status();
}

// Namespaces (and a table in one) need version 5: an older build refuses such a catalogue
// rather than call its table malformed. Without them the version stays as before.
TEST(Catalog, NamespacesNeedVersionFiveOnlyWhenOneExists) {
  const auto min_reader = [](const std::string& bytes) {
    auto stamp = ReadFormatStamp(bytes, "BSLTCATG", kCatalogVersion, "catalogue");
    return stamp.ok() ? stamp->min_reader_version : 0u;
  };
  std::vector<TableSpec> tables = {SampleTable("a")};
  EXPECT_EQ(min_reader(EncodeCatalog(tables)), 1u);
  std::vector<NamespaceSpec> namespaces = {NamespaceSpec{"app", {}}, NamespaceSpec{"ops", {}}};
  namespaces[1].kept.configuration = {{"hbase.namespace.quota.maxtables", "3"}};
  const std::string v5 = EncodeCatalog(tables, namespaces);
  EXPECT_EQ(min_reader(v5), 5u);
  std::vector<NamespaceSpec> back;
  auto read = DecodeCatalog(v5, "CATALOG", &back);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE((*read)[0] == tables[0]);
  EXPECT_EQ(back, namespaces);
  // One table in a namespace is enough (a TABLEINFO, a snapshot's table).
  EXPECT_EQ(min_reader(EncodeCatalog({SampleTable("app:t")})), 5u);
  // What a build that reads version 4 at most says.
  auto old = ReadFormatStamp(v5, "BSLTCATG", 4, "catalogue CATALOG");
  EXPECT_EQ(old.status().code(), absl::StatusCode::kFailedPrecondition) << old.status();
  // A namespace no one may make, or one listed twice, is damage.
  for (const std::vector<NamespaceSpec>& bad :
       {std::vector<NamespaceSpec>{NamespaceSpec{"hbase", {}}},
        std::vector<NamespaceSpec>{NamespaceSpec{"app", {}}, NamespaceSpec{"app", {}}}}) {
    auto damaged = DecodeCatalog(EncodeCatalog(tables, bad), "CATALOG");
    EXPECT_EQ(damaged.status().code(), absl::StatusCode::kDataLoss) << damaged.status();
  }
}

TEST(Catalog, SaveLoadAndAtomicReplace) {
  testing::TempDir dir;
  Env* env = Env::Default();
  auto none = LoadCatalog(env, dir.path());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());

  ASSERT_TRUE(SaveCatalog(env, dir.path(), {SampleTable("t1")}).ok());
  ASSERT_TRUE(SaveCatalog(env, dir.path(), {SampleTable("t1"), SampleTable("t2")}).ok());
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/CATALOG.tmp"));
  auto two = LoadCatalog(env, dir.path());
  ASSERT_TRUE(two.ok()) << two.status();
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[1].name, "t2");

  // A crash while writing the next version leaves a partial CATALOG.tmp: the live file is
  // untouched, and the next save replaces the leftover.
  WriteAll(dir.path() + "/CATALOG.tmp", "BSLTCATG\x01\x00");
  auto still = LoadCatalog(env, dir.path());
  ASSERT_TRUE(still.ok()) << still.status();
  EXPECT_EQ(still->size(), 2u);
  ASSERT_TRUE(SaveCatalog(env, dir.path(), {SampleTable("t3")}).ok());
  auto three = LoadCatalog(env, dir.path());
  ASSERT_TRUE(three.ok());
  ASSERT_EQ(three->size(), 1u);
  EXPECT_EQ((*three)[0].name, "t3");
}

TEST(Catalog, CorruptionIsDataLossNamingThePath) {
  testing::TempDir dir;
  Env* env = Env::Default();
  ASSERT_TRUE(SaveCatalog(env, dir.path(), {SampleTable("t1"), SampleTable("t2")}).ok());
  const std::string path = dir.path() + "/CATALOG";
  const std::string good = ReadAll(path);
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x20;
    WriteAll(path, bad);
    auto r = LoadCatalog(env, dir.path());
    ASSERT_FALSE(r.ok()) << "flip at " << i;
    // A flipped min-read-version byte may ask for a newer reader; everything else is damage.
    if (r.status().code() == absl::StatusCode::kFailedPrecondition) {
      EXPECT_GE(i, 12u);
      EXPECT_LT(i, 16u);
      continue;
    }
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << i << ": " << r.status();
    EXPECT_NE(std::string(r.status().message()).find(path), std::string::npos) << r.status();
  }
  for (size_t n : {size_t{0}, size_t{5}, good.size() - 1}) {
    WriteAll(path, good.substr(0, n));
    auto r = LoadCatalog(env, dir.path());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << n;
  }
}

TEST(Catalog, NameRules) {
  EXPECT_TRUE(ValidateTableName("t1").ok());
  EXPECT_TRUE(ValidateTableName("A_b.c-9").ok());
  EXPECT_TRUE(ValidateTableName(std::string(255, 'x')).ok());
  for (std::string bad : {std::string(), std::string(256, 'x'), std::string(".t"), std::string("-t"),
                          std::string("a/b"), std::string("a b"), std::string("t\xff")}) {
    EXPECT_EQ(ValidateTableName(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  // In a namespace: "ns:table", where ns is HBase's [A-Za-z0-9_] and not default (a table of
  // default is named without it), basalt or hbase.
  EXPECT_TRUE(ValidateTableName("app_1:t.2").ok());
  EXPECT_EQ(TableNamespace("app_1:t.2"), "app_1");
  EXPECT_EQ(TableNamespace("t"), "default");
  EXPECT_EQ(TableNamespace("basalt:meta"), "basalt");
  for (std::string bad : {std::string("default:t"), std::string("basalt:t"), std::string("hbase:t"), std::string(":t"),
                          std::string("a:"), std::string("a:b:c"), std::string("a-b:c"), std::string("a.b:c"),
                          std::string(129, 'n') + ":t"}) {
    EXPECT_EQ(ValidateTableName(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(ValidateTableName("default:t").message().find("named without it ('t')"), std::string::npos);
  EXPECT_TRUE(ValidateNewNamespace("app_1").ok());
  for (const char* bad : {"", "default", "basalt", "hbase", "a-b", "a:b", "a b"}) {
    EXPECT_EQ(ValidateNewNamespace(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(ValidateFamilyName("cf").ok());
  for (std::string bad : {std::string(), std::string(".f"), std::string("a:b"), std::string("a/b"),
                          std::string("a\\b"), std::string("a\nb")}) {
    EXPECT_EQ(ValidateFamilyName(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  TableSpec dup = SampleTable("t");
  dup.families[1].name = "f";
  EXPECT_EQ(ValidateTableSpec(dup).code(), absl::StatusCode::kInvalidArgument);
  TableSpec none;
  none.name = "t";
  EXPECT_EQ(ValidateTableSpec(none).code(), absl::StatusCode::kInvalidArgument);
  TableSpec badv = SampleTable("t");
  badv.families[0].max_versions = 0;
  EXPECT_EQ(ValidateTableSpec(badv).code(), absl::StatusCode::kInvalidArgument);
}

TEST(Catalog, LifecycleAndRestart) {
  testing::TempDir dir;
  {
    auto tm = OpenManager(dir.path());
    ASSERT_NE(tm, nullptr);
    ASSERT_TRUE(tm->Create(SampleTable("t1")).ok());
    EXPECT_EQ(tm->Create(SampleTable("t1")).code(), absl::StatusCode::kAlreadyExists);
    ASSERT_TRUE(tm->Create(SampleTable("t2")).ok());
    auto t1 = tm->Find("t1");
    ASSERT_TRUE(t1.ok());
    ASSERT_TRUE((*t1)->RegionFor("r1")->Put("r1", "f", "q", "v1").ok());

    auto nf = tm->Find("nope");
    EXPECT_EQ(nf.status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(nf.status().message(), "table 'nope' does not exist");

    EXPECT_EQ(tm->Drop("t2").code(), absl::StatusCode::kFailedPrecondition);
    ASSERT_TRUE(tm->Disable("t2").ok());
    EXPECT_EQ(tm->Disable("t2").code(), absl::StatusCode::kFailedPrecondition);
    auto dis = tm->Find("t2");
    EXPECT_EQ(dis.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(dis.status().message(), "table t2 is disabled");
    EXPECT_EQ(tm->Flush("t2").code(), absl::StatusCode::kFailedPrecondition);
    ASSERT_TRUE(tm->Drop("t2").ok());
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/tables/t2"));
    EXPECT_EQ(tm->Find("t2").status().code(), absl::StatusCode::kNotFound);

    // A call holding the table across a disable: the region is closed under it, and its
    // writes say the table is disabled.
    ASSERT_TRUE(tm->Create(SampleTable("t3")).ok());
    auto held = tm->Find("t3");
    ASSERT_TRUE(held.ok());
    ASSERT_TRUE(tm->Disable("t3").ok());
    EXPECT_TRUE((*held)->closed());
    EXPECT_EQ((*held)->ClosedError().message(), "table t3 is disabled");
    held->reset();
    ASSERT_TRUE(tm->Enable("t3").ok());
    EXPECT_EQ(tm->Enable("t3").code(), absl::StatusCode::kFailedPrecondition);
    ASSERT_TRUE(tm->Disable("t3").ok());
  }
  // Leftover directory of a table the catalogue does not list (a create cut short).
  std::filesystem::create_directories(dir.path() + "/tables/ghost/wal");
  {
    auto tm = OpenManager(dir.path());
    ASSERT_NE(tm, nullptr);
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/tables/ghost"));
    // Moved aside, not deleted.
    int aside = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path() + "/lost+found")) {
      aside += e.path().filename().string().starts_with("ghost.") && std::filesystem::exists(e.path() / "wal");
    }
    EXPECT_EQ(aside, 1);
    ASSERT_EQ(tm->List().size(), 2u);
    EXPECT_EQ(tm->List()[0].name, "t1");
    EXPECT_TRUE(tm->List()[0] == SampleTable("t1"));
    EXPECT_FALSE(tm->List()[1].enabled);
    auto t1 = tm->Find("t1");
    ASSERT_TRUE(t1.ok());
    auto cells = (*t1)->RegionFor("r1")->Get("r1");
    ASSERT_TRUE(cells.ok());
    ASSERT_EQ(cells->size(), 1u);
    EXPECT_EQ((*cells)[0].value, "v1");
    EXPECT_EQ(tm->Find("t3").status().code(), absl::StatusCode::kFailedPrecondition);
  }
}

TEST(Catalog, CorruptCatalogRefusesToStart) {
  testing::TempDir dir;
  {
    auto tm = OpenManager(dir.path());
    ASSERT_TRUE(tm->Create(SampleTable("t1")).ok());
  }
  std::string bytes = ReadAll(dir.path() + "/CATALOG");
  bytes[bytes.size() / 2] ^= 1;
  WriteAll(dir.path() + "/CATALOG", bytes);
  Catalog::Options o;
  o.data_dir = dir.path();
  auto tm = Catalog::Open(o);
  EXPECT_EQ(tm.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/tables/t1"));  // nothing removed
}

// Two tables with a row each, t1's flushed to a block file, t2's only in the log.
void MakeTwoTables(const std::string& dir) {
  auto tm = OpenManager(dir);
  ASSERT_NE(tm, nullptr);
  ASSERT_TRUE(tm->Create(SampleTable("t1")).ok());
  ASSERT_TRUE(tm->Create(SampleTable("t2")).ok());
  ASSERT_TRUE((*tm->Find("t1"))->RegionFor("r1")->Put("r1", "f", "q", "v1").ok());
  ASSERT_TRUE(tm->Flush("t1").ok());
  ASSERT_TRUE((*tm->Find("t2"))->RegionFor("r2")->Put("r2", "f", "q", "v2").ok());
}

std::string ValueOf(Catalog* tm, const std::string& table, const std::string& row) {
  auto t = tm->Find(table);
  if (!t.ok()) return t.status().ToString();
  auto cells = (*t)->RegionFor(row)->Get(row);
  if (!cells.ok()) return cells.status().ToString();
  return cells->empty() ? "(none)" : (*cells)[0].value;
}

// Opens a manager on `dir` whose log lines go to *log.
absl::StatusOr<std::unique_ptr<Catalog>> OpenLogged(const std::string& dir, std::vector<std::string>* log) {
  Catalog::Options o;
  o.data_dir = dir;
  o.log = [log](std::string_view line) { log->emplace_back(line); };
  return Catalog::Open(o);
}

size_t CountFiles(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

TEST(Catalog, AMissingCatalogIsAClearErrorAndRebuildCatalogBringsEveryTableBack) {
  testing::TempDir dir;
  MakeTwoTables(dir.path());
  const size_t files = CountFiles(dir.path() + "/tables");
  std::filesystem::remove(dir.path() + "/CATALOG");

  Catalog::Options o;
  o.data_dir = dir.path();
  auto tm = Catalog::Open(o);
  ASSERT_EQ(tm.status().code(), absl::StatusCode::kFailedPrecondition) << tm.status();
  EXPECT_NE(tm.status().message().find("the catalogue " + dir.path() + "/CATALOG is missing"), std::string::npos)
      << tm.status();
  EXPECT_NE(tm.status().message().find("(t1, t2); nothing was deleted"), std::string::npos) << tm.status();
  EXPECT_NE(tm.status().message().find("--rebuild_catalog=true"), std::string::npos) << tm.status();
  EXPECT_EQ(CountFiles(dir.path() + "/tables"), files);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/CATALOG"));

  std::vector<std::string> log;
  o.rebuild_catalog = true;
  o.log = [&](std::string_view line) { log.emplace_back(line); };
  tm = Catalog::Open(o);
  ASSERT_TRUE(tm.ok()) << tm.status();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("rebuilt the catalogue"), std::string::npos) << log[0];
  EXPECT_TRUE((*tm)->List()[0] == SampleTable("t1"));
  EXPECT_EQ(ValueOf(tm->get(), "t1", "r1"), "v1");
  EXPECT_EQ(ValueOf(tm->get(), "t2", "r2"), "v2");
  tm->reset();
  // The rebuilt catalogue is durable: a plain start finds it.
  EXPECT_NE(OpenManager(dir.path()), nullptr);
}

// A namespace is made, holds tables, keeps its settings through a restart, and is dropped only
// once it holds none; a table in a namespace that does not exist is refused.
TEST(Catalog, NamespacesHoldTablesAndAreDroppedOnlyWhenEmpty) {
  testing::TempDir dir;
  NamespaceSpec app{"app", {}};
  app.kept.configuration = {{"hbase.namespace.quota.maxtables", "5"}};
  {
    auto tm = OpenManager(dir.path());
    ASSERT_NE(tm, nullptr);
    absl::Status missing = tm->Create(SampleTable("app:t"));
    EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound) << missing;
    EXPECT_NE(missing.message().find("namespace 'app' does not exist"), std::string::npos) << missing;
    ASSERT_TRUE(tm->CreateNamespace(NamespaceSpec{"app", {}}).ok());
    EXPECT_EQ(tm->CreateNamespace(NamespaceSpec{"app", {}}).code(), absl::StatusCode::kAlreadyExists);
    EXPECT_EQ(tm->CreateNamespace(NamespaceSpec{"default", {}}).code(), absl::StatusCode::kInvalidArgument);
    ASSERT_TRUE(tm->ModifyNamespace(app).ok());
    EXPECT_EQ(tm->ModifyNamespace(NamespaceSpec{"nope", {}}).code(), absl::StatusCode::kNotFound);
    ASSERT_TRUE(tm->Create(SampleTable("app:t")).ok());
    ASSERT_TRUE(tm->Create(SampleTable("t")).ok());  // (default's, beside it)
    ASSERT_TRUE((*tm->Find("app:t"))->RegionFor("r1")->Put("r1", "f", "q", "v1").ok());
    absl::Status held = tm->DropNamespace("app");
    EXPECT_EQ(held.code(), absl::StatusCode::kFailedPrecondition) << held;
    EXPECT_NE(held.message().find("holds 1 table(s) (app:t)"), std::string::npos) << held;
    EXPECT_EQ(tm->DropNamespace("default").code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(tm->DropNamespace("nope").code(), absl::StatusCode::kNotFound);
  }
  {
    auto tm = OpenManager(dir.path());
    ASSERT_NE(tm, nullptr);
    const std::vector<NamespaceSpec> all = tm->Namespaces();
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0], app);  // (by name)
    EXPECT_EQ(all[1].name, "default");
    EXPECT_EQ(ValueOf(tm.get(), "app:t", "r1"), "v1");
    ASSERT_TRUE(tm->Disable("app:t").ok());
    ASSERT_TRUE(tm->Drop("app:t").ok());
    ASSERT_TRUE(tm->DropNamespace("app").ok());
    EXPECT_EQ(tm->DescribeNamespace("app").status().code(), absl::StatusCode::kNotFound);
  }
  auto tm = OpenManager(dir.path());
  ASSERT_NE(tm, nullptr);
  EXPECT_EQ(tm->Namespaces().size(), 1u);
  EXPECT_EQ(tm->List().size(), 1u);
}

// HBase's namespace quotas: maxtables counts its tables, maxregions their regions, at a create
// (with its split keys) and a split (a clone and a restore ask the same check); a quota below
// what is held, and a value that is not a whole number above 0, are refused.
TEST(Catalog, NamespaceQuotasBoundItsTablesAndRegions) {
  testing::TempDir dir;
  auto tm = OpenManager(dir.path());
  ASSERT_NE(tm, nullptr);
  NamespaceSpec small{"small", {}};
  small.kept.configuration = {{"hbase.namespace.quota.maxtables", "2"}, {"hbase.namespace.quota.maxregions", "4"}};
  ASSERT_TRUE(tm->CreateNamespace(small).ok());
  ASSERT_TRUE(tm->Create(SampleTable("small:a"), {"m"}).ok());  // 2 regions
  absl::Status regions = tm->Create(SampleTable("small:b"), {"g", "p"});  // 3 more: 5 > 4
  EXPECT_EQ(regions.code(), absl::StatusCode::kFailedPrecondition) << regions;
  EXPECT_NE(regions.message().find("would exceed the quota of namespace 'small': at most 4 region(s)"),
            std::string::npos)
      << regions;
  EXPECT_EQ(tm->Describe("small:b").status().code(), absl::StatusCode::kNotFound);  // (nothing left of it)
  ASSERT_TRUE(tm->Create(SampleTable("small:b")).ok());  // 3 regions in all
  absl::Status tables = tm->Create(SampleTable("small:c"));
  EXPECT_EQ(tables.code(), absl::StatusCode::kFailedPrecondition) << tables;
  EXPECT_NE(tables.message().find("at most 2 table(s) (hbase.namespace.quota.maxtables), and it holds 2"),
            std::string::npos)
      << tables;
  ASSERT_TRUE(tm->Create(SampleTable("c")).ok());  // (default has no quota)
  ASSERT_TRUE(tm->Split("small:b", "k").ok());     // 4 regions
  absl::Status split = tm->Split("small:b", "t");
  EXPECT_EQ(split.code(), absl::StatusCode::kFailedPrecondition) << split;
  EXPECT_NE(split.message().find("a split of table 'small:b'"), std::string::npos) << split;
  EXPECT_EQ(tm->Regions("small:b")->size(), 2u);
  // A quota below what it holds is refused (a truncate, a drop and a create, must find room).
  small.kept.configuration = {{"hbase.namespace.quota.maxtables", "1"}};
  absl::Status lowered = tm->ModifyNamespace(small);
  EXPECT_EQ(lowered.code(), absl::StatusCode::kFailedPrecondition) << lowered;
  EXPECT_NE(lowered.message().find("holds 2: hbase.namespace.quota.maxtables 1 would be below it"), std::string::npos)
      << lowered;
  small.kept.configuration = {{"hbase.namespace.quota.maxtables", "2"}};
  ASSERT_TRUE(tm->ModifyNamespace(small).ok());
  ASSERT_TRUE(tm->Split("small:b", "t").ok());  // (no region quota now)
  EXPECT_EQ(tm->Create(SampleTable("small:c")).code(), absl::StatusCode::kFailedPrecondition);
  // An existing table is AlreadyExists, whatever the quota.
  EXPECT_EQ(tm->Create(SampleTable("small:a")).code(), absl::StatusCode::kAlreadyExists);
  for (const char* bad : {"0", "-1", "ten", ""}) {
    small.kept.configuration = {{"hbase.namespace.quota.maxregions", bad}};
    EXPECT_EQ(tm->ModifyNamespace(small).code(), absl::StatusCode::kInvalidArgument) << bad;
    NamespaceSpec other{"other", small.kept};
    EXPECT_EQ(tm->CreateNamespace(other).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

// Rebuilt from the tables' TABLEINFO, a table's namespace comes back (its settings do not: they
// were the catalogue's alone).
TEST(Catalog, RebuildCatalogBringsATablesNamespaceBack) {
  testing::TempDir dir;
  {
    auto tm = OpenManager(dir.path());
    ASSERT_NE(tm, nullptr);
    ASSERT_TRUE(tm->CreateNamespace(NamespaceSpec{"app", {}}).ok());
    ASSERT_TRUE(tm->Create(SampleTable("app:t")).ok());
    ASSERT_TRUE((*tm->Find("app:t"))->RegionFor("r1")->Put("r1", "f", "q", "v1").ok());
  }
  std::filesystem::remove(dir.path() + "/CATALOG");
  Catalog::Options o;
  o.data_dir = dir.path();
  o.rebuild_catalog = true;
  auto tm = Catalog::Open(o);
  ASSERT_TRUE(tm.ok()) << tm.status();
  ASSERT_EQ((*tm)->Namespaces().size(), 2u);
  EXPECT_EQ((*tm)->Namespaces()[0].name, "app");
  EXPECT_EQ(ValueOf(tm->get(), "app:t", "r1"), "v1");
}

TEST(Catalog, RebuildCatalogRefusesATableWithoutTableInfo) {
  testing::TempDir dir;
  MakeTwoTables(dir.path());
  std::filesystem::remove(dir.path() + "/CATALOG");
  std::filesystem::remove(dir.path() + "/tables/t2/TABLEINFO");
  Catalog::Options o;
  o.data_dir = dir.path();
  o.rebuild_catalog = true;
  auto tm = Catalog::Open(o);
  EXPECT_EQ(tm.status().code(), absl::StatusCode::kFailedPrecondition) << tm.status();
  EXPECT_NE(tm.status().message().find(dir.path() + "/tables/t2/TABLEINFO is missing"), std::string::npos)
      << tm.status();
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/CATALOG"));
  EXPECT_TRUE(std::filesystem::exists(testing::OnlyRegionDir(dir.path(), "t1") + "/MANIFEST"));
}

TEST(Catalog, AMissingManifestFailsThatTableAloneAndAssignReopensItOnceRestored) {
  testing::TempDir dir;
  MakeTwoTables(dir.path());
  const std::string region_dir = testing::OnlyRegionDir(dir.path(), "t1");
  const std::string manifest = region_dir + "/MANIFEST";
  const std::string saved = ReadAll(manifest);
  const size_t files = CountFiles(region_dir);
  std::filesystem::remove(manifest);

  std::vector<std::string> log;
  auto opened = OpenLogged(dir.path(), &log);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Catalog* tm = opened->get();
  // t1 is out of service with its reason; t2 serves.
  auto t1 = tm->Find("t1");
  ASSERT_EQ(t1.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(t1.status().message().find("table t1 is FAILED_OPEN"), std::string::npos) << t1.status();
  EXPECT_NE(t1.status().message().find(manifest + " is missing"), std::string::npos) << t1.status();
  EXPECT_NE(t1.status().message().find("assign 't1'"), std::string::npos) << t1.status();
  EXPECT_EQ(ValueOf(tm, "t2", "r2"), "v2");
  EXPECT_EQ(tm->OpenError("t1").code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(tm->OpenError("t2").ok());
  auto stats = tm->Stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_FALSE(stats[0].open_error.ok());
  EXPECT_TRUE(stats[1].open_error.ok());
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("table 't1' is FAILED_OPEN: DATA_LOSS"), std::string::npos) << log[0];
  EXPECT_EQ(CountFiles(region_dir), files - 1);  // only the manifest is gone

  // Assign before the repair: still FAILED_OPEN, still nothing deleted.
  EXPECT_EQ(tm->Assign("t1").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CountFiles(region_dir), files - 1);
  EXPECT_EQ(tm->Assign("t2").code(), absl::StatusCode::kFailedPrecondition);  // open: nothing to do
  EXPECT_EQ(tm->Drop("t1").code(), absl::StatusCode::kFailedPrecondition);     // enabled, if failed

  WriteAll(manifest, saved);
  ASSERT_TRUE(tm->Assign("t1").ok());
  EXPECT_EQ(ValueOf(tm, "t1", "r1"), "v1");
  EXPECT_TRUE(tm->OpenError("t1").ok());
}

TEST(Catalog, ADamagedBlockFileFailsItsTableWhileTheOtherServes) {
  testing::TempDir dir;
  MakeTwoTables(dir.path());
  std::string blk;
  for (const auto& e : std::filesystem::directory_iterator(testing::OnlyRegionDir(dir.path(), "t1"))) {
    if (e.path().extension() == ".blk") blk = e.path().string();
  }
  ASSERT_FALSE(blk.empty());
  std::string bytes = ReadAll(blk);
  bytes[bytes.size() - 3] ^= 0x40;  // the trailer, read when the region opens
  WriteAll(blk, bytes);

  auto tm = OpenManager(dir.path());
  ASSERT_NE(tm, nullptr);
  auto t1 = tm->Find("t1");
  EXPECT_EQ(t1.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(t1.status().message().find(blk), std::string::npos) << t1.status();
  EXPECT_EQ(ValueOf(tm.get(), "t2", "r2"), "v2");
  // The operator gives up on t1: disable clears FAILED_OPEN, drop removes it.
  ASSERT_TRUE(tm->Disable("t1").ok());
  EXPECT_EQ(tm->Find("t1").status().message(), "table t1 is disabled");
  ASSERT_TRUE(tm->Drop("t1").ok());
  EXPECT_EQ(ValueOf(tm.get(), "t2", "r2"), "v2");
}

TEST(Catalog, ATableFromBeforeRegionsOpensInPlaceAsOneRegion) {
  testing::TempDir dir;
  // The layout before regions: the table's one region directly in tables/<name>/, its log
  // records tagged with the table name, one flushed row and one only in the log.
  const TableSpec spec = SampleTable("old");
  {
    RegionDescriptor d{"old", spec.families, "", ""};
    auto r = Region::Open(RegionOptions{}, d, dir.path() + "/tables/old");
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE((*r)->Put("a", "f", "q", "flushed").ok());
    ASSERT_TRUE((*r)->Flush().ok());
    ASSERT_TRUE((*r)->Put("b", "f", "q", "logged").ok());
    // No Close: the last write is in the log only, as after a crash.
    ASSERT_TRUE(SaveCatalog(Env::Default(), dir.path(), {spec}).ok());
  }
  std::vector<std::string> log;
  auto tm = OpenLogged(dir.path(), &log);
  ASSERT_TRUE(tm.ok()) << tm.status();
  EXPECT_EQ(ValueOf(tm->get(), "old", "a"), "flushed");
  EXPECT_EQ(ValueOf(tm->get(), "old", "b"), "logged");
  auto regions = (*tm)->Regions("old");
  ASSERT_TRUE(regions.ok()) << regions.status();
  ASSERT_EQ(regions->size(), 1u);
  EXPECT_EQ((*regions)[0].info.id, 0u);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("recorded the 1 region(s) of table 'old' in basalt:meta"), std::string::npos) << log[0];
  tm->reset();
  // Next time meta knows it; nothing moved.
  log.clear();
  tm = OpenLogged(dir.path(), &log);
  ASSERT_TRUE(tm.ok()) << tm.status();
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(ValueOf(tm->get(), "old", "b"), "logged");
  // It does not split: its files are the table directory's own.
  EXPECT_EQ((*tm)->Split("old", "m").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ValueOf(tm->get(), "old", "b"), "logged");
}

TEST(Catalog, MetaRowsOfAnUncommittedCreateGoAndALostMetaIsRebuiltFromRegionInfo) {
  testing::TempDir dir;
  const std::string catalog = dir.path() + "/CATALOG";
  {
    auto tm = OpenManager(dir.path());
    ASSERT_NE(tm, nullptr);
    ASSERT_TRUE(tm->Create(SampleTable("kept"), {"m", "f"}).ok());
    ASSERT_TRUE((*tm->Find("kept"))->RegionFor("a")->Put("a", "f", "q", "1").ok());
    ASSERT_TRUE((*tm->Find("kept"))->RegionFor("p")->Put("p", "f", "q", "2").ok());
  }
  const std::string before = ReadAll(catalog);
  {
    auto tm = OpenManager(dir.path());
    ASSERT_NE(tm, nullptr);
    ASSERT_TRUE(tm->Create(SampleTable("cut"), {"x"}).ok());
  }
  // A crash after the meta rows of 'cut' but before its catalogue entry: the catalogue as before.
  WriteAll(catalog, before);
  {
    std::vector<std::string> log;
    auto tm = OpenLogged(dir.path(), &log);
    ASSERT_TRUE(tm.ok()) << tm.status();
    EXPECT_EQ((*tm)->Find("cut").status().code(), absl::StatusCode::kNotFound);
    EXPECT_FALSE((*tm)->Regions("cut").ok());
    ASSERT_EQ(log.size(), 2u);
    EXPECT_NE(log[0].find("removed the 2 basalt:meta row(s) of table 'cut'"), std::string::npos) << log[0];
    EXPECT_NE(log[1].find("tables/cut aside"), std::string::npos) << log[1];
    auto meta = (*tm)->Find("basalt:meta");
    ASSERT_TRUE(meta.ok()) << meta.status();
    EXPECT_TRUE((*meta)->system());
    EXPECT_EQ((*meta)->RegionFor("cut,,1")->Get("cut,,1")->size(), 0u);
  }
  // basalt:meta lost whole: rebuilt from each region's REGIONINFO.
  std::filesystem::remove_all(dir.path() + "/meta");
  auto tm = OpenManager(dir.path());
  ASSERT_NE(tm, nullptr);
  auto regions = tm->Regions("kept");
  ASSERT_TRUE(regions.ok()) << regions.status();
  ASSERT_EQ(regions->size(), 3u);
  EXPECT_EQ((*regions)[1].info.start_key, "f");
  EXPECT_EQ((*regions)[2].info.start_key, "m");
  EXPECT_EQ(ValueOf(tm.get(), "kept", "a"), "1");
  EXPECT_EQ(ValueOf(tm.get(), "kept", "p"), "2");
  // A row outside a region is refused by the region, naming it.
  absl::Status wrong = (*tm->Find("kept"))->regions()[0].region->Put("p", "f", "q", "3");
  EXPECT_EQ(wrong.code(), absl::StatusCode::kOutOfRange) << wrong;
}

// A table 'r' of two regions (split at "m", rows "a" and "p"), then basalt:meta lost and the
// second region's REGIONINFO with it. Returns that file's path and its bytes, for the repair.
std::pair<std::string, std::string> LoseMetaAndARegionInfo(const std::string& dir) {
  std::string info_path;
  {
    auto tm = OpenManager(dir);
    EXPECT_NE(tm, nullptr);
    if (tm == nullptr) return {};
    EXPECT_TRUE(tm->Create(SampleTable("r"), {"m"}).ok());
    EXPECT_TRUE((*tm->Find("r"))->RegionFor("a")->Put("a", "f", "q", "1").ok());
    EXPECT_TRUE((*tm->Find("r"))->RegionFor("p")->Put("p", "f", "q", "2").ok());
    auto regions = tm->Regions("r");
    EXPECT_TRUE(regions.ok()) << regions.status();
    if (!regions.ok()) return {};
    info_path = absl::StrCat(dir, "/tables/r/", (*regions)[1].info.EncodedName(), "/REGIONINFO");
  }
  std::string saved = ReadAll(info_path);
  std::filesystem::remove_all(dir + "/meta");
  std::filesystem::remove(info_path);
  return {info_path, saved};
}

TEST(Catalog, ARegionWithoutItsRegionInfoIsNotHiddenAndEnableRereadsTheRepair) {
  testing::TempDir dir;
  // The table must not come back with an empty region in the unlabelled one's place.
  auto [info_path, saved] = LoseMetaAndARegionInfo(dir.path());
  auto tm = OpenManager(dir.path());
  ASSERT_NE(tm, nullptr);
  EXPECT_EQ(tm->OpenError("r").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(tm->OpenError("r").message().find("has no REGIONINFO"), std::string::npos) << tm->OpenError("r");
  // Disable and enable cannot open a table whose regions do not cover its rows.
  ASSERT_TRUE(tm->Disable("r").ok());
  EXPECT_EQ(tm->Enable("r").code(), absl::StatusCode::kFailedPrecondition);
  // The repair, then enable opens it whole: it re-reads what is on disk.
  WriteAll(info_path, saved);
  ASSERT_TRUE(tm->Enable("r").ok());
  EXPECT_EQ(ValueOf(tm.get(), "r", "a"), "1");
  EXPECT_EQ(ValueOf(tm.get(), "r", "p"), "2");
}

TEST(Catalog, AssignOpensATableOnceItsFilesAreRepaired) {
  testing::TempDir dir;
  auto [info_path, saved] = LoseMetaAndARegionInfo(dir.path());
  auto tm = OpenManager(dir.path());
  ASSERT_NE(tm, nullptr);
  EXPECT_FALSE(tm->OpenError("r").ok());
  EXPECT_EQ(tm->Assign("r").code(), absl::StatusCode::kFailedPrecondition);  // not repaired yet
  WriteAll(info_path, saved);
  ASSERT_TRUE(tm->Assign("r").ok());
  EXPECT_EQ(ValueOf(tm.get(), "r", "p"), "2");
  auto regions = tm->Regions("r");
  ASSERT_TRUE(regions.ok()) << regions.status();
  EXPECT_EQ(regions->size(), 2u);
}

TEST(Catalog, ARegionThatCannotOpenFailsAloneAndAssignReopensItWhileTheOthersServe) {
  testing::TempDir dir;
  std::string manifest;
  {
    auto tm = OpenManager(dir.path());
    ASSERT_NE(tm, nullptr);
    ASSERT_TRUE(tm->Create(SampleTable("p"), {"m"}).ok());
    ASSERT_TRUE((*tm->Find("p"))->RegionFor("a")->Put("a", "f", "q", "1").ok());
    ASSERT_TRUE((*tm->Find("p"))->RegionFor("x")->Put("x", "f", "q", "2").ok());
    ASSERT_TRUE(tm->Flush("p").ok());
    auto regions = tm->Regions("p");
    ASSERT_TRUE(regions.ok()) << regions.status();
    manifest = absl::StrCat(dir.path(), "/tables/p/", (*regions)[1].info.EncodedName(), "/MANIFEST");
  }
  const std::string saved = ReadAll(manifest);
  std::filesystem::remove(manifest);
  std::vector<std::string> log;
  auto opened = OpenLogged(dir.path(), &log);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Catalog* tm = opened->get();
  // The table serves its healthy region; the damaged one refuses, saying what to do.
  EXPECT_TRUE(tm->OpenError("p").ok());
  EXPECT_EQ(ValueOf(tm, "p", "a"), "1");
  auto t = tm->Find("p");
  ASSERT_TRUE(t.ok()) << t.status();
  absl::Status refused = (*t)->RegionFor("x")->Put("x", "f", "q", "3");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_NE(refused.message().find("is FAILED_OPEN"), std::string_view::npos) << refused;
  EXPECT_NE(refused.message().find("MANIFEST"), std::string_view::npos) << refused;
  EXPECT_NE(refused.message().find("assign 'p'"), std::string_view::npos) << refused;
  EXPECT_EQ((*t)->Scan(ScanSpec{}).status().code(), absl::StatusCode::kOk);  // opens lazily ...
  auto sc = (*t)->Scan(ScanSpec{});
  std::vector<Cell> cells;
  ASSERT_TRUE((*sc)->NextRow(&cells).ok());  // "a" from the healthy region
  EXPECT_EQ((*sc)->NextRow(&cells).status().code(), absl::StatusCode::kFailedPrecondition);  // ... then refuses
  auto regions = tm->Regions("p");
  ASSERT_TRUE(regions.ok()) << regions.status();
  EXPECT_EQ((*regions)[0].state, "OPEN");
  EXPECT_EQ((*regions)[1].state, "FAILED_OPEN");
  auto stats = tm->Stats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_NE(stats[0].stats.failed.find("FAILED_OPEN"), std::string::npos) << stats[0].stats.failed;
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log[0].find("is FAILED_OPEN (the table's other regions serve)"), std::string::npos) << log[0];
  // Assign before the repair: still refused; after it, the region serves and the healthy one was
  // never closed.
  EXPECT_EQ(tm->Assign("p").code(), absl::StatusCode::kFailedPrecondition);
  const Region* healthy = (*tm->Find("p"))->RegionFor("a");
  WriteAll(manifest, saved);
  ASSERT_TRUE(tm->Assign("p").ok());
  EXPECT_EQ(ValueOf(tm, "p", "x"), "2");
  EXPECT_EQ((*tm->Find("p"))->RegionFor("a"), healthy);
  EXPECT_EQ(tm->Assign("p").code(), absl::StatusCode::kFailedPrecondition);  // nothing left to reopen
}

TEST(Catalog, MetaRowsAnEarlierTableLeftDoNotSpoilANewTableOfTheSameName) {
  testing::TempDir dir;
  {
    auto tm = OpenManager(dir.path());
    ASSERT_NE(tm, nullptr);
    ASSERT_TRUE(tm->Create(SampleTable("t")).ok());
    ASSERT_TRUE(tm->Disable("t").ok());
    ASSERT_TRUE(tm->Drop("t").ok());
    // As if the drop's meta write had failed: rows of the dropped table remain.
    auto meta = tm->Find("basalt:meta");
    ASSERT_TRUE(meta.ok()) << meta.status();
    ASSERT_TRUE((*meta)->regions()[0].region->Mutate({MetaPut(RegionInfo{"t", "", "k", 5}, "OPEN", ""),
                                                      MetaPut(RegionInfo{"t", "k", "", 5}, "OPEN", "")}).ok());
    ASSERT_TRUE(tm->Create(SampleTable("t")).ok());
    ASSERT_TRUE((*tm->Find("t"))->RegionFor("x")->Put("x", "f", "q", "new").ok());
  }
  auto tm = OpenManager(dir.path());
  ASSERT_NE(tm, nullptr);
  EXPECT_TRUE(tm->OpenError("t").ok()) << tm->OpenError("t");
  EXPECT_EQ(ValueOf(tm.get(), "t", "x"), "new");
  auto regions = tm->Regions("t");
  ASSERT_TRUE(regions.ok()) << regions.status();
  ASSERT_EQ(regions->size(), 1u);
  EXPECT_NE((*regions)[0].info.id, 5u);
}

// Creates table `name` with rows r000..r199 in flushed files; the directory of its one region.
std::string LoadOneRegion(Catalog* tm, const std::string& data_dir, const std::string& name) {
  EXPECT_TRUE(tm->Create(SampleTable(name)).ok());
  auto t = tm->Find(name);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return "";
  for (int i = 0; i < 200; ++i) {
    const std::string row = absl::StrFormat("r%03d", i);
    EXPECT_TRUE((*t)->RegionFor(row)->Put(row, "f", "q", "v" + row).ok());
  }
  EXPECT_TRUE(tm->Flush(name).ok());
  auto regions = tm->Regions(name);
  EXPECT_TRUE(regions.ok() && regions->size() == 1u);
  return regions.ok() && !regions->empty() ? absl::StrCat(data_dir, "/tables/", name, "/",
                                                          (*regions)[0].info.EncodedName())
                                           : "";
}

// Reads what is left of `scanner`: how many rows, or -1 on an error.
int RowsLeft(RegionScanner* scanner) {
  std::vector<Cell> cells;
  int n = 0;
  for (;;) {
    absl::StatusOr<bool> more = scanner->NextRow(&cells);
    if (!more.ok()) {
      ADD_FAILURE() << more.status();
      return -1;
    }
    if (!*more) return n;
    ++n;
  }
}

// A split parent's files stay while a scan still reads them, whether the scan began on the
// parent (the table from before the split) or on a daughter before the compaction that rewrote
// its references; they go at the janitor's next look once it has ended. On a shared store a
// removed file is gone for its readers too, so the scan would fail.
TEST(Catalog, ASplitParentsFilesStayUntilTheLastScanReadingThemEnds) {
  testing::TempDir dir;
  Catalog::Options o;
  o.data_dir = dir.path();
  // The daughters' references are rewritten when the test says (MajorCompact), not at once in
  // the background, before a scan of a daughter could begin on them.
  o.region.background_compaction = false;
  auto opened = Catalog::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<Catalog> tm = *std::move(opened);

  // A scan begun on the parent.
  const std::string parent = LoadOneRegion(tm.get(), dir.path(), "t");
  ASSERT_TRUE(std::filesystem::exists(parent)) << parent;
  {
    auto before = tm->Find("t");
    ASSERT_TRUE(before.ok());
    auto scanner = (*before)->RegionFor("r000")->Scan(ScanSpec{});
    ASSERT_TRUE(scanner.ok()) << scanner.status();
    std::vector<Cell> cells;
    ASSERT_TRUE((*scanner)->NextRow(&cells).value_or(false));
    ASSERT_TRUE(tm->Split("t", "r100").ok());
    ASSERT_TRUE(tm->MajorCompact("t").ok());  // the daughters' references rewritten: the janitor looks
    auto daughters = tm->Regions("t");
    ASSERT_TRUE(daughters.ok() && daughters->size() == 2u);
    for (const auto& r : *daughters) EXPECT_EQ(r.stats.reference_files, 0u) << r.info.Name();
    ASSERT_TRUE(tm->CleanSplitParents("t").ok());
    EXPECT_TRUE(std::filesystem::exists(parent)) << "removed while a scan of it was open";
    EXPECT_EQ(RowsLeft(scanner->get()), 199);
  }
  ASSERT_TRUE(tm->CleanSplitParents("t").ok());
  EXPECT_FALSE(std::filesystem::exists(parent));

  // A scan begun on a daughter while it read the parent's files.
  const std::string parent2 = LoadOneRegion(tm.get(), dir.path(), "u");
  ASSERT_TRUE(tm->Split("u", "r100").ok());
  {
    auto after = tm->Find("u");
    ASSERT_TRUE(after.ok());
    ASSERT_GT((*after)->RegionFor("r150")->GetStats().reference_files, 0u);
    auto scanner = (*after)->RegionFor("r150")->Scan(ScanSpec{});
    ASSERT_TRUE(scanner.ok()) << scanner.status();
    ASSERT_TRUE(tm->MajorCompact("u").ok());
    bool still_read = false;
    auto daughters = tm->Regions("u");
    ASSERT_TRUE(daughters.ok() && daughters->size() == 2u);
    for (const auto& r : *daughters) {
      EXPECT_EQ(r.stats.reference_files, 0u) << r.info.Name();
      still_read |= r.stats.references_still_read > 0;
    }
    EXPECT_TRUE(still_read);
    ASSERT_TRUE(tm->CleanSplitParents("u").ok());
    EXPECT_TRUE(std::filesystem::exists(parent2)) << "removed while a daughter's scan read it";
    EXPECT_EQ(RowsLeft(scanner->get()), 100);
  }
  ASSERT_TRUE(tm->CleanSplitParents("u").ok());
  EXPECT_FALSE(std::filesystem::exists(parent2));
}

TEST(RegionInfo, EncodingAndSplitKeys) {
  RegionInfo r{"t1", std::string("a\0b", 3), "zz", 1700000000000};
  auto back = DecodeRegionInfo(EncodeRegionInfo(r), "REGIONINFO");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, r);
  EXPECT_EQ(r.Name(), "t1,a\\x00b,1700000000000");  // Bytes.toStringBinary
  EXPECT_EQ(r.EncodedName().size(), 16u);
  std::string bad = EncodeRegionInfo(r);
  bad[20] ^= 1;
  EXPECT_EQ(DecodeRegionInfo(bad, "REGIONINFO").status().code(), absl::StatusCode::kDataLoss);
  auto regions = RegionsFromSplitKeys("t", {"m", "c"}, 7);
  ASSERT_TRUE(regions.ok()) << regions.status();
  ASSERT_EQ(regions->size(), 3u);
  EXPECT_TRUE(CheckCoverage("t", *regions).ok());
  EXPECT_EQ((*regions)[1].start_key, "c");
  EXPECT_EQ((*regions)[1].end_key, "m");
  EXPECT_EQ(RegionsFromSplitKeys("t", {"m", "m"}, 7).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<RegionInfo> gap = *regions;
  gap.erase(gap.begin() + 1);
  EXPECT_EQ(CheckCoverage("t", gap).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace basalt::server
