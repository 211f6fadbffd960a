// A transaction's visibility filter (docs/DESIGN.md §7; Apache Tephra's
// TransactionVisibilityFilter), evaluated through the read path's hook (storage/read_filter.h)
// before the version count, so an excluded version never counts as one:
//   - a version the snapshot does not see (TxSnapshot::Visible: above its read pointer, or
//     written by a transaction in progress or invalid when it started) is skipped;
//   - the newest version it sees being a tombstone (an empty value: a transaction's delete)
//     hides the column;
//   - a column shows at most its family's VERSIONS visible versions (the store keeps them all);
//   - what it lets through goes on to the request's own filter, if any.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/transactions/transactions.h"
#include "storage/options.h"
#include "storage/read_filter.h"

namespace basalt::server {

class TxFilter : public ReadFilter {
 public:
  // families: the table's (their VERSIONS), which must outlive the filter. inner: the
  // request's filter, or null.
  TxFilter(TxSnapshot snapshot, const std::vector<FamilyOptions>* families, std::shared_ptr<ReadFilter> inner)
      : snapshot_(std::move(snapshot)), families_(families), inner_(std::move(inner)) {}

  void Reset() override;
  bool FilterAllRemaining() override { return inner_ != nullptr && inner_->FilterAllRemaining(); }
  bool FilterRowKey(std::string_view row) override { return inner_ != nullptr && inner_->FilterRowKey(row); }
  CellAction FilterCell(const CellView& cell) override;
  bool FilterRow(RowResult* row) override { return inner_ != nullptr && inner_->FilterRow(row); }

 private:
  const TxSnapshot snapshot_;
  const std::vector<FamilyOptions>* const families_;
  const std::shared_ptr<ReadFilter> inner_;
  std::string family_, qualifier_;  // the current column
  bool in_column_ = false;
  int max_versions_ = 1;  // the current column's family's
  int seen_ = 0;          // visible versions of the current column so far
};

}  // namespace basalt::server
