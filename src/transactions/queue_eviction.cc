#include "src/transactions/queue_eviction.h"

#include "basalt/queue_layout.h"

namespace basalt::server {

bool QueueEviction::DropRow(std::string_view, const std::vector<CellView>& cells) {
  for (const CellView& c : cells) {
    if (c.type == CellType::kPut && c.family == kQueueFamily && c.qualifier == kQueueConsumedQualifier &&
        c.value == "1" && horizon_.Settled(c.timestamp)) {
      return true;
    }
  }
  return false;
}

std::function<std::unique_ptr<CompactionFilter>()> QueueEvictionFilter(TransactionManager* transactions) {
  return [transactions]() -> std::unique_ptr<CompactionFilter> {
    return std::make_unique<QueueEviction>(transactions->SettledHorizon());
  };
}

}  // namespace basalt::server
