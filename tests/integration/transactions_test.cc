// Transactions (docs/DESIGN.md §7) against a real basalt-server on
// loopback: snapshot isolation (no dirty, non-repeatable or phantom reads), write-write
// conflicts, abort, timeout to invalid, and the transaction service's state surviving a SIGKILL
// of the server.
#include <signal.h>

#include <algorithm>
#include <set>

#include "basalt/transaction.h"
#include "tests/integration/integration_util.h"

namespace basalt::testing {
namespace {

using absl::StatusCode;

class Transactions : public ServerTest {
 protected:
  void SetUp() override {
    StartServer();
    CreateTransactional("tx", {"cf"});
  }
  void CreateTransactional(const std::string& name, std::vector<std::string> families) {
    CreateTable(name, std::move(families), {}, /*transactional=*/true);
  }
  // The value of cf:q of `row` in `tx` ("" when absent).
  static std::string Read(TransactionContext& tx, const std::string& row, const std::string& table = "tx") {
    absl::StatusOr<Result> r = tx.Get(table, Get(row));
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return "?";
    return std::string(r->Value("cf", "q").value_or(""));
  }
  // cf:q of `row` outside any transaction: what has committed.
  std::string ReadCommitted(const std::string& row) {
    absl::StatusOr<Result> r = conn_->GetTable("tx")->Get(Get(row));
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return "?";
    return std::string(r->Value("cf", "q").value_or(""));
  }
  static std::vector<std::string> Rows(TransactionContext& tx, Scan scan = Scan()) {
    std::vector<std::string> rows;
    auto s = tx.GetScanner("tx", std::move(scan));
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return rows;
    Result r;
    for (;;) {
      absl::StatusOr<bool> more = (*s)->Next(&r);
      EXPECT_TRUE(more.ok()) << more.status();
      if (!more.ok() || !*more) break;
      rows.push_back(r.row());
    }
    return rows;
  }
  static Put P(const std::string& row, const std::string& value) { return Put(row).Add("cf", "q", value); }
};

TEST_F(Transactions, ReadsSeeTheSnapshotAndTheirOwnWritesOnly) {
  TransactionContext setup(conn_.get());
  ASSERT_TRUE(setup.Start().ok());
  ASSERT_TRUE(setup.Put("tx", P("a", "1")).ok());
  ASSERT_TRUE(setup.Put("tx", P("c", "1")).ok());
  ASSERT_TRUE(setup.Commit().ok());

  TransactionContext reader(conn_.get());
  ASSERT_TRUE(reader.Start().ok());
  EXPECT_EQ(Read(reader, "a"), "1");
  EXPECT_EQ(Rows(reader), (std::vector<std::string>{"a", "c"}));

  TransactionContext writer(conn_.get());
  ASSERT_TRUE(writer.Start().ok());
  ASSERT_TRUE(writer.Put("tx", P("a", "2")).ok());
  ASSERT_TRUE(writer.Put("tx", P("b", "2")).ok());  // a new row inside the reader's range
  // Its own writes: visible to itself at once.
  EXPECT_EQ(Read(writer, "a"), "2");
  EXPECT_EQ(Rows(writer), (std::vector<std::string>{"a", "b", "c"}));
  // No dirty read: uncommitted writes are invisible to the reader, to a transaction that
  // starts now, and outside transactions.
  EXPECT_EQ(Read(reader, "a"), "1");
  EXPECT_EQ(Read(reader, "b"), "");
  TransactionContext during(conn_.get());
  ASSERT_TRUE(during.Start().ok());
  EXPECT_EQ(Read(during, "a"), "1");
  EXPECT_EQ(ReadCommitted("a"), "1");
  EXPECT_EQ(ReadCommitted("b"), "");

  ASSERT_TRUE(writer.Commit().ok());
  // Repeatable reads and no phantoms: the reader still sees its snapshot, row b included.
  EXPECT_EQ(Read(reader, "a"), "1");
  EXPECT_EQ(Rows(reader), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(Rows(reader, Scan().SetReversed(true)), (std::vector<std::string>{"c", "a"}));
  // So does the transaction that started while the writer was in progress.
  EXPECT_EQ(Read(during, "a"), "1");
  EXPECT_EQ(Read(during, "b"), "");
  // Outside transactions, and in a new one, the commit is visible.
  EXPECT_EQ(ReadCommitted("a"), "2");
  TransactionContext after(conn_.get());
  ASSERT_TRUE(after.Start().ok());
  EXPECT_EQ(Read(after, "a"), "2");
  EXPECT_EQ(Rows(after), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(reader.Commit().ok());  // read-only: nothing to conflict with
  EXPECT_TRUE(during.Commit().ok());
  EXPECT_TRUE(after.Commit().ok());
}

TEST_F(Transactions, VersionsCountVisibleVersionsOnly) {
  // VERSIONS 1: an uncommitted newer version does not push the committed one out of a read.
  TransactionContext a(conn_.get());
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(a.Put("tx", P("r", "old")).ok());
  ASSERT_TRUE(a.Commit().ok());
  TransactionContext b(conn_.get());
  ASSERT_TRUE(b.Start().ok());
  ASSERT_TRUE(b.Put("tx", P("r", "new")).ok());
  ASSERT_TRUE(conn_->GetAdmin()->Flush("tx").ok());
  ASSERT_TRUE(conn_->GetAdmin()->MajorCompact("tx").ok());
  EXPECT_EQ(ReadCommitted("r"), "old");
  TransactionContext c(conn_.get());
  ASSERT_TRUE(c.Start().ok());
  absl::StatusOr<Result> r = c.Get("tx", Get("r").SetMaxVersions(5));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(r->cells()[0].value, "old");
  ASSERT_TRUE(b.Commit().ok());
  EXPECT_EQ(ReadCommitted("r"), "new");
  EXPECT_EQ(Read(c, "r"), "old");
}

TEST_F(Transactions, DeletesAreTombstonesOnlyTheirSnapshotsSee) {
  TransactionContext a(conn_.get());
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(a.Put("tx", P("r", "v")).ok());
  ASSERT_TRUE(a.Commit().ok());
  TransactionContext old(conn_.get());
  ASSERT_TRUE(old.Start().ok());
  TransactionContext d(conn_.get());
  ASSERT_TRUE(d.Start().ok());
  ASSERT_TRUE(d.Delete("tx", Delete("r").AddColumns("cf", "q")).ok());
  EXPECT_EQ(Read(d, "r"), "");
  ASSERT_TRUE(d.Commit().ok());
  EXPECT_EQ(ReadCommitted("r"), "");
  EXPECT_EQ(Read(old, "r"), "v");  // its snapshot is from before the delete
  // A whole-row delete is refused (not built yet), clearly.
  TransactionContext e(conn_.get());
  ASSERT_TRUE(e.Start().ok());
  EXPECT_EQ(e.Delete("tx", Delete("r")).code(), StatusCode::kUnimplemented);
  // An empty value would read as a delete: refused.
  absl::Status empty = e.Put("tx", P("r", ""));
  EXPECT_EQ(empty.code(), StatusCode::kInvalidArgument) << empty;
}

TEST_F(Transactions, TheSecondWriterOfACellConflictsAndIsRolledBack) {
  TransactionContext a(conn_.get()), b(conn_.get());
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(b.Start().ok());
  ASSERT_TRUE(a.Put("tx", P("x", "a")).ok());
  ASSERT_TRUE(b.Put("tx", P("x", "b")).ok());
  ASSERT_TRUE(b.Put("tx", P("y", "b")).ok());
  ASSERT_TRUE(a.Commit().ok());
  absl::Status lost = b.Commit();
  EXPECT_EQ(lost.code(), StatusCode::kAborted) << lost;
  EXPECT_FALSE(b.in_progress());
  // b's writes were rolled back: neither its x nor its y is seen by anyone.
  EXPECT_EQ(ReadCommitted("x"), "a");
  EXPECT_EQ(ReadCommitted("y"), "");
  TransactionContext c(conn_.get());
  ASSERT_TRUE(c.Start().ok());
  EXPECT_EQ(Read(c, "x"), "a");
  EXPECT_EQ(Read(c, "y"), "");
  ASSERT_TRUE(c.Commit().ok());

  // Different cells of one row do not conflict at the column level...
  TransactionContext d(conn_.get()), e(conn_.get());
  ASSERT_TRUE(d.Start().ok());
  ASSERT_TRUE(e.Start().ok());
  ASSERT_TRUE(d.Put("tx", Put("z").Add("cf", "q1", "d")).ok());
  ASSERT_TRUE(e.Put("tx", Put("z").Add("cf", "q2", "e")).ok());
  ASSERT_TRUE(d.Commit().ok());
  ASSERT_TRUE(e.Commit().ok());
  // ...but do at the row level.
  TransactionOptions rows;
  rows.conflict = TransactionOptions::ConflictLevel::kRow;
  TransactionContext f(conn_.get(), rows), g(conn_.get(), rows);
  ASSERT_TRUE(f.Start().ok());
  ASSERT_TRUE(g.Start().ok());
  ASSERT_TRUE(f.Put("tx", Put("z").Add("cf", "q1", "f")).ok());
  ASSERT_TRUE(g.Put("tx", Put("z").Add("cf", "q2", "g")).ok());
  ASSERT_TRUE(f.Commit().ok());
  EXPECT_EQ(g.Commit().code(), StatusCode::kAborted);

  // A transaction that started after the winner committed does not conflict with it.
  TransactionContext h(conn_.get());
  ASSERT_TRUE(h.Start().ok());
  ASSERT_TRUE(h.Put("tx", P("x", "h")).ok());
  EXPECT_TRUE(h.Commit().ok());
  EXPECT_EQ(ReadCommitted("x"), "h");
}

TEST_F(Transactions, AbortTakesEveryWriteBack) {
  TransactionContext a(conn_.get());
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(a.Put("tx", P("k", "committed")).ok());
  ASSERT_TRUE(a.Commit().ok());
  TransactionContext b(conn_.get());
  ASSERT_TRUE(b.Start().ok());
  ASSERT_TRUE(b.Put("tx", P("k", "aborted")).ok());
  ASSERT_TRUE(b.Delete("tx", Delete("k").AddColumns("cf", "q")).ok());
  const int64_t b_wp = b.snapshot()->write_pointer;
  std::vector<RowMutationsBase> batch;
  for (int i = 0; i < 50; ++i) batch.push_back(P(absl::StrCat("batch", i), "aborted"));
  auto statuses = b.Batch("tx", batch);
  ASSERT_TRUE(statuses.ok()) << statuses.status();
  for (const absl::Status& s : *statuses) ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(b.Abort().ok());
  EXPECT_EQ(ReadCommitted("k"), "committed");
  TransactionContext c(conn_.get());
  ASSERT_TRUE(c.Start().ok());
  EXPECT_EQ(Rows(c), (std::vector<std::string>{"k"}));
  // The aborted transaction is over: it cannot commit after all.
  EXPECT_EQ(conn_->CommitTransaction(b_wp, {}).code(), StatusCode::kFailedPrecondition);
}

TEST_F(Transactions, ATimedOutTransactionIsInvalidAndStaysHidden) {
  TransactionOptions quick;
  quick.timeout = absl::Milliseconds(300);
  TransactionContext slow(conn_.get(), quick);
  ASSERT_TRUE(slow.Start().ok());
  const int64_t wp = slow.snapshot()->write_pointer;
  ASSERT_TRUE(slow.Put("tx", P("late", "x")).ok());
  absl::SleepFor(absl::Milliseconds(600));
  absl::Status s = slow.Commit();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("invalid"), std::string::npos) << s;
  // Its write is in the table, but no snapshot sees it: invalid pointers are excluded.
  EXPECT_EQ(ReadCommitted("late"), "");
  TransactionContext next(conn_.get());
  ASSERT_TRUE(next.Start().ok());
  const auto& excluded = next.snapshot()->excluded;
  EXPECT_TRUE(std::binary_search(excluded.begin(), excluded.end(), wp));
  EXPECT_EQ(Read(next, "late"), "");
  // A timeout the server does not take is refused.
  TransactionOptions huge;
  huge.timeout = absl::Hours(48);
  TransactionContext bad(conn_.get(), huge);
  EXPECT_EQ(bad.Start().code(), StatusCode::kInvalidArgument);
}

TEST_F(Transactions, PlainWritesAndOtherTablesAreRefusedClearly) {
  std::unique_ptr<Table> t = conn_->GetTable("tx");
  absl::Status s = t->Put(P("r", "v"));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("transactional"), std::string::npos) << s;
  EXPECT_EQ(t->IncrementColumnValue("r", "cf", "n", 1).status().code(), StatusCode::kFailedPrecondition);
  CreateTable("plain", {"cf"});
  TransactionContext tx(conn_.get());
  ASSERT_TRUE(tx.Start().ok());
  EXPECT_EQ(tx.Put("plain", P("r", "v")).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(tx.Get("plain", Get("r")).status().code(), StatusCode::kFailedPrecondition);
  // describe says what the table is.
  auto info = conn_->GetAdmin()->DescribeTable("tx");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(info->transactional);
  // A TTL would count write pointers as milliseconds: refused.
  TableInfo ttl;
  ttl.name = "ttl";
  ttl.transactional = true;
  FamilySettings f;
  f.name = "cf";
  f.ttl_seconds = 60;
  ttl.families.push_back(f);
  EXPECT_EQ(conn_->GetAdmin()->CreateTable(ttl).code(), StatusCode::kInvalidArgument);
}

TEST_F(Transactions, TheServiceStateSurvivesSigkill) {
  // The contexts of before the crash keep their connection (declared first: it outlives them).
  std::unique_ptr<Connection> before;
  TransactionContext committed(conn_.get());
  ASSERT_TRUE(committed.Start().ok());
  ASSERT_TRUE(committed.Put("tx", P("c", "committed")).ok());
  ASSERT_TRUE(committed.Commit().ok());
  // In progress across the crash: its client commits after the restart.
  TransactionContext survivor(conn_.get());
  ASSERT_TRUE(survivor.Start().ok());
  ASSERT_TRUE(survivor.Put("tx", P("s", "survivor")).ok());
  // Invalidated before the crash: hidden after it.
  TransactionContext invalid(conn_.get());
  ASSERT_TRUE(invalid.Start().ok());
  const int64_t invalid_wp = invalid.snapshot()->write_pointer;
  ASSERT_TRUE(invalid.Put("tx", P("i", "invalid")).ok());
  ASSERT_TRUE(conn_->InvalidateTransaction(invalid_wp).ok());
  // A conflict in the making: `loser` started before `winner` committed the same cell.
  TransactionContext loser(conn_.get()), winner(conn_.get());
  ASSERT_TRUE(loser.Start().ok());
  ASSERT_TRUE(winner.Start().ok());
  ASSERT_TRUE(winner.Put("tx", P("w", "winner")).ok());
  ASSERT_TRUE(loser.Put("tx", P("w", "loser")).ok());
  const int64_t last_wp = winner.snapshot()->write_pointer;
  ASSERT_TRUE(winner.Commit().ok());

  server_->Kill();  // SIGKILL
  ASSERT_TRUE(server_->Start().ok());  // the same data and port
  before = std::move(conn_);
  Connect();
  EXPECT_EQ(ReadCommitted("c"), "committed");
  EXPECT_EQ(ReadCommitted("w"), "winner");
  EXPECT_EQ(ReadCommitted("s"), "");  // still in progress
  EXPECT_EQ(ReadCommitted("i"), "");
  TransactionContext fresh(conn_.get());
  ASSERT_TRUE(fresh.Start().ok());
  EXPECT_GT(fresh.snapshot()->write_pointer, last_wp);
  const auto& excluded = fresh.snapshot()->excluded;
  EXPECT_TRUE(std::binary_search(excluded.begin(), excluded.end(), invalid_wp));
  EXPECT_TRUE(std::binary_search(excluded.begin(), excluded.end(), survivor.snapshot()->write_pointer));
  EXPECT_EQ(Read(fresh, "i"), "");
  // The conflict is remembered: the loser still loses.
  EXPECT_EQ(loser.Commit().code(), StatusCode::kAborted);
  EXPECT_EQ(ReadCommitted("w"), "winner");
  // The survivor commits, and what it wrote becomes visible.
  ASSERT_TRUE(survivor.Commit().ok());
  EXPECT_EQ(ReadCommitted("s"), "survivor");
  EXPECT_EQ(Read(fresh, "s"), "");  // not to a snapshot from before its commit
  ASSERT_TRUE(fresh.Commit().ok());
}

}  // namespace
}  // namespace basalt::testing
