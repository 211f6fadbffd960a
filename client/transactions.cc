// TransactionContext (basalt/transaction.h): the client half of docs/DESIGN.md §7. Built on the
// Connection and Table interfaces alone (basalt_client_base), so the shell uses it too.
#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "basalt/transaction.h"
#include "common/string_binary.h"
#include "common/status.h"

namespace basalt {

namespace {

constexpr uint64_t kFnvOffset = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

void Mix(uint64_t* h, std::string_view part) {
  // Length first, so ("ab", "c") and ("a", "bc") differ.
  uint64_t n = part.size();
  for (int i = 0; i < 8; ++i) {
    *h = (*h ^ (n & 0xff)) * kFnvPrime;
    n >>= 8;
  }
  for (unsigned char c : part) *h = (*h ^ c) * kFnvPrime;
}

}  // namespace

uint64_t ChangeFingerprint(std::string_view table, std::string_view row, const std::string* family,
                           const std::string* qualifier) {
  uint64_t h = kFnvOffset;
  Mix(&h, table);
  Mix(&h, row);
  if (family != nullptr) Mix(&h, *family);
  if (qualifier != nullptr) Mix(&h, *qualifier);
  return h;
}

TransactionContext::TransactionContext(Connection* connection, TransactionOptions options)
    : connection_(connection), options_(options) {}

TransactionContext::~TransactionContext() {
  if (in_progress()) (void)Abort();
}

absl::Status TransactionContext::Start() {
  if (in_progress()) {
    return absl::FailedPreconditionError(
        absl::StrCat("transaction ", snapshot_->write_pointer, " is still in progress: commit or abort it first"));
  }
  BASALT_ASSIGN_OR_RETURN(TransactionSnapshot s, connection_->StartTransaction(options_.timeout));
  snapshot_ = std::make_shared<const TransactionSnapshot>(std::move(s));
  return absl::OkStatus();
}

absl::Status TransactionContext::Check() const {
  if (!in_progress()) return absl::FailedPreconditionError("no transaction in progress: Start one first");
  return absl::OkStatus();
}

absl::StatusOr<Table*> TransactionContext::TableFor(const std::string& name) {
  std::unique_ptr<Table>& t = tables_[name];
  if (t == nullptr) t = connection_->GetTable(name);
  return t.get();
}

absl::StatusOr<Result> TransactionContext::Get(const std::string& table, basalt::Get get) {
  BASALT_RETURN_IF_ERROR(Check());
  BASALT_ASSIGN_OR_RETURN(Table * t, TableFor(table));
  get.transaction = snapshot_;
  return t->Get(get);
}

absl::StatusOr<std::unique_ptr<ResultScanner>> TransactionContext::GetScanner(const std::string& table,
                                                                             basalt::Scan scan) {
  BASALT_RETURN_IF_ERROR(Check());
  BASALT_ASSIGN_OR_RETURN(Table * t, TableFor(table));
  scan.transaction = snapshot_;
  return t->GetScanner(scan);
}

absl::Status TransactionContext::Stamp(const std::string& table, RowMutationsBase* m) {
  if (m->mutations.empty()) {
    return absl::UnimplementedError(absl::StrCat("row '", ToStringBinary(m->row),
                                                 "': a transaction cannot delete a whole row yet; delete its columns"));
  }
  const int64_t wp = snapshot_->write_pointer;
  std::vector<Written>& written = written_[table];
  for (CellMutation& c : m->mutations) {
    if (c.kind == CellMutation::Kind::kDeleteFamily || c.kind == CellMutation::Kind::kDeleteRow) {
      return absl::UnimplementedError(absl::StrCat("row '", ToStringBinary(m->row),
                                                   "': a transaction cannot delete a whole family or row yet; delete "
                                                   "its columns"));
    }
    c.timestamp = wp;
    written.push_back(Written{m->row, c.family, c.qualifier});
    changes_.push_back(options_.conflict == TransactionOptions::ConflictLevel::kRow
                           ? ChangeFingerprint(table, m->row, nullptr, nullptr)
                           : ChangeFingerprint(table, m->row, &c.family, &c.qualifier));
  }
  m->transaction = wp;
  m->rollback = false;
  return absl::OkStatus();
}

absl::Status TransactionContext::Put(const std::string& table, basalt::Put put) {
  BASALT_RETURN_IF_ERROR(Check());
  BASALT_ASSIGN_OR_RETURN(Table * t, TableFor(table));
  BASALT_RETURN_IF_ERROR(Stamp(table, &put));
  return t->Put(put);
}

absl::Status TransactionContext::Delete(const std::string& table, basalt::Delete del) {
  BASALT_RETURN_IF_ERROR(Check());
  BASALT_ASSIGN_OR_RETURN(Table * t, TableFor(table));
  BASALT_RETURN_IF_ERROR(Stamp(table, &del));
  return t->Delete(del);
}

absl::StatusOr<std::vector<absl::Status>> TransactionContext::Batch(const std::string& table,
                                                                    std::vector<RowMutationsBase> rows) {
  BASALT_RETURN_IF_ERROR(Check());
  BASALT_ASSIGN_OR_RETURN(Table * t, TableFor(table));
  for (RowMutationsBase& m : rows) BASALT_RETURN_IF_ERROR(Stamp(table, &m));
  return t->Batch(rows);
}

absl::Status TransactionContext::Rollback() {
  const int64_t wp = snapshot_->write_pointer;
  for (auto& [table, cells] : written_) {
    BASALT_ASSIGN_OR_RETURN(Table * t, TableFor(table));
    std::sort(cells.begin(), cells.end(), [](const Written& a, const Written& b) {
      return std::tie(a.row, a.family, a.qualifier) < std::tie(b.row, b.family, b.qualifier);
    });
    std::vector<RowMutationsBase> deletes;
    for (size_t i = 0; i < cells.size(); ++i) {
      const Written& w = cells[i];
      if (i > 0 && w.row == cells[i - 1].row && w.family == cells[i - 1].family &&
          w.qualifier == cells[i - 1].qualifier) {
        continue;
      }
      if (deletes.empty() || deletes.back().row != w.row) {
        deletes.emplace_back(basalt::Delete(w.row));
        deletes.back().transaction = wp;
        deletes.back().rollback = true;
        deletes.back().durability = Durability::kSyncWal;
      }
      deletes.back().mutations.push_back(CellMutation{CellMutation::Kind::kDelete, w.family, w.qualifier, wp, ""});
    }
    BASALT_ASSIGN_OR_RETURN(std::vector<absl::Status> results, t->Batch(deletes));
    for (const absl::Status& s : results) {
      if (!s.ok()) return absl::Status(s.code(), absl::StrCat("rolling back transaction ", wp, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

void TransactionContext::End() {
  snapshot_.reset();
  changes_.clear();
  written_.clear();
}

absl::Status TransactionContext::Commit() {
  BASALT_RETURN_IF_ERROR(Check());
  const int64_t wp = snapshot_->write_pointer;
  std::sort(changes_.begin(), changes_.end());
  changes_.erase(std::unique(changes_.begin(), changes_.end()), changes_.end());
  absl::Status s = connection_->CommitTransaction(wp, changes_);
  if (s.ok() || !absl::IsAborted(s)) {
    // Committed; or over on the server (invalid: its writes hidden for good); or unknown, when
    // rolling back could undo a commit that happened.
    End();
    return s;
  }
  absl::Status aborted = Abort();
  if (!aborted.ok()) {
    return absl::AbortedError(absl::StrCat(s.message(), "; and then: ", aborted.message()));
  }
  return s;
}

absl::Status TransactionContext::Abort() {
  BASALT_RETURN_IF_ERROR(Check());
  const int64_t wp = snapshot_->write_pointer;
  absl::Status rolled = Rollback();
  absl::Status s = rolled.ok() ? connection_->AbortTransaction(wp) : connection_->InvalidateTransaction(wp);
  End();
  if (!rolled.ok()) {
    return s.ok() ? rolled
                  : absl::Status(rolled.code(), absl::StrCat(rolled.message(), "; invalidating it failed too: ",
                                                             s.message()));
  }
  return s;
}

}  // namespace basalt
