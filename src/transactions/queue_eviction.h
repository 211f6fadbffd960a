// A queue's consumed entries go at major compaction (docs/DESIGN.md §7; CDAP's queue eviction):
// a row of a queue's table (client/include/basalt/queue.h) whose consumed mark was written by a
// transaction settled for good (TransactionManager::SettledHorizon: every snapshot, now and
// later, sees the mark) is dropped whole. Marks of transactions in progress, of ones a snapshot
// in progress cannot see yet, and of invalid ones keep their rows; rolled-back marks are gone
// before the filter sees the row.
#pragma once

#include <functional>
#include <memory>

#include "src/transactions/transactions.h"
#include "storage/region.h"

namespace basalt::server {

class QueueEviction : public CompactionFilter {
 public:
  explicit QueueEviction(TransactionManager::Horizon horizon) : horizon_(std::move(horizon)) {}
  bool DropRow(std::string_view row, const std::vector<CellView>& cells) override;

 private:
  const TransactionManager::Horizon horizon_;
};

// For Catalog::Options::queue_compaction_filter: each compaction takes the horizon of
// when it starts. `transactions` must outlive the tables.
std::function<std::unique_ptr<CompactionFilter>()> QueueEvictionFilter(TransactionManager* transactions);

}  // namespace basalt::server
