// What a store's cells mean (docs/DESIGN.md, §1): which puts a read sees and a major compaction
// keeps. Cells of one row arrive in cell order, duplicates already dropped. Per column:
//   1. only the newest max_versions puts by timestamp are kept (deleted ones count: older puts
//      are gone for good);
//   2. delete markers hide what they cover: DeleteFamily every put of the row's family at or
//      below its timestamp, DeleteColumn every put of its column at or below, Delete the put at
//      exactly its timestamp;
//   3. TTL hides puts older than now - ttl, except the newest min_versions that are left;
//   4. then a read applies its time range [min_ts, max_ts) and its own version count.
// The answer does not depend on what was flushed or minor-compacted. One tracker per scan,
// not thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "storage/cell.h"
#include "storage/options.h"

namespace basalt {

struct ReadRules {
  int64_t min_ts = std::numeric_limits<int64_t>::min();
  int64_t max_ts = kLatestTimestamp;  // exclusive, except kLatestTimestamp includes everything
  int max_versions = 1;
};

class VisibilityTracker {
 public:
  VisibilityTracker(const FamilyOptions& family, int64_t now_ms, ReadRules rules);
  // True when the cell is a put the read returns. The caller passes every cell its iterator
  // produces, in order (row changes and column changes are found against the previous cell,
  // whose views the iterator keeps valid for one step: iterator.h).
  bool Visible(const KeyView& k) { return Readable(k) && TakeVersion(); }
  // Visible in two steps, for a read with a filter between them (storage/read_filter.h): a put
  // the read would see but for its version count; then counting it as one of the column's
  // versions the read returns (false: the read has its max_versions of the column already).
  bool Readable(const KeyView& k);
  bool TakeVersion() {
    if (read_count_ >= rules_.max_versions) return false;
    ++read_count_;
    return true;
  }

  // Surplus puts of the current column passed so far (beyond max_versions). Once there are any,
  // every later cell of a column with a non-empty qualifier is invisible (older puts are gone
  // for good; older Delete/DeleteColumn markers hide only them), so a reader may seek past the
  // rest of it. Not so the empty qualifier: its later cells can be DeleteFamily markers.
  int SurplusPuts() const { return put_rank_ - max_versions_; }
  // The reader moved its iterator past the rest of the current column (a seek): the previous
  // cell's views may be gone, so the row is kept in a copy and the next cell starts a column.
  void ColumnSkipped() {
    skip_row_.assign(prev_row_.data(), prev_row_.size());
    prev_row_ = skip_row_;
    force_new_column_ = true;
  }
  // The reader moved its iterator to another row (a seek): the next cell starts a row.
  void Restart() { started_ = false; }

 private:
  void StartColumn(bool new_row);

  int max_versions_;
  int min_versions_;
  int64_t expire_before_;  // puts with ts < this are expired
  ReadRules rules_;
  std::string_view prev_row_, prev_qualifier_;  // the previous cell's (iterator.h look-back)
  std::string skip_row_;                        // prev_row_'s bytes after ColumnSkipped
  bool force_new_column_ = false;
  bool started_ = false;
  int64_t family_delete_ts_ = std::numeric_limits<int64_t>::min();
  int64_t column_delete_ts_ = std::numeric_limits<int64_t>::min();
  std::vector<int64_t> version_deletes_;
  int put_rank_ = 0, kept_count_ = 0, read_count_ = 0;
};

}  // namespace basalt
