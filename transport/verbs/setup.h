// Setting up the verbs transport (docs/DESIGN.md, §4), apart from its datapath
// (transport/verbs/datapath.h), as eRPC keeps ib_transport.cc apart from
// ib_transport_datapath.cc:
//   - the device check ("no RDMA device"), rdma_cm event channels and addresses,
//   - CmId, the owner of an rdma_cm id (and of its queue pair, once made),
//   - the RC queue pair every endpoint uses,
//   - (the session a server hands a client over gRPC, and the connect request's private data,
//     are session.h's: the TCP path uses them too).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/sockaddr.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "transport/verbs/session.h"

namespace basalt::verbs {

// The names of the RDMA devices on this host; FailedPrecondition "no RDMA device ..." when there
// is none (no HCA driver or rdma_rxe loaded, or no /sys/class/infiniband at all).
absl::StatusOr<std::vector<std::string>> RdmaDevices();

// "<what>: <strerror(err)>" with `code`.
absl::Status ErrnoError(absl::StatusCode code, std::string_view what, int err);

// Makes a channel's fd (completion or rdma_cm event channel) non-blocking, so a poll() that
// woke spuriously never leaves a reader stuck in ibv_get_cq_event / rdma_get_cm_event.
absl::Status SetNonBlocking(int fd, std::string_view what);

// An rdma_cm event channel with a non-blocking fd, read by a thread that polls it.
absl::StatusOr<rdma_event_channel*> CreateEventChannel();

// A numeric IPv4/IPv6 address and port as a sockaddr (no name lookup: the RDMA address of a
// server is an address). InvalidArgument otherwise.
absl::Status ParseSockaddr(const std::string& host, int port, sockaddr_storage* out);
// (SockaddrString, its text, is common/sockaddr.h's.)


// Owns an rdma_cm id: destroys its queue pair, if it has one, then the id.
struct CmIdDeleter {
  void operator()(rdma_cm_id* id) const;
};
using CmId = std::unique_ptr<rdma_cm_id, CmIdDeleter>;

// rdma_disconnect(id) from a thread that does not own the id (a CM event thread acting on a
// DISCONNECTED event while the endpoint may be being destroyed): librdmacm moves id->qp to error
// reading id->qp unlocked, so this and CmIdDeleter's destruction of the queue pair take one lock,
// and a queue pair is never modified after it is freed.
void DisconnectUnowned(rdma_cm_id* id);

// The queue-pair settings of an endpoint with one request or reply in flight each way (one
// with credits has room for that many more each way).
inline constexpr uint32_t kSendDepth = 8;
inline constexpr uint32_t kSignalEvery = 4;  // one signalled send in four frees the send queue
inline constexpr uint32_t kRecvDepth = 2;
inline constexpr uint32_t kRecvBatch = kRecvDepth;  // receives posted per ibv_post_recv
inline constexpr uint32_t kWantedInline = 256;

// Creates the RC queue pair of `id` on `pd`, both queues on `cq`, receiving from `srq` when
// given (then it has no receive queue of its own), with room for `send_depth` sends and
// `recv_depth` receives. Returns the inline size the device granted (0 when it has none).
absl::StatusOr<uint32_t> CreateQueuePair(rdma_cm_id* id, ibv_pd* pd, ibv_cq* cq, ibv_srq* srq = nullptr,
                                         uint32_t send_depth = kSendDepth, uint32_t recv_depth = kRecvDepth);


}  // namespace basalt::verbs
