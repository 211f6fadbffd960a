#include "src/front/hbase/data_convert.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/front/hbase/region_names.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::hbase {
namespace {

TEST(HBaseDataConvert, RegionNamesBothForms) {
  absl::StatusOr<RegionRef> r = ParseRegionName(RegionNameOf("t1", std::string("a,b\0c", 5), 1700000000000));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->table, "t1");
  EXPECT_EQ(r->start_key, std::string("a,b\0c", 5));  // a comma in the key is the key's
  EXPECT_EQ(r->id, 1700000000000u);
  r = ParseRegionName("hbase:meta,,1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->table, "hbase:meta");
  EXPECT_EQ(r->start_key, "");
  EXPECT_EQ(r->id, 1u);
  for (std::string_view bad : {"", "t1", "t1,a", "t1,a,x.", "t1,,12x"}) {
    EXPECT_EQ(ParseRegionName(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(HBaseDataConvert, TablesOfEachNamespaceButHBasesAndBasalts) {
  TableName t;
  t.set_namespace_("default");
  t.set_qualifier("orders");
  EXPECT_EQ(*BasaltTableOf(t), "orders");
  t.set_namespace_("");
  EXPECT_EQ(*BasaltTableOf(t), "orders");
  t.set_namespace_("sales");
  EXPECT_EQ(*BasaltTableOf(t), "sales:orders");
  EXPECT_EQ(*BasaltTableOfText("sales:orders"), "sales:orders");
  EXPECT_EQ(*BasaltTableOfText("default:orders"), "orders");
  for (std::string_view ns : {"hbase", "basalt"}) {
    t.set_namespace_(std::string(ns));
    const Exception e = ExceptionOf(BasaltTableOf(t).status());
    EXPECT_EQ(e.class_name, kNamespaceNotFound) << ns;
    EXPECT_TRUE(e.do_not_retry);
  }
  // "default:app:t" must not reach app:t.
  EXPECT_EQ(BasaltTableOfText("default:app:t").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TableNameOfBasalt("orders").namespace_(), "default");
  EXPECT_EQ(TableNameOfBasalt("sales:q1").namespace_(), "sales");
  EXPECT_EQ(TableNameOfBasalt("sales:q1").qualifier(), "q1");
  EXPECT_TRUE(ShownOnThePort("sales:q1"));
  EXPECT_TRUE(ShownOnThePort("orders"));
  EXPECT_FALSE(ShownOnThePort("basalt:meta"));
  EXPECT_FALSE(ShownOnThePort("basalt:acl"));
}

TEST(HBaseDataConvert, SchemaBothWays) {
  TableSchema s;
  *s.mutable_table_name() = TableNameOfBasalt("t");
  ColumnFamilySchema* f = s.add_column_families();
  f->set_name("f");
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"VERSIONS", "3"}, {"TTL", "86400"}, {"BLOCKSIZE", "32768"}, {"COMPRESSION", "SNAPPY"},
           {"DATA_BLOCK_ENCODING", "FAST_DIFF"}, {"BLOOMFILTER", "ROWCOL"}, {"MIN_VERSIONS", "1"},
           {"IN_MEMORY", "true"}, {"REPLICATION_SCOPE", "0"}}) {
    BytesBytesPair* p = f->add_attributes();
    p->set_first(k);
    p->set_second(v);
  }
  absl::StatusOr<rpc::TableDescriptor> d = DescriptorOf(s);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->families_size(), 1);
  EXPECT_EQ(d->families(0).max_versions(), 3);
  EXPECT_EQ(d->families(0).ttl_seconds(), 86400);
  EXPECT_EQ(d->families(0).block_size(), 32768u);
  EXPECT_EQ(d->families(0).compression(), rpc::COMPRESSION_SNAPPY);
  EXPECT_EQ(d->families(0).encoding(), rpc::ENCODING_FAST_DIFF);
  EXPECT_EQ(d->families(0).bloom(), rpc::BLOOM_ROWCOL);
  EXPECT_EQ(d->families(0).min_versions(), 1);
  const TableSchema back = SchemaOf(*d);
  std::map<std::string, std::string> attrs;
  for (const BytesBytesPair& p : back.column_families(0).attributes()) attrs[p.first()] = p.second();
  EXPECT_EQ(attrs["VERSIONS"], "3");
  EXPECT_EQ(attrs["TTL"], "86400");
  EXPECT_EQ(attrs["COMPRESSION"], "SNAPPY");
  EXPECT_EQ(attrs["DATA_BLOCK_ENCODING"], "FAST_DIFF");
  EXPECT_EQ(attrs["BLOOMFILTER"], "ROWCOL");
  // What Basalt has no setting for is kept and given back as given, after Basalt's own.
  ASSERT_EQ(d->families(0).kept_attributes_size(), 2);
  EXPECT_EQ(d->families(0).kept_attributes(0).key(), "IN_MEMORY");
  EXPECT_EQ(attrs["IN_MEMORY"], "true");
  EXPECT_EQ(attrs["REPLICATION_SCOPE"], "0");
  EXPECT_EQ(back.column_families(0).attributes(back.column_families(0).attributes_size() - 1).first(),
            "REPLICATION_SCOPE");
  // What Basalt cannot honour is refused by name.
  f->mutable_attributes(3)->set_second("LZ4");
  EXPECT_NE(DescriptorOf(s).status().message().find("COMPRESSION => 'LZ4'"), std::string::npos) << DescriptorOf(s).status();
}

TEST(HBaseDataConvert, AttributesAndConfigurationBasaltHasNoSettingForAreKept) {
  TableSchema s;
  *s.mutable_table_name() = TableNameOfBasalt("t");
  auto attr = [](google::protobuf::RepeatedPtrField<BytesBytesPair>* a, std::string k, std::string v) {
    BytesBytesPair* p = a->Add();
    p->set_first(std::move(k));
    p->set_second(std::move(v));
  };
  auto conf = [](google::protobuf::RepeatedPtrField<NameStringPair>* c, std::string k, std::string v) {
    NameStringPair* p = c->Add();
    p->set_name(std::move(k));
    p->set_value(std::move(v));
  };
  attr(s.mutable_attributes(), "IS_META", "false");  // what HBase's client says of every table
  attr(s.mutable_attributes(), "OWNER", "ops");
  attr(s.mutable_attributes(), "MAX_FILESIZE", "1073741824");
  attr(s.mutable_attributes(), "DURABILITY", "ASYNC_WAL");
  conf(s.mutable_configuration(), "hbase.hregion.memstore.flush.size", "134217728");
  ColumnFamilySchema* f = s.add_column_families();
  f->set_name("f");
  attr(f->mutable_attributes(), "KEEP_DELETED_CELLS", "FALSE");
  attr(f->mutable_attributes(), "app.key", std::string("\x00\xff", 2));
  attr(f->mutable_attributes(), "VERSIONS", "4");
  conf(f->mutable_configuration(), "hbase.hstore.blockingStoreFiles", "20");
  absl::StatusOr<rpc::TableDescriptor> d = DescriptorOf(s);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->max_file_size(), 1u << 30);
  ASSERT_EQ(d->kept_attributes_size(), 2);
  EXPECT_EQ(d->kept_attributes(1).key(), "DURABILITY");
  ASSERT_EQ(d->kept_configuration_size(), 1);
  ASSERT_EQ(d->families(0).kept_attributes_size(), 2);
  EXPECT_EQ(d->families(0).kept_attributes(1).value(), std::string("\x00\xff", 2));
  EXPECT_EQ(d->families(0).max_versions(), 4);

  const TableSchema back = SchemaOf(*d);
  std::vector<std::string> table_keys;
  for (const BytesBytesPair& p : back.attributes()) table_keys.push_back(p.first());
  EXPECT_EQ(table_keys, (std::vector<std::string>{"IS_META", "MAX_FILESIZE", "OWNER", "DURABILITY"}));
  ASSERT_EQ(back.configuration_size(), 1);
  EXPECT_EQ(back.configuration(0).value(), "134217728");
  std::map<std::string, std::string> fam;
  for (const BytesBytesPair& p : back.column_families(0).attributes()) {
    EXPECT_TRUE(fam.emplace(p.first(), p.second()).second) << p.first() << " given twice";
  }
  EXPECT_EQ(fam["app.key"], std::string("\x00\xff", 2));
  EXPECT_EQ(fam["KEEP_DELETED_CELLS"], "FALSE");
  EXPECT_EQ(fam["VERSIONS"], "4");
  EXPECT_EQ(fam.count("IN_MEMORY"), 0u);  // not given, not invented
  ASSERT_EQ(back.column_families(0).configuration_size(), 1);
  EXPECT_EQ(back.column_families(0).configuration(0).name(), "hbase.hstore.blockingStoreFiles");
  // A kept key that names one of Basalt's settings (set through Basalt's own client) does not
  // hide the setting.
  rpc::TableDescriptor odd = *d;
  rpc::KeptSetting* k = odd.mutable_families(0)->add_kept_attributes();
  k->set_key("VERSIONS");
  k->set_value("9");
  fam.clear();
  const TableSchema odd_schema = SchemaOf(odd);
  for (const BytesBytesPair& p : odd_schema.column_families(0).attributes()) fam.emplace(p.first(), p.second());
  EXPECT_EQ(fam["VERSIONS"], "4");

  TableSchema meta = s;
  attr(meta.mutable_attributes(), "IS_META", "true");
  EXPECT_EQ(DescriptorOf(meta).status().code(), absl::StatusCode::kInvalidArgument);
  // (The ones whose meaning Basalt would not honour are the catalogue's to refuse: catalog_test.cc.)
}

TEST(HBaseDataConvert, PutsAndDeletesInlineAndInTheCellBlock) {
  MutationProto put;
  put.set_row("r1");
  put.set_mutate_type(MutationProto::PUT);
  auto* cv = put.add_column_value();
  cv->set_family("f");
  auto* qv = cv->add_qualifier_value();
  qv->set_qualifier("a");
  qv->set_value("v");
  qv->set_timestamp(kLatestTimestamp);  // the server's clock
  auto* qv2 = cv->add_qualifier_value();
  qv2->set_qualifier("b");
  qv2->set_value("w");
  qv2->set_timestamp(42);
  CellCursor none;
  rpc::RowMutations m;
  ASSERT_TRUE(RowMutationsOf(put, &none, &m).ok());
  ASSERT_EQ(m.mutations_size(), 2);
  EXPECT_EQ(m.row(), "r1");
  EXPECT_FALSE(m.mutations(0).has_timestamp());
  EXPECT_EQ(m.mutations(1).timestamp(), 42);

  // A Delete's cells in the call's cell block, as a BufferedMutator sends them.
  std::string block;
  ASSERT_TRUE(AppendCell({"r2", "f", "a", static_cast<int64_t>(kLatestTimestamp), KeyValueType::kDeleteColumn, ""}, &block).ok());
  ASSERT_TRUE(AppendCell({"r2", "g", "", 77, KeyValueType::kDeleteFamily, ""}, &block).ok());
  absl::StatusOr<std::vector<BlockCell>> cells = DecodeCellBlock(block);
  ASSERT_TRUE(cells.ok()) << cells.status();
  CellCursor cursor(*cells);
  MutationProto del;
  del.set_mutate_type(MutationProto::DELETE);
  del.set_associated_cell_count(2);
  rpc::RowMutations d;
  ASSERT_TRUE(RowMutationsOf(del, &cursor, &d).ok());
  EXPECT_EQ(d.row(), "r2");
  ASSERT_EQ(d.mutations_size(), 2);
  EXPECT_EQ(d.mutations(0).kind(), rpc::Mutation::DELETE_COLUMN);
  EXPECT_FALSE(d.mutations(0).has_timestamp());
  EXPECT_EQ(d.mutations(1).kind(), rpc::Mutation::DELETE_FAMILY);
  EXPECT_EQ(d.mutations(1).timestamp(), 77);
  // The block has no more cells for another mutation.
  EXPECT_EQ(RowMutationsOf(del, &cursor, &d).code(), absl::StatusCode::kInvalidArgument);

  // A Delete of the whole row; DeleteFamilyVersion refused.
  MutationProto row;
  row.set_row("r3");
  row.set_mutate_type(MutationProto::DELETE);
  rpc::RowMutations whole;
  ASSERT_TRUE(RowMutationsOf(row, &none, &whole).ok());
  EXPECT_EQ(whole.mutations(0).kind(), rpc::Mutation::DELETE_ROW);
  auto* fv = row.add_column_value();
  fv->set_family("f");
  fv->add_qualifier_value()->set_delete_type(MutationProto::DELETE_FAMILY_VERSION);
  rpc::RowMutations refused;
  EXPECT_NE(RowMutationsOf(row, &none, &refused).message().find("DeleteFamilyVersion"), std::string::npos);
}

TEST(HBaseDataConvert, IncrementAmountsAreBigEndianLongs) {
  MutationProto inc;
  inc.set_row("c");
  inc.set_mutate_type(MutationProto::INCREMENT);
  auto* qv = inc.add_column_value();
  qv->set_family("f");
  auto* a = qv->add_qualifier_value();
  a->set_qualifier("n");
  a->set_value(std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8));  // -2
  CellCursor none;
  rpc::IncrementRequest req;
  ASSERT_TRUE(IncrementOf(inc, &none, &req).ok());
  EXPECT_EQ(req.columns(0).amount(), -2);
  a->set_value("xx");
  rpc::IncrementRequest bad;
  EXPECT_EQ(IncrementOf(inc, &none, &bad).code(), absl::StatusCode::kInvalidArgument);
}

TEST(HBaseDataConvert, StatusesAsTheExceptionsTheClientActsOn) {
  EXPECT_EQ(ExceptionOf(TableNotFound("t")).class_name, kTableNotFound);
  EXPECT_EQ(ExceptionOf(absl::AlreadyExistsError("t")).class_name, kTableExists);
  EXPECT_EQ(ExceptionOf(absl::FailedPreconditionError("table t2 is disabled")).class_name, kTableNotEnabled);
  const Exception moved = ExceptionOf(NotServingRegionError("abc", "region abc moved"));
  EXPECT_EQ(moved.class_name, kNotServingRegion);
  EXPECT_FALSE(moved.do_not_retry);
  const Exception busy = ExceptionOf(absl::ResourceExhaustedError("quota"));
  EXPECT_TRUE(busy.server_overloaded);
  EXPECT_FALSE(busy.do_not_retry);
  EXPECT_TRUE(ExceptionOf(absl::InvalidArgumentError("bad")).do_not_retry);
  EXPECT_EQ(ExceptionOf(absl::PermissionDeniedError("no")).class_name, kAccessDenied);
  EXPECT_FALSE(ExceptionOf(absl::UnavailableError("closing")).do_not_retry);
}

TEST(HBaseDataConvert, ReadOptionsMergeAFamilyNamedTwice) {
  google::protobuf::RepeatedPtrField<Column> cols;
  Column* a = cols.Add();
  a->set_family("f");
  a->add_qualifier("x");
  Column* b = cols.Add();
  b->set_family("f");
  b->add_qualifier("y");
  Column* g = cols.Add();
  g->set_family("g");
  TimeRange range;
  range.set_from(10);
  range.set_to(kLatestTimestamp);
  absl::StatusOr<rpc::ReadOptions> r = ReadOptionsOf(cols, &range, 2, false);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->columns_size(), 2);
  EXPECT_EQ(r->columns(0).qualifiers_size(), 2);
  EXPECT_EQ(r->columns(1).qualifiers_size(), 0);
  EXPECT_EQ(r->min_timestamp(), 10);
  EXPECT_FALSE(r->has_max_timestamp());
  EXPECT_EQ(r->max_versions(), 2);
  EXPECT_TRUE(r->skip_block_cache());
}

}  // namespace
}  // namespace basalt::hbase
