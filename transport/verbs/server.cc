#include "transport/verbs/server.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <limits>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"
#include "common/status.h"
#include "transport/verbs/frame.h"

namespace basalt::verbs {

namespace {

uint64_t WrId(uint32_t gen, uint32_t key) { return (uint64_t{gen} << 32) | key; }
// In a wr_id's key half: the completion is a rendezvous's RDMA READ or a large reply's RDMA
// WRITE (keys are slot indexes of the chunk, < SharedChunk::kMaxSlots = 2^20).
constexpr uint32_t kReadTag = 1u << 31;
constexpr uint32_t kWriteTag = 1u << 30;
// A receive of a helper's shared receive queue: tag | buffer index, with no endpoint in it
// (generations start at 1); the endpoint is the completion's queue pair.
constexpr uint32_t kSrqTag = 1u << 29;
// A reply sent out of its request's shared receive buffer, not inline: seq << 32 | tag |
// buffer index. Its completion posts the buffer again (SharedReceiveQueue::Release).
constexpr uint32_t kReplyTag = 1u << 28;
using Held = SharedReceiveQueue::Held;
uint64_t ReplyWrId(const Held& h) { return (uint64_t{h.seq} << 32) | kReplyTag | h.buffer; }

// Memory of one rendezvous, registered for it alone and charged to the server's budget (the
// bytes registered for rendezvous at once, across endpoints). The server never registers
// memory for remote access: a request is READ into it, a large reply WRITten from it.
struct Transfer {
  TransferBuffer mem;
  std::atomic<uint64_t>* budget = nullptr;
  size_t charged = 0;
  Transfer() = default;
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;
  ~Transfer() {
    mem.Reset();
    if (budget != nullptr) budget->fetch_sub(charged, std::memory_order_relaxed);
  }
  // `n` bytes charged to `budget` (at most `limit` in all), allocated, not yet touched; false
  // when the budget or the memory is not there.
  bool Allocate(std::atomic<uint64_t>* b, uint64_t limit, size_t n) {
    uint64_t used = b->load(std::memory_order_relaxed);
    do {
      if (used + n > limit) return false;
    } while (!b->compare_exchange_weak(used, used + n, std::memory_order_relaxed));
    budget = b;
    charged = n;
    return mem.Allocate(n);
  }
};

// A request being read by rendezvous.
struct Rendezvous {
  FrameHeader descriptor;
  Held held;  // the descriptor's receive buffer, which its reply goes out of
  Transfer t;
};

struct ServerEndpoint : std::enable_shared_from_this<ServerEndpoint> {
  // Before `ep`, so they go after the queue pair: a READ or WRITE in flight uses their buffers.
  std::unique_ptr<Rendezvous> reading;  // the helper's only
  // Large replies being written into the client's reply buffer, oldest first: each goes when
  // its WRITE completes (not when the next request comes: a lost ACK makes the device send it
  // again), or with the endpoint. The helper's only.
  std::deque<std::unique_ptr<Transfer>> writing;
  bool can_read = false;  // the connection's initiator depth allows an RDMA READ
  std::unique_ptr<Endpoint> ep;
  std::shared_ptr<const void> principal;  // whom its session was issued to
  std::string owner;                       // and under which owner's caps
  uint32_t key = 0;
  uint32_t gen = 0;  // never 0: also the owner of the shared receive buffers it holds
  uint32_t qp_num = 0;
  size_t max_reply = 0;
  std::atomic<bool> closing{false};
  // Requests taken and not yet answered: the client may have `credits` in flight; one more
  // is a protocol error.
  std::atomic<int> in_flight{0};
  SharedReceiveQueue* srq = nullptr;             // its helper's, which its requests come to
  std::atomic<int>* helper_endpoints = nullptr;  // its helper's count, while it lives

  ServerEndpoint() = default;
  ServerEndpoint(const ServerEndpoint&) = delete;
  ServerEndpoint& operator=(const ServerEndpoint&) = delete;
  ~ServerEndpoint() {
    ep.reset();  // the queue pair first: then nothing it posted still reads a buffer it holds
    if (srq != nullptr) srq->ReleaseHeldBy(gen);
    if (helper_endpoints != nullptr) helper_endpoints->fetch_sub(1, std::memory_order_relaxed);
  }

  uint64_t wr_id() const { return WrId(gen, key); }
  // Where the reply to the request in `h` is written: the request's own receive buffer.
  absl::Span<uint8_t> Reply(const Held& h) const { return srq->Buffer(h.buffer).subspan(0, max_reply); }
};

// Whether GID `index` of the port is the RoCE v2 GID of `addr`: the GID's type is RoCE v2 and its
// bytes are the address (::ffff:a.b.c.d for IPv4, the address itself for IPv6). A device whose
// table also lists the same bytes as RoCE v1 has that at another index. NotFound for an index
// that holds no GID.
absl::StatusOr<bool> IsRoceV2GidOf(ibv_context* ctx, int port, int index, const sockaddr_storage& addr) {
  ibv_gid_entry e{};
  if (ibv_query_gid_ex(ctx, static_cast<uint32_t>(port), static_cast<uint32_t>(index), &e, 0) != 0) {
    return absl::NotFoundError(absl::StrCat("GID index ", index, " holds no GID"));
  }
  if (e.gid_type != IBV_GID_TYPE_ROCE_V2) return false;
  if (addr.ss_family == AF_INET) {
    static const uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&addr);
    return std::memcmp(e.gid.raw, kPrefix, 12) == 0 && std::memcmp(e.gid.raw + 12, &v4->sin_addr, 4) == 0;
  }
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&addr);
  return std::memcmp(e.gid.raw, &v6->sin6_addr, 16) == 0;
}

bool IsWildcard(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&addr);
  return std::memcmp(&v6->sin6_addr, &in6addr_any, sizeof(in6addr_any)) == 0;
}

}  // namespace

struct VerbsServer::Impl {
  struct Helper {
    std::unique_ptr<CompletionQueue> cq;
    // Every receive of the helper's endpoints: its memory does not grow with them.
    std::unique_ptr<SharedReceiveQueue> srq;
    std::atomic<int> endpoints{0};  // a new endpoint goes to the helper with the fewest
    std::thread thread;
    // Reused for every request this helper decodes: no allocation per request once its
    // strings have grown.
    DecodedRequest request;
    // Replies of the completions being handled that wait for their endpoint's later requests in
    // the same batch, to go chained with theirs in one post (one doorbell), in order.
    struct Reply {
      std::shared_ptr<ServerEndpoint> se;
      Held held;
      size_t n;
    };
    std::vector<Reply> replies;
  };
  // The helper whose completions this thread is handling (a reply made then goes to its
  // `replies`, unless it can go at once).
  static thread_local Helper* tl_batch;

  VerbsServerOptions options;
  VerbsHandlers handlers;
  VerbsServer* owner = nullptr;

  rdma_event_channel* channel = nullptr;
  CmId listener;
  std::unique_ptr<SharedChunk> chunk;  // the shared receive buffers
  std::vector<std::unique_ptr<Helper>> helpers;
  std::thread cm_thread;
  std::atomic<bool> stop{false};

  absl::Mutex mu;
  std::vector<std::shared_ptr<ServerEndpoint>> table ABSL_GUARDED_BY(mu);  // by key
  std::vector<uint32_t> free_keys ABSL_GUARDED_BY(mu);                     // of the table
  absl::flat_hash_map<uint32_t, uint64_t> by_qp ABSL_GUARDED_BY(mu);       // qp_num -> its wr_id
  uint32_t next_gen ABSL_GUARDED_BY(mu) = 0;

  SessionTable sessions{"verbs", "rdma_max_sessions_per_user"};
  absl::flat_hash_map<std::string, int> owner_endpoints ABSL_GUARDED_BY(mu);     // in `table`

  void ReleaseOwnerLocked(const std::string& owner) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (auto o = owner_endpoints.find(owner); o != owner_endpoints.end() && --o->second <= 0) owner_endpoints.erase(o);
  }

  absl::Mutex inflight_mu;
  int inflight ABSL_GUARDED_BY(inflight_mu) = 0;  // tasks on the handler pool

  std::atomic<uint64_t> accepted{0}, rejected{0}, requests{0}, malformed{0};
  std::atomic<uint64_t> rendezvous_in_use{0};  // bytes of Transfers, across endpoints

  ~Impl() { Release(); }

  // The table's slot for the endpoint `wr_id` names (its key, tags masked off), or null when
  // that endpoint is gone.
  std::shared_ptr<ServerEndpoint>* FindLocked(uint64_t wr_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    const uint32_t key = static_cast<uint32_t>(wr_id) & ~(kReadTag | kWriteTag);
    const uint32_t gen = static_cast<uint32_t>(wr_id >> 32);
    if (key >= table.size() || table[key] == nullptr || table[key]->gen != gen) return nullptr;
    return &table[key];
  }

  std::shared_ptr<ServerEndpoint> Lookup(uint64_t wr_id) {
    absl::MutexLock l(&mu);
    std::shared_ptr<ServerEndpoint>* e = FindLocked(wr_id);
    return e != nullptr ? *e : nullptr;
  }

  // The endpoint a shared receive's completion came to.
  std::shared_ptr<ServerEndpoint> LookupQp(uint32_t qp_num) {
    absl::MutexLock l(&mu);
    auto it = by_qp.find(qp_num);
    std::shared_ptr<ServerEndpoint>* e = it != by_qp.end() ? FindLocked(it->second) : nullptr;
    return e != nullptr ? *e : nullptr;
  }

  // A free endpoint slot for one of `owner`'s, or the reject's reason.
  absl::StatusOr<uint32_t> TakeKey(const std::string& owner) {
    absl::MutexLock l(&mu);
    if (free_keys.empty()) return absl::ResourceExhaustedError("endpoint limit");
    if (options.max_endpoints_per_owner > 0 && !owner.empty()) {
      int& n = owner_endpoints[owner];
      if (n >= options.max_endpoints_per_owner) return absl::ResourceExhaustedError("user endpoint limit");
      ++n;
    }
    const uint32_t k = free_keys.back();
    free_keys.pop_back();
    return k;
  }

  void ReturnKey(uint32_t k, const std::string& owner) {
    absl::MutexLock l(&mu);
    free_keys.push_back(k);
    ReleaseOwnerLocked(owner);
  }

  std::shared_ptr<ServerEndpoint> Remove(uint64_t wr_id) {
    absl::MutexLock l(&mu);
    std::shared_ptr<ServerEndpoint>* e = FindLocked(wr_id);
    if (e == nullptr) return nullptr;
    by_qp.erase((*e)->qp_num);
    free_keys.push_back((*e)->key);
    ReleaseOwnerLocked((*e)->owner);
    return std::move(*e);
  }

  // Starts a disconnect; the CM thread tears the endpoint down on DISCONNECTED.
  static void Disconnect(ServerEndpoint* se) {
    if (!se->closing.exchange(true)) rdma_disconnect(se->ep->id());
  }

  void DisconnectAll() {
    std::vector<std::shared_ptr<ServerEndpoint>> all;
    {
      absl::MutexLock l(&mu);
      for (auto& e : table) {
        if (e != nullptr) all.push_back(e);
      }
    }
    for (auto& e : all) Disconnect(e.get());
  }

  // --- connections (the CM thread) ---

  void Reject(rdma_cm_event* ev, std::string_view why) {
    rdma_cm_id* id = ev->id;
    rdma_reject(id, why.data(), static_cast<uint8_t>(std::min<size_t>(why.size(), 32)));
    rdma_ack_cm_event(ev);
    CmId{id}.reset();  // after the ack: destroying an id waits for its events to be acked
    rejected.fetch_add(1, std::memory_order_relaxed);
  }

  void OnConnectRequest(rdma_cm_event* ev) {
    rdma_cm_id* id = ev->id;
    if (stop.load() || !owner->enabled()) return Reject(ev, "disabled");
    absl::StatusOr<ConnectData> cd = ConnectData::Decode(ev->param.conn.private_data, ev->param.conn.private_data_len);
    if (!cd.ok()) return Reject(ev, "bad token");
    absl::StatusOr<SessionTable::Admitted> admitted = sessions.Admit(*cd);
    if (!admitted.ok()) return Reject(ev, std::string(admitted.status().message()));
    auto& [principal, owner] = *admitted;
    if (cd->max_reply < kMinReplyBuffer) return Reject(ev, "reply buffer too small");
    if (id->verbs != listener->verbs) return Reject(ev, "other device");
    absl::StatusOr<uint32_t> key = TakeKey(owner);
    if (!key.ok()) return Reject(ev, std::string(key.status().message()));
    Helper* helper = helpers.front().get();
    for (const auto& h : helpers) {
      if (h->endpoints.load(std::memory_order_relaxed) < helper->endpoints.load(std::memory_order_relaxed)) {
        helper = h.get();
      }
    }
    // Its replies (one per credit) and a rendezvous's READ or a large reply's WRITE.
    absl::StatusOr<uint32_t> max_inline = CreateQueuePair(id, chunk->pd(), helper->cq->cq(), helper->srq->srq(),
                                                          kSendDepth + static_cast<uint32_t>(options.credits));
    if (!max_inline.ok()) {
      ReturnKey(*key, owner);
      return Reject(ev, "no queue pair");
    }
    auto se = std::make_shared<ServerEndpoint>();
    se->ep = std::make_unique<Endpoint>(CmId(id), *max_inline);
    se->key = *key;
    se->qp_num = id->qp->qp_num;
    se->srq = helper->srq.get();
    se->max_reply = std::min<size_t>(helper->srq->buffer_bytes(), cd->max_reply);
    se->principal = std::move(principal);
    se->owner = std::move(owner);
    se->helper_endpoints = &helper->endpoints;
    helper->endpoints.fetch_add(1, std::memory_order_relaxed);
    {
      absl::MutexLock l(&mu);
      se->gen = ++next_gen;
      if (se->gen == 0) se->gen = ++next_gen;  // 0 is no endpoint's: a shared receive's wr_id
      table[se->key] = se;
      by_qp[se->qp_num] = se->wr_id();
    }
    id->context = reinterpret_cast<void*>(static_cast<uintptr_t>(se->wr_id()));
    rdma_conn_param param{};
    param.retry_count = 7;
    param.rnr_retry_count = 7;
    // One RDMA READ at a time (a rendezvous), if the client answers them. The request event
    // gives the client's values from this side: its responder resources are our initiator depth.
    param.initiator_depth = std::min<uint8_t>(ev->param.conn.initiator_depth, 1);
    se->can_read = param.initiator_depth > 0;
    if (rdma_accept(id, &param) != 0) {
      Remove(se->wr_id());
      rdma_ack_cm_event(ev);
      rejected.fetch_add(1, std::memory_order_relaxed);
      return;  // `se` goes: destroys the queue pair and the id
    }
    rdma_ack_cm_event(ev);
    accepted.fetch_add(1, std::memory_order_relaxed);
  }

  void CmLoop() {
    while (!stop.load()) {
      pollfd pfd{channel->fd, POLLIN, 0};
      int r = poll(&pfd, 1, 100);
      if (r <= 0) continue;
      rdma_cm_event* ev = nullptr;
      if (rdma_get_cm_event(channel, &ev) != 0) continue;
      switch (ev->event) {
        case RDMA_CM_EVENT_CONNECT_REQUEST:
          OnConnectRequest(ev);
          break;
        case RDMA_CM_EVENT_DISCONNECTED:
        case RDMA_CM_EVENT_REJECTED:
        case RDMA_CM_EVENT_CONNECT_ERROR:
        case RDMA_CM_EVENT_UNREACHABLE: {
          uint64_t key = reinterpret_cast<uintptr_t>(ev->id->context);
          rdma_ack_cm_event(ev);
          std::shared_ptr<ServerEndpoint> se = Remove(key);
          if (se != nullptr) {
            se->closing.store(true);
            if (se->ep->id()->qp != nullptr) rdma_disconnect(se->ep->id());
          }
          break;  // the last reference (here, or a handler's) destroys the endpoint
        }
        case RDMA_CM_EVENT_DEVICE_REMOVAL:
          rdma_ack_cm_event(ev);
          log::Warning("verbs: the RDMA device was removed; closing verbs endpoints");
          owner->SetEnabled(false);
          break;
        default:
          rdma_ack_cm_event(ev);
          break;
      }
    }
  }

  // --- requests (the helper threads) ---

  // The reply to the endpoint's request held in `h` (every request gets exactly one), written
  // into the request's buffer: posted inline, the buffer is free at once; otherwise it is
  // posted again when the send completes. On a helper, while the endpoint has more requests in
  // the batch of completions being handled, the reply waits for them (SendBatch).
  void Send(ServerEndpoint* se, const Held& h, size_t n) {
    se->in_flight.fetch_sub(1, std::memory_order_acq_rel);  // before: the reply lets another request come
    if (tl_batch != nullptr) {
      tl_batch->replies.push_back(Helper::Reply{se->shared_from_this(), h, n});
      return;
    }
    Post(se, {&h, 1}, {&n, 1});
  }

  // Posts the replies (held[i], n[i]) of `se` in one chain.
  void Post(ServerEndpoint* se, absl::Span<const Held> held, absl::Span<const size_t> n) {
    absl::InlinedVector<Endpoint::SendItem, 32> items;
    for (size_t j = 0; j < held.size(); ++j) {
      const bool inlined = se->ep->Inlines(n[j]);
      items.push_back(Endpoint::SendItem{inlined ? se->wr_id() : ReplyWrId(held[j]),
                                         se->srq->Buffer(held[j].buffer).data(), n[j], se->srq->lkey(), !inlined});
    }
    size_t posted = 0;
    const absl::Status st = se->ep->PostSends(items, &posted);
    for (size_t j = 0; j < items.size(); ++j) {
      // An inline reply has left its buffer; one not posted never will.
      if (j >= posted || !items[j].signaled) se->srq->Release(held[j]);
    }
    if (!st.ok()) Disconnect(se);
  }

  // Sends the waiting replies of `only` (which the caller keeps alive), or of every endpoint
  // when null: each endpoint's in one post, in the order they were made.
  void SendBatch(Helper* h, ServerEndpoint* only = nullptr) {
    std::vector<Helper::Reply>& r = h->replies;
    while (!r.empty()) {
      const std::shared_ptr<ServerEndpoint> first = only != nullptr ? nullptr : r.front().se;  // kept alive
      ServerEndpoint* se = only != nullptr ? only : first.get();
      absl::InlinedVector<Held, 32> held;
      absl::InlinedVector<size_t, 32> n;
      for (const Helper::Reply& x : r) {
        if (x.se.get() != se) continue;
        held.push_back(x.held);
        n.push_back(x.n);
      }
      if (held.empty()) return;  // none of `only`'s
      r.erase(std::remove_if(r.begin(), r.end(), [se](const Helper::Reply& x) { return x.se.get() == se; }), r.end());
      Post(se, held, n);
      if (only != nullptr) return;
    }
  }

  // Whether `se` has replies waiting in this helper's batch.
  static bool Waiting(const Helper* h, const ServerEndpoint* se) {
    for (const Helper::Reply& x : h->replies) {
      if (x.se.get() == se) return true;
    }
    return false;
  }

  // An error reply to a request whose header was read.
  void SendError(ServerEndpoint* se, const Held& h, const FrameHeader& header, const absl::Status& st) {
    if (header.op == FrameOp::kGet) return Send(se, h, EncodeGetReply(header.request_id, st, nullptr, se->Reply(h)));
    if (header.op == FrameOp::kMutate) return Send(se, h, EncodeMutateReply(header.request_id, st, se->Reply(h)));
    Drop(se, h);
  }

  // Closes the endpoint without a reply to the request held in `h`.
  void Drop(ServerEndpoint* se, const Held& h) {
    se->srq->Release(h);
    Disconnect(se);
  }

  // Serves the request in shared receive buffer `b`, which it holds until the reply is sent.
  void Serve(Helper* h, const std::shared_ptr<ServerEndpoint>& se, uint32_t b, uint32_t len) {
    requests.fetch_add(1, std::memory_order_relaxed);
    const Held held = h->srq->Take(b, se->gen);
    if (se->in_flight.fetch_add(1, std::memory_order_acq_rel) >= options.credits) {
      malformed.fetch_add(1, std::memory_order_relaxed);  // more requests in flight than its credits
      return Drop(se.get(), held);
    }
    DecodedRequest* req = &h->request;
    absl::Span<const uint8_t> in = h->srq->Message(b, len);
    absl::Status decoded = DecodeRequest(in, req);
    if (!decoded.ok()) {
      malformed.fetch_add(1, std::memory_order_relaxed);
      absl::StatusOr<FrameHeader> header = ParseHeader(in);
      if (!header.ok()) return Drop(se.get(), held);  // not even a header: drop the endpoint
      return SendError(se.get(), held, *header, decoded);
    }
    if (req->rendezvous.has_value()) return StartRendezvous(se, held, req->header, *req->rendezvous);
    Dispatch(se, held, req);
  }

  // "Take this call to gRPC": a rendezvous the server cannot take now.
  void SendTooLarge(ServerEndpoint* se, const Held& h, const FrameHeader& header, std::string_view why) {
    const FrameOp op = header.op == FrameOp::kGet ? FrameOp::kGetReply : FrameOp::kMutateReply;
    Send(se, h, EncodeTooLargeReply(op, header.request_id, why, se->Reply(h)));
  }

  // A request too large for the receive buffer: read it from the client's memory. The reply
  // comes when the read completes (FinishRendezvous); one rendezvous at a time per endpoint.
  void StartRendezvous(const std::shared_ptr<ServerEndpoint>& se, const Held& held, const FrameHeader& descriptor,
                       const RemoteBuffer& where) {
    if (options.rendezvous_bytes == 0 || where.length > options.rendezvous_bytes) {
      malformed.fetch_add(1, std::memory_order_relaxed);  // the session told the client the limit
      return SendError(se.get(), held, descriptor,
                       absl::InvalidArgumentError(absl::StrCat("verbs: a request of ", where.length,
                                                               " bytes by rendezvous is over this server's ",
                                                               options.rendezvous_bytes)));
    }
    if (se->reading != nullptr) return Drop(se.get(), held);  // one rendezvous in flight per endpoint
    if (!se->can_read) return SendTooLarge(se.get(), held, descriptor, "verbs: this connection cannot RDMA READ");
    auto r = std::make_unique<Rendezvous>();
    r->descriptor = descriptor;
    r->held = held;
    if (!r->t.Allocate(&rendezvous_in_use, options.rendezvous_budget, where.length)) {
      return SendTooLarge(se.get(), held, descriptor, "verbs: the server's rendezvous memory is in use");
    }
    if (!r->t.mem.Register(chunk->pd(), where.length, static_cast<int>(IBV_ACCESS_LOCAL_WRITE))) {
      return SendTooLarge(se.get(), held, descriptor, "verbs: cannot register a rendezvous buffer");
    }
    if (!se->ep->PostRead(WrId(se->gen, se->key | kReadTag), r->t.mem.data(), where.length, r->t.mem.lkey(),
                          where.addr, where.rkey)
             .ok()) {
      return Drop(se.get(), held);
    }
    se->reading = std::move(r);
  }

  void FinishRendezvous(Helper* h, const std::shared_ptr<ServerEndpoint>& se) {
    std::unique_ptr<Rendezvous> r = std::move(se->reading);
    if (r == nullptr) return Disconnect(se.get());  // a read nobody asked for
    DecodedRequest* req = &h->request;
    absl::Status decoded = DecodeRendezvousRequest({r->t.mem.data(), r->t.charged}, r->descriptor, req);
    if (!decoded.ok()) {
      malformed.fetch_add(1, std::memory_order_relaxed);
      return SendError(se.get(), r->held, r->descriptor, decoded);
    }
    // A Get is read in place: its buffer goes once the Get is served (a Mutate's, once decoded).
    Dispatch(se, r->held, req);
  }

  // A Get whose client gave a reply buffer: a reply too large for the client's receive buffer
  // is written into it when it fits, or the client is told how large it is.
  void ServeIntoReplyBuffer(const std::shared_ptr<ServerEndpoint>& se, const Held& held, uint64_t id,
                            const GetRequestView& get, const RemoteBuffer& where) {
    uint64_t needed = 0;
    const size_t cap = std::min<size_t>(where.length, options.rendezvous_bytes);
    const absl::Span<uint8_t> reply = se->Reply(held);
    if (cap <= se->max_reply) {
      // No buffer (yet): the reply buffer's own, or the size it needs.
      const size_t n = handlers.get(se->principal.get(), id, get, reply, &needed);
      if (needed == 0) return Send(se.get(), held, n);
      return Send(se.get(), held, EncodeTooLargeNeeding(id, needed, reply));
    }
    auto staged = std::make_unique<Transfer>();
    if (!staged->Allocate(&rendezvous_in_use, options.rendezvous_budget, cap)) {
      // Pages are touched only as the reply is written, but the whole capacity is charged.
      return Send(se.get(), held,
                  EncodeTooLargeReply(FrameOp::kGetReply, id, "verbs: the server's rendezvous memory is in use", reply));
    }
    const size_t n = handlers.get(se->principal.get(), id, get, {staged->mem.data(), cap}, &needed);
    if (needed > 0) return Send(se.get(), held, EncodeTooLargeNeeding(id, needed, reply));
    if (n <= se->max_reply) {  // small after all (or an error reply): the ordinary way
      std::memcpy(reply.data(), staged->mem.data(), n);
      return Send(se.get(), held, n);
    }
    if (!staged->mem.Register(chunk->pd(), n, 0)) {  // local read only: the WRITE's source
      return Send(se.get(), held,
                  EncodeTooLargeReply(FrameOp::kGetReply, id, "verbs: cannot register a large reply", reply));
    }
    // The WRITE, then the reply saying so: a reliable connection delivers them in that order.
    if (!se->ep->PostWrite(WrId(se->gen, se->key | kWriteTag), staged->mem.data(), static_cast<uint32_t>(n),
                           staged->mem.lkey(), where.addr, where.rkey)
             .ok()) {
      return Drop(se.get(), held);
    }
    se->writing.push_back(std::move(staged));
    Send(se.get(), held, EncodeReplyWritten(id, static_cast<uint32_t>(n), reply));
  }

  void Dispatch(const std::shared_ptr<ServerEndpoint>& se, const Held& held, DecodedRequest* req) {
    const uint64_t id = req->header.request_id;
    if (req->header.op == FrameOp::kGet) {
      if (req->reply_buffer.has_value()) return ServeIntoReplyBuffer(se, held, id, req->get, *req->reply_buffer);
      return Send(se.get(), held, handlers.get(se->principal.get(), id, req->get, se->Reply(held), nullptr));
    }
    // A write leaves the helper: it takes its request with it.
    auto mutation = std::make_shared<rpc::MutateRequest>(std::move(req->mutate));
    auto run = [this, se, held, mutation, id] {
      absl::Status st = handlers.mutate(se->principal.get(), *mutation);
      Send(se.get(), held, EncodeMutateReply(id, st, se->Reply(held)));
    };
    if (!handlers.schedule) return run();
    {
      absl::MutexLock l(&inflight_mu);
      ++inflight;
    }
    handlers.schedule([this, run] {
      run();
      absl::MutexLock l(&inflight_mu);
      --inflight;
    });
  }

  void HelperLoop(Helper* h) {
    ibv_wc wc[32];
    while (!stop.load()) {
      absl::StatusOr<int> k = h->cq->Wait(absl::MakeSpan(wc), options.spin, absl::Now() + absl::Milliseconds(100));
      if (!k.ok()) {
        log::Warning(absl::StrCat("verbs helper: ", k.status().ToString()));
        absl::SleepFor(absl::Milliseconds(10));
        continue;
      }
      // Which request is its endpoint's last in this batch: its replies go then, so that a reply
      // waits only for the same client's requests served after it, never for others'.
      bool last_of_endpoint[32] = {};
      uint32_t seen[32];
      int n_seen = 0;
      for (int i = *k; i-- > 0;) {
        if (wc[i].status != IBV_WC_SUCCESS || !h->srq->Owns(wc[i].wr_id)) continue;
        if (std::find(seen, seen + n_seen, wc[i].qp_num) != seen + n_seen) continue;
        seen[n_seen++] = wc[i].qp_num;
        last_of_endpoint[i] = true;
      }
      tl_batch = h;
      for (int i = 0; i < *k; ++i) {
        const bool ok = wc[i].status == IBV_WC_SUCCESS;
        const uint64_t w = wc[i].wr_id;
        if ((static_cast<uint32_t>(w) & kReplyTag) != 0) {
          // A reply sent out of its request's buffer has left it (or was flushed): the buffer
          // takes the next request.
          h->srq->Release(Held{SharedReceiveQueue::Index(w), static_cast<uint32_t>(w >> 32)});
          if (!ok) {
            if (std::shared_ptr<ServerEndpoint> se = LookupQp(wc[i].qp_num); se != nullptr) Disconnect(se.get());
          }
          continue;
        }
        if (h->srq->Owns(w)) {
          // A shared receive (taken by a request, or flushed with its queue pair's error).
          const uint32_t b = SharedReceiveQueue::Index(w);
          std::shared_ptr<ServerEndpoint> se = LookupQp(wc[i].qp_num);
          if (ok && se != nullptr) {
            // The endpoint's only request in the batch, or its last: the reply goes at once,
            // chained after its others.
            const bool now = last_of_endpoint[i] && !Waiting(h, se.get());
            tl_batch = now ? nullptr : h;
            Serve(h, se, b, wc[i].byte_len);
            tl_batch = h;
            if (last_of_endpoint[i]) SendBatch(h, se.get());
            continue;
          }
          h->srq->Repost(b);
          if (se != nullptr) Disconnect(se.get());
          continue;
        }
        const bool read = ok && wc[i].opcode == IBV_WC_RDMA_READ;
        const bool written = ok && wc[i].opcode == IBV_WC_RDMA_WRITE;
        if (ok && !read && !written) continue;  // a signalled inline send
        std::shared_ptr<ServerEndpoint> se = Lookup(w);
        if (se == nullptr) continue;  // a completion of an endpoint already gone
        if (!ok) {
          Disconnect(se.get());
          continue;
        }
        if (written) {
          if (!se->writing.empty()) se->writing.pop_front();  // WRITEs complete in order
        } else {
          FinishRendezvous(h, se);
        }
      }
      tl_batch = nullptr;
      SendBatch(h);
    }
  }

  // Releases everything, in order: threads, endpoints (queue pairs), completion queues, the
  // registered chunk, then the listener and the channel.
  void Release() {
    stop.store(true);
    if (cm_thread.joinable()) cm_thread.join();
    for (auto& h : helpers) {
      if (h->thread.joinable()) h->thread.join();
    }
    {
      absl::MutexLock l(&inflight_mu);
      inflight_mu.Await(absl::Condition(
          +[](int* n) { return *n == 0; }, &inflight));
    }
    std::vector<std::shared_ptr<ServerEndpoint>> all;
    {
      absl::MutexLock l(&mu);
      for (auto& e : table) {
        if (e != nullptr) all.push_back(std::move(e));
      }
    }
    {
      absl::MutexLock l(&mu);
      by_qp.clear();
    }
    for (auto& e : all) {
      if (!e->closing.exchange(true)) rdma_disconnect(e->ep->id());
    }
    all.clear();  // the queue pairs go before the shared receive queues they use
    helpers.clear();
    chunk.reset();
    listener.reset();
    if (channel != nullptr) {
      rdma_destroy_event_channel(channel);
      channel = nullptr;
    }
  }
};

int AutoSrqDepth(const VerbsServerOptions& options) {
  const int64_t all = std::min<int64_t>(int64_t{options.max_endpoints} * options.credits,
                                        std::max(options.max_endpoints, kAutoSrqBuffers));
  return static_cast<int>((all + options.helper_threads - 1) / options.helper_threads);
}

thread_local VerbsServer::Impl::Helper* VerbsServer::Impl::tl_batch = nullptr;

VerbsServer::VerbsServer(const VerbsServerOptions& options) : options_(options) {}

VerbsServer::~VerbsServer() { Shutdown(); }

void VerbsServer::Shutdown() {
  if (impl_ != nullptr) impl_->Release();
}

absl::StatusOr<std::unique_ptr<VerbsServer>> VerbsServer::Start(const VerbsServerOptions& options,
                                                                VerbsHandlers handlers) {
  if (options.helper_threads < 1 || options.helper_threads > 64) {
    return absl::InvalidArgumentError(absl::StrCat("verbs: helper_threads must be 1..64, not ", options.helper_threads));
  }
  if (options.max_endpoints < 1 || options.max_endpoints > 65536) {
    return absl::InvalidArgumentError(absl::StrCat("verbs: max_endpoints must be 1..65536, not ", options.max_endpoints));
  }
  if (options.srq_depth < 0 || options.srq_depth > 65536) {
    return absl::InvalidArgumentError(absl::StrCat("verbs: srq_depth must be 0..65536, not ", options.srq_depth));
  }
  if (options.credits < 1 || options.credits > kMaxCredits) {
    return absl::InvalidArgumentError(
        absl::StrCat("verbs: credits must be 1..", kMaxCredits, ", not ", options.credits));
  }
  // One slot per shared receive, message_bytes each (a reply goes out of its request's).
  const int per_helper = (options.max_endpoints + options.helper_threads - 1) / options.helper_threads;
  const int depth = options.srq_depth > 0 ? options.srq_depth : AutoSrqDepth(options);
  const size_t slots = static_cast<size_t>(depth) * static_cast<size_t>(options.helper_threads);
  if (slots > SharedChunk::kMaxSlots) {
    return absl::InvalidArgumentError(absl::StrCat("verbs: srq_depth x helper_threads is ", slots,
                                                   " buffers, more than ", SharedChunk::kMaxSlots));
  }
  if (options.message_bytes < kMinMessageBytes || options.message_bytes > kMaxMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("verbs: message_bytes must be ", kMinMessageBytes, "..",
                                                   kMaxMessageBytes, ", not ", options.message_bytes));
  }
  if (!handlers.get || !handlers.mutate) return absl::InvalidArgumentError("verbs: handlers missing");
  if (options.rendezvous_bytes > std::numeric_limits<uint32_t>::max() ||
      (options.rendezvous_bytes > 0 && options.rendezvous_bytes < options.message_bytes)) {
    return absl::InvalidArgumentError(absl::StrCat("verbs: rendezvous_bytes must be 0 or ", options.message_bytes,
                                                   "..4GiB, not ", options.rendezvous_bytes));
  }
  sockaddr_storage addr;
  if (absl::Status st = ParseSockaddr(options.address, options.port, &addr); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("verbs listen address: ", st.message()));
  }
  if (IsWildcard(addr)) {
    return absl::InvalidArgumentError(absl::StrCat("verbs listen address '", options.address,
                                                   "' is a wildcard: give the address of the RDMA interface"));
  }
  absl::StatusOr<std::vector<std::string>> devices = RdmaDevices();
  if (!devices.ok()) return devices.status();

  std::unique_ptr<VerbsServer> server(new VerbsServer(options));
  server->impl_ = std::make_unique<Impl>();
  Impl* impl = server->impl_.get();
  impl->options = options;
  impl->handlers = std::move(handlers);
  impl->owner = server.get();

  absl::StatusOr<rdma_event_channel*> channel = CreateEventChannel();
  if (!channel.ok()) return channel.status();
  impl->channel = *channel;
  rdma_cm_id* listener = nullptr;
  if (rdma_create_id(impl->channel, &listener, nullptr, RDMA_PS_TCP) != 0) {
    return ErrnoError(absl::StatusCode::kUnavailable, "rdma_create_id", errno);
  }
  impl->listener.reset(listener);
  const std::string where = SockaddrString(reinterpret_cast<sockaddr*>(&addr));
  if (rdma_bind_addr(impl->listener.get(), reinterpret_cast<sockaddr*>(&addr)) != 0) {
    return ErrnoError(absl::StatusCode::kUnavailable,
                      absl::StrCat("verbs: rdma_bind_addr ", where, " (is the address on an RDMA device? rdma link show)"),
                      errno);
  }
  ibv_context* ctx = impl->listener->verbs;
  if (ctx == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("verbs: ", where, " is not the address of an RDMA device"));
  }
  const std::string dev = ibv_get_device_name(ctx->device);
  const int dev_port = impl->listener->port_num;
  if (!options.device.empty() && options.device != dev) {
    return absl::FailedPreconditionError(
        absl::StrCat("verbs: ", where, " is on device ", dev, ", not on the configured rdma_device ", options.device));
  }
  if (options.device_port != 0 && options.device_port != dev_port) {
    return absl::FailedPreconditionError(absl::StrCat("verbs: ", where, " is on ", dev, " port ", dev_port,
                                                      ", not on the configured rdma_device_port ", options.device_port));
  }
  ibv_port_attr port_attr{};
  if (ibv_query_port(ctx, static_cast<uint8_t>(dev_port), &port_attr) != 0) {
    return ErrnoError(absl::StatusCode::kUnavailable, absl::StrCat("ibv_query_port ", dev, " ", dev_port), errno);
  }
  if (port_attr.state != IBV_PORT_ACTIVE) {
    return absl::FailedPreconditionError(absl::StrCat("verbs: ", dev, " port ", dev_port, " is ",
                                                      ibv_port_state_str(port_attr.state),
                                                      ", not ACTIVE (ibv_devinfo -d ", dev, "; is the link up?)"));
  }
  const bool roce = port_attr.link_layer == IBV_LINK_LAYER_ETHERNET;
  int found_gid = -1;
  for (int i = 0; roce && i < port_attr.gid_tbl_len && i < 256; ++i) {
    absl::StatusOr<bool> is = IsRoceV2GidOf(ctx, dev_port, i, addr);
    if (is.ok() && *is) {
      found_gid = i;
      break;
    }
  }
  if (options.gid_index >= 0) {
    absl::StatusOr<bool> is = IsRoceV2GidOf(ctx, dev_port, options.gid_index, addr);
    if (!is.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("verbs: ", dev, " port ", dev_port, ": GID index ", options.gid_index, " holds no GID"));
    }
    if (roce && !*is) {
      return absl::FailedPreconditionError(absl::StrCat(
          "verbs: GID index ", options.gid_index, " of ", dev, " port ", dev_port, " is not the RoCE v2 GID of ",
          options.address, found_gid >= 0 ? absl::StrCat(" (that is index ", found_gid, ")") : std::string()));
    }
  }
  server->device_desc_ = absl::StrCat(dev, " port ", dev_port,
                                      found_gid >= 0 ? absl::StrCat(", GID index ", found_gid) : std::string(),
                                      port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ? " (RoCE)" : " (InfiniBand)");

  absl::StatusOr<std::unique_ptr<SharedChunk>> chunk = SharedChunk::Create(slots, options.message_bytes);
  if (!chunk.ok()) return chunk.status();
  impl->chunk = std::move(*chunk);
  if (absl::Status st = impl->chunk->Bind(ctx); !st.ok()) return st;
  {
    absl::MutexLock l(&impl->mu);
    impl->table.resize(static_cast<size_t>(options.max_endpoints));
    for (int k = options.max_endpoints; k-- > 0;) impl->free_keys.push_back(static_cast<uint32_t>(k));
  }
  ibv_device_attr dattr{};
  int max_cqe = ibv_query_device(ctx, &dattr) == 0 ? dattr.max_cqe : 4096;
  // Each endpoint's sends (a reply per credit, and a READ or WRITE), and every shared receive.
  int entries = std::min(max_cqe, per_helper * (static_cast<int>(kSendDepth) + options.credits) + depth + 64);
  for (int i = 0; i < options.helper_threads; ++i) {
    auto h = std::make_unique<Impl::Helper>();
    absl::StatusOr<std::unique_ptr<CompletionQueue>> cq = CompletionQueue::Create(ctx, entries);
    if (!cq.ok()) return cq.status();
    h->cq = std::move(*cq);
    absl::StatusOr<std::unique_ptr<SharedReceiveQueue>> srq =
        SharedReceiveQueue::Create(impl->chunk.get(), static_cast<uint32_t>(depth), kSrqTag);
    if (!srq.ok()) return srq.status();
    h->srq = std::move(*srq);
    impl->helpers.push_back(std::move(h));
  }
  if (rdma_listen(impl->listener.get(), 128) != 0) {
    return ErrnoError(absl::StatusCode::kUnavailable, absl::StrCat("verbs: rdma_listen ", where), errno);
  }
  server->port_ = ntohs(rdma_get_src_port(impl->listener.get()));
  for (auto& h : impl->helpers) {
    Impl::Helper* hp = h.get();
    hp->thread = std::thread([impl, hp] { impl->HelperLoop(hp); });
  }
  impl->cm_thread = std::thread([impl] { impl->CmLoop(); });
  return server;
}

absl::StatusOr<VerbsSession> VerbsServer::NewSession(std::shared_ptr<const void> principal,
                                                     const std::string& owner) {
  // Unavailable, not FailedPrecondition: clients take it as "not now" and ask again later.
  if (!enabled()) return absl::UnavailableError("verbs transport disabled by the operator (SetVerbs)");
  VerbsSession s;
  s.address = options_.address;
  s.port = port_;
  s.message_bytes = options_.message_bytes;
  s.rendezvous_bytes = options_.rendezvous_bytes;
  s.credits = static_cast<uint32_t>(options_.credits);
  BASALT_RETURN_IF_ERROR(
      impl_->sessions.Issue(std::move(principal), owner, options_.session_ttl, options_.max_sessions_per_owner, &s));
  return s;
}

void VerbsServer::SetEnabled(bool enabled) {
  enabled_.store(enabled);
  if (!enabled) {
    impl_->sessions.DropAll();
    impl_->DisconnectAll();
  }
}

VerbsServerStats VerbsServer::stats() const {
  VerbsServerStats s;
  s.connects_accepted = impl_->accepted.load(std::memory_order_relaxed);
  s.connects_rejected = impl_->rejected.load(std::memory_order_relaxed);
  s.requests = impl_->requests.load(std::memory_order_relaxed);
  s.malformed_frames = impl_->malformed.load(std::memory_order_relaxed);
  s.sessions = impl_->sessions.issued();
  {
    absl::MutexLock l(&impl_->mu);
    s.endpoints_open = impl_->table.size() - impl_->free_keys.size();
  }
  return s;
}

}  // namespace basalt::verbs
