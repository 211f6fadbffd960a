// Merges sorted child iterators into one stream in cell order. Children are given newest
// first (active memstore, frozen memstore, block files newest to oldest); when two children
// hold the same flat key, only the newest child's entry is produced (a later put of the same
// cell replaces the earlier one, whatever was flushed). A child's own duplicates (the memstore
// keeps every edit of a cell) are dropped the same way. Not thread-safe.
#pragma once

#include <memory>

#include "absl/container/inlined_vector.h"
#include "storage/internal/iterator.h"

namespace basalt {

// A merge's children: inline up to four (a Get's sources, the memstores and a few files), so a
// read of one source allocates no list.
using IteratorList = absl::InlinedVector<std::unique_ptr<InternalIterator>, 4>;

// No child: an empty iterator; one child with unique keys: the child itself.
std::unique_ptr<InternalIterator> NewMergingIterator(IteratorList children);

}  // namespace basalt
