// A request's filter (rpc::Filter), evaluated in the region server through the read path's hook
// (storage/read_filter.h). client/include/basalt/filter.h states what every filter means; this
// file is that statement in code. One RequestFilter belongs to one Get or one scan stream.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/basalt.pb.h"
#include "storage/read_filter.h"

namespace basalt {

class RequestFilter : public ReadFilter {
 public:
  // InvalidArgument naming the filter when it is malformed (an op a comparator does not take,
  // a bad regex, a negative count, a tree deeper than 32) or too large (more than 1024 filters,
  // more than 16 regex comparators, a regex over 4 KiB or compiling to over 1 MiB).
  // `reversed`: the scan's direction.
  static absl::StatusOr<std::shared_ptr<RequestFilter>> Make(const rpc::Filter& f, bool reversed = false);

  // Rows each PAGE filter let through since the last call, in the tree's pre-order
  // (rpc::ScanResponse::page_rows); empty when the tree has none.
  std::vector<uint64_t> TakePageRows();

  void Reset() override { root_->Reset(); }
  bool FilterAllRemaining() override { return root_->FilterAllRemaining(); }
  bool FilterRowKey(std::string_view row) override { return root_->FilterRowKey(row); }
  CellAction FilterCell(const CellView& cell) override { return root_->FilterCell(cell); }
  bool FilterRow(RowResult* row) override { return root_->FilterRow(row); }

  class Page;

 private:
  std::unique_ptr<ReadFilter> root_;
  std::vector<Page*> pages_;  // owned by the tree
};

}  // namespace basalt
