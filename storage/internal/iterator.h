// The internal iterator every sorted source implements: memstore, block, block file, merge.
// Keys are flat keys (storage/cell.h) in cell order. Not thread-safe; one user at a time.
// The views key() and value() stay valid until the iterator moves twice: after Next(), the
// previous position's views are still good until the following Next() or Seek (a one-step
// look-back, so a reader can compare a cell with the one before it without copying).
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace basalt {

class InternalIterator {
 public:
  virtual ~InternalIterator() = default;
  virtual bool Valid() const = 0;
  virtual void SeekToFirst() = 0;
  // Positions at the first key >= target (a flat key).
  virtual void Seek(std::string_view target) = 0;
  // Positions at the last key < target (a flat key; empty: the last key), for a reversed scan
  // (HBase's seekBefore). Afterwards only Valid, key, value and status mean something, until
  // the next Seek or SeekToFirst (Next is not allowed).
  virtual void SeekBefore(std::string_view target) = 0;
  virtual void Next() = 0;
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  // Not OK when a read failed (DataLoss for a bad checksum); the iterator is then not Valid.
  virtual absl::Status status() const = 0;
  // True when no key repeats (block files). An iterator whose keys may repeat (a memstore
  // holds every edit of a cell) must keep the views of earlier keys valid while it lives, so
  // that the merging iterator can drop repeats without copying keys.
  virtual bool unique_keys() const { return false; }
};

}  // namespace basalt
