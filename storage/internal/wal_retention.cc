// Which segments a log keeps (storage/internal/wal.h): those holding records a region has not
// flushed, and those a reader holds (a replication source following the log), bounded.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "storage/internal/wal.h"

namespace basalt {

uint64_t Wal::FirstNeededSegment() const {
  for (const auto& [number, held] : segment_regions_) {
    if (number >= segment_) return segment_;
    for (const auto& [region, seq] : held) {
      auto f = flushed_.find(region);
      if (f == flushed_.end() || f->second < seq) return number;
    }
  }
  return segment_;
}

uint64_t Wal::LowestHold() const {
  uint64_t first = UINT64_MAX;
  for (const auto& [name, from] : holds_) first = std::min(first, from);
  return first;
}

uint64_t Wal::FirstKeptSegment() const { return std::min(FirstNeededSegment(), LowestHold()); }

std::vector<std::string> Wal::DropHoldsPastBound() {
  std::vector<std::string> dropped;
  if (options_.max_held_segments == 0) return dropped;
  const uint64_t needed = FirstNeededSegment();
  for (auto it = holds_.begin(); it != holds_.end();) {
    if (it->second < needed && needed - it->second > options_.max_held_segments) {
      dropped.push_back(it->first);
      it = holds_.erase(it);
    } else {
      ++it;
    }
  }
  return dropped;
}

void Wal::Hold(const std::string& name, uint64_t from) {
  {
    absl::MutexLock l(&mu_);
    holds_[name] = from;
  }
  // (A hold moved up frees what only it kept; a failure is tried again at the next flush.)
  DeleteCovered().IgnoreError();
}

void Wal::Release(const std::string& name) {
  {
    absl::MutexLock l(&mu_);
    holds_.erase(name);
  }
  DeleteCovered().IgnoreError();
}

uint64_t Wal::FirstHeldSegment() const {
  absl::MutexLock l(&mu_);
  return LowestHold();
}

WalPosition Wal::DurableEnd() const {
  absl::MutexLock l(&mu_);
  return WalPosition{segment_, synced_size_};
}

std::vector<std::string> Wal::RegionsToFlush() const {
  std::vector<std::string> out;
  // Rolled segments, as HBase counts them (the current one is not).
  const size_t rolled = static_cast<size_t>(
      std::distance(segment_regions_.begin(), segment_regions_.lower_bound(segment_)));
  if (options_.max_logs <= 0 || rolled <= static_cast<size_t>(options_.max_logs)) return out;
  const uint64_t oldest = FirstNeededSegment();
  auto it = segment_regions_.find(oldest);
  if (it == segment_regions_.end()) return out;
  for (const auto& [region, seq] : it->second) {
    auto f = flushed_.find(region);
    if (f == flushed_.end() || f->second < seq) out.push_back(region);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void Wal::RequestFlushes(const std::vector<std::string>& regions) {
  uint64_t asked = 0;
  {
    absl::MutexLock l(&attach_mu_);
    for (const std::string& r : regions) {
      auto it = attached_.find(r);
      if (it == attached_.end()) continue;
      it->second();
      ++asked;
    }
  }
  absl::MutexLock l(&mu_);
  stats_.forced_flushes += asked;
}

absl::Status Wal::DeleteCovered() {
  uint64_t n;
  std::vector<std::string> dropped;
  {
    absl::MutexLock l(&mu_);
    dropped = DropHoldsPastBound();
    n = FirstKeptSegment();
  }
  if (options_.on_hold_dropped) {
    for (const std::string& name : dropped) options_.on_hold_dropped(name);
  }
  {
    // Segments from before Open (not yet split) keep every later one: the live range is a prefix.
    absl::MutexLock l(&index_mu_);
    if (index_first_ < own_first_ || n <= index_first_) return absl::OkStatus();
  }
  return DeleteSegmentsBefore(n);
}

absl::Status Wal::MarkFlushed(const std::string& region, uint64_t seq) {
  {
    absl::MutexLock l(&mu_);
    uint64_t& f = flushed_[region];
    f = std::max(f, seq);
  }
  return DeleteCovered();
}

absl::Status Wal::Retire() {
  BASALT_RETURN_IF_ERROR(Roll().status());
  return DeleteCovered();
}

absl::Status Wal::ForgetRegion(const std::string& region) {
  return MarkFlushed(region, UINT64_MAX);
}

bool Wal::HoldsRecordsOf(const std::string& region) const {
  absl::MutexLock l(&mu_);
  if (pending_regions_.count(region)) return true;
  for (const auto& [segment, regions] : segment_regions_) {
    if (regions.count(region)) return true;
  }
  return false;
}

void Wal::AttachRegion(const std::string& region, std::function<void()> request_flush) {
  absl::MutexLock l(&attach_mu_);
  attached_[region] = std::move(request_flush);
}

void Wal::DetachRegion(const std::string& region) {
  absl::MutexLock l(&attach_mu_);
  attached_.erase(region);
}

}  // namespace basalt
