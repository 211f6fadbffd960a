// The client side of the verbs transport (docs/DESIGN.md, §4, Huang et al., "High-Performance Design of HBase with RDMA over InfiniBand", IPDPS 2012, §IV-D/E):
// for one server, a pool of endpoints shared by every application thread.
//
// A call takes a free endpoint (or connects a new one while the pool is below max_endpoints,
// or waits for one to come back), serialises its request straight into the endpoint's send
// half, posts it, and waits on the endpoint's own completion queue (a bounded spin, then the
// completion channel) — never holding the pool's lock while it waits. The reply is decoded in
// place from the receive half, the next receive is posted, and the endpoint goes back to the pool.
// Every endpoint's slice comes from one registered chunk (one MR) sized for max_endpoints.
//
// Endpoints connect with rdma_cm to the address of the current session, carrying its token in
// the connect request's private data. A rejected or failed connect fetches a new session (the
// server may have restarted, or the token expired) and tries once more.
//
// When the server disconnects an endpoint (it restarted, or verbs was switched off), the
// client's connection-manager thread disconnects it locally at once, so a caller waiting for a
// reply wakes with a flushed receive instead of waiting out its deadline.
//
// A transport failure (a completion error, a post that fails, a connect that cannot be made)
// destroys the endpoint, drops every idle endpoint of the pool (they are likely as dead: the
// server restarted) and returns Unavailable "verbs: ...". A call past its deadline returns
// DeadlineExceeded and destroys its endpoint (its reply may still land).
//
// Async calls (CallAsync) use endpoints of their own (and a registered chunk of their own,
// pinned with the first of them), all on one completion queue that one poller thread polls; a
// call's completion (its decode and its Done) runs on that thread, with no hand-off. Each async
// endpoint carries up to `credits` requests at once (the smaller of async_credits and the
// server's session credits), each with a send buffer and a receive buffer of its own; a
// request's id is `sequence << 8 | credit`, and the reply, which names it, finds its call by
// that (replies come in any order). A call takes a free credit, or waits in a FIFO for one to
// come back or for a connector thread to open another endpoint (while fewer than
// max_async_endpoints are open); it never blocks, and never waits for its reply. So
// max_async_endpoints x credits bounds the async calls in flight.
//
// Thread-safety: Call and CallAsync may be used from any number of threads, CallAsync also from
// a Done running on the poller.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "transport/verbs/datapath.h"
#include "transport/verbs/frame.h"

namespace basalt::verbs {

struct VerbsClientOptions {
  int max_endpoints = 32;
  // Endpoints of the async calls, apart from max_endpoints (each has its slice of the chunk).
  int max_async_endpoints = 2;
  // Requests in flight on one async endpoint (1..255; fewer when the server's session says so).
  // Each has a send and a receive buffer of message_bytes.
  int async_credits = 8;
  // Busy-poll for a reply before sleeping on the channel; only as many callers at a time as
  // there are cores but one spin, the others sleep at once.
  absl::Duration spin = absl::Microseconds(20);
  absl::Duration connect_timeout = absl::Seconds(5);
  size_t message_bytes = kDefaultMessageBytes;   // our receive and send halves
};

struct VerbsClientStats {
  uint64_t calls = 0;
  uint64_t async_calls = 0;
  uint64_t async_queued = 0;    // async calls that waited in the FIFO for a free credit
  uint64_t async_peak_per_endpoint = 0;  // the most async calls in flight at once on one endpoint
  uint64_t endpoints_created = 0;
  uint64_t endpoints_open = 0;
  uint64_t endpoint_waits = 0;  // calls that waited for a free endpoint
  uint64_t failures = 0;        // transport failures
  uint64_t sessions = 0;        // sessions fetched
};

// One async call: the request's encoder, the reply's decoder and what runs when it is done.
class AsyncCall {
 public:
  virtual ~AsyncCall() = default;
  // As Call's Encoder: runs on the thread that starts the call (the caller's, or the poller's
  // or the connector's when it waited for an endpoint).
  virtual absl::StatusOr<size_t> Encode(uint64_t id, absl::Span<uint8_t> out) = 0;
  // As Call's Decoder, on the poller.
  virtual absl::Status Decode(uint64_t id, absl::Span<const uint8_t> reply) = 0;
  // Runs once, last: on the poller; or where it was encoded when that failed; or on the
  // connector when no endpoint could be opened; or on the caller's thread when the client is
  // closing. `transport_failed` as Call's. The call is destroyed after it returns.
  virtual void Done(absl::Status status, bool transport_failed) = 0;

  absl::Time deadline = absl::InfiniteFuture();

 private:
  friend class VerbsClient;
  uint64_t id_ = 0;
};

class VerbsClient {
 public:
  // Fetches a new session from the server (over gRPC).
  using SessionSource = std::function<absl::StatusOr<VerbsSession>()>;

  // Checks for a device, fetches a session and connects the first endpoint, so that a server
  // or host without verbs is known at once.
  static absl::StatusOr<std::unique_ptr<VerbsClient>> Open(SessionSource sessions, const VerbsClientOptions& options);
  ~VerbsClient();

  // The datapath benchmark's client: its pool holds the given endpoints (on a loopback wire,
  // never connected with rdma_cm) and never grows. `server_max`: the peer's receive half.
  using LoopbackEndpoint = std::pair<std::unique_ptr<CompletionQueue>, std::unique_ptr<Endpoint>>;
  static std::unique_ptr<VerbsClient> WithEndpoints(std::vector<LoopbackEndpoint> endpoints, size_t server_max,
                                                    const VerbsClientOptions& options);

  // Encodes a request into `out` with request id `id` and returns its length (an error aborts
  // the call and is returned as is, e.g. ResourceExhausted when it does not fit).
  using Encoder = absl::FunctionRef<absl::StatusOr<size_t>(uint64_t id, absl::Span<uint8_t> out)>;
  // Decodes the reply in place; returns the call's result.
  using Decoder = absl::FunctionRef<absl::Status(uint64_t id, absl::Span<const uint8_t> reply)>;

  // One request and its reply. *transport_failed is set when the status is a transport
  // failure (Unavailable) rather than the encoder's or the server's answer.
  // *oversized (when given) is set when the request is too large for verbs, also by rendezvous
  // (or its buffer cannot be registered): the caller takes gRPC then.
  absl::Status Call(Encoder encode, Decoder decode, absl::Time deadline, bool* transport_failed,
                    bool* oversized = nullptr);
  // A Get's call: where the server takes rendezvous, the request carries a reply buffer (frame.h
  // kFlagReplyBuffer), none at first; a reply too large for the receive buffer comes back with
  // its size, and the call is made again with a buffer that large, registered for remote write,
  // which the server writes the reply into.
  using GetEncoder = absl::FunctionRef<absl::StatusOr<size_t>(uint64_t id, absl::Span<uint8_t> out,
                                                              const RemoteBuffer* reply_buffer)>;
  absl::Status CallWithReplyBuffer(GetEncoder encode, Decoder decode, absl::Time deadline, bool* transport_failed,
                                   bool* oversized = nullptr);
  // The largest request the server takes by rendezvous, as the latest session said (0: none;
  // async calls do no rendezvous, a sync call does).
  size_t rendezvous_max() const { return rendezvous_max_.load(std::memory_order_relaxed); }

  // The same, without waiting (it never blocks): `call` is done later, on the poller (see the
  // top of this file).
  void CallAsync(std::unique_ptr<AsyncCall> call);
  // Whether this thread is an async poller: a Done runs there, and must not wait for another
  // async call (nothing else would complete it).
  static bool OnAsyncPoller();

  // The largest request this client can send (the smaller of its send half and the server's
  // receive half).
  size_t max_request() const;
  VerbsClientStats stats() const;

 private:
  struct Pooled;
  VerbsClient(SessionSource sessions, const VerbsClientOptions& options);
  absl::StatusOr<Pooled*> Take(absl::Time deadline);
  absl::Status CallImpl(GetEncoder encode, Decoder decode, absl::Time deadline, bool* transport_failed,
                        bool* oversized, bool reply_buffer);
  // Back to the pool (kReuse), destroyed (kDropOne: its state is unknown), or destroyed with
  // every idle endpoint (kDropAll: a transport failure, the server may be gone).
  enum class Outcome { kReuse, kDropOne, kDropAll };
  void Give(Pooled* p, Outcome outcome);
  // A sync endpoint (its own CQ, a slice of chunk_) or an async one (on async_cq_, a slice of
  // async_chunk_).
  absl::StatusOr<std::unique_ptr<Pooled>> Connect(absl::Time deadline, bool async = false);
  absl::StatusOr<std::unique_ptr<Pooled>> ConnectOnce(const VerbsSession& session, absl::Time deadline, bool async);
  // The async CQ, created on first use.
  absl::StatusOr<ibv_cq*> AsyncCq(ibv_context* ctx);
  absl::StatusOr<VerbsSession> CurrentSession(bool refresh);
  void CmLoop();

  // --- async calls ---
  // Opens the endpoints that calls queued for (want_open_), one at a time, so that no caller
  // and not the poller waits for a connect; a failure with none open fails the queued calls.
  void ConnectorLoop();
  // A credit of an async endpoint: the endpoint and which of its send buffers.
  struct Credit {
    Pooled* p;
    uint32_t i;
  };
  struct Start {
    Credit c;
    std::unique_ptr<AsyncCall> call;
  };
  // Queued calls onto free credits (returned to be started outside the lock), and a new
  // endpoint asked for when calls are queued and none is coming.
  void PumpLocked(std::vector<Start>* starts) ABSL_EXCLUSIVE_LOCKS_REQUIRED(async_mu_);
  // Asks the connector for endpoints while the queued calls are more than the endpoints being
  // opened will carry (and fewer than the cap are open).
  void AskForEndpointsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(async_mu_);
  // Encodes and posts `call` on credit `c` (which it holds); a call that cannot be encoded is
  // done at once and the credit takes the next queued one.
  void StartAsync(Credit c, std::unique_ptr<AsyncCall> call);
  // A credit is free again: it takes the next queued call, or goes back to the pool.
  void ReleaseAsync(Credit c);
  // Finishes `p`'s calls after a transport failure, and drops it and every idle async endpoint
  // (its queue pair goes; CQEs it leaves behind carry an old gen).
  void FailAsync(Pooled* p, const absl::Status& why);
  void PollerLoop();
  // The poller's steps (client.cc): a round's start, the completions it read, then deadlines and
  // the calls queued for a credit.
  static constexpr int kPollBatch = 32;  // completions read at once
  bool PollerRound(absl::Time* wake, bool* live, CompletionQueue** cq);
  void OnCompletions(absl::Span<ibv_wc> wc);
  void ExpireAndPump();
  // Posts the sends the poller's calls made (those on the endpoint of `only_slot` and
  // `only_gen`, when the gen is not 0): each endpoint's in one chain (one doorbell).
  void FlushPollerPosts(uint32_t only_slot = 0, uint32_t only_gen = 0);
  struct PollerPost {
    uint32_t slot;  // the endpoint's chunk slot, and its gen
    uint32_t gen;
    uint32_t credit;
    size_t len;
  };
  std::vector<PollerPost> poller_posts_;  // the poller's only
  // gen:32 | endpoint (chunk slot):22 | buffer:8 | send:1.
  static uint64_t AsyncWrId(const Pooled& p, bool send, uint32_t buffer);

  const SessionSource sessions_;
  const VerbsClientOptions options_;
  std::unique_ptr<SharedChunk> chunk_;
  std::atomic<uint64_t> next_id_{1};
  // Connected endpoints move to this channel; cm_thread_ turns a disconnect from the server
  // into a local one, which flushes the endpoint's receive and wakes its waiting caller.
  rdma_event_channel* channel_ = nullptr;
  std::thread cm_thread_;
  std::atomic<bool> stop_{false};

  mutable absl::Mutex session_mu_;
  VerbsSession session_ ABSL_GUARDED_BY(session_mu_);
  bool have_session_ ABSL_GUARDED_BY(session_mu_) = false;

  mutable absl::Mutex mu_;
  std::vector<Pooled*> free_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;  // connected or connecting
  // How many endpoints the pool may open: max_endpoints, or fewer once the server refused one
  // more while others were open (its endpoint limit): then callers wait for a free one.
  int cap_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;  // bumped by a failure: older endpoints are dropped

  // Async endpoints and calls. The poller and the connector start with the first async call;
  // the CQ is created with the first async endpoint and outlives them all.
  std::unique_ptr<SharedChunk> async_chunk_;
  mutable absl::Mutex async_mu_;
  std::unique_ptr<CompletionQueue> async_cq_ ABSL_GUARDED_BY(async_mu_);
  bool async_threads_ ABSL_GUARDED_BY(async_mu_) = false;
  std::thread poller_;
  std::thread connector_;
  int want_open_ ABSL_GUARDED_BY(async_mu_) = 0;  // endpoints the connector is asked to open
  int async_opening_ ABSL_GUARDED_BY(async_mu_) = 0;  // ... or is opening
  std::vector<Pooled*> async_by_slot_ ABSL_GUARDED_BY(async_mu_);  // by chunk slot: open async endpoints
  std::vector<Credit> async_free_ ABSL_GUARDED_BY(async_mu_);
  std::deque<std::unique_ptr<AsyncCall>> async_queue_ ABSL_GUARDED_BY(async_mu_);
  int async_open_ ABSL_GUARDED_BY(async_mu_) = 0;  // open, or asked of the connector
  int async_cap_ ABSL_GUARDED_BY(async_mu_) = 0;   // max_async_endpoints, or fewer (server limit)
  uint32_t async_gen_ ABSL_GUARDED_BY(async_mu_) = 0;
  bool async_stop_ ABSL_GUARDED_BY(async_mu_) = false;

  std::atomic<uint64_t> calls_{0}, created_{0}, waits_{0}, failures_{0}, session_count_{0};
  std::atomic<uint64_t> async_calls_{0}, async_queued_{0};
  uint64_t async_peak_ ABSL_GUARDED_BY(async_mu_) = 0;
  std::atomic<size_t> rendezvous_max_{0};
  // Callers waiting for a reply now; only the first max_spinners_ (cores - 1) busy-poll.
  std::atomic<int> waiting_{0};
  const int max_spinners_;
};

}  // namespace basalt::verbs
