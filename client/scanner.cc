// ResultScanner over the server-streaming Scan: pulls messages as rows are asked for, and
// reopens a broken or expired stream just after the last row it delivered (client.h). In a
// cluster it scans region by region, each on the server meta names for it, with the next
// region's stream opened where the last one's region ended (a reversed scan: where it began).
// Filters: a row prefix or row ranges narrow the rows scanned, and page filters' counts carry
// from stream to stream (basalt.proto ScanResponse.page_rows). Belongs to one thread.
#include <algorithm>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "client/core.h"
#include "common/status.h"

namespace basalt::client_internal {
namespace {

// The rows a filter can pass at all: [lo, hi) (hi empty: no end), from a row prefix or row
// ranges at its top or in a MUST_PASS_ALL list at its top.
struct RowBounds {
  std::string lo, hi;
};
RowBounds BoundsOf(const Filter& f) {
  RowBounds b;
  if (f.kind == Filter::Kind::kPrefix) {
    b.lo = f.prefix;
    b.hi = RowPrefixSuccessor(f.prefix);
  } else if (f.kind == Filter::Kind::kMultiRowRange && !f.ranges.empty()) {
    b.lo = f.ranges[0].start;
    bool open_end = false;
    for (const RowRange& r : f.ranges) {
      b.lo = std::min(b.lo, r.start);
      std::string hi = r.stop_inclusive && !r.stop.empty() ? r.stop + '\0' : r.stop;
      open_end = open_end || hi.empty();
      b.hi = std::max(b.hi, hi);
    }
    if (open_end) b.hi.clear();
  } else if (f.kind == Filter::Kind::kList && f.must_pass_all) {
    for (const Filter& c : f.filters) {
      RowBounds cb = BoundsOf(c);
      b.lo = std::max(b.lo, cb.lo);
      if (!cb.hi.empty() && (b.hi.empty() || cb.hi < b.hi)) b.hi = cb.hi;
    }
  }
  return b;
}

// The page filters' sizes, in pre-order (ScanResponse.page_rows' order).
void PageSizes(rpc::Filter* f, absl::FunctionRef<void(rpc::Filter*)> visit) {
  if (f->kind() == rpc::Filter::PAGE) visit(f);
  for (rpc::Filter& c : *f->mutable_filters()) PageSizes(&c, visit);
}

// No row can pass any more: a page filter that decides is used up.
bool PagesUsedUp(const rpc::Filter& f) {
  switch (f.kind()) {
    case rpc::Filter::PAGE:
      return f.limit() <= 0;
    case rpc::Filter::LIST:
      if (f.must_pass_all()) {
        return std::any_of(f.filters().begin(), f.filters().end(), PagesUsedUp);
      }
      return !f.filters().empty() && std::all_of(f.filters().begin(), f.filters().end(), PagesUsedUp);
    default:
      return false;
  }
}

class ScannerImpl final : public ResultScanner {
 public:
  ScannerImpl(Core* core, const std::string& table, const Scan& scan)
      : core_(core), limit_(scan.limit), reversed_(scan.reversed) {
    base_.set_table(table);
    base_.set_stop_row(scan.stop_row);
    base_.set_reversed(scan.reversed);
    ToProto(scan, base_.mutable_read());
    base_.set_rows_per_message(scan.caching);
    floor_ = scan.start_row;
    if (scan.filter.has_value()) {
      const RowBounds b = BoundsOf(*scan.filter);
      // Narrow the scan to the rows the filter can pass.
      if (!reversed_) {
        floor_ = std::max(floor_, b.lo);
        if (!b.hi.empty() && (scan.stop_row.empty() || b.hi < scan.stop_row)) base_.set_stop_row(b.hi);
      } else {
        lowest_ = b.lo;
        if (!b.hi.empty() && (scan.start_row.empty() || b.hi <= scan.start_row)) {
          floor_ = b.hi;
          ceiling_exclusive_ = true;
        }
      }
    }
    base_.set_start_row(floor_);
    what_ = absl::StrCat(reversed_ ? "Reversed scan " : "Scan ", table);
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
  // Forward: the start row (inclusive). Reversed: the row below which (*exclusive) or at which
  // it starts (empty and not exclusive: the end).
  std::string NextStart(bool* exclusive) const {
    *exclusive = false;
    std::string start = floor_;
    if (reversed_) {
      *exclusive = ceiling_exclusive_;
      if (has_last_row_() && (start.empty() || last_row_ <= start)) {
        start = last_row_;
        *exclusive = true;
      }
      return start;
    }
    if (has_last_row_()) {
      std::string after = last_row_;
      after.push_back('\0');
      if (after > start) start = std::move(after);
    }
    return start;
  }

  absl::Status OpenStream(absl::Time deadline) {
    rpc::ScanRequest req = base_;
    bool exclusive = false;
    req.set_start_row(NextStart(&exclusive));
    req.set_start_exclusive(exclusive);
    std::string to;
    if (core_->cluster()) {
      if (!reversed_) {
        BASALT_RETURN_IF_ERROR(
            core_->Route(base_.table(), req.start_row(), deadline, req.mutable_region(), &to, &region_end_));
      } else {
        // The region holding the rows below the start (at the start: below the row after it).
        std::string below = req.start_row();
        if (!exclusive && !below.empty()) below.push_back('\0');
        BASALT_RETURN_IF_ERROR(
            core_->RouteBefore(base_.table(), below, deadline, req.mutable_region(), &to, &region_start_));
      }
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
    if (!core_->cluster() || region_.empty()) return false;
    if (reversed_) {
      if (region_start_.empty()) return false;
      if (!base_.stop_row().empty() && region_start_ <= base_.stop_row()) return false;
      floor_ = region_start_;
      ceiling_exclusive_ = true;
      return !NothingLeft();
    }
    if (region_end_.empty()) return false;
    if (!base_.stop_row().empty() && region_end_ >= base_.stop_row()) return false;
    floor_ = region_end_;
    return !NothingLeft();
  }

  bool has_last_row_() const { return returned_ > 0; }

  // Done when the limit is met, the filter's pages are used up, or a resumed scan would start
  // at or past the stop row.
  bool NothingLeft() const {
    if (limit_ != 0 && returned_ >= limit_) return true;
    // (Only once a server counted: a page size the server has not seen may be malformed.)
    if (pages_counted_ && PagesUsedUp(base_.read().filter())) return true;
    if (reversed_) {
      bool exclusive = false;
      const std::string start = NextStart(&exclusive);
      if (start.empty()) return exclusive;
      if (!base_.stop_row().empty() && start <= base_.stop_row()) return true;
      return exclusive ? start <= lowest_ : start < lowest_;
    }
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
        TakePageRows();
        if (batch_.rows_size() == 0) continue;
        return absl::OkStatus();
      }
      if (s.ok()) {
        s = FromGrpcStatus(reader_->Finish());
        reader_.reset();
        ctx_.reset();
        if (s.code() == absl::StatusCode::kCancelled) {
          // Not by this scanner (it cancels only when closing): by the server.
          s = absl::CancelledError(absl::StrCat(
              "the server closed the scan (", s.message(),
              "): its client took no message for the server's scanner lease (scanner_lease_ms, HBase's scanner "
              "timeout), or the server is stopping"));
        }
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

  // Takes the rows the page filters let through off their sizes, for the streams to come.
  void TakePageRows() {
    if (batch_.page_rows().empty() || !base_.read().has_filter()) return;
    pages_counted_ = true;
    int i = 0;
    PageSizes(base_.mutable_read()->mutable_filter(), [&](rpc::Filter* page) {
      if (i < batch_.page_rows_size()) {
        const uint64_t taken = batch_.page_rows(i++);
        page->set_limit(page->limit() - static_cast<int64_t>(std::min<uint64_t>(taken, page->limit())));
      }
    });
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
  const bool reversed_;
  rpc::ScanRequest base_;  // its filter's page sizes are what is left of them
  bool pages_counted_ = false;  // a server reported page rows
  std::string what_;

  // Where the scan starts, or the end of the last region finished. Reversed: the row it starts
  // at (empty: the end) or, ceiling_exclusive_, below which it starts (the start of the last
  // region finished, the end of a row prefix); rows below lowest_ are none of its (a prefix).
  std::string floor_;
  bool ceiling_exclusive_ = false;
  std::string lowest_;
  std::string region_;        // in a cluster: the region the stream reads
  std::string region_end_;    // and where it ends (empty: the end of the table)
  std::string region_start_;  // reversed: where it starts
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
