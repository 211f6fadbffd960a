// basalt-server's verbs front end: starts transport/verbs' VerbsServer as the `rdma` setting
// says, over the same DataService as gRPC (Gets inline on the verbs helper threads, Mutates on
// the gRPC server's handler pool), and fills the VerbsControl the Admin service reports through.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics.h"
#include "src/base/config.h"
#include "src/security/quotas.h"
#include "src/services/service.h"
#include "storage/region.h"
#include "transport/verbs/server.h"

namespace basalt::server {

// The engine's row as the verbs frame's ReplyRow (null: an empty row).
class RowReply final : public verbs::ReplyRow {
 public:
  explicit RowReply(const RowResult* row) : row_(row) {}
  std::string_view row() const override { return row_ != nullptr ? row_->row() : std::string_view(); }
  size_t size() const override { return row_ != nullptr ? row_->size() : 0; }
  verbs::ReplyCell cell(size_t i) const override {
    const CellView& c = row_->cells()[i];
    return verbs::ReplyCell{c.family, c.qualifier, c.value, c.timestamp, c.type == CellType::kPut};
  }

 private:
  const RowResult* row_;
};

// The Get and Mutate handlers StartVerbs serves with (no `schedule`: the caller's): each request
// authorised as StartVerbs says, counted in `metrics` when given. A Get is served from the frame read in
// place and its reply encoded from the engine's row, as DataService::Get would answer it.
// With `quotas`, each request passes them as over gRPC (quotas.h), as the session's caller.
// `transport` labels the metrics: "verbs", or "tcp" for the TCP path (tcp_front.h), which
// serves with the same handlers.
verbs::VerbsHandlers VerbsHandlersFor(DataService* data, const AccessController* access,
                                      metrics::Registry* metrics = nullptr, Quotas* quotas = nullptr,
                                      std::string_view transport = "verbs");

// rdma=off: nullptr, state "off: rdma=off". rdma=auto on a host without an RDMA device (or
// whose address is not on one): nullptr, state "off: <why>" (the caller logs it). rdma=on:
// those are errors. `schedule` is the handler pool (empty: writes run inline). Get and Mutate
// are counted and timed in `metrics` (transport "verbs") when one is given. With `access`
// enabled, each request is authorised as the caller its session was issued to (authorize.h).
absl::StatusOr<std::unique_ptr<verbs::VerbsServer>> StartVerbs(const ServerConfig& config, DataService* data,
                                                               std::function<void(std::function<void()>)> schedule,
                                                               VerbsControl* control,
                                                               metrics::Registry* metrics = nullptr,
                                                               const AccessController* access = nullptr,
                                                               Quotas* quotas = nullptr);

}  // namespace basalt::server
