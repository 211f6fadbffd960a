// ResultScanner over the server-streaming Scan: pulls messages as rows are asked for, and
// reopens a broken or expired stream just after the last row it delivered (client.h). In a
// cluster it scans region by region, each on the server meta names for it, with the next
// region's stream opened where the last one's region ended. Belongs to one thread.
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/core.h"
#include "common/status.h"

namespace basalt::client_internal {
namespace {

class ScannerImpl final : public ResultScanner {
 public:
  ScannerImpl(Core* core, const std::string& table, const Scan& scan) : core_(core), limit_(scan.limit) {
    base_.set_table(table);
    base_.set_start_row(scan.start_row);
    base_.set_stop_row(scan.stop_row);
    ToProto(scan, base_.mutable_read());
    base_.set_rows_per_message(scan.caching);
    floor_ = scan.start_row;
    what_ = absl::StrCat("Scan ", table);
    if (!scan.start_row.empty()) absl::StrAppend(&what_, " from \"", PrintableRow(scan.start_row), "\"");
  }

  ~ScannerImpl() override { Close(); }

  // Reads the first batch (so that errors surface at GetScanner).
  absl::Status Start() { return Fetch(); }

  absl::StatusOr<bool> Next(Result* row) override {
    if (closed_ || done_) return false;
    if (!error_.ok()) return error_;
    while (pos_ >= batch_.rows_size()) {
      absl::Status s = Fetch();
      if (!s.ok()) return s;
      if (done_) return false;
    }
    rpc::Row* r = batch_.mutable_rows(pos_++);
    if (pos_ == batch_.rows_size()) last_row_ = r->row();  // where a reopened stream resumes
    *row = FromProto(std::move(*r));
    returned_++;
    return true;
  }

  void Close() override {
    if (closed_) return;
    closed_ = true;
    CloseStream();
    batch_.Clear();
    pos_ = 0;
  }

 private:
  // Cancels and drains the current stream, if any.
  void CloseStream() {
    if (reader_ == nullptr) return;
    ctx_->TryCancel();
    rpc::ScanResponse ignored;
    while (reader_->Read(&ignored)) {
    }
    (void)reader_->Finish();
    reader_.reset();
    ctx_.reset();
  }

  // Where the next stream starts: past the last row delivered, and past the regions finished.
  std::string NextStart() const {
    std::string start = floor_;
    if (has_last_row_()) {
      std::string after = last_row_;
      after.push_back('\0');
      if (after > start) start = std::move(after);
    }
    return start;
  }

  absl::Status OpenStream(absl::Time deadline) {
    rpc::ScanRequest req = base_;
    req.set_start_row(NextStart());
    std::string to;
    if (core_->cluster()) {
      BASALT_RETURN_IF_ERROR(core_->Route(base_.table(), req.start_row(), deadline, req.mutable_region(), &to, &region_end_));
      region_ = req.region();
    }
    BASALT_ASSIGN_OR_RETURN(stub_path_, core_->Grpc(core_->Target(to)));
    if (limit_ != 0) req.set_limit(limit_ - returned_);
    ctx_ = std::make_unique<grpc::ClientContext>();
    SetDeadline(ctx_.get(), core_->Deadline());
    segment_messages_ = 0;
    reader_ = stub_path_->data_stub()->Scan(ctx_.get(), req);
    return absl::OkStatus();
  }

  // In a cluster, after a region's stream ended: whether the scan goes on in the next region.
  bool NextRegion() {
    if (!core_->cluster() || region_.empty() || region_end_.empty()) return false;
    if (!base_.stop_row().empty() && region_end_ >= base_.stop_row()) return false;
    floor_ = region_end_;
    return !NothingLeft();
  }

  bool has_last_row_() const { return returned_ > 0; }

  // Done when the limit is met or a resumed scan would start at or past the stop row.
  bool NothingLeft() const {
    if (limit_ != 0 && returned_ >= limit_) return true;
    if (!base_.stop_row().empty() && !floor_.empty() && floor_ >= base_.stop_row()) return true;
    if (has_last_row_() && !base_.stop_row().empty()) {
      std::string start = last_row_;
      start.push_back('\0');
      return start >= base_.stop_row();
    }
    return false;
  }

  // Fills batch_ with the next non-empty message, or sets done_. Errors are sticky.
  absl::Status Fetch() {
    batch_.Clear();
    pos_ = 0;
    if (NothingLeft()) {
      CloseStream();
      done_ = true;
      return absl::OkStatus();
    }
    const absl::Time deadline = core_->Deadline();
    int failures = 0;
    for (;;) {
      absl::Status s;
      if (reader_ == nullptr) s = OpenStream(deadline);
      if (s.ok() && reader_->Read(&batch_)) {
        segment_messages_++;
        if (batch_.rows_size() == 0) continue;
        return absl::OkStatus();
      }
      if (s.ok()) {
        s = FromGrpcStatus(reader_->Finish());
        reader_.reset();
        ctx_.reset();
      }
      if (s.ok()) {
        if (NextRegion()) continue;
        done_ = true;
        return s;
      }
      core_->NoteFailure(s);
      core_->NoteUnanswered(s, region_);
      // The stream outlived its deadline after delivering: a long scan, not a slow server.
      if (s.code() == absl::StatusCode::kDeadlineExceeded && segment_messages_ > 0) continue;
      failures++;
      std::optional<absl::Duration> delay = NextRetry(core_->policy(), true, s, failures, deadline, absl::Now());
      if (!delay.has_value()) return Fail(s, failures);
      absl::SleepFor(*delay);
      if (NothingLeft()) {
        done_ = true;
        return absl::OkStatus();
      }
    }
  }

  absl::Status Fail(const absl::Status& s, int failures) {
    error_ = WithContext(AfterAttempts(s, failures), what_);
    if (returned_ > 0) {
      error_ = absl::Status(error_.code(), absl::StrCat(error_.message(), " (after ", returned_, " rows, last \"",
                                                        PrintableRow(last_row_), "\")"));
    }
    return error_;
  }

  Core* const core_;
  const uint64_t limit_;
  rpc::ScanRequest base_;
  std::string what_;

  std::string floor_;       // where the scan starts, or the end of the last region finished
  std::string region_;      // in a cluster: the region the stream reads
  std::string region_end_;  // and where it ends (empty: the end of the table)
  GrpcPath* stub_path_ = nullptr;
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReader<rpc::ScanResponse>> reader_;
  int segment_messages_ = 0;

  rpc::ScanResponse batch_;
  int pos_ = 0;
  std::string last_row_;  // the last row delivered (valid when returned_ > 0)
  uint64_t returned_ = 0;
  bool done_ = false;
  bool closed_ = false;
  absl::Status error_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ResultScanner>> OpenScanner(Core* core, const std::string& table, const Scan& scan) {
  auto scanner = std::make_unique<ScannerImpl>(core, table, scan);
  BASALT_RETURN_IF_ERROR(scanner->Start());
  return std::unique_ptr<ResultScanner>(std::move(scanner));
}

}  // namespace basalt::client_internal
