// The hook a read evaluates a filter through (HBase's Filter contract, reduced to what the
// engine needs): the region server builds one from a request's filter (src/services/filters.h),
// and a transaction's visibility filter is one too. The engine calls it per row and per cell:
//
//   1. FilterAllRemaining: true ends the scan (asked before each row).
//   2. FilterRowKey: true skips the whole row, unread.
//   3. FilterCell, for each cell the read sees (a put not deleted, not expired, in the time
//      range and the column selection), in order (family, qualifier, timestamp descending),
//      BEFORE the read's version count: a cell it does not include does not count as a version.
//   4. FilterRow, on the assembled row when it has cells: true drops it; may change the cells'
//      values (KeyOnly).
// Reset is called before each row. One filter belongs to one read (a Get, or a scan across
// its regions: its state, a page count, carries on); not thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace basalt {

class RowResult;
struct CellView;

class ReadFilter {
 public:
  enum class CellAction : uint8_t {
    kInclude,
    kIncludeAndNextColumn,  // include this cell, skip the column's older versions
    kSkip,                  // not this cell; the next one is asked
    kNextColumn,            // not this cell nor the rest of its column
    kNextRow,               // not this cell nor the rest of the row (every family)
  };

  virtual ~ReadFilter() = default;
  virtual void Reset() {}
  virtual bool FilterAllRemaining() { return false; }
  virtual bool FilterRowKey(std::string_view /*row*/) { return false; }
  virtual CellAction FilterCell(const CellView& /*cell*/) { return CellAction::kInclude; }
  virtual bool FilterRow(RowResult* /*row*/) { return false; }
};

}  // namespace basalt
