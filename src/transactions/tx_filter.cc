#include "src/transactions/tx_filter.h"

#include "storage/region.h"

namespace basalt::server {

void TxFilter::Reset() {
  in_column_ = false;
  if (inner_ != nullptr) inner_->Reset();
}

ReadFilter::CellAction TxFilter::FilterCell(const CellView& cell) {
  if (!snapshot_.Visible(cell.timestamp)) return CellAction::kSkip;
  if (!in_column_ || cell.qualifier != qualifier_ || cell.family != family_) {
    if (!in_column_ || cell.family != family_) {
      family_.assign(cell.family.data(), cell.family.size());
      max_versions_ = 1;
      for (const FamilyOptions& f : *families_) {
        if (f.name == cell.family) max_versions_ = f.max_versions;
      }
    }
    qualifier_.assign(cell.qualifier.data(), cell.qualifier.size());
    in_column_ = true;
    seen_ = 0;
  }
  // A tombstone hides the column; past VERSIONS visible versions the rest are gone for this read.
  if (cell.value.empty() || ++seen_ > max_versions_) return CellAction::kNextColumn;
  return inner_ != nullptr ? inner_->FilterCell(cell) : CellAction::kInclude;
}

}  // namespace basalt::server
