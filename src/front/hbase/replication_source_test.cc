// Basalt's log records as an HBase source's ReplicateWALEntry (replication_source.h), read back
// by the sink's own reading (replication_sink.h): what one Basalt ships, another applies as it was.
#include "src/front/hbase/replication_source.h"

#include "common/uuid.h"
#include "gtest/gtest.h"
#include "src/front/hbase/replication_sink.h"
#include "storage/cell.h"

namespace basalt::hbase {
namespace {

constexpr char kSource[] = "11111111-2222-4333-8444-555555555555";
constexpr char kPeer[] = "99999999-8888-4777-8666-555555555555";

WalEdit Edit(const std::string& family, const std::string& row, const std::string& qualifier, int64_t ts, basalt::CellType type,
             const std::string& value = "") {
  return WalEdit{family, MakeFlatKey(row, qualifier, ts, type), value};
}

SourceOptions Options() {
  SourceOptions o;
  o.cluster_id = kSource;
  o.replicated = [](std::string_view table, std::string_view family) { return table == "t" && family == "f"; };
  o.now_ms = 1'000'000;
  return o;
}

TEST(ReplicationSource, WhatItShipsTheSinkAppliesAsTheLogHadIt) {
  WalRecord put{"t,,1", 7, {Edit("f", "r1", "q", 500, basalt::CellType::kPut, "v1"), Edit("g", "r1", "q", 500, basalt::CellType::kPut, "no"),
                            Edit("f", "r1", "w", 500, basalt::CellType::kPut, "v2")}};
  WalRecord deletes{"t,m,2", 3, {Edit("f", "r2", "q", 400, basalt::CellType::kDelete), Edit("f", "r2", "w", 600, basalt::CellType::kDeleteColumn),
                                 Edit("f", "r3", "", 700, basalt::CellType::kDeleteFamily)}};
  WalRecord other{"u,,1", 9, {Edit("f", "x", "q", 1, basalt::CellType::kPut, "v")}};  // not replicated
  SourceBatch batch;
  ASSERT_TRUE(AddToSourceBatch(put, "t", Options(), &batch).ok());
  ASSERT_TRUE(AddToSourceBatch(other, "u", Options(), &batch).ok());
  ASSERT_TRUE(AddToSourceBatch(deletes, "t", Options(), &batch).ok());
  ASSERT_EQ(batch.request.entry_size(), 2);
  EXPECT_EQ(batch.cells, 5u);
  const WALKey& key = batch.request.entry(0).key();
  EXPECT_EQ(key.table_name(), "t");
  EXPECT_EQ(key.log_sequence_number(), 7u);
  EXPECT_EQ(key.write_time(), 500u);
  ASSERT_EQ(key.cluster_ids_size(), 1);
  EXPECT_EQ(UuidText(key.cluster_ids(0)), kSource);
  EXPECT_EQ(batch.request.entry(1).associated_cell_count(), 3);

  absl::StatusOr<SinkEdits> applied = SinkEditsOf(batch.request, batch.cell_block, kPeer);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->cells, 5u);
  ASSERT_EQ(applied->batches.size(), 1u);
  const rpc::BatchMutateRequest& b = applied->batches[0];
  EXPECT_EQ(b.table(), "t");
  ASSERT_EQ(b.rows_size(), 3);
  EXPECT_EQ(b.rows(0).row(), "r1");
  ASSERT_EQ(b.rows(0).mutations_size(), 2);
  EXPECT_EQ(b.rows(0).mutations(0).kind(), rpc::Mutation::PUT);
  EXPECT_EQ(b.rows(0).mutations(0).value(), "v1");
  EXPECT_EQ(b.rows(0).mutations(0).timestamp(), 500);
  EXPECT_EQ(b.rows(0).mutations(1).qualifier(), "w");
  ASSERT_EQ(b.rows(1).mutations_size(), 2);
  EXPECT_EQ(b.rows(1).mutations(0).kind(), rpc::Mutation::DELETE);
  EXPECT_EQ(b.rows(1).mutations(0).timestamp(), 400);
  EXPECT_EQ(b.rows(1).mutations(1).kind(), rpc::Mutation::DELETE_COLUMN);
  EXPECT_EQ(b.rows(2).row(), "r3");
  EXPECT_EQ(b.rows(2).mutations(0).kind(), rpc::Mutation::DELETE_FAMILY);

  // Sent back to where it came from (a cycle of peers), it is not applied again.
  absl::StatusOr<SinkEdits> home = SinkEditsOf(batch.request, batch.cell_block, kSource);
  ASSERT_TRUE(home.ok()) << home.status();
  EXPECT_EQ(home->cells, 0u);
  EXPECT_EQ(home->skipped_entries, 2u);
}

// Active-active: a record a sink here applied names the clusters it came through; it goes on to
// a third cluster with this one added, never back to one it names, and the sink that applies it
// keeps the list (in its batch, so in its own log).
TEST(ReplicationSource, AReplicatedRecordNeverGoesBackToAClusterItCameThrough) {
  constexpr char kOrigin[] = "22222222-3333-4444-8555-666666666666";
  WalRecord relayed{"t,,1", 4, {Edit("f", "r", "q", 10, basalt::CellType::kPut, "v")}};
  relayed.cluster_ids = {kOrigin};
  SourceOptions o = Options();
  o.peer = ParseUuid(kOrigin);
  SourceBatch batch;
  ASSERT_TRUE(AddToSourceBatch(relayed, "t", o, &batch).ok());
  EXPECT_EQ(batch.request.entry_size(), 0) << "shipped back where it came from";
  o.peer = ParseUuid(kPeer);  // a third cluster
  ASSERT_TRUE(AddToSourceBatch(relayed, "t", o, &batch).ok());
  ASSERT_EQ(batch.request.entry_size(), 1);
  const WALKey& key = batch.request.entry(0).key();
  ASSERT_EQ(key.cluster_ids_size(), 2);
  EXPECT_EQ(UuidText(key.cluster_ids(0)), kOrigin);  // the first: where it was written
  EXPECT_EQ(UuidText(key.cluster_ids(1)), kSource);
  absl::StatusOr<SinkEdits> applied = SinkEditsOf(batch.request, batch.cell_block, kPeer);
  ASSERT_TRUE(applied.ok()) << applied.status();
  ASSERT_EQ(applied->batches.size(), 1u);
  ASSERT_EQ(applied->batches[0].cluster_ids_size(), 2);
  EXPECT_EQ(applied->batches[0].cluster_ids(0), kOrigin);
  EXPECT_EQ(applied->batches[0].cluster_ids(1), kSource);
  // A record's id that is not a UUID is named, not shipped without it.
  relayed.cluster_ids = {"not-a-uuid"};
  absl::Status bad = AddToSourceBatch(relayed, "t", o, &batch);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("not-a-uuid"), std::string::npos) << bad;
}

TEST(ReplicationSource, AWriteTimeIsNeverLaterThanNowAndBadInputIsNamed) {
  SourceBatch batch;
  WalRecord future{"t,,1", 1, {Edit("f", "r", "q", 5'000'000, basalt::CellType::kPut, "v")}};
  ASSERT_TRUE(AddToSourceBatch(future, "t", Options(), &batch).ok());
  EXPECT_EQ(batch.request.entry(0).key().write_time(), 1'000'000u);
  WalRecord bad{"t,,1", 2, {WalEdit{"f", "short", "v"}}};
  absl::Status s = AddToSourceBatch(bad, "t", Options(), &batch);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("log record 2 of region t,,1"), std::string::npos) << s;
  SourceOptions no_id = Options();
  no_id.cluster_id = "basalt-1";
  EXPECT_EQ(AddToSourceBatch(future, "t", no_id, &batch).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(batch.request.entry_size(), 1);  // nothing added by a refused record
}

}  // namespace
}  // namespace basalt::hbase
