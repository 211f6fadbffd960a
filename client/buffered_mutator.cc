// BufferedMutator: mutations collect in a buffer; a full buffer (write_buffer_size bytes), one
// older than periodic_flush, or a Flush becomes a batch, which the background thread sends as
// BatchMutate calls (async, up to max_in_flight_batches at once). Thread-safe.
#include <deque>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/core.h"
#include "common/status.h"

namespace basalt::client_internal {
namespace {

class BufferedMutatorImpl final : public BufferedMutator {
 public:
  BufferedMutatorImpl(Core* core, std::string table, const BufferedMutatorOptions& options)
      : core_(core), table_(std::move(table)), options_(options) {
    if (options_.max_in_flight_batches < 1) options_.max_in_flight_batches = 1;
    thread_ = std::thread([this] { Loop(); });
  }

  ~BufferedMutatorImpl() override { (void)Close(); }

  absl::Status Mutate(const RowMutationsBase& m) override {
    if (m.row.empty()) return Context(absl::InvalidArgumentError("empty row key"), &m);
    if (m.mutations.empty() && !m.deletes_row_when_empty) {
      return Context(absl::InvalidArgumentError("no columns to put or delete"), &m);
    }
    if (m.has_foreign_row()) {
      return Context(absl::InvalidArgumentError(
                         absl::StrCat("given a mutation of row \"", PrintableRow(m.foreign_row()), "\"")),
                     &m);
    }
    absl::MutexLock l(&mu_);
    if (closed_) return Context(absl::FailedPreconditionError("the mutator is closed"), &m);
    // Back-pressure: as many batches waiting as may be in flight.
    mu_.Await(absl::Condition(
        +[](BufferedMutatorImpl* b) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          return b->closed_ || static_cast<int>(b->pending_.size()) < b->options_.max_in_flight_batches;
        },
        this));
    if (closed_) return Context(absl::FailedPreconditionError("the mutator is closed"), &m);
    if (buffer_.empty()) first_buffered_ = absl::Now();
    buffer_.push_back(m);
    buffer_bytes_ += MutationBytes(m);
    if (buffer_bytes_ >= options_.write_buffer_size) SealBuffer();
    return absl::OkStatus();
  }

  absl::Status Flush() override {
    absl::MutexLock l(&mu_);
    if (closed_) return absl::FailedPreconditionError(absl::StrCat("BufferedMutator ", table_, ": closed"));
    return FlushLocked();
  }

  absl::Status Close() override {
    absl::Status s;
    {
      absl::MutexLock l(&mu_);
      if (closed_) return absl::OkStatus();
      closed_ = true;
      s = FlushLocked();
      stop_ = true;
    }
    thread_.join();
    return s;
  }

 private:
  absl::Status Context(const absl::Status& s, const RowMutationsBase* m) const {
    std::string what = absl::StrCat("BufferedMutator ", table_);
    if (m != nullptr) absl::StrAppend(&what, "/", PrintableRow(m->row));
    return WithContext(s, what);
  }

  static absl::Status RowContext(const absl::Status& s, const RowMutationsBase& m) {
    return WithContext(s, absl::StrCat("row \"", PrintableRow(m.row), "\""));
  }

  void SealBuffer() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (buffer_.empty()) return;
    pending_.push_back(std::move(buffer_));
    buffer_.clear();
    buffer_bytes_ = 0;
  }

  absl::Status FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    SealBuffer();
    mu_.Await(absl::Condition(
        +[](BufferedMutatorImpl* b) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          return b->pending_.empty() && b->in_flight_ == 0;
        },
        this));
    absl::Status s;
    if (failed_ > 0) {
      s = absl::Status(first_error_.code(),
                       absl::StrCat("BufferedMutator ", table_, ": ", failed_, " of ", sent_,
                                    " mutations failed since the last flush; first: ", first_error_.message()));
    }
    failed_ = 0;
    sent_ = 0;
    first_error_ = absl::OkStatus();
    return s;
  }

  // The background thread: sends sealed batches, seals a buffer older than periodic_flush.
  void Loop() {
    absl::MutexLock l(&mu_);
    for (;;) {
      if (!pending_.empty() && in_flight_ < options_.max_in_flight_batches) {
        std::vector<RowMutationsBase> batch = std::move(pending_.front());
        pending_.pop_front();
        in_flight_++;
        mu_.Unlock();
        Send(std::move(batch));
        mu_.Lock();
        continue;
      }
      if (stop_ && pending_.empty()) break;
      const bool periodic = options_.periodic_flush > absl::ZeroDuration();
      if (periodic && !buffer_.empty() && absl::Now() - first_buffered_ >= options_.periodic_flush) {
        SealBuffer();
        continue;
      }
      auto ready = +[](BufferedMutatorImpl* b) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return b->stop_ ||
               (!b->pending_.empty() && b->in_flight_ < b->options_.max_in_flight_batches);
      };
      if (periodic && !buffer_.empty()) {
        mu_.AwaitWithDeadline(absl::Condition(ready, this), first_buffered_ + options_.periodic_flush);
      } else if (periodic) {
        // Wake to notice a buffer that starts aging.
        mu_.AwaitWithTimeout(absl::Condition(ready, this), options_.periodic_flush);
      } else {
        mu_.Await(absl::Condition(ready, this));
      }
    }
    // In-flight sends finish on their own; Close waited for them in FlushLocked.
  }

  // Sends one batch (one BatchMutate per durability), async; settles it when all parts answer.
  void Send(std::vector<RowMutationsBase> rows) {
    struct Batch {
      std::vector<RowMutationsBase> rows;
      std::vector<absl::Status> statuses;
      absl::Mutex mu;
      size_t parts_left ABSL_GUARDED_BY(mu) = 0;
    };
    auto batch = std::make_shared<Batch>();
    batch->rows = std::move(rows);
    std::vector<BatchPart> parts = SplitBatch(table_, batch->rows, &batch->statuses);
    for (size_t i = 0; i < batch->rows.size(); i++) {
      if (!batch->statuses[i].ok()) batch->statuses[i] = RowContext(batch->statuses[i], batch->rows[i]);
    }
    if (parts.empty()) {
      Settle(*batch);
      return;
    }
    {
      absl::MutexLock l(&batch->mu);
      batch->parts_left = parts.size();
    }
    for (BatchPart& p : parts) {
      const std::vector<size_t> sent = p.indices;
      auto part = std::make_shared<BatchPart>(std::move(p));
      auto resp = std::make_shared<rpc::BatchMutateResponse>();
      Core* core = core_;
      // Each attempt sends the rows not yet answered, located afresh (SettleBatch keeps those a
      // region refused as not served). Attempts run one at a time: the statuses need no lock.
      core_->RunAsync(
          true,
          [core, part, resp, batch](absl::Time deadline, PathCallback on_done) -> absl::Status {
            BASALT_RETURN_IF_ERROR(LocateBatch(core, deadline, part.get()));
            BASALT_ASSIGN_OR_RETURN(GrpcPath * path, core->Grpc(part->server));
            resp->Clear();
            GrpcAsync(
                deadline,
                [&](grpc::ClientContext* ctx, std::function<void(grpc::Status)> cb) {
                  path->data_stub()->async()->BatchMutate(ctx, &part->request, resp.get(), std::move(cb));
                },
                [core, part, resp, batch, on_done = std::move(on_done)](absl::Status s) {
                  s = s.ok() ? SettleBatch(core, part.get(), *resp, &batch->statuses)
                             : UnsentBatch(core, part.get(), std::move(s));
                  on_done(std::move(s));
                });
            return absl::OkStatus();
          },
          [this, batch, part, sent](absl::Status s) {
            // A failed call fails the rows not yet answered (rows still refused keep their refusal).
            if (!s.ok() && !IsNotServingRegion(s)) {
              for (size_t i : part->indices) batch->statuses[i] = s;
            }
            for (size_t i : sent) {
              if (!batch->statuses[i].ok()) batch->statuses[i] = RowContext(batch->statuses[i], batch->rows[i]);
            }
            bool last;
            {
              absl::MutexLock l(&batch->mu);
              last = --batch->parts_left == 0;
            }
            if (last) Settle(*batch);
          });
    }
  }

  // Records a sent batch's outcome and frees its in-flight slot.
  void Settle(const auto& batch) {
    absl::MutexLock l(&mu_);
    for (const absl::Status& s : batch.statuses) {
      sent_++;
      if (s.ok()) continue;
      if (failed_ == 0) first_error_ = s;
      failed_++;
    }
    in_flight_--;
  }

  Core* const core_;
  const std::string table_;
  BufferedMutatorOptions options_;

  absl::Mutex mu_;
  std::vector<RowMutationsBase> buffer_ ABSL_GUARDED_BY(mu_);
  size_t buffer_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time first_buffered_ ABSL_GUARDED_BY(mu_);
  std::deque<std::vector<RowMutationsBase>> pending_ ABSL_GUARDED_BY(mu_);  // sealed, not yet sent
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // Since the last Flush:
  size_t sent_ ABSL_GUARDED_BY(mu_) = 0;
  size_t failed_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace

std::unique_ptr<BufferedMutator> NewBufferedMutator(Core* core, const std::string& table,
                                                    const BufferedMutatorOptions& options) {
  return std::make_unique<BufferedMutatorImpl>(core, table, options);
}

}  // namespace basalt::client_internal
