#include "client/core.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::client_internal {

// ---------------------------------------------------------------------------------------------
// Scheduler

Scheduler::~Scheduler() {
  std::thread t;
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
    t = std::move(thread_);
  }
  if (t.joinable()) t.join();
}

void Scheduler::After(absl::Duration delay, std::function<void()> fn) {
  absl::MutexLock l(&mu_);
  tasks_.emplace(absl::Now() + delay, std::move(fn));
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
}

void Scheduler::Loop() {
  absl::MutexLock l(&mu_);
  while (!stop_) {
    if (tasks_.empty()) {
      mu_.Await(absl::Condition(
          +[](Scheduler* s) ABSL_NO_THREAD_SAFETY_ANALYSIS { return s->stop_ || !s->tasks_.empty(); }, this));
      continue;
    }
    absl::Time first = tasks_.begin()->first;
    if (absl::Now() < first) {
      // Wakes early when a sooner task or stop arrives.
      size_t n = tasks_.size();
      struct Arg {
        Scheduler* s;
        size_t n;
        absl::Time first;
      } arg{this, n, first};
      mu_.AwaitWithDeadline(absl::Condition(
                                +[](Arg* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                  return a->s->stop_ || a->s->tasks_.size() != a->n ||
                                         a->s->tasks_.begin()->first != a->first;
                                },
                                &arg),
                            first);
      continue;
    }
    std::function<void()> fn = std::move(tasks_.begin()->second);
    tasks_.erase(tasks_.begin());
    mu_.Unlock();
    fn();
    fn = nullptr;  // captured state goes outside the lock, before the next task
    mu_.Lock();
  }
}

// ---------------------------------------------------------------------------------------------
// Core

namespace {

constexpr char kMetaTable[] = "basalt:meta";

// A table's serving regions as basalt:meta lists them (docs/FORMATS.md: rows
// "<table>,<start key>,<id>", family info), split and merged parents left out. One stream, no
// retry of its own: the call that needed it retries.
absl::StatusOr<std::vector<RegionLocation>> ReadMeta(Core* core, const std::string& table, absl::Time deadline) {
  rpc::ScanRequest req;
  req.set_table(kMetaTable);
  // Table names have no ',' and '-' follows ',': these bounds hold exactly the table's rows.
  req.set_start_row(table + ",");
  req.set_stop_row(table + "-");
  req.mutable_read()->add_columns()->set_family("info");
  BASALT_ASSIGN_OR_RETURN(GrpcPath * path, core->Grpc());
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  std::unique_ptr<grpc::ClientReader<rpc::ScanResponse>> reader = path->data_stub()->Scan(&ctx, req);
  std::vector<RegionLocation> regions;
  rpc::ScanResponse resp;
  while (reader->Read(&resp)) {
    for (const rpc::Row& row : resp.rows()) {
      RegionLocation loc;
      std::string state;
      for (const rpc::Cell& c : row.cells()) {
        if (c.qualifier() == "encoded") loc.encoded_name = c.value();
        if (c.qualifier() == "startkey") loc.start_key = c.value();
        if (c.qualifier() == "endkey") loc.end_key = c.value();
        if (c.qualifier() == "server") loc.server = c.value();
        if (c.qualifier() == "state") state = c.value();
      }
      if (state == "SPLIT" || state == "MERGED") continue;
      if (loc.encoded_name.empty()) {
        return absl::DataLossError(
            absl::StrCat(kMetaTable, " row \"", PrintableRow(row.row()), "\" has no info:encoded"));
      }
      regions.push_back(std::move(loc));
    }
  }
  BASALT_RETURN_IF_ERROR(FromGrpcStatus(reader->Finish()));
  return regions;
}

}  // namespace

void Core::SetNonce(rpc::Nonce* out) {
  if (!options_.nonces) return;
  thread_local std::mt19937_64 rng((static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}());
  uint64_t n = 0;
  while (n == 0) n = rng();  // 0 is none
  out->set_group(nonce_group_);
  out->set_nonce(n);
}

Core::Core(const ConnectionOptions& options, std::unique_ptr<NetworkSelector> selector, std::string server,
           std::unique_ptr<ZooKeeper> zk)
    : options_(options),
      policy_(RetryPolicy::From(options)),
      attempt_timeout_(zk == nullptr ? absl::InfiniteDuration()
                       : options.attempt_timeout > absl::ZeroDuration()
                           ? options.attempt_timeout
                           : std::min(options.timeout, absl::Seconds(2))),
      selector_(std::move(selector)),
      cluster_(zk != nullptr),
      nonce_group_((static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()),
      regions_([this](const std::string& table, absl::Time deadline) {
        return WithContextOr(ReadMeta(this, table, deadline), absl::StrCat("locating regions of ", table));
      }) {
  absl::MutexLock l(&servers_mu_);
  servers_.push_back(std::move(server));
  server_.store(&servers_.back(), std::memory_order_release);
  zk_ = std::move(zk);
}

namespace {
// A region meta names no server for is in transition: refused as not served, so that it is
// located again after a backoff.
absl::Status ServedOrInTransition(const std::string& table, const std::string& region, const std::string& to) {
  if (region.empty() || !to.empty()) return absl::OkStatus();
  return NotServingRegionError(region, absl::StrCat("region ", region, " of table ", table,
                                                    " is in transition (no server serves it yet)"));
}
}  // namespace

absl::Status Core::Route(const std::string& table, std::string_view row, absl::Time deadline, std::string* region,
                         std::string* to, std::string* end_key) {
  to->clear();
  if (!cluster_) return regions_.Locate(table, row, deadline, region);
  BASALT_RETURN_IF_ERROR(regions_.Locate(table, row, deadline, region, to, end_key));
  return ServedOrInTransition(table, *region, *to);
}

absl::Status Core::RouteBefore(const std::string& table, std::string_view row, absl::Time deadline,
                               std::string* region, std::string* to, std::string* start_key) {
  to->clear();
  BASALT_RETURN_IF_ERROR(regions_.LocateBefore(table, row, deadline, region, to, start_key));
  return ServedOrInTransition(table, *region, *to);
}

void Core::NoteUnanswered(const absl::Status& s, const std::string& region) {
  if (!cluster_ || region.empty() || IsNotServingRegion(s)) return;
  if (!absl::IsUnavailable(s) && !absl::IsDeadlineExceeded(s)) return;
  regions_.Forget(region);
}

void Core::NoteRefusal(const absl::Status& s) {
  if (std::optional<std::string> region = NotServingRegionOf(s)) regions_.Forget(*region);
}

void Core::NoteFailure(const absl::Status& s) {
  NoteRefusal(s);
  if (!absl::IsUnavailable(s) || IsNotServingRegion(s)) return;
  absl::MutexLock l(&servers_mu_);
  if (zk_ == nullptr) return;
  if (zk_->expired()) {  // this client's session ended (a long pause): open another
    ZooKeeper::Options o = zk_->options();
    absl::StatusOr<std::unique_ptr<ZooKeeper>> again = ZooKeeper::Connect(o);
    if (!again.ok()) return;  // the next failure tries again
    zk_ = *std::move(again);
  }
  absl::StatusOr<std::string> now = MetaServerFromZooKeeper(zk_.get(), options_.zookeeper_znode_parent);
  if (!now.ok() || *now == *server_.load(std::memory_order_relaxed)) return;
  servers_.push_back(*std::move(now));
  server_.store(&servers_.back(), std::memory_order_release);
}

absl::StatusOr<std::string> MetaServerFromZooKeeper(ZooKeeper* zk, const std::string& parent) {
  const std::string path = parent + "/meta-server";
  BASALT_ASSIGN_OR_RETURN(std::optional<ZkNode> node, zk->Get(path));
  if (!node.has_value() || node->data.empty()) {
    return absl::UnavailableError(absl::StrCat("no server holds meta (", path, " in ZooKeeper ",
                                               zk->options().quorum, " is missing or empty)"));
  }
  return node->data;
}

absl::Time Core::AttemptDeadline(absl::Time deadline) const {
  if (attempt_timeout_ == absl::InfiniteDuration()) return deadline;
  return std::min(deadline, absl::Now() + attempt_timeout_);
}

absl::Status Core::AttemptStatus(absl::Status s, absl::Time attempt_deadline, absl::Time deadline) const {
  if (!absl::IsDeadlineExceeded(s) || attempt_deadline >= deadline) return s;
  return absl::UnavailableError(absl::StrCat(s.message(), " (no answer within the attempt timeout of ",
                                             absl::FormatDuration(attempt_timeout_),
                                             ": its server may be paused or cut off; the row is located afresh)"));
}

absl::Status Core::Retry(bool retriable_op, const std::function<absl::Status(absl::Time deadline)>& attempt,
                         bool bounded) {
  return RetryLoop(policy_, retriable_op, Deadline(), [&](absl::Time deadline) {
    const absl::Time attempt_deadline = bounded ? AttemptDeadline(deadline) : deadline;
    absl::Status s = AttemptStatus(attempt(attempt_deadline), attempt_deadline, deadline);
    NoteFailure(s);
    return s;
  });
}

Core::~Core() { WaitAsyncIdle(); }

void Core::BeginAsync() {
  absl::MutexLock l(&mu_);
  async_in_flight_++;
}

void Core::EndAsync() {
  absl::MutexLock l(&mu_);
  async_in_flight_--;
}

void Core::WaitAsyncIdle() {
  absl::MutexLock l(&mu_);
  mu_.Await(absl::Condition(
      +[](int64_t* n) { return *n == 0; }, &async_in_flight_));
}

struct Core::AsyncOp {
  Core* core;
  bool retriable_op;
  absl::Time deadline;
  int attempts = 0;
  AsyncAttempt attempt;
  std::function<void(absl::Status)> finish;
};

void Core::RunAsync(bool retriable_op, AsyncAttempt attempt, std::function<void(absl::Status)> finish) {
  BeginAsync();
  auto op = std::make_shared<AsyncOp>();
  op->core = this;
  op->retriable_op = retriable_op;
  op->deadline = Deadline();
  op->attempt = std::move(attempt);
  op->finish = std::move(finish);
  Attempt(std::move(op));
}

void Core::Attempt(std::shared_ptr<AsyncOp> op) {
  op->attempts++;
  const absl::Time attempt_deadline = op->core->AttemptDeadline(op->deadline);
  PathCallback on_done = [op, attempt_deadline](absl::Status s) {
    s = op->core->AttemptStatus(std::move(s), attempt_deadline, op->deadline);
    if (!s.ok()) {
      op->core->NoteFailure(s);
      std::optional<absl::Duration> delay =
          NextRetry(op->core->policy_, op->retriable_op, s, op->attempts, op->deadline, absl::Now());
      if (delay.has_value()) {
        op->core->scheduler_.After(*delay, [op] { Attempt(op); });
        return;
      }
      s = AfterAttempts(s, op->attempts);
    }
    Core* core = op->core;
    {
      std::function<void(absl::Status)> finish = std::move(op->finish);
      finish(std::move(s));
    }  // the user's callback and its captures are gone before the Connection may go
    core->EndAsync();
  };
  absl::Status started = op->attempt(attempt_deadline, on_done);
  if (!started.ok()) {
    // Not started: report from the timer thread, never from inside the caller's call.
    op->core->scheduler_.After(absl::ZeroDuration(),
                               [on_done = std::move(on_done), started]() mutable { on_done(started); });
  }
}

absl::Status Core::CallGrpc(bool retriable_op,
                            const std::function<grpc::Status(GrpcPath* path, grpc::ClientContext* ctx)>& call) {
  return CallRow(retriable_op, "", "", nullptr, call);
}

absl::Status Core::CallRow(bool retriable_op, const std::string& table, std::string_view row, std::string* region,
                           const std::function<grpc::Status(GrpcPath* path, grpc::ClientContext* ctx)>& call) {
  std::string to;
  return Retry(
      retriable_op,
      [&](absl::Time deadline) -> absl::Status {
        if (region != nullptr) BASALT_RETURN_IF_ERROR(Route(table, row, deadline, region, &to));
        BASALT_ASSIGN_OR_RETURN(GrpcPath * path, Grpc(Target(to)));
        grpc::ClientContext ctx;
        SetDeadline(&ctx, deadline);
        absl::Status s = FromGrpcStatus(call(path, &ctx));
        if (region != nullptr) NoteUnanswered(s, *region);
        return s;
      },
      /*bounded=*/region != nullptr);
}

// ---------------------------------------------------------------------------------------------
// Batches

std::vector<BatchPart> SplitBatch(const std::string& table, const std::vector<RowMutationsBase>& rows,
                                  std::vector<absl::Status>* statuses) {
  std::vector<BatchPart> parts;
  std::vector<size_t> part_bytes;  // approximate request size of each part
  statuses->assign(rows.size(), absl::OkStatus());
  // The part the rows of a durability (and transaction, and rollback or not) go to now.
  std::map<std::tuple<Durability, int64_t, bool>, size_t> part_of;
  for (size_t i = 0; i < rows.size(); i++) {
    const RowMutationsBase& m = rows[i];
    const size_t bytes = MutationBytes(m);
    const auto key = std::make_tuple(m.durability, m.transaction, m.rollback);
    auto it = part_of.find(key);
    if (it == part_of.end() ||
        (part_bytes[it->second] + bytes > kMaxBatchRequestBytes && !parts[it->second].indices.empty())) {
      part_of[key] = parts.size();
      it = part_of.find(key);
      parts.emplace_back();
      part_bytes.push_back(0);
      parts.back().request.set_table(table);
      parts.back().request.set_durability(ToProto(m.durability));
      parts.back().request.set_transaction(m.transaction);
      parts.back().request.set_rollback(m.rollback);
    }
    BatchPart& part = parts[it->second];
    rpc::RowMutations* out = part.request.add_rows();
    absl::Status s = ToProto(m, out);
    if (!s.ok()) {
      part.request.mutable_rows()->RemoveLast();
      (*statuses)[i] = s;
      continue;
    }
    part.indices.push_back(i);
    part_bytes[it->second] += bytes;
  }
  // A part may have lost every row to conversion errors.
  std::erase_if(parts, [](const BatchPart& p) { return p.indices.empty(); });
  return parts;
}

absl::Status RowStatusToStatus(const rpc::RowStatus& rs) {
  if (rs.code() == 0) return absl::OkStatus();
  if (!rs.not_serving_region().empty() && rs.code() == static_cast<int>(absl::StatusCode::kUnavailable)) {
    return NotServingRegionError(rs.not_serving_region(), rs.message());
  }
  return absl::Status(static_cast<absl::StatusCode>(rs.code()), rs.message());
}

namespace {
// The deferred rows back at the end of `rows` (their order kept); `status` for each, until sent.
void Undefer(BatchPart* part, google::protobuf::RepeatedPtrField<rpc::RowMutations>* rows,
             std::vector<size_t>* indices, std::vector<absl::Status>* statuses, const absl::Status& status) {
  for (int j = 0; j < part->deferred.size(); j++) {
    rows->Add(std::move(*part->deferred.Mutable(j)));
    indices->push_back(part->deferred_indices[j]);
    if (statuses != nullptr) (*statuses)[part->deferred_indices[j]] = status;
  }
  part->deferred.Clear();
  part->deferred_indices.clear();
}
}  // namespace

absl::Status LocateBatch(Core* core, absl::Time deadline, BatchPart* part) {
  rpc::BatchMutateRequest& req = part->request;
  req.clear_regions();
  // Rows an attempt that never reached a server deferred go again.
  Undefer(part, req.mutable_rows(), &part->indices, nullptr, absl::OkStatus());
  // Each row's region as an index into `names` (a batch spans few regions: one name each), and
  // its server (in a cluster; else empty: the connection's server).
  const int all = req.rows_size();
  std::vector<std::string> names;
  std::vector<int> region_of(all);
  std::vector<std::string> to(all);
  std::string name;
  for (int i = 0; i < all; i++) {
    BASALT_RETURN_IF_ERROR(core->Route(req.table(), req.rows(i).row(), deadline, &name, &to[i]));
    if (name.empty()) {  // the server routes them
      part->server = core->server();
      return absl::OkStatus();
    }
    auto it = std::find(names.begin(), names.end(), name);
    region_of[i] = static_cast<int>(it - names.begin());
    if (it == names.end()) names.push_back(name);
  }
  // This attempt goes to the first row's server; rows of other servers' regions wait for the next.
  part->server = all == 0 ? core->server() : core->Target(to[0]);
  std::vector<int> which;  // of the rows sent now
  if (core->cluster()) {
    google::protobuf::RepeatedPtrField<rpc::RowMutations> here;
    std::vector<size_t> here_indices;
    for (int i = 0; i < all; i++) {
      if (to[i] == to[0]) {
        here.Add(std::move(*req.mutable_rows(i)));
        here_indices.push_back(part->indices[i]);
        which.push_back(region_of[i]);
      } else {
        part->deferred.Add(std::move(*req.mutable_rows(i)));
        part->deferred_indices.push_back(part->indices[i]);
      }
    }
    req.mutable_rows()->Swap(&here);
    part->indices = std::move(here_indices);
  } else {
    which = std::move(region_of);
  }
  const int n = req.rows_size();
  std::vector<int> order(n);
  for (int i = 0; i < n; i++) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return which[a] < which[b]; });
  google::protobuf::RepeatedPtrField<rpc::RowMutations> rows;
  rows.Reserve(n);
  std::vector<size_t> indices(n);
  for (int k = 0; k < n; k++) {
    const int i = order[k];
    rows.Add(std::move(*req.mutable_rows(i)));
    indices[k] = part->indices[i];
    if (k == 0 || which[i] != which[order[k - 1]]) {
      rpc::RegionRun* run = req.add_regions();
      run->set_region(names[which[i]]);
    }
    rpc::RegionRun* run = req.mutable_regions(req.regions_size() - 1);
    run->set_rows(run->rows() + 1);
  }
  req.mutable_rows()->Swap(&rows);
  part->indices = std::move(indices);
  return absl::OkStatus();
}

absl::Status UnsentBatch(Core* core, BatchPart* part, absl::Status s) {
  for (const rpc::RegionRun& run : part->request.regions()) core->NoteUnanswered(s, run.region());
  part->request.clear_regions();
  Undefer(part, part->request.mutable_rows(), &part->indices, nullptr, s);
  return s;
}

absl::Status SettleBatch(Core* core, BatchPart* part, const rpc::BatchMutateResponse& resp,
                         std::vector<absl::Status>* statuses) {
  rpc::BatchMutateRequest& req = part->request;
  if (resp.results_size() != req.rows_size()) {
    return absl::InternalError(absl::StrCat("the server answered ", resp.results_size(), " statuses for ",
                                            req.rows_size(), " rows"));
  }
  absl::Status refused;
  google::protobuf::RepeatedPtrField<rpc::RowMutations> again;
  std::vector<size_t> again_indices;
  for (int j = 0; j < req.rows_size(); j++) {
    absl::Status s = RowStatusToStatus(resp.results(j));
    if (IsNotServingRegion(s)) {
      // Rows go in runs per region: each refusing region is forgotten once.
      if (again.empty() || resp.results(j).not_serving_region() != resp.results(j - 1).not_serving_region()) {
        core->NoteRefusal(s);
      }
      again.Add(std::move(*req.mutable_rows(j)));
      again_indices.push_back(part->indices[j]);
      refused = s;
    }
    (*statuses)[part->indices[j]] = std::move(s);
  }
  if (!part->deferred.empty()) {
    // Not sent yet: failed as refused if the retries run out before they go.
    const absl::Status waiting = NotServingRegionError(
        "", absl::StrCat(part->deferred.size(), " row(s) of regions on other servers not sent yet"));
    Undefer(part, &again, &again_indices, statuses, waiting);
    if (refused.ok()) refused = waiting;
  }
  req.mutable_rows()->Swap(&again);
  req.clear_regions();
  part->indices = std::move(again_indices);
  return refused;
}

}  // namespace basalt::client_internal
