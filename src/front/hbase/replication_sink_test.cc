#include "src/front/hbase/replication_sink.h"

#include "gtest/gtest.h"
#include "src/front/hbase/cell_block.h"

namespace basalt::hbase {
namespace {

constexpr char kSelf[] = "7660d7e1-37b9-4f8e-9f3b-8119a02540d0";

UUID UuidOf(uint64_t hi, uint64_t lo) {
  UUID u;
  u.set_most_sig_bits(hi);
  u.set_least_sig_bits(lo);
  return u;
}
const UUID kSource = UuidOf(0xbaa877d977fa4e68ULL, 0xb925968afa50efb0ULL);
const UUID kSelfUuid = UuidOf(0x7660d7e137b94f8eULL, 0x9f3b8119a02540d0ULL);

// A request of entries, each (table, its cells, the clusters it went through), its cells in one block.
struct Entry {
  std::string table;
  std::vector<BlockCell> cells;
  std::vector<UUID> clusters = {kSource};
};
std::pair<ReplicateWALEntryRequest, std::string> RequestOf(const std::vector<Entry>& entries) {
  ReplicateWALEntryRequest req;
  std::string block;
  uint64_t seq = 1;
  for (const Entry& e : entries) {
    WALEntry* w = req.add_entry();
    w->mutable_key()->set_encoded_region_name("0123456789abcdef0123456789abcdef");
    w->mutable_key()->set_table_name(e.table);
    w->mutable_key()->set_log_sequence_number(seq++);
    w->mutable_key()->set_write_time(1795954258030);
    for (const UUID& c : e.clusters) *w->mutable_key()->add_cluster_ids() = c;
    w->set_associated_cell_count(static_cast<int>(e.cells.size()));
    for (const BlockCell& c : e.cells) EXPECT_TRUE(AppendCell(c, &block).ok());
  }
  return {req, block};
}

TEST(ReplicationSink, UuidsReadAsJavaWritesThem) {
  EXPECT_EQ(UuidText(kSource), "baa877d9-77fa-4e68-b925-968afa50efb0");
  EXPECT_EQ(UuidText(kSelfUuid), kSelf);
  EXPECT_EQ(UuidText(UuidOf(0, 1)), "00000000-0000-0000-0000-000000000001");
}

// Every kind of cell keeps its timestamp and kind; a row's consecutive cells are one row's
// mutations; each table gets its batch; the log's markers are passed over.
TEST(ReplicationSink, EachCellKeepsItsTimestampAndKind) {
  // A namespace's table is Basalt's table of the same name; HBase's own namespace is not Basalt's.
  const auto [other_ns, other_block] = RequestOf({{"t", {{"r1", "f", "a", 5, KeyValueType::kPut, "v"}}},
                                                  {"ns:u", {{"r1", "g", "a", 8, KeyValueType::kPut, "v"}}}});
  absl::StatusOr<SinkEdits> edits = SinkEditsOf(other_ns, other_block, kSelf);
  ASSERT_TRUE(edits.ok()) << edits.status();
  ASSERT_EQ(edits->batches.size(), 2u);
  EXPECT_EQ(edits->batches[1].table(), "ns:u");
  const auto [system, system_block] = RequestOf({{"hbase:acl", {{"r1", "l", "a", 5, KeyValueType::kPut, "v"}}}});
  edits = SinkEditsOf(system, system_block, kSelf);
  ASSERT_FALSE(edits.ok());
  EXPECT_EQ(edits.status().code(), absl::StatusCode::kNotFound) << edits.status();
  EXPECT_NE(edits.status().message().find("log entry 0 of table hbase:acl"), std::string::npos) << edits.status();

  const auto [req, block] = RequestOf({
      {"t", {{"r1", "f", "a", 5, KeyValueType::kPut, "v1"}, {"r1", "f", "b", 6, KeyValueType::kPut, "v2"},
             {"r2", "f", "a", 7, KeyValueType::kDelete, ""}}},
      {"u", {{"r1", "g", "a", 8, KeyValueType::kDeleteColumn, ""}}},
      {"default:t", {{"r3", "f", "", 9, KeyValueType::kDeleteFamily, ""},
                     {"r3", "METAFAMILY", "HBASE::FLUSH", 10, KeyValueType::kPut, "marker"}}},
  });
  edits = SinkEditsOf(req, block, kSelf);
  ASSERT_TRUE(edits.ok()) << edits.status();
  EXPECT_EQ(edits->cells, 5u);
  ASSERT_EQ(edits->batches.size(), 2u);
  const rpc::BatchMutateRequest& t = edits->batches[0];
  EXPECT_EQ(t.table(), "t");
  ASSERT_EQ(t.rows_size(), 3);
  EXPECT_EQ(t.rows(0).row(), "r1");
  ASSERT_EQ(t.rows(0).mutations_size(), 2);
  EXPECT_EQ(t.rows(0).mutations(0).kind(), rpc::Mutation::PUT);
  EXPECT_EQ(t.rows(0).mutations(0).timestamp(), 5);
  EXPECT_EQ(t.rows(0).mutations(0).value(), "v1");
  EXPECT_EQ(t.rows(0).mutations(1).qualifier(), "b");
  EXPECT_EQ(t.rows(1).row(), "r2");
  EXPECT_EQ(t.rows(1).mutations(0).kind(), rpc::Mutation::DELETE);
  EXPECT_EQ(t.rows(1).mutations(0).timestamp(), 7);
  EXPECT_EQ(t.rows(2).row(), "r3");
  ASSERT_EQ(t.rows(2).mutations_size(), 1);
  EXPECT_EQ(t.rows(2).mutations(0).kind(), rpc::Mutation::DELETE_FAMILY);
  EXPECT_EQ(t.rows(2).mutations(0).family(), "f");
  EXPECT_EQ(t.rows(2).mutations(0).timestamp(), 9);
  const rpc::BatchMutateRequest& u = edits->batches[1];
  EXPECT_EQ(u.table(), "u");
  ASSERT_EQ(u.rows_size(), 1);
  EXPECT_EQ(u.rows(0).mutations(0).kind(), rpc::Mutation::DELETE_COLUMN);
  EXPECT_EQ(u.rows(0).mutations(0).timestamp(), 8);
}

// An edit that has been through this cluster came from here (a cycle of peers): never again.
TEST(ReplicationSink, AnEditThatWasHereIsSkipped) {
  const auto [req, block] = RequestOf({
      {"t", {{"r1", "f", "a", 5, KeyValueType::kPut, "mine"}}, {kSelfUuid, kSource}},
      {"t", {{"r2", "f", "a", 6, KeyValueType::kPut, "theirs"}}},
  });
  absl::StatusOr<SinkEdits> edits = SinkEditsOf(req, block, kSelf);
  ASSERT_TRUE(edits.ok()) << edits.status();
  EXPECT_EQ(edits->skipped_entries, 1u);
  EXPECT_EQ(edits->cells, 1u);
  ASSERT_EQ(edits->batches.size(), 1u);
  ASSERT_EQ(edits->batches[0].rows_size(), 1);
  EXPECT_EQ(edits->batches[0].rows(0).row(), "r2");
}

// What cannot be applied whole is refused whole, saying why.
TEST(ReplicationSink, WhatBasaltCannotApplyIsRefusedByName) {
  auto refusal = [](const std::vector<Entry>& entries) {
    const auto [req, block] = RequestOf(entries);
    return SinkEditsOf(req, block, kSelf).status();
  };
  absl::Status s = refusal({{"t", {{"r", "METAFAMILY", "HBASE::BULK_LOAD", 1, KeyValueType::kPut, "descriptor"}}}});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("bulk-loaded files are not replicated"), std::string::npos) << s;
  s = refusal({{"t", {{"r", "f", "", 1, KeyValueType::kDeleteFamilyVersion, ""}}}});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("DeleteFamilyVersion of table t"), std::string::npos) << s;

  // More cells claimed than the block holds; cells inline; a damaged block.
  auto [req, block] = RequestOf({{"t", {{"r", "f", "a", 1, KeyValueType::kPut, "v"}}}});
  req.mutable_entry(0)->set_associated_cell_count(2);
  EXPECT_EQ(SinkEditsOf(req, block, kSelf).status().code(), absl::StatusCode::kInvalidArgument);
  req.mutable_entry(0)->set_associated_cell_count(1);
  req.mutable_entry(0)->add_key_value_bytes("kv");
  EXPECT_NE(SinkEditsOf(req, block, kSelf).status().message().find("inline"), std::string::npos);
  req.mutable_entry(0)->clear_key_value_bytes();
  EXPECT_TRUE(SinkEditsOf(req, block, kSelf).ok());
  EXPECT_EQ(SinkEditsOf(req, block.substr(0, block.size() - 1), kSelf).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// At most the budget's bytes are applied at once, but one batch always fits.
TEST(ReplicationSink, TheBudgetTakesBatchesWhileTheyFitAndAlwaysOne) {
  SinkBudget budget(1000);
  EXPECT_TRUE(budget.Take(5000).ok());  // alone: taken, however large
  absl::Status s = budget.Take(1);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("applying 5000 bytes of replicated batches (its limit is 1000)"), std::string::npos) << s;
  budget.Give(5000);
  EXPECT_TRUE(budget.Take(600).ok());
  EXPECT_TRUE(budget.Take(400).ok());
  EXPECT_FALSE(budget.Take(1).ok());
  budget.Give(400);
  EXPECT_TRUE(budget.Take(300).ok());
  EXPECT_EQ(budget.in_use(), 900u);
}

}  // namespace
}  // namespace basalt::hbase
