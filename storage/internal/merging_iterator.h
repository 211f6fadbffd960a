// Merges sorted child iterators into one stream in cell order. Children are given newest
// first (active memstore, frozen memstore, block files newest to oldest); when two children
// hold the same flat key, only the newest child's entry is produced (a later put of the same
// cell replaces the earlier one, whatever was flushed). A child's own duplicates (the memstore
// keeps every edit of a cell) are dropped the same way. Not thread-safe.
#pragma once

#include <memory>
#include <vector>

#include "storage/internal/iterator.h"

namespace basalt {

std::unique_ptr<InternalIterator> NewMergingIterator(std::vector<std::unique_ptr<InternalIterator>> children);

}  // namespace basalt
