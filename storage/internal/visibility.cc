#include "storage/internal/visibility.h"

#include <algorithm>

namespace basalt {

VisibilityTracker::VisibilityTracker(const FamilyOptions& family, int64_t now_ms, ReadRules rules)
    : max_versions_(std::max(1, family.max_versions)),
      min_versions_(family.min_versions),
      expire_before_(family.ttl_ms > 0 ? now_ms - family.ttl_ms : std::numeric_limits<int64_t>::min()),
      rules_(rules) {
  if (rules_.max_versions < 1) rules_.max_versions = 1;
}

void VisibilityTracker::StartColumn(bool new_row) {
  if (new_row) family_delete_ts_ = std::numeric_limits<int64_t>::min();
  column_delete_ts_ = std::numeric_limits<int64_t>::min();
  version_deletes_.clear();
  put_rank_ = kept_count_ = read_count_ = 0;
}

bool VisibilityTracker::Readable(const KeyView& k) {
  const bool new_row = !started_ || !BytesEqual(k.row, prev_row_);
  if (new_row || force_new_column_ || !BytesEqual(k.qualifier, prev_qualifier_)) {
    StartColumn(new_row);
    force_new_column_ = false;
  }
  started_ = true;
  prev_row_ = k.row;
  prev_qualifier_ = k.qualifier;
  switch (k.type) {
    case CellType::kDeleteFamily:
      family_delete_ts_ = std::max(family_delete_ts_, k.timestamp);
      return false;
    case CellType::kDeleteColumn:
      column_delete_ts_ = std::max(column_delete_ts_, k.timestamp);
      return false;
    case CellType::kDelete:
      version_deletes_.push_back(k.timestamp);
      return false;
    case CellType::kPut:
      break;
  }
  if (put_rank_++ >= max_versions_) return false;
  int64_t ts = k.timestamp;
  if (ts <= family_delete_ts_ || ts <= column_delete_ts_) return false;
  if (!version_deletes_.empty() &&
      std::find(version_deletes_.begin(), version_deletes_.end(), ts) != version_deletes_.end()) {
    return false;
  }
  int kept = kept_count_++;
  if (ts < expire_before_ && kept >= min_versions_) return false;
  return ts >= rules_.min_ts && (rules_.max_ts == kLatestTimestamp || ts < rules_.max_ts);
}

}  // namespace basalt
