// The standalone catalogue (format, atomic replace, corruption) and the table manager on top
// of it (create/disable/enable/drop, restart, leftovers).
#include "src/server/catalog.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "src/common/env.h"
#include "src/server/tables.h"
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
                          std::string("a/b"), std::string("a b"), std::string("a:b"), std::string("t\xff")}) {
    EXPECT_EQ(ValidateTableName(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
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

std::unique_ptr<TableManager> OpenManager(const std::string& dir) {
  TableManager::Options o;
  o.data_dir = dir;
  auto tm = TableManager::Open(o);
  EXPECT_TRUE(tm.ok()) << tm.status();
  return tm.ok() ? *std::move(tm) : nullptr;
}

TEST(TableManager, LifecycleAndRestart) {
  testing::TempDir dir;
  {
    auto tm = OpenManager(dir.path());
    ASSERT_NE(tm, nullptr);
    ASSERT_TRUE(tm->Create(SampleTable("t1")).ok());
    EXPECT_EQ(tm->Create(SampleTable("t1")).code(), absl::StatusCode::kAlreadyExists);
    ASSERT_TRUE(tm->Create(SampleTable("t2")).ok());
    auto t1 = tm->Find("t1");
    ASSERT_TRUE(t1.ok());
    ASSERT_TRUE((*t1)->region()->Put("r1", "f", "q", "v1").ok());

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
    ASSERT_EQ(tm->List().size(), 2u);
    EXPECT_EQ(tm->List()[0].name, "t1");
    EXPECT_TRUE(tm->List()[0] == SampleTable("t1"));
    EXPECT_FALSE(tm->List()[1].enabled);
    auto t1 = tm->Find("t1");
    ASSERT_TRUE(t1.ok());
    auto cells = (*t1)->region()->Get("r1");
    ASSERT_TRUE(cells.ok());
    ASSERT_EQ(cells->size(), 1u);
    EXPECT_EQ((*cells)[0].value, "v1");
    EXPECT_EQ(tm->Find("t3").status().code(), absl::StatusCode::kFailedPrecondition);
  }
}

TEST(TableManager, CorruptCatalogRefusesToStart) {
  testing::TempDir dir;
  {
    auto tm = OpenManager(dir.path());
    ASSERT_TRUE(tm->Create(SampleTable("t1")).ok());
  }
  std::string bytes = ReadAll(dir.path() + "/CATALOG");
  bytes[bytes.size() / 2] ^= 1;
  WriteAll(dir.path() + "/CATALOG", bytes);
  TableManager::Options o;
  o.data_dir = dir.path();
  auto tm = TableManager::Open(o);
  EXPECT_EQ(tm.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/tables/t1"));  // nothing removed
}

}  // namespace
}  // namespace basalt::server
