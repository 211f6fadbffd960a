#include "transport/verbs/client.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"
#include "transport/verbs/frame.h"

namespace basalt::verbs {

struct VerbsClient::Pooled {
  // Member order matters: the endpoint (its queue pair) goes before the completion queue.
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<Endpoint> ep;
  size_t server_max = 0;  // the server's receive half: our requests must fit it
  size_t rendezvous_max = 0;  // ... or this, read by the server by rendezvous (0: none)
  uint64_t epoch = 0;
  // An async endpoint: no cq of its own (it is on async_cq_), its gen in every wr_id, and the
  // calls it carries, one per credit (guarded by async_mu_).
  bool async = false;
  uint32_t gen = 0;
  struct Slot {
    bool held = false;  // taken: being encoded, in flight, or waiting for a late reply
    uint64_t id = 0;    // the request id in flight on it
    std::unique_ptr<AsyncCall> call;
    bool expired = false;  // its call was finished at its deadline; the reply may still land
    absl::Time expired_at;
  };
  std::vector<Slot> slots;
  int starting = 0;     // callers encoding into it (only the poller drops one, never then)
  bool broken = false;  // it failed while a caller held it: the poller fails its calls and drops it

  bool idle() const {
    if (starting > 0) return false;
    for (const Slot& s : slots) {
      if (s.held) return false;
    }
    return true;
  }
};

namespace {

absl::Status Transport(const absl::Status& s) {
  return absl::UnavailableError(absl::StrCat("verbs: ", s.message()));
}

}  // namespace

VerbsClient::VerbsClient(SessionSource sessions, const VerbsClientOptions& options)
    : sessions_(std::move(sessions)),
      options_(options),
      max_spinners_(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1)) {
  absl::MutexLock l(&mu_);
  cap_ = options.max_endpoints;
  absl::MutexLock al(&async_mu_);
  async_cap_ = options.max_async_endpoints;
}

absl::StatusOr<std::unique_ptr<VerbsClient>> VerbsClient::Open(SessionSource sessions,
                                                                const VerbsClientOptions& options) {
  if (options.max_endpoints < 1 || options.max_endpoints > 4096) {
    return absl::InvalidArgumentError(absl::StrCat("verbs: max_endpoints must be 1..4096, not ", options.max_endpoints));
  }
  if (options.max_async_endpoints < 0 || options.max_async_endpoints > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("verbs: max_async_endpoints must be 0..4096, not ", options.max_async_endpoints));
  }
  if (options.message_bytes < kMinMessageBytes || options.message_bytes > kMaxMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("verbs: message_bytes out of range: ", options.message_bytes));
  }
  absl::StatusOr<std::vector<std::string>> devices = RdmaDevices();
  if (!devices.ok()) return devices.status();
  std::unique_ptr<VerbsClient> c(new VerbsClient(std::move(sessions), options));
  absl::StatusOr<rdma_event_channel*> channel = CreateEventChannel();
  if (!channel.ok()) return channel.status();
  c->channel_ = *channel;
  VerbsClient* raw = c.get();
  c->cm_thread_ = std::thread([raw] { raw->CmLoop(); });
  absl::StatusOr<std::unique_ptr<SharedChunk>> chunk = SharedChunk::Create(options.max_endpoints, 2 * options.message_bytes);
  if (!chunk.ok()) return chunk.status();
  c->chunk_ = std::move(*chunk);
  if (options.async_credits < 1 || options.async_credits > kMaxCredits) {
    return absl::InvalidArgumentError(
        absl::StrCat("verbs: async_credits must be 1..", kMaxCredits, ", not ", options.async_credits));
  }
  if (options.max_async_endpoints > 0) {
    // Its own chunk, registered (pinned) with the first async endpoint: a client that makes no
    // async calls pins nothing for them.
    chunk = SharedChunk::Create(options.max_async_endpoints,
                                2 * static_cast<size_t>(options.async_credits) * options.message_bytes);
    if (!chunk.ok()) return chunk.status();
    c->async_chunk_ = std::move(*chunk);
    absl::MutexLock l(&c->async_mu_);
    c->async_by_slot_.resize(c->async_chunk_->slots(), nullptr);
  }
  // The session first: a server without verbs answers FailedPrecondition, which callers take
  // as "gRPC only".
  absl::StatusOr<VerbsSession> s = c->CurrentSession(false);
  if (!s.ok()) return s.status();
  absl::Time deadline = absl::Now() + options.connect_timeout;
  absl::StatusOr<Pooled*> first = c->Take(deadline);
  if (!first.ok()) return first.status();
  c->Give(*first, Outcome::kReuse);
  return c;
}

std::unique_ptr<VerbsClient> VerbsClient::WithEndpoints(std::vector<LoopbackEndpoint> endpoints, size_t server_max,
                                                       const VerbsClientOptions& options) {
  VerbsClientOptions o = options;
  o.max_endpoints = static_cast<int>(endpoints.size());
  o.max_async_endpoints = 0;  // no chunk, no sessions: async calls fail at once
  std::unique_ptr<VerbsClient> c(new VerbsClient(
      [] { return absl::StatusOr<VerbsSession>(absl::UnimplementedError("loopback: no sessions")); }, o));
  absl::MutexLock l(&c->mu_);
  for (auto& [cq, ep] : endpoints) {
    auto* p = new Pooled();
    p->cq = std::move(cq);
    p->ep = std::move(ep);
    p->server_max = server_max;
    c->free_.push_back(p);
    ++c->open_;
  }
  return c;
}

VerbsClient::~VerbsClient() {
  // Async calls in flight or queued finish first (by their reply, a failure or their deadline);
  // new ones fail at once. Then the async endpoints go, before their CQ.
  {
    absl::MutexLock l(&async_mu_);
    async_stop_ = true;
  }
  if (poller_.joinable()) poller_.join();
  if (connector_.joinable()) connector_.join();
  std::vector<Pooled*> async_all;
  {
    absl::MutexLock l(&async_mu_);
    for (Pooled*& p : async_by_slot_) {
      if (p != nullptr) async_all.push_back(std::exchange(p, nullptr));
    }
    async_free_.clear();
  }
  for (Pooled* p : async_all) delete p;
  {
    absl::MutexLock l(&async_mu_);
    async_cq_.reset();
  }
  async_chunk_.reset();
  std::vector<Pooled*> all;
  {
    absl::MutexLock l(&mu_);
    all.swap(free_);
  }
  for (Pooled* p : all) delete p;  // the CM thread still acks their events meanwhile
  stop_.store(true);
  if (cm_thread_.joinable()) cm_thread_.join();
  chunk_.reset();
  if (channel_ != nullptr) rdma_destroy_event_channel(channel_);
}

void VerbsClient::CmLoop() {
  while (!stop_.load()) {
    pollfd pfd{channel_->fd, POLLIN, 0};
    if (poll(&pfd, 1, 100) <= 0) continue;
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(channel_, &ev) != 0) continue;
    // The id lives until this event is acked (rdma_destroy_id waits for that), so it is safe
    // to touch here even if its endpoint is being destroyed.
    if (ev->event == RDMA_CM_EVENT_DISCONNECTED || ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
      DisconnectUnowned(ev->id);  // the queue pair goes to error: its posted receive is flushed
    }
    rdma_ack_cm_event(ev);
  }
}

size_t VerbsClient::max_request() const {
  absl::MutexLock l(&session_mu_);
  return std::min(options_.message_bytes, session_.message_bytes);
}

VerbsClientStats VerbsClient::stats() const {
  VerbsClientStats s;
  s.calls = calls_.load(std::memory_order_relaxed);
  s.async_calls = async_calls_.load(std::memory_order_relaxed);
  s.async_queued = async_queued_.load(std::memory_order_relaxed);
  s.endpoints_created = created_.load(std::memory_order_relaxed);
  s.endpoint_waits = waits_.load(std::memory_order_relaxed);
  s.failures = failures_.load(std::memory_order_relaxed);
  s.sessions = session_count_.load(std::memory_order_relaxed);
  int async_open = 0;
  {
    absl::MutexLock l(&async_mu_);
    async_open = async_open_;
    s.async_peak_per_endpoint = async_peak_;
  }
  absl::MutexLock l(&mu_);
  s.endpoints_open = static_cast<uint64_t>(open_ + async_open);
  return s;
}

absl::StatusOr<VerbsSession> VerbsClient::CurrentSession(bool refresh) {
  absl::MutexLock l(&session_mu_);
  if (!refresh && have_session_ && session_.expires > absl::Now() + absl::Seconds(1)) return session_;
  absl::StatusOr<VerbsSession> s = sessions_();
  if (!s.ok()) return s.status();
  if (s->token.size() != ConnectData::kTokenBytes || s->key.size() != ConnectData::kKeyBytes) {
    return absl::InternalError(
        absl::StrCat("verbs session: token of ", s->token.size(), " bytes, key of ", s->key.size(), " bytes"));
  }
  session_ = *s;
  have_session_ = true;
  session_count_.fetch_add(1, std::memory_order_relaxed);
  return session_;
}

absl::StatusOr<VerbsClient::Pooled*> VerbsClient::Take(absl::Time deadline) {
  bool waited = false;
  {
    absl::MutexLock l(&mu_);
    for (;;) {
      if (!free_.empty()) {
        Pooled* p = free_.back();
        free_.pop_back();
        return p;
      }
      if (open_ < cap_) {
        ++open_;
        break;
      }
      if (!waited) {
        waited = true;
        waits_.fetch_add(1, std::memory_order_relaxed);
      }
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !free_.empty() || open_ < cap_;
      };
      if (!mu_.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
        return absl::DeadlineExceededError(
            absl::StrCat("verbs: no free endpoint before the deadline (", options_.max_endpoints, " in use)"));
      }
    }
  }
  // A new endpoint, connected without the lock held.
  absl::StatusOr<std::unique_ptr<Pooled>> p = Connect(std::min(deadline, absl::Now() + options_.connect_timeout));
  absl::MutexLock l(&mu_);
  if (!p.ok()) {
    --open_;
    if (open_ > 0) {
      // Others are connected: the server is at its endpoint limit (or briefly refusing). Use
      // the endpoints there are; a failure of those resets the cap.
      cap_ = open_;
      waits_.fetch_add(1, std::memory_order_relaxed);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !free_.empty() || open_ == 0; };
      if (mu_.AwaitWithDeadline(absl::Condition(&ready), deadline) && !free_.empty()) {
        Pooled* f = free_.back();
        free_.pop_back();
        return f;
      }
    }
    return p.status();
  }
  created_.fetch_add(1, std::memory_order_relaxed);
  (*p)->epoch = epoch_;
  return p->release();
}

void VerbsClient::Give(Pooled* p, Outcome outcome) {
  std::vector<Pooled*> drop;
  {
    absl::MutexLock l(&mu_);
    if (outcome == Outcome::kDropAll) {
      // Every idle endpoint is suspect too (the server may be gone): drop them with this one.
      ++epoch_;
      drop.swap(free_);
      open_ -= static_cast<int>(drop.size());
      cap_ = options_.max_endpoints;
    }
    if (outcome != Outcome::kReuse || p->epoch != epoch_) {
      --open_;
      drop.push_back(p);
    } else {
      free_.push_back(p);
    }
  }
  for (Pooled* d : drop) delete d;
}

absl::StatusOr<std::unique_ptr<VerbsClient::Pooled>> VerbsClient::Connect(absl::Time deadline, bool async) {
  absl::StatusOr<VerbsSession> s = CurrentSession(false);
  if (!s.ok()) return Transport(s.status());
  absl::StatusOr<std::unique_ptr<Pooled>> p = ConnectOnce(*s, deadline, async);
  if (p.ok()) return p;
  // The server may have restarted (new port, unknown token) or the token expired.
  s = CurrentSession(true);
  if (!s.ok()) return Transport(s.status());
  p = ConnectOnce(*s, deadline, async);
  if (!p.ok()) return Transport(p.status());
  return p;
}

absl::StatusOr<std::unique_ptr<VerbsClient::Pooled>> VerbsClient::ConnectOnce(const VerbsSession& session,
                                                                              absl::Time deadline, bool async) {
  sockaddr_storage dst;
  if (absl::Status st = ParseSockaddr(session.address, session.port, &dst); !st.ok()) return st;
  const std::string where = absl::StrCat(session.address, ":", session.port);
  int timeout_ms = static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(deadline - absl::Now()), 1, 60000));

  rdma_cm_id* raw = nullptr;
  // No event channel: rdma_cm runs this id synchronously (each call returns when done).
  if (rdma_create_id(nullptr, &raw, nullptr, RDMA_PS_TCP) != 0) {
    return ErrnoError(absl::StatusCode::kUnavailable, "rdma_create_id", errno);
  }
  CmId owned(raw);
  rdma_cm_id* id = raw;  // owned until the endpoint takes it
  auto fail = [&](std::string_view what, int err) {
    return ErrnoError(absl::StatusCode::kUnavailable, absl::StrCat(AV(what), " to ", where), err);
  };
  if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), timeout_ms) != 0) {
    return fail("rdma_resolve_addr", errno);
  }
  if (rdma_resolve_route(id, timeout_ms) != 0) return fail("rdma_resolve_route", errno);
  uint8_t ack_timeout = 14;  // 4.096 µs × 2^14 ≈ 67 ms per try, 7 tries: a dead peer shows in < 1 s
  rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &ack_timeout, sizeof(ack_timeout));
  SharedChunk* chunk = async ? async_chunk_.get() : chunk_.get();
  if (absl::Status st = chunk->Bind(id->verbs); !st.ok()) return st;
  std::optional<SharedChunk::Slice> slice = chunk->Acquire();
  if (!slice) return absl::ResourceExhaustedError("verbs: no free slice in the registered chunk");
  auto p = std::make_unique<Pooled>();
  ibv_cq* cq_for_qp = nullptr;
  const uint32_t credits = async ? std::clamp<uint32_t>(session.credits, 1, options_.async_credits) : 1;
  if (async) {
    absl::StatusOr<ibv_cq*> shared = AsyncCq(id->verbs);
    if (!shared.ok()) {
      chunk->Release(*slice);
      return shared.status();
    }
    cq_for_qp = *shared;
    p->async = true;
    absl::MutexLock l(&async_mu_);
    p->gen = ++async_gen_;  // per attempt: a rejected attempt's flushed receives carry their own
  } else {
    absl::StatusOr<std::unique_ptr<CompletionQueue>> cq =
        CompletionQueue::Create(id->verbs, static_cast<int>(kSendDepth + kRecvDepth + 4));
    if (!cq.ok()) {
      chunk->Release(*slice);
      return cq.status();
    }
    p->cq = std::move(*cq);
    cq_for_qp = p->cq->cq();
  }
  absl::StatusOr<uint32_t> max_inline =
      CreateQueuePair(id, chunk->pd(), cq_for_qp, nullptr, kSendDepth + credits, std::max(kRecvDepth, credits));
  // From here the endpoint owns the id and the slice.
  p->ep = std::make_unique<Endpoint>(std::move(owned), chunk, *slice, max_inline.ok() ? *max_inline : 0,
                                     async ? credits : 1);
  if (!max_inline.ok()) return max_inline.status();
  p->server_max = session.message_bytes;
  p->rendezvous_max = session.rendezvous_bytes;
  rendezvous_max_.store(session.rendezvous_bytes, std::memory_order_relaxed);
  if (async) {
    p->slots.resize(credits);
    for (uint32_t i = 0; i < credits; ++i) {
      if (absl::Status st = p->ep->PostRecv(i, AsyncWrId(*p, false, i)); !st.ok()) return st;
    }
  } else if (absl::Status st = p->ep->Replenish(0); !st.ok()) {
    return st;
  }

  ConnectData cd;
  std::memcpy(cd.token, session.token.data(), ConnectData::kTokenBytes);
  cd.max_reply = static_cast<uint32_t>(p->ep->half());
  absl::StatusOr<std::string> nonce = RandomBytes(ConnectData::kNonceBytes);
  if (!nonce.ok()) return nonce.status();
  std::memcpy(cd.nonce, nonce->data(), ConnectData::kNonceBytes);
  uint8_t priv[ConnectData::kSize];
  cd.Encode(session.key, priv);
  rdma_conn_param param{};
  param.private_data = priv;
  param.private_data_len = sizeof(priv);
  param.retry_count = 7;
  param.rnr_retry_count = 7;  // infinite: a receive not yet re-posted is waited for
  param.responder_resources = 1;  // the server may READ one rendezvous request at a time
  if (rdma_connect(id, &param) != 0) {
    int err = errno;
    if (err == ECONNREFUSED) {
      // The server says why in the reject's private data ("bad token", "endpoint limit", ...).
      std::string why = "no reason given";
      if (id->event != nullptr && id->event->param.conn.private_data != nullptr) {
        const char* d = static_cast<const char*>(id->event->param.conn.private_data);
        why.assign(d, strnlen(d, id->event->param.conn.private_data_len));
      }
      return absl::UnavailableError(absl::StrCat("verbs connect to ", where, " rejected: ", why));
    }
    return ErrnoError(absl::StatusCode::kUnavailable, absl::StrCat("rdma_connect to ", where), err);
  }
  // Connected: from now on its events (a disconnect from the server) go to the CM thread.
  if (rdma_migrate_id(id, channel_) != 0) {
    return ErrnoError(absl::StatusCode::kUnavailable, "rdma_migrate_id", errno);
  }
  return p;
}

absl::Status VerbsClient::Call(Encoder encode, Decoder decode, absl::Time deadline, bool* transport_failed,
                               bool* oversized) {
  return CallImpl([&](uint64_t id, absl::Span<uint8_t> out, const RemoteBuffer*) { return encode(id, out); }, decode,
                  deadline, transport_failed, oversized, /*reply_buffer=*/false);
}

absl::Status VerbsClient::CallWithReplyBuffer(GetEncoder encode, Decoder decode, absl::Time deadline,
                                              bool* transport_failed, bool* oversized) {
  return CallImpl(encode, decode, deadline, transport_failed, oversized, /*reply_buffer=*/true);
}

absl::Status VerbsClient::CallImpl(GetEncoder encode, Decoder decode, absl::Time deadline, bool* transport_failed,
                                   bool* oversized, bool reply_buffer) {
  *transport_failed = false;
  if (oversized != nullptr) *oversized = false;
  calls_.fetch_add(1, std::memory_order_relaxed);
  // A rendezvous: the request for the server to READ, the reply buffer for it to WRITE.
  // Declared before the endpoint is taken, so that they go after it is given back or
  // destroyed: no READ or WRITE of them is then in flight.
  TransferBuffer large_request, large_reply;
  absl::StatusOr<Pooled*> taken = Take(deadline);
  if (!taken.ok()) {
    *transport_failed = taken.status().code() == absl::StatusCode::kUnavailable;
    if (*transport_failed) failures_.fetch_add(1, std::memory_order_relaxed);
    return taken.status();
  }
  Pooled* p = *taken;
  auto broken = [&](const absl::Status& s) {
    *transport_failed = true;
    failures_.fetch_add(1, std::memory_order_relaxed);
    Give(p, Outcome::kDropAll);
    return Transport(s);
  };
  // A reply buffer only where the server takes rendezvous (it predates them otherwise); none
  // yet (capacity 0): a too-large reply then says how large it is.
  RemoteBuffer reply_at;
  const RemoteBuffer* reply_desc = reply_buffer && p->rendezvous_max > 0 ? &reply_at : nullptr;
  // Busy-poll only while there are cores for it: callers beyond that sleep on the channel at
  // once (16 spinners on 2 cores starved the threads with work to do).
  struct Waiting {
    std::atomic<int>* n;
    int now;
    explicit Waiting(std::atomic<int>* c) : n(c), now(c->fetch_add(1, std::memory_order_relaxed) + 1) {}
    ~Waiting() { n->fetch_sub(1, std::memory_order_relaxed); }
  } waiting(&waiting_);
  const absl::Duration spin = waiting.now <= max_spinners_ ? options_.spin : absl::ZeroDuration();

  // At most twice more: a reply that outgrows the buffer sized for it (the row grew meanwhile)
  // then goes over gRPC.
  for (int attempt = 0;; ++attempt) {
    const uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
    const size_t limit = std::min(p->ep->half(), p->server_max);
    absl::StatusOr<size_t> n = encode(id, {p->ep->send_buf(), limit}, reply_desc);
    // Too large for the server's receive buffer: a rendezvous, when the server offers it. The
    // request is encoded into memory registered for it alone, which the server reads.
    if (!n.ok() && n.status().code() == absl::StatusCode::kResourceExhausted && p->rendezvous_max > 0) {
      absl::StatusOr<size_t> m = n;
      if (large_request.data() != nullptr || large_request.Allocate(p->rendezvous_max)) {
        m = encode(id, {large_request.data(), large_request.capacity()}, reply_desc);
      }
      absl::StatusOr<FrameHeader> h = m.ok() ? ParseHeader({large_request.data(), *m}) : m.status();
      if (h.ok() && large_request.Register(chunk_->pd(), *m, IBV_ACCESS_REMOTE_READ)) {
        const RemoteBuffer where{reinterpret_cast<uintptr_t>(large_request.data()), large_request.rkey(),
                                 static_cast<uint32_t>(*m)};
        n = EncodeRendezvous(h->op, id, where, {p->ep->send_buf(), limit});
      } else if (!m.ok()) {
        n = m.status();  // larger than the server takes by rendezvous too: gRPC
      }
    }
    if (!n.ok()) {
      if (oversized != nullptr) *oversized = n.status().code() == absl::StatusCode::kResourceExhausted;
      Give(p, Outcome::kReuse);
      return n.status();
    }
    if (absl::Status st = p->ep->PostSend(id, *n); !st.ok()) return broken(st);

    uint32_t reply_len = 0;
    bool got = false;
    while (!got) {
      ibv_wc wc[4];
      absl::StatusOr<int> k = p->cq->Wait(absl::MakeSpan(wc), spin, deadline);
      if (!k.ok()) return broken(k.status());
      if (*k == 0) {
        Give(p, Outcome::kDropOne);  // its reply may still land in the buffer: never reuse it
        return absl::DeadlineExceededError("verbs: no reply before the deadline");
      }
      for (int i = 0; i < *k; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) {
          return broken(absl::UnavailableError(absl::StrCat("completion error: ", ibv_wc_status_str(wc[i].status))));
        }
        if (wc[i].opcode == IBV_WC_RECV) {
          reply_len = wc[i].byte_len;
          got = true;
        }
      }
    }
    absl::Span<const uint8_t> reply(p->ep->recv_buf(), std::min<size_t>(reply_len, p->ep->half()));
    absl::StatusOr<ReplyPlacement> placed = reply_desc != nullptr ? ParseReplyPlacement(reply, id) : ReplyPlacement{};
    bool again = false;
    absl::Status result;
    if (placed.ok() && placed->written && large_reply.registered() && placed->length <= large_reply.capacity()) {
      result = decode(id, {large_reply.data(), placed->length});  // the server wrote it there
    } else if (placed.ok() && placed->too_large && placed->needed <= p->rendezvous_max && attempt < 2) {
      // A buffer that large (and an eighth more, for a row that grows), and the Get again.
      const size_t cap = std::min<size_t>(p->rendezvous_max, placed->needed + placed->needed / 8);
      again = large_reply.Allocate(cap) &&
              large_reply.Register(chunk_->pd(), cap, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
      if (again) {
        reply_at = RemoteBuffer{reinterpret_cast<uintptr_t>(large_reply.data()), large_reply.rkey(),
                                static_cast<uint32_t>(cap)};
      } else {
        result = decode(id, reply);  // too large: the caller goes to gRPC
      }
    } else {
      result = decode(id, reply);
    }
    p->ep->Received();
    if (absl::Status st = p->ep->Replenish(0); !st.ok()) {
      broken(st).IgnoreError();
      if (again) return Transport(st);
      *transport_failed = false;  // the call itself succeeded
      return result;
    }
    if (!again) {
      Give(p, Outcome::kReuse);
      return result;
    }
  }
}

}  // namespace basalt::verbs

// ---------------------------------------------------------------------------------------------
// Async calls

namespace basalt::verbs {

namespace {
thread_local bool tl_on_poller = false;
}  // namespace

bool VerbsClient::OnAsyncPoller() { return tl_on_poller; }

// Completions of a destroyed endpoint carry an old gen (a slot is reused by the next
// endpoint), and a flushed completion has no valid opcode, so the send bit says which queue it
// came from.
uint64_t VerbsClient::AsyncWrId(const Pooled& p, bool send, uint32_t buffer) {
  return (uint64_t{p.gen} << 32) | (uint64_t{p.ep->slice_index()} << 9) | (uint64_t{buffer} << 1) | (send ? 1 : 0);
}

absl::StatusOr<ibv_cq*> VerbsClient::AsyncCq(ibv_context* ctx) {
  absl::MutexLock l(&async_mu_);
  if (async_cq_ == nullptr) {
    // Room for every queue pair's full queues twice over: completions left by destroyed queue
    // pairs and by rejected connects stay in the CQ until polled.
    const int per_endpoint = static_cast<int>(kSendDepth + kRecvDepth) + 2 * options_.async_credits;
    const int entries = 2 * options_.max_async_endpoints * per_endpoint + 64;
    absl::StatusOr<std::unique_ptr<CompletionQueue>> cq = CompletionQueue::Create(ctx, entries);
    if (!cq.ok()) return cq.status();
    async_cq_ = std::move(*cq);
  }
  return async_cq_->cq();
}

void VerbsClient::CallAsync(std::unique_ptr<AsyncCall> call) {
  async_calls_.fetch_add(1, std::memory_order_relaxed);
  bool closed = false;
  Credit c{};
  {
    absl::MutexLock l(&async_mu_);
    if (async_stop_ || options_.max_async_endpoints == 0) {
      closed = true;
    } else {
      if (!async_threads_) {
        async_threads_ = true;
        poller_ = std::thread([this] { PollerLoop(); });
        connector_ = std::thread([this] { ConnectorLoop(); });
      }
      if (!async_free_.empty()) {
        c = async_free_.back();
        async_free_.pop_back();
        c.p->slots[c.i].held = true;
        ++c.p->starting;
      } else {
        // Queued; a new endpoint is opened for it (by the connector: a call never blocks)
        // while there are fewer than the cap.
        async_queued_.fetch_add(1, std::memory_order_relaxed);
        async_queue_.push_back(std::move(call));
        AskForEndpointsLocked();
        return;
      }
    }
  }
  if (closed) return call->Done(absl::UnavailableError("verbs: no async endpoints (the client is closing)"), true);
  StartAsync(c, std::move(call));
}

void VerbsClient::PumpLocked(std::vector<Start>* starts) {
  if (async_stop_) return;
  while (!async_queue_.empty() && !async_free_.empty()) {
    Credit c = async_free_.back();
    async_free_.pop_back();
    c.p->slots[c.i].held = true;
    ++c.p->starting;
    starts->push_back(Start{c, std::move(async_queue_.front())});
    async_queue_.pop_front();
  }
  AskForEndpointsLocked();
}

void VerbsClient::AskForEndpointsLocked() {
  // Each endpoint being opened will carry async_credits of the queued calls.
  while (async_queue_.size() > static_cast<size_t>(async_opening_) * static_cast<size_t>(options_.async_credits) &&
         async_open_ < async_cap_) {
    ++async_open_;
    ++async_opening_;
    ++want_open_;
  }
}

void VerbsClient::ConnectorLoop() {
  for (;;) {
    {
      absl::MutexLock l(&async_mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(async_mu_) { return async_stop_ || want_open_ > 0; };
      async_mu_.Await(absl::Condition(&ready));
      if (async_stop_) return;
      --want_open_;
    }
    absl::StatusOr<std::unique_ptr<Pooled>> p = Connect(absl::Now() + options_.connect_timeout, /*async=*/true);
    std::deque<std::unique_ptr<AsyncCall>> failed;
    std::vector<Start> starts;
    if (p.ok()) {
      created_.fetch_add(1, std::memory_order_relaxed);
      Pooled* raw = p->release();
      absl::MutexLock l(&async_mu_);
      --async_opening_;
      async_by_slot_[raw->ep->slice_index()] = raw;
      for (uint32_t i = static_cast<uint32_t>(raw->slots.size()); i-- > 0;) async_free_.push_back(Credit{raw, i});
      PumpLocked(&starts);  // to the queued calls
    } else {
      failures_.fetch_add(1, std::memory_order_relaxed);
      absl::MutexLock l(&async_mu_);
      --async_opening_;
      --async_open_;
      if (async_open_ == 0) {
        failed.swap(async_queue_);  // nothing open or opening to carry them
      } else {
        async_cap_ = async_open_;  // the server's endpoint limit: use the endpoints there are
        PumpLocked(&starts);
      }
    }
    if (!p.ok()) {
      const bool transport = p.status().code() == absl::StatusCode::kUnavailable;
      for (auto& c : failed) c->Done(p.status(), transport);
    }
    for (Start& st : starts) StartAsync(st.c, std::move(st.call));
  }
}

void VerbsClient::StartAsync(Credit c, std::unique_ptr<AsyncCall> call) {
  Pooled* p = c.p;
  while (call != nullptr) {
    // The credit in the low byte: the reply names it.
    const uint64_t id = (next_id_.fetch_add(1, std::memory_order_relaxed) << 8) | c.i;
    call->id_ = id;
    const size_t limit = std::min(p->ep->half(), p->server_max);
    absl::StatusOr<size_t> n = call->Encode(id, {p->ep->send_buf(c.i), limit});
    if (n.ok()) {
      absl::MutexLock l(&async_mu_);
      // Held across the post: the poller may not finish this call at its deadline before it is
      // posted. A broken endpoint keeps its call for the poller to fail (only the poller drops
      // async endpoints).
      Pooled::Slot& slot = p->slots[c.i];
      slot.call = std::move(call);
      slot.id = id;
      slot.expired = false;
      --p->starting;
      if (tl_on_poller) {
        // Posted with the others the poller starts in this round, each endpoint's in one chain.
        poller_posts_.push_back(PollerPost{p->ep->slice_index(), p->gen, c.i, *n});
      } else if (!p->broken && !p->ep->PostSend(AsyncWrId(*p, true, c.i), *n, c.i).ok()) {
        p->broken = true;
      }
      const uint64_t in_flight = static_cast<uint64_t>(
          std::count_if(p->slots.begin(), p->slots.end(), [](const Pooled::Slot& s) { return s.call != nullptr; }));
      async_peak_ = std::max(async_peak_, in_flight);
      return;
    }
    call->Done(n.status(), false);  // e.g. too large for a verbs message: the path takes gRPC
    call = nullptr;
    absl::MutexLock l(&async_mu_);
    if (!p->broken && !async_stop_ && !async_queue_.empty()) {
      call = std::move(async_queue_.front());  // the credit stays held for the next one
      async_queue_.pop_front();
    } else {
      --p->starting;
      p->slots[c.i].held = false;
      if (!p->broken) async_free_.push_back(c);
    }
  }
}

void VerbsClient::ReleaseAsync(Credit c) {
  std::unique_ptr<AsyncCall> next;
  {
    absl::MutexLock l(&async_mu_);
    if (!c.p->broken && !async_stop_ && !async_queue_.empty()) {
      next = std::move(async_queue_.front());
      async_queue_.pop_front();
      ++c.p->starting;
    } else {
      c.p->slots[c.i].held = false;
      if (!c.p->broken) async_free_.push_back(c);  // a broken one is the poller's to drop
    }
  }
  if (next != nullptr) StartAsync(c, std::move(next));
}

void VerbsClient::FailAsync(Pooled* p, const absl::Status& why) {
  failures_.fetch_add(1, std::memory_order_relaxed);
  std::vector<std::unique_ptr<AsyncCall>> calls;
  std::vector<Pooled*> drop;
  {
    absl::MutexLock l(&async_mu_);
    // The idle endpoints are as suspect (the server may be gone): they go with it (not a broken
    // one: the poller's sweep fails and drops those).
    for (Pooled* q : async_by_slot_) {
      if (q != nullptr && q != p && !q->broken && q->idle()) drop.push_back(q);
    }
    for (Pooled::Slot& slot : p->slots) {
      if (slot.call != nullptr) calls.push_back(std::move(slot.call));
      if (p->starting == 0) slot.held = false;
    }
    if (p->starting > 0) {
      p->broken = true;  // a caller is encoding into it: it hands its credit back, then it goes
    } else {
      drop.push_back(p);
    }
    async_free_.erase(std::remove_if(async_free_.begin(), async_free_.end(),
                                     [&](const Credit& c) {
                                       return c.p == p || std::find(drop.begin(), drop.end(), c.p) != drop.end();
                                     }),
                      async_free_.end());
    for (Pooled* d : drop) async_by_slot_[d->ep->slice_index()] = nullptr;
    async_cap_ = options_.max_async_endpoints;
  }
  for (Pooled* d : drop) delete d;  // its slice goes back before the count drops, so a new open finds one
  std::deque<std::unique_ptr<AsyncCall>> queued;
  {
    absl::MutexLock l(&async_mu_);
    async_open_ -= static_cast<int>(drop.size());
    if (async_open_ == 0) queued.swap(async_queue_);  // nothing open or opening to carry them
  }
  const absl::Status failed = Transport(why);
  for (auto& c : calls) c->Done(failed, true);
  for (auto& c : queued) c->Done(failed, true);
}

// A credit whose call was finished at its deadline waits this long for the late reply (its
// buffers may not be reused before it lands); then its endpoint is taken as broken.
constexpr absl::Duration kLateReplyWait = absl::Seconds(5);

// The async poller: waits for completions (spinning while calls are live), handles each reply,
// then the deadlines, and starts the calls that were queued for a credit.
void VerbsClient::PollerLoop() {
  tl_on_poller = true;
  ibv_wc wc[kPollBatch];
  for (;;) {
    absl::Time wake;
    bool live = false;
    CompletionQueue* cq = nullptr;
    if (!PollerRound(&wake, &live, &cq)) return;
    FlushPollerPosts();
    int k = 0;
    if (cq != nullptr) {
      absl::StatusOr<int> got = cq->Wait(absl::MakeSpan(wc), live ? options_.spin : absl::ZeroDuration(), wake);
      if (!got.ok()) {
        log::Warning(absl::StrCat("verbs async poller: ", got.status().ToString()));
        absl::SleepFor(absl::Milliseconds(10));
      } else {
        k = *got;
      }
    }
    OnCompletions(absl::MakeSpan(wc, static_cast<size_t>(k)));
    ExpireAndPump();
    FlushPollerPosts();
  }
}

// A round's start: when to wake at the latest (the nearest deadline), whether calls are live, and
// the completion queue (none until the first endpoint). Calls queued when the client closes fail.
// False once the client is closing and nothing is left to finish.
bool VerbsClient::PollerRound(absl::Time* wake, bool* live, CompletionQueue** cq) {
  *wake = absl::Now() + absl::Milliseconds(100);
  *cq = nullptr;
  *live = false;
  std::deque<std::unique_ptr<AsyncCall>> closing;
  {
    absl::MutexLock l(&async_mu_);
    if (async_stop_) closing.swap(async_queue_);  // no endpoint takes them any more
    *live = !async_queue_.empty();
    for (const auto& c : async_queue_) *wake = std::min(*wake, c->deadline);
    for (Pooled* p : async_by_slot_) {
      if (p == nullptr) continue;
      for (const Pooled::Slot& slot : p->slots) {
        if (slot.call != nullptr) {
          *live = true;
          *wake = std::min(*wake, slot.call->deadline);
        }
      }
    }
    if (async_stop_ && !*live && closing.empty()) return false;
    if (async_cq_ == nullptr && closing.empty()) {
      // No endpoint yet: only deadlines to keep until the first one comes.
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(async_mu_) {
        return async_cq_ != nullptr || async_stop_;
      };
      async_mu_.AwaitWithDeadline(absl::Condition(&ready), *wake);
    }
    *cq = async_cq_.get();
  }
  for (auto& c : closing) c->Done(absl::UnavailableError("verbs: the client is closing"), true);
  return true;
}

void VerbsClient::OnCompletions(absl::Span<ibv_wc> wc) {
  // Which reply is its endpoint's last in this batch: the calls its credits start go out
  // then, chained, without waiting for other endpoints' replies.
  const int k = static_cast<int>(wc.size());
  bool last_of_endpoint[kPollBatch] = {};
  {
    uint64_t seen[kPollBatch];
    int n_seen = 0;
    for (int i = k; i-- > 0;) {
      const uint64_t endpoint = wc[i].wr_id >> 9;  // gen and slot
      if ((wc[i].wr_id & 1) != 0 || std::find(seen, seen + n_seen, endpoint) != seen + n_seen) continue;
      seen[n_seen++] = endpoint;
      last_of_endpoint[i] = true;
    }
  }
  for (int i = 0; i < k; ++i) {
    const uint64_t w = wc[i].wr_id;
    const uint32_t gen = static_cast<uint32_t>(w >> 32);
    const uint32_t slot = static_cast<uint32_t>(w >> 9) & 0x3fffffu;
    const uint32_t buffer = static_cast<uint32_t>(w >> 1) & 0xffu;
    const bool send = (w & 1) != 0;
    Pooled* p = nullptr;
    {
      absl::MutexLock l(&async_mu_);
      if (slot < async_by_slot_.size() && async_by_slot_[slot] != nullptr && async_by_slot_[slot]->gen == gen) {
        p = async_by_slot_[slot];
      }
    }
    if (p == nullptr) continue;  // an endpoint already dropped
    if (wc[i].status != IBV_WC_SUCCESS) {
      FailAsync(p, absl::UnavailableError(absl::StrCat("completion error: ", ibv_wc_status_str(wc[i].status))));
      continue;
    }
    if (send) continue;
    // The reply names its request, and so its credit.
    const absl::Span<const uint8_t> reply(p->ep->recv_buf(buffer), std::min<size_t>(wc[i].byte_len, p->ep->half()));
    absl::StatusOr<FrameHeader> header = ParseHeader(reply);
    const uint32_t credit = header.ok() ? static_cast<uint32_t>(header->request_id & 0xff) : 0;
    std::unique_ptr<AsyncCall> call;
    bool known = false;
    {
      absl::MutexLock l(&async_mu_);
      if (header.ok() && credit < p->slots.size() && p->slots[credit].held &&
          p->slots[credit].id == header->request_id) {
        known = true;
        call = std::move(p->slots[credit].call);  // none when it was finished at its deadline
        p->slots[credit].expired = false;
      }
    }
    if (!known) {
      FailAsync(p, absl::UnavailableError(absl::StrCat(
                       "a reply to no request in flight", header.ok() ? "" : ": ", header.ok() ? "" : header.status().message())));
      continue;
    }
    absl::Status result;
    if (call != nullptr) result = call->Decode(call->id_, reply);
    if (absl::Status st = p->ep->PostRecv(buffer, AsyncWrId(*p, false, buffer)); !st.ok()) {
      FailAsync(p, st);  // the call itself succeeded
    } else {
      ReleaseAsync(Credit{p, credit});  // the next queued call goes out before this one's Done runs
    }
    if (call != nullptr) call->Done(std::move(result), false);
    if (last_of_endpoint[i]) FlushPollerPosts(slot, gen);
  }
}

void VerbsClient::ExpireAndPump() {
  // Deadlines (queued calls, and calls whose reply has not come), endpoints that broke while
  // a caller held them, and endpoints whose late reply never came.
  const absl::Time now = absl::Now();
  std::vector<std::unique_ptr<AsyncCall>> late;
  std::vector<Pooled*> stale, broken;
  {
    absl::MutexLock l(&async_mu_);
    for (auto it = async_queue_.begin(); it != async_queue_.end();) {
      if ((*it)->deadline <= now) {
        late.push_back(std::move(*it));
        it = async_queue_.erase(it);
      } else {
        ++it;
      }
    }
    for (Pooled* p : async_by_slot_) {
      if (p == nullptr) continue;
      if (p->broken) {
        if (p->starting == 0) broken.push_back(p);
        continue;
      }
      bool is_stale = false;
      for (Pooled::Slot& s : p->slots) {
        if (s.call != nullptr && s.call->deadline <= now) {
          late.push_back(std::move(s.call));
          s.expired = true;
          s.expired_at = now;
        } else if (s.held && s.call == nullptr && s.expired && now - s.expired_at > kLateReplyWait) {
          is_stale = true;
        }
      }
      if (is_stale) stale.push_back(p);
    }
  }
  for (auto& c : late) c->Done(absl::DeadlineExceededError("verbs: no reply before the deadline"), false);
  for (Pooled* p : broken) FailAsync(p, absl::UnavailableError("post_send failed"));
  for (Pooled* p : stale) FailAsync(p, absl::UnavailableError("a reply past its deadline never came"));
  // Queued calls whose endpoints went: a free credit, or a new endpoint from the connector.
  std::vector<Start> starts;
  {
    absl::MutexLock l(&async_mu_);
    PumpLocked(&starts);
  }
  for (Start& st : starts) StartAsync(st.c, std::move(st.call));
}

void VerbsClient::FlushPollerPosts(uint32_t only_slot, uint32_t only_gen) {
  std::vector<PollerPost>& q = poller_posts_;
  while (!q.empty()) {
    const uint32_t slot = only_gen != 0 ? only_slot : q.front().slot;
    const uint32_t gen = only_gen != 0 ? only_gen : q.front().gen;
    auto mine = [&](const PollerPost& x) { return x.slot == slot && x.gen == gen; };
    {
      absl::MutexLock l(&async_mu_);
      Pooled* p = slot < async_by_slot_.size() ? async_by_slot_[slot] : nullptr;
      // An endpoint dropped or broken meanwhile: its calls are failed with it.
      if (p != nullptr && p->gen == gen && !p->broken) {
        absl::InlinedVector<Endpoint::SendItem, 32> items;
        for (const PollerPost& x : q) {
          if (mine(x)) {
            items.push_back(Endpoint::SendItem{AsyncWrId(*p, true, x.credit), p->ep->send_buf(x.credit), x.len,
                                               p->ep->lkey(), false});
          }
        }
        if (!p->ep->PostSends(items, nullptr).ok()) p->broken = true;
      }
    }
    q.erase(std::remove_if(q.begin(), q.end(), mine), q.end());
    if (only_gen != 0) return;
  }
}

}  // namespace basalt::verbs
