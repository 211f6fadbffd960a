#include "client/core.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"

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

Core::Core(const ConnectionOptions& options, std::unique_ptr<NetworkSelector> selector)
    : options_(options), policy_(RetryPolicy::From(options)), selector_(std::move(selector)) {}

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
  PathCallback on_done = [op](absl::Status s) {
    if (!s.ok()) {
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
  absl::Status started = op->attempt(op->deadline, on_done);
  if (!started.ok()) {
    // Not started: report from the timer thread, never from inside the caller's call.
    op->core->scheduler_.After(absl::ZeroDuration(),
                               [on_done = std::move(on_done), started]() mutable { on_done(started); });
  }
}

absl::Status Core::CallGrpc(bool retriable_op,
                            const std::function<grpc::Status(GrpcPath* path, grpc::ClientContext* ctx)>& call) {
  return RetryLoop(policy_, retriable_op, Deadline(), [&](absl::Time deadline) -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(GrpcPath * path, Grpc());
    grpc::ClientContext ctx;
    SetDeadline(&ctx, deadline);
    return FromGrpcStatus(call(path, &ctx));
  });
}

// ---------------------------------------------------------------------------------------------
// Batches

std::vector<BatchPart> SplitBatch(const std::string& table, const std::vector<RowMutationsBase>& rows,
                                  std::vector<absl::Status>* statuses) {
  std::vector<BatchPart> parts;
  std::vector<size_t> part_bytes;  // approximate request size of each part
  statuses->assign(rows.size(), absl::OkStatus());
  std::map<Durability, size_t> part_of;  // the part a durability's rows go to now
  for (size_t i = 0; i < rows.size(); i++) {
    const RowMutationsBase& m = rows[i];
    const size_t bytes = MutationBytes(m);
    auto it = part_of.find(m.durability);
    if (it == part_of.end() ||
        (part_bytes[it->second] + bytes > kMaxBatchRequestBytes && !parts[it->second].indices.empty())) {
      part_of[m.durability] = parts.size();
      it = part_of.find(m.durability);
      parts.emplace_back();
      part_bytes.push_back(0);
      parts.back().request.set_table(table);
      parts.back().request.set_durability(ToProto(m.durability));
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
  return absl::Status(static_cast<absl::StatusCode>(rs.code()), rs.message());
}

}  // namespace basalt::client_internal
