#include "src/front/hbase/scanners.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status.h"
#include "src/front/hbase/data_convert.h"

namespace basalt::hbase {
namespace {

constexpr uint32_t kMaxRowsPerCall = 10000;

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

}  // namespace

struct Scanners::Scanner {
  std::string table;  // Basalt's, for the quotas
  std::string owner;  // the user who opened it ("" without authentication): only they go on
  std::unique_ptr<server::ScanCursor> cursor;
  std::deque<rpc::Row> pending;  // read and not yet sent
  bool exhausted = false;        // the cursor has no more rows
  uint64_t next_call_seq = 0;
  int64_t last_used_ms = 0;
  bool in_use = false;
  // A reversed scan with an inclusive lower bound: Basalt's bound is exclusive, so the rows
  // below it are cut here.
  std::string inclusive_floor;
  bool has_floor = false;
  // How a row may be cut: at most `batch` cells per result (Scan.setBatch; 0: no limit), and,
  // when the client stitches partial results, where a reply reaches max_result_size.
  uint32_t batch = 0;
  bool partials = false;
  uint64_t max_result_size = 0;
  int sent_cells = 0;  // of pending.front(), already sent as partial results
};

Scanners::Scanners(const Options& options, server::DataService* data) : options_(options), data_(data) {
  reaper_ = std::thread([this] { Reap(); });
}

Scanners::~Scanners() { Shutdown(); }

void Scanners::Shutdown() {
  std::map<uint64_t, std::shared_ptr<Scanner>> open;  // destroyed after mu_ is released
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    wake_ = true;
    open.swap(open_);
  }
  if (reaper_.joinable()) reaper_.join();
  open.clear();
  std::vector<std::shared_ptr<Scanner>> buried;  // what table hooks buried since the reaper's last round
  {
    absl::MutexLock l(&mu_);
    buried.swap(graveyard_);
  }
}

void Scanners::Reap() {
  const absl::Duration period = absl::Milliseconds(std::clamp<int64_t>(options_.lease_ms / 4, 100, 10000));
  for (;;) {
    std::vector<std::shared_ptr<Scanner>> gone;
    {
      absl::MutexLock l(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&wake_), period);
      wake_ = false;
      if (stopping_) return;
      Expire(&gone);
      for (auto& g : graveyard_) gone.push_back(std::move(g));
      graveyard_.clear();
    }
  }  // `gone` destroyed here, outside mu_
}

// Called by a scanner's table when it closes (disabled, dropped): the scanner goes at once, so
// the table need not wait for the scanner's lease (HBase closes a region's scanners with the
// region). One in use goes when its call ends (its cursor says the table closed).
void Scanners::OnTableClosed(uint64_t id) {
  absl::MutexLock l(&mu_);
  auto it = open_.find(id);
  if (it == open_.end() || it->second->in_use) return;
  graveyard_.push_back(std::move(it->second));
  open_.erase(it);
  wake_ = true;
}

// Takes the scanners whose lease lapsed out of the map, into *gone (destroyed by the caller once
// it releases mu_).
void Scanners::Expire(std::vector<std::shared_ptr<Scanner>>* gone) {
  const int64_t now = NowMs();
  for (auto it = open_.begin(); it != open_.end();) {
    if (!it->second->in_use && now - it->second->last_used_ms > options_.lease_ms) {
      gone->push_back(std::move(it->second));
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
}

absl::Time Scanners::Deadline(const Call& call, const ScanRequest& req) const {
  if (!req.client_handles_heartbeats()) return absl::InfiniteFuture();
  int64_t limit_ms = options_.lease_ms;
  if (call.header.timeout() > 0) limit_ms = std::min<int64_t>(limit_ms, call.header.timeout());
  return absl::Now() + absl::Milliseconds(limit_ms / 2);
}

absl::Status Scanners::Open(const NamedRegion& region, const ScanRequest& req, rpc::ReadOptions read,
                            absl::Time deadline, const std::function<absl::Status(rpc::ScanRequest*)>& authorize,
                            std::string owner, ScanResponse* resp) {
  const hbase::Scan& scan = req.scan();
  rpc::ScanRequest s;
  s.set_table(region.table);
  s.set_region(region.region);
  s.set_start_row(scan.start_row());
  s.set_start_exclusive(!scan.include_start_row() && !scan.start_row().empty());
  s.set_reversed(scan.reversed());
  auto scanner = std::make_shared<Scanner>();
  if (scan.include_stop_row() && !scan.stop_row().empty()) {
    if (scan.reversed()) {
      scanner->has_floor = true;
      scanner->inclusive_floor = scan.stop_row();
    } else {
      s.set_stop_row(scan.stop_row() + std::string(1, '\0'));
    }
  } else {
    s.set_stop_row(scan.stop_row());
  }
  if (req.limit_of_rows() > 0) s.set_limit(req.limit_of_rows());
  s.set_rows_per_message(std::clamp<uint32_t>(req.number_of_rows(), 1, 1000));
  *s.mutable_read() = std::move(read);
  BASALT_RETURN_IF_ERROR(authorize(&s));
  BASALT_ASSIGN_OR_RETURN(scanner->cursor, data_->OpenScan(s));
  scanner->table = region.table;
  scanner->owner = std::move(owner);
  scanner->batch = scan.batch_size();
  scanner->partials = req.client_handles_partials();
  scanner->max_result_size = scan.max_result_size();
  scanner->last_used_ms = NowMs();
  scanner->in_use = true;
  uint64_t id;
  std::vector<std::shared_ptr<Scanner>> expired;  // destroyed after mu_ is released
  {
    absl::MutexLock l(&mu_);
    Expire(&expired);
    if (open_.size() >= static_cast<size_t>(options_.max_scanners)) {
      return absl::ResourceExhaustedError(absl::StrCat("server busy: ", open_.size(), " scanners open"));
    }
    if (options_.max_scanners_per_user > 0 && !scanner->owner.empty()) {
      int mine = 0;  // (a walk: at most max_scanners, and only with authentication)
      for (const auto& [other_id, other] : open_) mine += other->owner == scanner->owner ? 1 : 0;
      if (mine >= options_.max_scanners_per_user) {
        return absl::ResourceExhaustedError(absl::StrCat("user '", scanner->owner, "' has ", mine,
                                                         " scanners open, its cap (max_scanners_per_user)"));
      }
    }
    id = next_id_++;
    open_.emplace(id, scanner);
  }
  scanner->cursor->CancelOnClose([this, id] { OnTableClosed(id); });  // (not under mu_)
  resp->set_scanner_id(id);
  return Fill(id, scanner, req.number_of_rows(), req.close_scanner(), /*counted=*/false, deadline, resp);
}

absl::Status Scanners::Next(const ScanRequest& req, absl::Time deadline, std::string_view user,
                            const std::function<absl::Status(const std::string& table)>& admit, ScanResponse* resp) {
  std::shared_ptr<Scanner> scanner;
  {
    absl::MutexLock l(&mu_);
    auto it = open_.find(req.scanner_id());
    if (it == open_.end()) {
      if (req.close_scanner()) {  // closing one already gone is fine
        resp->set_more_results(false);
        return absl::OkStatus();
      }
      return AsException(absl::NotFoundError(absl::StrCat("Unknown scanner '", req.scanner_id(),
                                                          "'. This can happen due to any of the following reasons: a) "
                                                          "Scanner id given is wrong, b) Scanner lease expired because "
                                                          "of long wait between consecutive client checkins")),
                         kUnknownScanner);
    }
    scanner = it->second;
    if (scanner->owner != user) {  // as HBase's RSRpcServices: another user's scanner id is refused
      return absl::PermissionDeniedError(
          absl::StrCat("user '", AV(user), "' is not the owner of scanner ", req.scanner_id()));
    }
    if (scanner->in_use) {  // the client reopens the scanner where it was
      return AsException(absl::FailedPreconditionError(absl::StrCat("scanner ", req.scanner_id(), " is in use by another call")),
                         kOutOfOrderScannerNext);
    }
    if (req.close_scanner() && !req.has_number_of_rows()) {
      open_.erase(it);
      resp->set_more_results(false);
      return absl::OkStatus();
    }
    if (req.has_next_call_seq() && req.next_call_seq() != scanner->next_call_seq) {
      open_.erase(it);  // as HBase: the scanner is closed, the client opens a new one
      return AsException(absl::OutOfRangeError(absl::StrCat("Expected nextCallSeq: ", scanner->next_call_seq,
                                                            " But the nextCallSeq got from client: ",
                                                            req.next_call_seq(), "; request=scanner ", req.scanner_id())),
                         kOutOfOrderScannerNext);
    }
    scanner->in_use = true;
    scanner->last_used_ms = NowMs();
  }
  if (!req.renew() && !req.close_scanner()) {
    absl::Status admitted = admit(scanner->table);
    if (!admitted.ok()) {
      absl::MutexLock l(&mu_);
      scanner->in_use = false;  // the client waits and asks again with the same call sequence
      return admitted;
    }
  }
  if (req.renew()) {
    absl::MutexLock l(&mu_);
    scanner->in_use = false;
    if (req.has_next_call_seq()) ++scanner->next_call_seq;  // the client counts a renewal too
    resp->set_scanner_id(req.scanner_id());
    resp->set_more_results(true);
    resp->set_more_results_in_region(true);
    return absl::OkStatus();
  }
  resp->set_scanner_id(req.scanner_id());
  if (req.has_client_handles_partials()) scanner->partials = req.client_handles_partials();
  return Fill(req.scanner_id(), scanner, req.number_of_rows(), req.close_scanner(), req.has_next_call_seq(), deadline,
              resp);
}

// Up to `rows` rows (or about max_bytes) into *resp; the scanner is closed once done.
// `counted`: the call carried next_call_seq (the calls after the opening one), which the next
// call must carry plus one.
//
// A row is cut into partial results (Result.partial: more of the row follows) at `batch`
// cells, and, when the client stitches partials, where the reply reaches max_result_size, so
// no reply holds more than about that much however wide a row is; else a row goes whole.
//
// Past `deadline` it answers with what it has (perhaps nothing) and heartbeat_message set.
absl::Status Scanners::Fill(uint64_t id, const std::shared_ptr<Scanner>& scanner, uint32_t rows, bool close,
                            bool counted, absl::Time deadline, ScanResponse* resp) {
  // 0 rows: the call only opens (or keeps) the scanner, as HBase's.
  rows = std::min(rows, kMaxRowsPerCall);
  // HBase's hbase.client.scanner.max.result.size, when the scan does not say.
  const uint64_t max_bytes = scanner->max_result_size != 0 ? scanner->max_result_size : 2 << 20;
  uint64_t bytes = 0;
  absl::Status status;
  bool heartbeat = false;
  while (static_cast<uint32_t>(resp->results_size()) < rows && bytes < max_bytes) {
    if (scanner->pending.empty()) {
      if (scanner->exhausted || heartbeat) break;
      rpc::ScanResponse batch;
      bool done = false;
      status = scanner->cursor->Next(&batch, &done, deadline, &heartbeat);
      if (!status.ok()) break;
      for (rpc::Row& r : *batch.mutable_rows()) scanner->pending.push_back(std::move(r));
      if (done) scanner->exhausted = true;
      continue;
    }
    rpc::Row& r = scanner->pending.front();
    if (scanner->has_floor && r.row() < scanner->inclusive_floor) {
      scanner->pending.clear();
      scanner->exhausted = true;
      break;
    }
    Result* result = resp->add_results();
    const int first = scanner->sent_cells;
    int end = r.cells_size();
    if (scanner->batch > 0) end = std::min(end, first + static_cast<int>(scanner->batch));
    for (int i = first; i < end; ++i) {
      const rpc::Cell& c = r.cells(i);
      AddCell(result, r.row(), c.family(), c.qualifier(), c.timestamp(), c.value());
      bytes += r.row().size() + c.family().size() + c.qualifier().size() + c.value().size() + 24;
      if (scanner->partials && bytes >= max_bytes && i + 1 < end) end = i + 1;
    }
    if (end < r.cells_size()) {
      result->set_partial(true);
      scanner->sent_cells = end;
    } else {
      scanner->sent_cells = 0;
      scanner->pending.pop_front();
    }
  }
  const bool finished = rows > 0 && scanner->exhausted && scanner->pending.empty();
  absl::MutexLock l(&mu_);
  scanner->in_use = false;
  scanner->last_used_ms = NowMs();
  if (counted) ++scanner->next_call_seq;
  if (!status.ok() || finished || close) open_.erase(id);
  if (!status.ok()) return status;
  // more_results false ends the client's whole scan; the end of this region's rows is
  // more_results_in_region false, and the client goes on in the next region.
  resp->set_more_results(!close);
  resp->set_more_results_in_region(!finished && !close);
  if (heartbeat && !finished) resp->set_heartbeat_message(true);
  resp->set_ttl(static_cast<uint32_t>(options_.lease_ms));
  return absl::OkStatus();
}

}  // namespace basalt::hbase
