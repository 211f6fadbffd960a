// Transactions on transactional tables (docs/DESIGN.md §7), as Apache Tephra's
// TransactionContext with TransactionAwareHTable:
//
//   basalt::TransactionContext tx(connection.get());
//   BASALT_RETURN_IF_ERROR(tx.Start());
//   absl::StatusOr<basalt::Result> r = tx.Get("accounts", basalt::Get("alice"));
//   ...
//   BASALT_RETURN_IF_ERROR(tx.Put("accounts", basalt::Put("alice").Add("f", "balance", "90")));
//   absl::Status s = tx.Commit();  // Aborted: another transaction wrote the same cell first
//
// Inside a transaction reads see its snapshot (what had committed when it started) and its
// own writes, nothing else: no dirty, non-repeatable or phantom reads (snapshot isolation).
// Writes go to the servers as they are made, stamped with the transaction's write pointer, and
// stay invisible to everyone else until Commit. Commit fails with Aborted when a transaction
// that committed after this one started wrote any cell this one wrote (first committer wins);
// the context has then rolled its writes back and aborted it, and the caller may retry the work
// in a new transaction. Abort rolls back too. A client that dies mid-transaction leaves nothing
// visible: the transaction times out on the server and becomes invalid, its writes excluded
// from every snapshot.
//
// Differences from HBase and Tephra:
//   - a transactional table takes only transactions' Puts and column Deletes (the server
//     refuses other writes, Increment, Append and CheckAndMutate); a read outside any
//     transaction sees what has committed on a standalone server (its newest snapshot), and is
//     refused by a cluster's region servers, which have no snapshot of their own;
//   - a transaction cannot delete a whole row or family yet, nor store an empty value (an
//     empty value is how a transaction's delete is stored, as Tephra's) or use the empty
//     qualifier (reserved for family deletes);
//   - a cell's timestamp is its transaction's write pointer (milliseconds x 10^6 plus a
//     counter), so a time range on such a table is in write pointers, and TTL is refused.
//
// Not thread-safe: one context per thread (contexts of many threads may share a Connection).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "basalt/client.h"

namespace basalt {

struct TransactionOptions {
  // Past this the transaction is invalid (its commit is refused); 0: the server's
  // transaction_timeout_ms (30 s unless configured).
  absl::Duration timeout = absl::ZeroDuration();
  // What two transactions must both have written to conflict: the same cell (Tephra's default,
  // COLUMN) or the same row.
  enum class ConflictLevel : uint8_t { kColumn, kRow };
  ConflictLevel conflict = ConflictLevel::kColumn;
};

class TransactionContext {
 public:
  explicit TransactionContext(Connection* connection, TransactionOptions options = {});
  // Aborts a transaction still in progress (its errors are lost: call Abort to see them).
  ~TransactionContext();
  TransactionContext(const TransactionContext&) = delete;
  TransactionContext& operator=(const TransactionContext&) = delete;

  // FailedPrecondition while a transaction is in progress.
  absl::Status Start();

  // Each FailedPrecondition without a transaction in progress, or for a table that is not
  // transactional.
  absl::StatusOr<Result> Get(const std::string& table, basalt::Get get);
  absl::StatusOr<std::unique_ptr<ResultScanner>> GetScanner(const std::string& table, basalt::Scan scan);
  absl::Status Put(const std::string& table, basalt::Put put);
  // Columns only (AddColumn, AddColumns: every version); a row or family delete is refused.
  absl::Status Delete(const std::string& table, basalt::Delete del);
  // Many rows in one call per region (a queue producer's batch); per-row results as
  // Table::Batch's. A row that failed may still have been written: it is in the change set and
  // rolled back with the rest if the transaction aborts.
  absl::StatusOr<std::vector<absl::Status>> Batch(const std::string& table, std::vector<RowMutationsBase> rows);

  // OK: every write is visible to transactions that start from now on. Aborted on a conflict
  // (rolled back and aborted). FailedPrecondition when the transaction is over on the server
  // (timed out: invalid, its writes hidden for good). Unavailable or DeadlineExceeded: the
  // outcome is unknown (the commit may have happened); nothing is rolled back. The context is
  // free for Start again after any of these.
  absl::Status Commit();
  // Rolls back the writes and aborts; if the rollback fails, invalidates the transaction so its
  // writes stay hidden, and returns the rollback's error.
  absl::Status Abort();

  bool in_progress() const { return snapshot_ != nullptr; }
  // The transaction's snapshot; null when none is in progress.
  std::shared_ptr<const TransactionSnapshot> snapshot() const { return snapshot_; }

 private:
  absl::StatusOr<Table*> TableFor(const std::string& name);
  absl::Status Check() const;
  // Notes what `m` writes (change set, rollback) and stamps it with the transaction.
  absl::Status Stamp(const std::string& table, RowMutationsBase* m);
  absl::Status Rollback();
  void End();

  Connection* const connection_;
  const TransactionOptions options_;
  std::map<std::string, std::unique_ptr<Table>> tables_;
  std::shared_ptr<const TransactionSnapshot> snapshot_;
  std::vector<uint64_t> changes_;  // fingerprints, sorted and made unique at commit
  // What a rollback deletes: each cell written (repeats allowed), per table.
  struct Written {
    std::string row, family, qualifier;
  };
  std::map<std::string, std::vector<Written>> written_;
};

// The fingerprint of a change (a cell, or a row when qualifier and family are null) that
// Commit sends: 64-bit FNV-1a over the length-prefixed parts. Exposed for tests.
uint64_t ChangeFingerprint(std::string_view table, std::string_view row, const std::string* family,
                           const std::string* qualifier);

}  // namespace basalt
