// DataService and ScanCursor (service.h): validation, the engine calls, and their errors.
#include "src/services/service.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <thread>
#include <tuple>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/fault_point.h"
#include "common/status.h"
#include "common/string_binary.h"
#include "src/schema/meta.h"
#include "src/transactions/tx_filter.h"
#include "storage/log_record.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {
namespace {

// A row key for an error message: printable, and cut short.
std::string RowForError(std::string_view row) {
  std::string s = absl::CHexEscape(AV(row.substr(0, 64)));
  if (row.size() > 64) s += "...";
  return s;
}

absl::Status UnknownFamily(const Table& t, std::string_view family) {
  return absl::InvalidArgumentError(
      absl::StrCat("unknown column family '", absl::CHexEscape(AV(family)), "' in table ", t.name()));
}

absl::Status CheckRow(std::string_view row) {
  if (row.empty()) return absl::InvalidArgumentError("row key is empty");
  if (row.size() > kMaxRowLength) {
    return absl::InvalidArgumentError(absl::StrCat("row key of ", row.size(), " bytes exceeds ", kMaxRowLength));
  }
  return absl::OkStatus();
}

absl::Status CheckTimestamp(int64_t ts) {
  if (ts < 0) return absl::InvalidArgumentError(absl::StrCat("negative timestamp ", ts));
  return absl::OkStatus();
}


// The region that serves `row` for a call naming `named` (basalt.proto "Regions"): the one
// holding it now when the call names none, else the named one if it still holds the row, else
// NotServingRegionError (the client looks the row up in meta again).
absl::StatusOr<const HostedRegion*> RegionOf(const Table& t, std::string_view row, const std::string& named) {
  const HostedRegion& h = t.HostedFor(row);
  if (named.empty() || named == h.encoded_name) return &h;
  return NotServingRegionError(named, absl::StrCat("region ", named, " of table ", t.name(), " does not hold row '",
                                                   RowForError(row), "' here (it split, merged or moved)"));
}

// An engine error from a table that was closed meanwhile (disable, shutdown) is reported as
// that, not as the region's "closed"; one from region `h` after a split or merge closed it, as
// not served here (or, for a scan, which names no region, as Unavailable: the client reopens it).
absl::Status Translate(const Table& t, absl::Status s, const HostedRegion* h = nullptr) {
  if (s.ok() || s.code() != absl::StatusCode::kFailedPrecondition) return s;
  if (t.closed()) return t.ClosedError();
  if (t.superseded()) {
    std::string message = absl::StrCat("table ", t.name(), ": ", s.message(), " (the region split or merged; retry)");
    if (h == nullptr) return absl::UnavailableError(message);
    return NotServingRegionError(h->encoded_name, message);
  }
  return s;
}

// The server's retries of writes that name no region and that a split's or merge's closed
// region refused: backing off from 1 ms to 50 ms, for up to 30 s from the first refusal (then
// the error goes back to the client, whose own retries take over). A split keeps its parent
// closed for milliseconds. No clock is read until a write is refused.
class NotServingRetry {
 public:
  // Waits before the next attempt; false once the 30 s are over.
  bool Wait() {
    const auto now = std::chrono::steady_clock::now();
    if (attempts_ == 0) {
      deadline_ = now + std::chrono::seconds(30);
    } else if (now > deadline_) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(1 << std::min(attempts_, 6), 50)));
    ++attempts_;
    return true;
  }

 private:
  int attempts_ = 0;
  std::chrono::steady_clock::time_point deadline_;
};

// Runs `call` (which finds its table afresh) again while it meets a region a split closed,
// unless the call names its region: then the refusal goes back to the client, which relocates.
template <class Call>
absl::Status RetryNotServing(const std::string& named_region, Call call) {
  NotServingRetry retry;
  for (;;) {
    absl::Status s = call();
    if (!named_region.empty() || !IsNotServingRegion(s) || !retry.Wait()) return s;
  }
}

// One selected column of a read into spec->columns[i] (reused: its strings keep their capacity).
template <class Qualifiers>
absl::Status SetColumn(const Table& t, size_t i, std::string_view family, const Qualifiers& qualifiers,
                       ReadSpec* spec) {
  if (!t.HasFamily(family)) return UnknownFamily(t, family);
  ColumnSelection& sel = spec->columns[i];
  sel.family.assign(family.data(), family.size());
  sel.qualifiers.resize(qualifiers.size());
  size_t j = 0;
  for (const auto& q : qualifiers) sel.qualifiers[j++].assign(q.data(), q.size());
  return absl::OkStatus();
}

// A read's time range, versions and caching (rpc::ReadOptions' fields), checked.
absl::Status SetReadOptions(int64_t min_ts, bool has_max_ts, int64_t max_ts, int32_t max_versions,
                            bool skip_block_cache, ReadSpec* spec) {
  if (min_ts < 0) return absl::InvalidArgumentError(absl::StrCat("min_timestamp ", min_ts, " is negative"));
  spec->min_ts = min_ts;
  spec->max_ts = kLatestTimestamp;
  if (has_max_ts) {
    if (max_ts < min_ts) {
      return absl::InvalidArgumentError(absl::StrCat("time range [", min_ts, ", ", max_ts, ") has max below min"));
    }
    spec->max_ts = max_ts;
  }
  if (max_versions < 0) {
    return absl::InvalidArgumentError(absl::StrCat("max_versions ", max_versions, " is negative"));
  }
  spec->max_versions = max_versions == 0 ? 1 : max_versions;
  spec->cache_blocks = !skip_block_cache;
  return absl::OkStatus();
}

absl::StatusOr<ReadSpec> ReadSpecFromProto(const Table& t, const rpc::ReadOptions& r, bool reversed) {
  ReadSpec spec;
  spec.columns.resize(r.columns_size());
  for (int i = 0; i < r.columns_size(); ++i) {
    BASALT_RETURN_IF_ERROR(SetColumn(t, i, r.columns(i).family(), r.columns(i).qualifiers(), &spec));
  }
  BASALT_RETURN_IF_ERROR(SetReadOptions(r.min_timestamp(), r.has_max_timestamp(), r.max_timestamp(),
                                        r.max_versions(), r.skip_block_cache(), &spec));
  if (r.has_filter()) {
    BASALT_ASSIGN_OR_RETURN(spec.filter, RequestFilter::Make(r.filter(), reversed));
  }
  return spec;
}

// Maps one row's mutations; DELETE_ROW becomes a family delete of every family.
absl::Status RowMutationFromProto(const Table& t, const rpc::RowMutations& in, RowMutation* out) {
  BASALT_RETURN_IF_ERROR(CheckRow(in.row()));
  if (in.mutations().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("row '", RowForError(in.row()), "' has no mutations"));
  }
  out->row = in.row();
  out->mutations.clear();
  for (const rpc::Mutation& m : in.mutations()) {
    int64_t ts = kLatestTimestamp;
    if (m.has_timestamp()) {
      BASALT_RETURN_IF_ERROR(CheckTimestamp(m.timestamp()));
      ts = m.timestamp();
    }
    Mutation::Kind kind;
    switch (m.kind()) {
      case rpc::Mutation::PUT: kind = Mutation::Kind::kPut; break;
      case rpc::Mutation::DELETE: kind = Mutation::Kind::kDelete; break;
      case rpc::Mutation::DELETE_COLUMN: kind = Mutation::Kind::kDeleteColumn; break;
      case rpc::Mutation::DELETE_FAMILY: kind = Mutation::Kind::kDeleteFamily; break;
      case rpc::Mutation::DELETE_ROW:
        for (const FamilyOptions& f : t.spec().families) {
          Mutation d;
          d.kind = Mutation::Kind::kDeleteFamily;
          d.family = f.name;
          d.timestamp = ts;
          out->mutations.push_back(std::move(d));
        }
        continue;
      default:
        return absl::InvalidArgumentError(absl::StrCat("unknown mutation kind ", static_cast<int>(m.kind())));
    }
    if (!t.HasFamily(m.family())) return UnknownFamily(t, m.family());
    Mutation e;
    e.kind = kind;
    e.family = m.family();
    if (kind != Mutation::Kind::kDeleteFamily) e.qualifier = m.qualifier();
    e.timestamp = ts;
    if (kind == Mutation::Kind::kPut) e.value = m.value();
    out->mutations.push_back(std::move(e));
  }
  return absl::OkStatus();
}

// A transaction's mutations of one row (docs/DESIGN.md §7): every cell takes the write pointer
// as its timestamp; a column delete becomes a tombstone (an empty value), so an older snapshot
// still sees what it hides and an abort can take it back; a rollback is exact-version deletes.
absl::Status TransactionalMutations(int64_t write_pointer, bool rollback, RowMutation* rm) {
  for (Mutation& m : rm->mutations) {
    // Built only for an error: this runs for every cell a transaction writes.
    auto where = [&] {
      return absl::StrCat("row '", RowForError(rm->row), "', column ", m.family, ":", ToStringBinary(m.qualifier));
    };
    if (m.timestamp != kLatestTimestamp && m.timestamp != write_pointer) {
      return absl::InvalidArgumentError(absl::StrCat(where(), ": a transaction's cells take its write pointer ",
                                                     write_pointer, " as timestamp, not ", m.timestamp));
    }
    m.timestamp = write_pointer;
    if (rollback) {
      if (m.kind != Mutation::Kind::kDelete) {
        return absl::InvalidArgumentError(absl::StrCat(where(), ": a rollback deletes versions only"));
      }
      continue;
    }
    switch (m.kind) {
      case Mutation::Kind::kPut:
        if (m.value.empty()) {
          return absl::InvalidArgumentError(absl::StrCat(
              where(), ": a transactional table stores no empty value (an empty value is a transaction's delete)"));
        }
        if (m.qualifier.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where(), ": the empty qualifier is reserved in a transactional table (family deletes)"));
        }
        break;
      case Mutation::Kind::kDelete:
      case Mutation::Kind::kDeleteColumn:
        m.kind = Mutation::Kind::kPut;  // a tombstone
        m.value.clear();
        break;
      case Mutation::Kind::kDeleteFamily:
        return absl::UnimplementedError(absl::StrCat(
            "row '", RowForError(rm->row), "': a transaction cannot delete a whole family or row yet; delete its columns"));
    }
  }
  return absl::OkStatus();
}

TxSnapshot SnapshotFromProto(const rpc::TransactionSnapshot& p) {
  TxSnapshot s;
  s.write_pointer = p.write_pointer();
  s.read_pointer = p.read_pointer();
  s.excluded.assign(p.excluded().begin(), p.excluded().end());
  return s;
}

void SnapshotToProto(const TxSnapshot& s, rpc::TransactionSnapshot* p) {
  p->set_write_pointer(s.write_pointer);
  p->set_read_pointer(s.read_pointer);
  p->mutable_excluded()->Add(s.excluded.begin(), s.excluded.end());
  p->mutable_in_progress()->Add(s.in_progress.begin(), s.in_progress.end());
}

// The newest cell of (family, qualifier) in a one-version read, or nullptr.
const CellView* FindCell(const RowResult& r, std::string_view family, std::string_view qualifier) {
  for (const CellView& c : r.cells()) {
    if (c.family == family && c.qualifier == qualifier) return &c;
  }
  return nullptr;
}

void AddCell(rpc::Row* row, std::string_view family, std::string_view qualifier, int64_t ts,
             std::string_view value) {
  rpc::Cell* c = row->add_cells();
  c->set_family(family.data(), family.size());
  c->set_qualifier(qualifier.data(), qualifier.size());
  c->set_timestamp(ts);
  c->set_value(value.data(), value.size());
}

// The cells a read-modify-write wrote, in row order (family, qualifier), as a Row carries them.
void AddNewValues(const std::vector<Mutation>& muts, rpc::Row* out) {
  std::vector<const Mutation*> sorted;
  for (const Mutation& m : muts) sorted.push_back(&m);
  std::sort(sorted.begin(), sorted.end(), [](const Mutation* a, const Mutation* b) {
    return std::tie(a->family, a->qualifier) < std::tie(b->family, b->qualifier);
  });
  for (const Mutation* m : sorted) AddCell(out, m->family, m->qualifier, m->timestamp, m->value);
}

void RowToProto(const RowResult& r, rpc::Row* out) {
  out->set_row(r.row().data(), r.row().size());
  for (const CellView& c : r.cells()) AddCell(out, c.family, c.qualifier, c.timestamp, c.value);
}

// HBase's rule for a read-modify-write's new timestamp: now, or past the current cell's.
int64_t NextTimestamp(int64_t now, const CellView* current) {
  if (current == nullptr) return now;
  const int64_t after = current->timestamp >= kLatestTimestamp - 1 ? kLatestTimestamp - 1 : current->timestamp + 1;
  return std::max(now, after);
}

// HBase's checkAndMutate comparison: the *given* value against the stored one.
bool ConditionHolds(rpc::CompareOp op, std::string_view given, const CellView* stored) {
  if (op == rpc::NOT_EXISTS) return stored == nullptr;
  // HBase (HRegion.checkAndMutate): an empty given value matches a missing or empty cell for
  // every operator but NOT_EQUAL; a non-empty one never matches a missing cell.
  if (given.empty()) {
    const bool empty_or_missing = stored == nullptr || stored->value.empty();
    return empty_or_missing == (op != rpc::NOT_EQUAL);
  }
  if (stored == nullptr) return false;
  const int c = CompareBytes(given, stored->value);
  switch (op) {
    case rpc::EQUAL: return c == 0;
    case rpc::NOT_EQUAL: return c != 0;
    case rpc::LESS: return c < 0;
    case rpc::LESS_OR_EQUAL: return c <= 0;
    case rpc::GREATER: return c > 0;
    case rpc::GREATER_OR_EQUAL: return c >= 0;
    default: return false;
  }
}

}  // namespace

// ------------------------------------------------------------------------ data

absl::StatusOr<std::shared_ptr<Table>> DataService::FindTable(const std::string& name, const std::string& region) const {
  BASALT_RETURN_IF_ERROR(ValidateTableRef(name));
  return tables_->Find(name, region);
}

absl::StatusOr<std::shared_ptr<Table>> DataService::FindWritableTable(const std::string& name,
                                                                      const std::string& region,
                                                                      int64_t transaction) const {
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, FindTable(name, region));
  if (t->system()) {
    return absl::PermissionDeniedError(absl::StrCat("table ", name, " is written by the server only"));
  }
  if (transaction < 0) {
    return absl::InvalidArgumentError(absl::StrCat("transaction write pointer ", transaction, " is negative"));
  }
  if (t->spec().transactional && transaction == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table ", name, " is transactional: write it in a transaction (Put and Delete; Increment, Append and "
        "CheckAndMutate take none)"));
  }
  if (!t->spec().transactional && transaction != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table ", name, " is not transactional: a transaction cannot write it (create it with TRANSACTIONAL => true)"));
  }
  return t;
}

absl::StatusOr<TransactionManager*> DataService::Transactions() const {
  if (transactions_ == nullptr) {
    return absl::FailedPreconditionError(remote_writer_check_
                                             ? "a cluster's transactions are served by its active master"
                                             : "this server runs no transaction service");
  }
  return transactions_;
}

absl::StatusOr<ReadSpec> DataService::ReadSpecOf(const Table& t, const rpc::ReadOptions& r, bool reversed,
                                                 std::shared_ptr<RequestFilter>* request_filter) const {
  BASALT_ASSIGN_OR_RETURN(ReadSpec spec, ReadSpecFromProto(t, r, reversed));
  if (request_filter != nullptr) *request_filter = std::static_pointer_cast<RequestFilter>(spec.filter);
  BASALT_RETURN_IF_ERROR(AddVisibility(t, r.has_transaction() ? &r.transaction() : nullptr, &spec));
  return spec;
}

absl::Status DataService::AddVisibility(const Table& t, const rpc::TransactionSnapshot* tx, ReadSpec* spec) const {
  if (!t.spec().transactional) {
    if (tx != nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table ", t.name(), " is not transactional: read it outside the transaction (it has no snapshots)"));
    }
    return absl::OkStatus();
  }
  TxSnapshot snapshot;
  if (tx != nullptr) {
    snapshot = SnapshotFromProto(*tx);
    if (snapshot.write_pointer < 0 || snapshot.read_pointer < 0 ||
        !std::is_sorted(snapshot.excluded.begin(), snapshot.excluded.end())) {
      return absl::InvalidArgumentError("the transaction snapshot is malformed (negative pointers, or its "
                                        "excluded pointers not ascending)");
    }
  } else {
    // Outside a transaction: what has committed by now (only where the service runs here).
    absl::StatusOr<TransactionManager*> tm = Transactions();
    if (!tm.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("table ", t.name(), " is transactional: read it in a transaction (",
                                                        tm.status().message(), ")"));
    }
    snapshot = (*tm)->ReadSnapshot();
  }
  // The table outlives the read (a Get holds it, a scan's cursor too), so its families do.
  spec->filter = std::make_shared<TxFilter>(std::move(snapshot), &t.spec().families, std::move(spec->filter));
  return absl::OkStatus();
}

absl::Status DataService::StartTransaction(const TxCaller& caller, const rpc::StartTransactionRequest& req,
                                           rpc::StartTransactionResponse* resp) {
  BASALT_ASSIGN_OR_RETURN(TransactionManager * tm, Transactions());
  BASALT_ASSIGN_OR_RETURN(TxSnapshot s, tm->Start(req.timeout_ms(), caller.user));
  SnapshotToProto(s, resp->mutable_transaction());
  return absl::OkStatus();
}

absl::Status DataService::CommitTransaction(const TxCaller& caller, const rpc::CommitTransactionRequest& req,
                                            rpc::CommitTransactionResponse*) {
  BASALT_ASSIGN_OR_RETURN(TransactionManager * tm, Transactions());
  return tm->Commit(req.write_pointer(), absl::MakeConstSpan(req.changes().data(), req.changes().size()), caller);
}

absl::Status DataService::AbortTransaction(const TxCaller& caller, const rpc::TransactionRequest& req,
                                           rpc::TransactionResponse*) {
  BASALT_ASSIGN_OR_RETURN(TransactionManager * tm, Transactions());
  return tm->Abort(req.write_pointer(), caller);
}

absl::Status DataService::InvalidateTransaction(const TxCaller& caller, const rpc::TransactionRequest& req,
                                                rpc::TransactionResponse*) {
  BASALT_ASSIGN_OR_RETURN(TransactionManager * tm, Transactions());
  return tm->Invalidate(req.write_pointer(), caller);
}

absl::Status DataService::CheckTransactionWriter(const rpc::TransactionWriterRequest& req,
                                                 rpc::TransactionResponse*) {
  BASALT_ASSIGN_OR_RETURN(TransactionManager * tm, Transactions());
  return tm->CheckWriter(req.write_pointer(), TxCaller{req.user(), req.may_end_any()});
}

absl::Status DataService::CheckWriter(const TxCaller& caller, int64_t write_pointer) const {
  if (transactions_ != nullptr) return transactions_->CheckWriter(write_pointer, caller);
  if (remote_writer_check_) return remote_writer_check_(caller, write_pointer);
  return absl::UnavailableError("this server cannot check a transaction's writer yet (not in its cluster)");
}

absl::StatusOr<Durability> DataService::DurabilityOf(int d) const {
  switch (d) {
    case rpc::DURABILITY_DEFAULT: return config_.durability;
    case rpc::DURABILITY_SYNC_WAL: return Durability::kSyncWal;
    case rpc::DURABILITY_ASYNC_WAL: return Durability::kAsyncWal;
    case rpc::DURABILITY_SKIP_WAL: return Durability::kSkipWal;
    default: return absl::InvalidArgumentError(absl::StrCat("unknown durability ", d));
  }
}

absl::Status DataService::GetInto(const Table& t, std::string_view row, const std::string& named_region,
                                  const ReadSpec& spec, const RowResult** out) const {
  BASALT_ASSIGN_OR_RETURN(const HostedRegion* h, RegionOf(t, row, named_region));
  thread_local RowResult result;  // reused: no allocation per cell once warm
  BASALT_RETURN_IF_ERROR(Translate(t, h->region->Get(row, spec, &result), h));
  *out = &result;
  return absl::OkStatus();
}

absl::Status DataService::GetRow(const rpc::GetRequest& req, const RowResult** row) {
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, FindTable(req.table(), req.region()));
  BASALT_RETURN_IF_ERROR(CheckRow(req.row()));
  BASALT_ASSIGN_OR_RETURN(ReadSpec spec, ReadSpecOf(*t, req.read(), /*reversed=*/false));
  return GetInto(*t, req.row(), req.region(), spec, row);
}

absl::Status DataService::GetRow(const verbs::GetRequestView& req, const RowResult** row) {
  thread_local std::string table;  // reused, as the spec below
  table.assign(req.table.data(), req.table.size());
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, FindTable(table));
  BASALT_RETURN_IF_ERROR(CheckRow(req.row));
  thread_local ReadSpec spec;
  spec.columns.resize(req.columns.size());
  for (size_t i = 0; i < req.columns.size(); ++i) {
    BASALT_RETURN_IF_ERROR(SetColumn(*t, i, req.columns[i].family, req.columns[i].qualifiers, &spec));
  }
  BASALT_RETURN_IF_ERROR(
      SetReadOptions(req.min_ts, req.has_max_ts, req.max_ts, req.max_versions, req.skip_block_cache, &spec));
  spec.filter.reset();
  if (req.has_filter) {
    BASALT_ASSIGN_OR_RETURN(spec.filter, RequestFilter::Make(req.filter, /*reversed=*/false));
  }
  BASALT_RETURN_IF_ERROR(AddVisibility(*t, req.has_transaction ? &req.transaction : nullptr, &spec));
  absl::Status s = GetInto(*t, req.row, /*named_region=*/"", spec, row);
  spec.filter.reset();  // nothing of this read outlives it
  return s;
}

absl::Status DataService::Get(const rpc::GetRequest& req, rpc::GetResponse* resp) {
  const RowResult* row = nullptr;
  BASALT_RETURN_IF_ERROR(GetRow(req, &row));
  RowToProto(*row, resp->mutable_row());
  return absl::OkStatus();
}

absl::Status DataService::Mutate(const rpc::MutateRequest& req, rpc::MutateResponse*) {
  return RetryNotServing(req.region(), [&]() -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, FindWritableTable(req.table(), req.region(), req.transaction()));
    BASALT_ASSIGN_OR_RETURN(Durability d, DurabilityOf(req.durability()));
    std::vector<RowMutation> batch(1);
    BASALT_RETURN_IF_ERROR(RowMutationFromProto(*t, req.mutation(), &batch[0]));
    if (req.transaction() != 0) {
      BASALT_RETURN_IF_ERROR(TransactionalMutations(req.transaction(), req.rollback(), &batch[0]));
    }
    BASALT_ASSIGN_OR_RETURN(const HostedRegion* h, RegionOf(*t, batch[0].row, req.region()));
    absl::Status s = Translate(*t, h->region->Mutate(batch, d, Nonce{req.nonce().group(), req.nonce().nonce()}), h);
    if (s.ok()) FaultPoint("data.mutate.applied");  // crash tests: applied, never answered
    return s;
  });
}

namespace {

// Each row's region from a batch's runs (none: the client did not locate the rows).
// InvalidArgument when the runs do not count the rows.
absl::StatusOr<std::vector<const std::string*>> RowRegions(const rpc::BatchMutateRequest& req) {
  std::vector<const std::string*> named;
  if (req.regions().empty()) return named;
  named.reserve(req.rows_size());
  for (const rpc::RegionRun& run : req.regions()) {
    if (run.region().empty() || run.rows() > static_cast<uint64_t>(req.rows_size()) - named.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the batch's region runs do not match its ", req.rows_size(), " rows"));
    }
    named.insert(named.end(), run.rows(), &run.region());
  }
  if (named.size() != static_cast<size_t>(req.rows_size())) {
    return absl::InvalidArgumentError(absl::StrCat("the batch's region runs count ", named.size(), " of its ",
                                                   req.rows_size(), " rows"));
  }
  return named;
}

}  // namespace

absl::Status DataService::BatchMutate(const rpc::BatchMutateRequest& req, rpc::BatchMutateResponse* resp) {
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t,
                          FindWritableTable(req.table(), req.regions().empty() ? "" : req.regions(0).region(),
                                            req.transaction()));
  BASALT_ASSIGN_OR_RETURN(Durability d, DurabilityOf(req.durability()));
  // Rows that convert go to their region's engine together (one log write per region); a row
  // that fails alone gets its own status. If a region refuses its valid rows as a batch, each
  // is retried alone so rows stay independent.
  // The regions the client located the rows in, if it did: a row its region no longer holds is
  // refused alone, and the refusals of closed regions go back to the client (no server retry).
  BASALT_ASSIGN_OR_RETURN(std::vector<const std::string*> named, RowRegions(req));
  const bool client_routes = !named.empty();
  if (req.cluster_ids_size() > static_cast<int>(kMaxWalClusterIds)) {
    return absl::InvalidArgumentError(absl::StrCat("a batch names ", req.cluster_ids_size(),
                                                   " clusters it came through; at most ", kMaxWalClusterIds));
  }
  for (const std::string& id : req.cluster_ids()) {
    if (id.empty() || id.size() > 64) return absl::InvalidArgumentError("a cluster id is 1 to 64 bytes");
  }
  const std::vector<std::string> clusters(req.cluster_ids().begin(), req.cluster_ids().end());
  std::vector<RowMutation> batch;
  std::vector<int> index;  // batch position -> request position
  std::vector<absl::Status> results(req.rows_size());
  for (int i = 0; i < req.rows_size(); ++i) {
    RowMutation rm;
    results[i] = RowMutationFromProto(*t, req.rows(i), &rm);
    if (results[i].ok() && req.transaction() != 0) {
      results[i] = TransactionalMutations(req.transaction(), req.rollback(), &rm);
    }
    if (results[i].ok() && client_routes) results[i] = RegionOf(*t, rm.row, *named[i]).status();
    if (results[i].ok()) {
      batch.push_back(std::move(rm));
      index.push_back(i);
    }
  }
  // Rows a split's closed region refused go again to the table installed after it (the others
  // are not written twice).
  NotServingRetry retry;
  for (;;) {
    std::vector<size_t> again;  // positions in batch
    for (auto& [h, rows] : t->GroupByRegion(batch)) {
      std::vector<RowMutation> part;
      part.reserve(rows.size());
      for (size_t j : rows) part.push_back(std::move(batch[j]));
      absl::Status s = h->region->Mutate(part, d, Nonce{}, clusters);
      if (!s.ok() && s.code() == absl::StatusCode::kInvalidArgument && part.size() > 1) {
        for (size_t k = 0; k < part.size(); ++k) {
          std::vector<RowMutation> one(1);
          one[0] = std::move(part[k]);
          results[index[rows[k]]] = Translate(*t, h->region->Mutate(one, d, Nonce{}, clusters), h);
        }
      } else {
        s = Translate(*t, s, h);
        for (size_t k = 0; k < rows.size(); ++k) {
          results[index[rows[k]]] = s;
          if (client_routes || !IsNotServingRegion(s)) continue;
          batch[rows[k]] = std::move(part[k]);
          again.push_back(rows[k]);
        }
      }
    }
    if (again.empty() || !retry.Wait()) break;
    absl::StatusOr<std::shared_ptr<Table>> next = FindWritableTable(req.table(), "", req.transaction());
    if (!next.ok()) {
      for (size_t j : again) results[index[j]] = next.status();
      break;
    }
    t = *std::move(next);
    std::sort(again.begin(), again.end());
    std::vector<RowMutation> rest;
    std::vector<int> rest_index;
    for (size_t j : again) {
      rest.push_back(std::move(batch[j]));
      rest_index.push_back(index[j]);
    }
    batch = std::move(rest);
    index = std::move(rest_index);
  }
  for (const absl::Status& s : results) {
    rpc::RowStatus* rs = resp->add_results();
    rs->set_code(static_cast<int>(s.code()));
    rs->set_message(std::string(s.message()));
    if (std::optional<std::string> region = NotServingRegionOf(s)) rs->set_not_serving_region(*std::move(region));
  }
  return absl::OkStatus();
}

namespace {

Nonce NonceOf(const rpc::Nonce& n) { return Nonce{n.group(), n.nonce()}; }

// Increment and Append: under the row's lock, each named column's new value is
// combine(column, stored value or nullopt, &new value); a column named twice combines again
// onto its first result. The new cells take HBase's timestamp rule (NextTimestamp). `out`
// gets the new values.
template <class Column, class Combine>
absl::Status ReadModifyWriteColumns(Table* t, const std::string& row, const std::string& named_region,
                                    const google::protobuf::RepeatedPtrField<Column>& columns, Durability d,
                                    Nonce nonce, std::string_view what, Combine combine, rpc::Row* out) {
  if (columns.empty()) return absl::InvalidArgumentError(absl::StrCat(AV(what), " names no columns"));
  ReadSpec spec;
  for (const Column& c : columns) {
    if (!t->HasFamily(c.family())) return UnknownFamily(*t, c.family());
    spec.columns.push_back({c.family(), {c.qualifier()}});
  }
  BASALT_ASSIGN_OR_RETURN(const HostedRegion* h, RegionOf(*t, row, named_region));
  Region* region = h->region.get();
  rpc::Row result;
  absl::Status s = region->MutateRowWith(
      row, spec,
      [&](const RowResult& current, std::vector<Mutation>* muts) -> absl::Status {
        result.Clear();
        result.set_row(row);
        if (muts == nullptr) {
          // A retry of an operation applied before: the columns as they are now.
          for (const CellView& c : current.cells()) AddCell(&result, c.family, c.qualifier, c.timestamp, c.value);
          return absl::OkStatus();
        }
        const int64_t now = region->Now();
        std::map<std::pair<std::string, std::string>, size_t> pos;  // column -> index in muts
        for (const Column& c : columns) {
          auto key = std::make_pair(c.family(), c.qualifier());
          if (auto it = pos.find(key); it != pos.end()) {
            Mutation& m = (*muts)[it->second];
            const std::string so_far = m.value;
            BASALT_RETURN_IF_ERROR(combine(c, std::optional<std::string_view>(so_far), &m.value));
            continue;
          }
          const CellView* cell = FindCell(current, c.family(), c.qualifier());
          Mutation m;
          m.family = c.family();
          m.qualifier = c.qualifier();
          m.timestamp = NextTimestamp(now, cell);
          std::optional<std::string_view> stored;
          if (cell != nullptr) stored = cell->value;
          BASALT_RETURN_IF_ERROR(combine(c, stored, &m.value));
          pos.emplace(std::move(key), muts->size());
          muts->push_back(std::move(m));
        }
        AddNewValues(*muts, &result);
        return absl::OkStatus();
      },
      d, nonce);
  BASALT_RETURN_IF_ERROR(Translate(*t, s, h));
  *out = std::move(result);
  return absl::OkStatus();
}

}  // namespace

absl::Status DataService::Increment(const rpc::IncrementRequest& req, rpc::IncrementResponse* resp) {
  return RetryNotServing(req.region(), [&]() -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, FindWritableTable(req.table(), req.region()));
    BASALT_RETURN_IF_ERROR(CheckRow(req.row()));
    BASALT_ASSIGN_OR_RETURN(Durability d, DurabilityOf(req.durability()));
    auto add = [](const rpc::ColumnAmount& c, std::optional<std::string_view> stored, std::string* value) {
      int64_t old = 0;
      if (stored.has_value()) {
        if (stored->size() != 8) {
          return absl::InvalidArgumentError(absl::StrCat("value of ", absl::CHexEscape(c.family()), ":",
                                                         absl::CHexEscape(c.qualifier()), " is ", stored->size(),
                                                         " bytes, not a 64-bit counter"));
        }
        old = static_cast<int64_t>(DecodeFixed64BE(stored->data()));
      }
      // Two's complement wrap-around, as Java's long addition.
      *value = Fixed64BE(static_cast<uint64_t>(old) + static_cast<uint64_t>(c.amount()));
      return absl::OkStatus();
    };
    BASALT_RETURN_IF_ERROR(ReadModifyWriteColumns(t.get(), req.row(), req.region(), req.columns(), d,
                                                  NonceOf(req.nonce()), "increment", add, resp->mutable_row()));
    FaultPoint("data.increment.applied");  // crash tests: applied, never answered
    return absl::OkStatus();
  });
}

absl::Status DataService::Append(const rpc::AppendRequest& req, rpc::AppendResponse* resp) {
  return RetryNotServing(req.region(), [&]() -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, FindWritableTable(req.table(), req.region()));
    BASALT_RETURN_IF_ERROR(CheckRow(req.row()));
    BASALT_ASSIGN_OR_RETURN(Durability d, DurabilityOf(req.durability()));
    auto append = [](const rpc::ColumnValue& c, std::optional<std::string_view> stored, std::string* value) {
      value->assign(stored.value_or(std::string_view()));
      value->append(c.value());
      return absl::OkStatus();
    };
    BASALT_RETURN_IF_ERROR(ReadModifyWriteColumns(t.get(), req.row(), req.region(), req.columns(), d,
                                                  NonceOf(req.nonce()), "append", append, resp->mutable_row()));
    FaultPoint("data.append.applied");
    return absl::OkStatus();
  });
}

absl::Status DataService::CheckAndMutate(const rpc::CheckAndMutateRequest& req, rpc::CheckAndMutateResponse* resp) {
  return RetryNotServing(req.region(), [&]() -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, FindWritableTable(req.table(), req.region()));
    BASALT_RETURN_IF_ERROR(CheckRow(req.row()));
    BASALT_ASSIGN_OR_RETURN(Durability d, DurabilityOf(req.durability()));
    const rpc::Condition& cond = req.condition();
    if (!t->HasFamily(cond.family())) return UnknownFamily(*t, cond.family());
    if (!rpc::CompareOp_IsValid(cond.op())) {
      return absl::InvalidArgumentError(absl::StrCat("unknown compare op ", static_cast<int>(cond.op())));
    }
    if (req.mutation().row() != req.row()) {
      return absl::InvalidArgumentError(absl::StrCat("mutation row '", RowForError(req.mutation().row()),
                                                     "' differs from the checked row '", RowForError(req.row()), "'"));
    }
    RowMutation rm;
    BASALT_RETURN_IF_ERROR(RowMutationFromProto(*t, req.mutation(), &rm));
    ReadSpec spec;
    spec.columns.push_back({cond.family(), {cond.qualifier()}});
    bool processed = false;
    BASALT_ASSIGN_OR_RETURN(const HostedRegion* h, RegionOf(*t, req.row(), req.region()));
    absl::Status s = h->region->MutateRowWith(
        req.row(), spec,
        [&](const RowResult& current, std::vector<Mutation>* muts) -> absl::Status {
          if (muts == nullptr) {  // a retry of one applied before: its condition held then
            processed = true;
            return absl::OkStatus();
          }
          processed = ConditionHolds(cond.op(), cond.value(), FindCell(current, cond.family(), cond.qualifier()));
          if (processed) *muts = rm.mutations;
          return absl::OkStatus();
        },
        d, NonceOf(req.nonce()));
    BASALT_RETURN_IF_ERROR(Translate(*t, s, h));
    if (processed) FaultPoint("data.check_and_mutate.applied");
    resp->set_processed(processed);
    return absl::OkStatus();
  });
}

absl::StatusOr<std::unique_ptr<ScanCursor>> DataService::OpenScan(const rpc::ScanRequest& req) {
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, FindTable(req.table(), req.region()));
  std::shared_ptr<RequestFilter> request_filter;
  BASALT_ASSIGN_OR_RETURN(ReadSpec read, ReadSpecOf(*t, req.read(), req.reversed(), &request_filter));
  if (req.start_row().size() > kMaxRowLength || req.stop_row().size() > kMaxRowLength) {
    return absl::InvalidArgumentError(absl::StrCat("scan bound longer than ", kMaxRowLength, " bytes"));
  }
  ScanSpec spec;
  static_cast<ReadSpec&>(spec) = std::move(read);
  spec.start_row = req.start_row();
  spec.stop_row = req.stop_row();
  spec.limit = req.limit();
  spec.reversed = req.reversed();
  spec.start_exclusive = req.start_exclusive();
  std::unique_ptr<ScanCursor> c(new ScanCursor());
  c->filter_ = std::move(request_filter);
  c->rows_per_message_ = req.rows_per_message() != 0 ? req.rows_per_message() : config_.scan_rows_per_message;
  c->bytes_per_message_ = config_.scan_bytes_per_message;
  absl::StatusOr<std::unique_ptr<RegionScanner>> scanner;
  if (req.region().empty()) {
    scanner = t->Scan(spec);
  } else {
    // One region's rows, clipped to it (a cluster's client scans region by region).
    auto h = std::find_if(t->regions().begin(), t->regions().end(),
                          [&](const HostedRegion& x) { return !x.placeholder && x.encoded_name == req.region(); });
    if (h == t->regions().end()) {
      return NotServingRegionError(req.region(), absl::StrCat("region ", req.region(), " of table ", t->name(),
                                                              " is not served here (it split, merged or moved)"));
    }
    scanner = h->region->Scan(spec);  // clipped to the region's rows, either direction
    if (!scanner.ok()) return Translate(*t, scanner.status(), &*h);
  }
  if (!scanner.ok()) return Translate(*t, scanner.status());
  c->table_ = std::move(t);
  c->scanner_ = *std::move(scanner);
  c->region_ = req.region();
  c->tables_ = tables_;
  return c;
}

ScanCursor::~ScanCursor() {
  if (close_hook_ != 0) table_->RemoveCloseHook(close_hook_);
}

absl::Status ScanCursor::CheckRegionServed() {
  // No lookup until a close, split, merge or open on this server replaced the table (and no
  // reference count touched per message before that).
  if (region_.empty() || !table_->superseded()) return absl::OkStatus();
  if (std::shared_ptr<Table> seen = served_in_.lock(); seen != nullptr && !seen->superseded()) {
    return absl::OkStatus();
  }
  absl::StatusOr<std::shared_ptr<Table>> now = tables_->Find(table_->name());
  if (now.ok() && *now != nullptr) {
    const std::vector<HostedRegion>& hosted = (*now)->regions();
    if (std::any_of(hosted.begin(), hosted.end(), [&](const HostedRegion& h) {
          return !h.placeholder && !h.unassigned && h.encoded_name == region_;
        })) {
      served_in_ = *now;
      return absl::OkStatus();
    }
  }
  return NotServingRegionError(region_, absl::StrCat("region ", region_, " of table ", table_->name(),
                                                     " closed while scanned (it split, merged or moved): the scan "
                                                     "goes on after its last row, where that row is now"));
}

void ScanCursor::CancelOnClose(std::function<void()> cancel) {
  if (close_hook_ != 0) table_->RemoveCloseHook(close_hook_);
  // 0 when already closed: Next then ends the scan itself.
  close_hook_ = table_->AddCloseHook(std::move(cancel));
}

absl::Status ScanCursor::Next(rpc::ScanResponse* out, bool* done) {
  bool time_up = false;
  return Next(out, done, absl::InfiniteFuture(), &time_up);
}

absl::Status ScanCursor::Next(rpc::ScanResponse* out, bool* done, absl::Time deadline, bool* time_up) {
  *done = false;
  *time_up = false;
  scanner_->SetDeadline(deadline);
  uint64_t bytes = 0;
  for (uint32_t n = 0; n < rows_per_message_ && bytes < bytes_per_message_; ++n) {
    // A disabled table ends its scans at the next message, so Enable need not wait for them.
    if (table_->closed()) return table_->ClosedError();
    if (n == 0) BASALT_RETURN_IF_ERROR(CheckRegionServed());
    absl::StatusOr<bool> more = scanner_->Next(&row_);
    if (!more.ok()) return more.status();
    if (!*more) {
      *done = true;
      break;
    }
    if (row_.empty()) {  // the deadline passed while the filter refused rows
      *time_up = true;
      break;
    }
    RowToProto(row_, out->add_rows());
    bytes += row_.RawBytes();
  }
  if (filter_ != nullptr) {
    std::vector<uint64_t> pages = filter_->TakePageRows();
    if (std::any_of(pages.begin(), pages.end(), [](uint64_t n) { return n != 0; })) {
      out->mutable_page_rows()->Assign(pages.begin(), pages.end());
    }
  }
  return absl::OkStatus();
}


}  // namespace basalt::server
