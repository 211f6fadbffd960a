// The server side of the verbs transport (docs/DESIGN.md, §4, Huang et al., "High-Performance Design of HBase with RDMA over InfiniBand", IPDPS 2012, §IV-C).
//
// An rdma_cm listener on one address (which picks the device). A client first gets a session
// over gRPC (NewSession: a random 16-byte token, a random 32-byte key and an expiry, issued to
// its caller); each endpoint it connects carries the token, a fresh nonce and a MAC made with
// the key in the connect request's private data (setup.h ConnectData). A connect whose token
// was never issued or has expired, whose MAC is not the session's key's (a token read off the
// wire, or issued to another caller), or whose nonce the session has seen (a replay) is rejected
// and counted; so is one past max_endpoints, and one past max_endpoints_per_owner of its
// session's owner (a user: one user cannot take every endpoint; the client sends that call over
// gRPC instead). Each endpoint serves its requests as the caller the session was issued to
// (`principal`, handed to the handlers).
//
// An accepted endpoint goes to the helper thread with the fewest. Each helper owns a completion
// queue and a shared receive queue, both shared by its endpoints, and polls the completion
// queue (a bounded busy-poll, then the completion channel). A received request is decoded
// (transport/verbs/frame.h) and served: Gets inline on the helper (as the gRPC front end serves
// reads inline on its polling threads), Mutates on the handler pool shared with gRPC
// (`schedule`). The handler writes the reply into the request's own receive buffer, which is
// posted again once the reply has left it (at once for an inline send). A malformed frame gets
// an InvalidArgument reply when its header can be read, or closes the endpoint when it cannot;
// either way it is counted and the server goes on.
//
// An endpoint may have `credits` requests in flight (the session says how many); replies go
// in the order they are ready, each naming its request's id. A request beyond the credits is
// malformed, and the endpoint is closed. The shared receive buffers are the only registered
// memory: one chunk of srq_depth x helper_threads buffers, whatever the endpoint count.
//
// Thread-safety: NewSession, stats and SetEnabled from any thread; Start/Shutdown from one.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/basalt.pb.h"
#include "transport/verbs/datapath.h"
#include "transport/verbs/frame.h"

namespace basalt::verbs {

struct VerbsServerOptions {
  std::string address;        // numeric IP to listen on (it selects the device); not a wildcard
  int port = 0;               // 0: any free port (clients learn it from their session)
  std::string device;         // non-empty: the address must be on this device (e.g. "mlx5_0", "rxe0")
  int device_port = 0;        // non-zero: ... and on this port of it
  int gid_index = -1;         // >= 0: that GID must be the address's RoCE GID (checked at start)
  int helper_threads = 1;
  int max_endpoints = 128;
  // Endpoints open at once, and sessions valid at once, of one owner (NewSession's `owner`; an
  // empty owner has no cap); 0: no cap.
  int max_endpoints_per_owner = 0;
  int max_sessions_per_owner = 0;
  // Requests an endpoint may have in flight at once (1..kMaxCredits), told to clients in their
  // session; a client sends more and its endpoint is closed.
  int credits = 8;
  // Receive buffers (message_bytes each) posted on each helper's shared receive queue, which
  // all its endpoints receive from; a buffer holds its request until the reply, written into
  // it, has left. 0: AutoSrqDepth. Fewer save memory: a request that finds none posted is held
  // back by the client's device (receiver-not-ready retries, without end) until one is posted
  // again; it is never refused.
  int srq_depth = 0;
  size_t message_bytes = kDefaultMessageBytes;
  // The largest request read by rendezvous (an RDMA READ of the client's memory, into a buffer
  // registered for that request alone); 0: none, larger requests go over gRPC.
  size_t rendezvous_bytes = 0;
  // The bytes registered for rendezvous at once, across endpoints: a rendezvous beyond it goes
  // to gRPC (the client is told so), so that clients cannot pin the server's memory.
  uint64_t rendezvous_budget = uint64_t{256} << 20;
  absl::Duration spin = absl::Microseconds(50);
  absl::Duration session_ttl = absl::Minutes(10);
};

// `principal`: what NewSession was given for the endpoint's session (null when nothing was).
struct VerbsHandlers {
  // Serves a Get and writes its reply frame for `request_id` into `out` (EncodeGetReply or
  // EncodeGetReplyRow; `out` holds at least kMinReplyBuffer bytes); returns the frame's length.
  // `needed`: as EncodeGetReplyRow's (the frame's size when the row is too large for `out`).
  // The request is read in place, and `out` may be the very buffer it is in: the handler is
  // done with the view before it writes the reply.
  std::function<size_t(const void* principal, uint64_t request_id, const GetRequestView&, absl::Span<uint8_t> out,
                       uint64_t* needed)>
      get;
  std::function<absl::Status(const void* principal, const rpc::MutateRequest&)> mutate;
  // Runs a task on the handler pool; empty: mutations run inline on the helper thread.
  std::function<void(std::function<void()>)> schedule;
};

// The shared receive queue's depth when srq_depth is 0: the credits of every endpoint, but no
// more than kAutoSrqBuffers buffers in all unless the endpoints alone need more (one each), so
// that registered memory stays bounded; split across the helpers (rounded up).
inline constexpr int kAutoSrqBuffers = 256;
int AutoSrqDepth(const VerbsServerOptions& options);

struct VerbsServerStats {
  uint64_t connects_accepted = 0;
  uint64_t connects_rejected = 0;  // bad, expired or missing token; bad MAC; replay; endpoint limit; disabled
  uint64_t endpoints_open = 0;
  uint64_t requests = 0;
  uint64_t malformed_frames = 0;
  uint64_t sessions = 0;
};

class VerbsServer {
 public:
  // Binds and listens. FailedPrecondition "no RDMA device" on a host without one;
  // InvalidArgument for bad options; Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<VerbsServer>> Start(const VerbsServerOptions& options,
                                                            VerbsHandlers handlers);
  ~VerbsServer();  // Shutdown
  VerbsServer(const VerbsServer&) = delete;
  VerbsServer& operator=(const VerbsServer&) = delete;

  // A new session for a client, issued to `principal` (kept with the session, and handed to
  // the handlers for every request its endpoints carry), counted against `owner`'s caps (its
  // user; "" none). Unavailable while disabled; ResourceExhausted past the owner's sessions.
  absl::StatusOr<VerbsSession> NewSession(std::shared_ptr<const void> principal = nullptr,
                                          const std::string& owner = "");

  // Disabled: every endpoint is disconnected, connects are rejected and NewSession fails, so
  // clients go to gRPC; enabled again, they come back (an operator's switch for NIC
  // maintenance, and how the fallback is tested).
  void SetEnabled(bool enabled);
  bool enabled() const { return enabled_.load(); }

  VerbsServerStats stats() const;
  int port() const { return port_; }
  const std::string& address() const { return options_.address; }
  // "rxe0 port 1, GID index 1" — what the listener resolved to.
  const std::string& device_description() const { return device_desc_; }

  // Stops the helper and connection threads, disconnects every endpoint, releases everything.
  void Shutdown();

  struct Impl;

 private:
  explicit VerbsServer(const VerbsServerOptions& options);
  VerbsServerOptions options_;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> enabled_{true};
  int port_ = 0;
  std::string device_desc_;
};

}  // namespace basalt::verbs
