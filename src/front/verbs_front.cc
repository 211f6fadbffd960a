#include "src/front/verbs_front.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "src/security/authorize.h"
#include "src/services/server_metrics.h"
#include "storage/region.h"
#include "transport/verbs/frame.h"
#include "transport/verbs/path.h"

namespace basalt::server {
namespace {
// The user a verbs session was issued to ("" with authentication off, or none).
std::string_view CallerOf(const void* principal) {
  return principal != nullptr ? std::string_view(static_cast<const Identity*>(principal)->user) : std::string_view();
}
}  // namespace

verbs::VerbsHandlers VerbsHandlersFor(DataService* data, const AccessController* access, metrics::Registry* metrics,
                                      Quotas* quotas, std::string_view transport) {
  verbs::VerbsHandlers h;
  std::optional<OpMetrics> get_metrics, mutate_metrics;
  if (kCountCalls && metrics != nullptr) {
    get_metrics = MakeOpMetrics(metrics, "Get", transport, /*timed=*/true);
    mutate_metrics = MakeOpMetrics(metrics, "Mutate", transport, /*timed=*/true);
  }
  // Each request is authorised as the caller its session was issued to (authorize.h), as over
  // gRPC; with authorisation off nothing is looked at.
  const AccessController* ac = access != nullptr && access->enabled() ? access : nullptr;
  // The request is read in place and the reply frame encoded straight from the engine's row: no
  // GetRequest or GetResponse on the way, unless the caller may read only part of the table.
  h.get = [data, ac, quotas, m = get_metrics, transport = std::string(transport)](
              const void* principal, uint64_t request_id, const verbs::GetRequestView& req, absl::Span<uint8_t> out,
              uint64_t* needed) -> size_t {
    const auto start = m.has_value() ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    const size_t request_bytes = req.frame_bytes;  // `out` may overwrite the request: read it first
    absl::Status s;
    const RowResult* row = nullptr;
    // Authorised first, then the quotas (as over gRPC: a caller who may not read the table takes
    // nothing from its quota), then read.
    const rpc::GetRequest* narrowed = nullptr;  // null: the request as it is
    if (ac != nullptr) {
      if (principal == nullptr) {
        s = absl::PermissionDeniedError(absl::StrCat("a ", transport, " session with no caller"));
      } else {
        const Identity& id = *static_cast<const Identity*>(principal);
        PermScope whole;
        whole.table = std::string(req.table);
        if (!ac->Holds(id, kPermRead, whole)) {  // only part of it, if any: narrowed, or refused
          thread_local rpc::GetRequest part;
          verbs::GetRequestFromView(req, &part);
          s = Authorize(*ac, id, &part);
          narrowed = &part;
        }
      }
    }
    Quotas::Ticket ticket;
    const QuotaCall call{CallerOf(principal), req.table, false, 1, 0};
    const bool quota = s.ok() && quotas != nullptr && !quotas->empty();
    if (quota) s = quotas->Admit(call, &ticket);
    if (s.ok()) s = narrowed != nullptr ? data->GetRow(*narrowed, &row) : data->GetRow(req, &row);
    const RowReply reply(row);
    const size_t n = verbs::EncodeGetReplyRow(request_id, s, s.ok() ? &reply : nullptr, out, needed);
    if (quota && s.ok()) {
      if (needed != nullptr && *needed > 0) {
        quotas->Refund(ticket, call);  // the row did not fit: the client asks again, and that is counted
      } else {
        quotas->Settle(ticket, static_cast<int64_t>(n));
      }
    }
    // Request and reply bytes: the frames', headers included (the gRPC path counts the protobuf
    // messages').
    if (m.has_value()) m->Record(s.ok(), MicrosSince(start), request_bytes, s.ok() ? n : 0);
    return n;
  };
  h.mutate = [data, ac, quotas, m = mutate_metrics, transport = std::string(transport)](
                 const void* principal, const rpc::MutateRequest& req) {
    const auto start = m.has_value() ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    absl::Status s;
    if (ac != nullptr) {
      s = principal == nullptr ? absl::PermissionDeniedError(absl::StrCat("a ", transport, " session with no caller"))
                               : Authorize(*ac, *static_cast<const Identity*>(principal), req);
    }
    if (s.ok() && quotas != nullptr && !quotas->empty()) {
      Quotas::Ticket ticket;
      s = quotas->Admit(QuotaCall{CallerOf(principal), req.table(), true, 1, static_cast<int64_t>(req.ByteSizeLong())},
                        &ticket);
    }
    // As over gRPC: only the transaction's owner writes in it (after the quotas: in a cluster
    // this asks the master).
    if (s.ok() && ac != nullptr && req.transaction() != 0) {
      const Identity& id = *static_cast<const Identity*>(principal);
      s = data->CheckWriter(TxCaller{id.user, ac->Holds(id, kPermAdmin, PermScope{})}, req.transaction());
    }
    rpc::MutateResponse unused;
    if (s.ok()) s = data->Mutate(req, &unused);
    if (m.has_value()) m->Record(s.ok(), MicrosSince(start), req.ByteSizeLong(), 0);
    return s;
  };
  return h;
}

absl::StatusOr<std::unique_ptr<verbs::VerbsServer>> StartVerbs(const ServerConfig& config, DataService* data,
                                                               std::function<void(std::function<void()>)> schedule,
                                                               VerbsControl* control, metrics::Registry* metrics,
                                                               const AccessController* access, Quotas* quotas) {
  if (config.rdma == TransportChoice::kGrpc) {
    control->state = "off: rdma=off";
    return nullptr;
  }
  std::string host;
  int port = 0;
  if (absl::Status s = SplitHostPort(config.rdma_listen.empty() ? config.listen : config.rdma_listen, &host, &port);
      !s.ok()) {
    return s;  // validated by the config parser
  }
  if (config.rdma_listen.empty()) port = 0;  // the gRPC port is taken: any free one
  verbs::VerbsServerOptions o;
  o.address = host;
  o.port = port;
  o.device = config.rdma_device;
  o.device_port = config.rdma_device_port;
  o.gid_index = config.rdma_gid_index;
  // One per core by default, like the gRPC completion-queue threads: with 16 YCSB C clients on
  // the 2-vCPU guest, 2 helpers served 1.3–1.5x what 1 did (BENCHMARKS.md §7.2).
  o.helper_threads = config.rdma_helper_threads > 0
                         ? config.rdma_helper_threads
                         : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  o.max_endpoints = config.rdma_max_endpoints;
  o.max_endpoints_per_owner = config.rdma_max_endpoints_per_user;
  o.max_sessions_per_owner = config.rdma_max_sessions_per_user;
  o.credits = config.rdma_credits;
  o.srq_depth = config.rdma_srq_depth;
  o.message_bytes = config.rdma_message_bytes;
  // Up to gRPC's receive cap, and no more than the budget could ever hold (a larger call would
  // only be sent back to gRPC); none below a message's size.
  const uint64_t rendezvous = std::min(static_cast<uint64_t>(config.max_request_bytes), config.rdma_rendezvous_budget);
  o.rendezvous_bytes = rendezvous >= o.message_bytes ? static_cast<size_t>(rendezvous) : 0;
  o.rendezvous_budget = config.rdma_rendezvous_budget;
  o.spin = absl::Microseconds(config.rdma_spin_us);
  o.session_ttl = absl::Seconds(config.rdma_session_ttl_s);
  verbs::VerbsHandlers h = VerbsHandlersFor(data, access, metrics, quotas);
  h.schedule = std::move(schedule);
  absl::StatusOr<std::unique_ptr<verbs::VerbsServer>> server = verbs::VerbsServer::Start(o, std::move(h));
  if (!server.ok()) {
    if (config.rdma == TransportChoice::kVerbs) {
      return absl::Status(server.status().code(), absl::StrCat("rdma=on: ", server.status().message()));
    }
    control->state = absl::StrCat("off: ", server.status().message());
    return nullptr;
  }
  verbs::VerbsServer* v = server->get();
  control->state = absl::StrCat(v->device_description(), " on ", v->address(), ":", v->port());
  control->open_session = [v](std::shared_ptr<const Identity> caller) -> absl::StatusOr<rpc::VerbsSessionResponse> {
    const std::string owner = caller != nullptr ? caller->user : "";  // "" (auth off): no per-user caps
    absl::StatusOr<verbs::VerbsSession> s = v->NewSession(std::move(caller), owner);
    if (!s.ok()) return s.status();
    return verbs::SessionToProto(*s);
  };
  control->set_enabled = [v](bool enabled) { v->SetEnabled(enabled); };
  control->fill_status = [v](rpc::StatusResponse* resp) {
    verbs::VerbsServerStats s = v->stats();
    resp->set_verbs_enabled(v->enabled());
    resp->set_verbs_endpoints(s.endpoints_open);
    resp->set_verbs_requests(s.requests);
    resp->set_verbs_connects_accepted(s.connects_accepted);
    resp->set_verbs_connects_rejected(s.connects_rejected);
    resp->set_verbs_malformed_frames(s.malformed_frames);
    resp->set_verbs_sessions(s.sessions);
  };
  return server;
}

}  // namespace basalt::server
