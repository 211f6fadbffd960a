#include "transport/verbs/client.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace basalt::verbs {

struct VerbsClient::Pooled {
  // Member order matters: the endpoint (its queue pair) goes before the completion queue.
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<Endpoint> ep;
  size_t server_max = 0;  // the server's receive half: our requests must fit it
  uint64_t epoch = 0;
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
}

absl::StatusOr<std::unique_ptr<VerbsClient>> VerbsClient::Open(SessionSource sessions,
                                                                const VerbsClientOptions& options) {
  if (options.max_endpoints < 1 || options.max_endpoints > 4096) {
    return absl::InvalidArgumentError(absl::StrCat("verbs: max_endpoints must be 1..4096, not ", options.max_endpoints));
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
      rdma_disconnect(ev->id);  // the queue pair goes to error: its posted receive is flushed
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
  s.endpoints_created = created_.load(std::memory_order_relaxed);
  s.endpoint_waits = waits_.load(std::memory_order_relaxed);
  s.failures = failures_.load(std::memory_order_relaxed);
  s.sessions = session_count_.load(std::memory_order_relaxed);
  absl::MutexLock l(&mu_);
  s.endpoints_open = static_cast<uint64_t>(open_);
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

absl::StatusOr<std::unique_ptr<VerbsClient::Pooled>> VerbsClient::Connect(absl::Time deadline) {
  absl::StatusOr<VerbsSession> s = CurrentSession(false);
  if (!s.ok()) return Transport(s.status());
  absl::StatusOr<std::unique_ptr<Pooled>> p = ConnectOnce(*s, deadline);
  if (p.ok()) return p;
  // The server may have restarted (new port, unknown token) or the token expired.
  s = CurrentSession(true);
  if (!s.ok()) return Transport(s.status());
  p = ConnectOnce(*s, deadline);
  if (!p.ok()) return Transport(p.status());
  return p;
}

absl::StatusOr<std::unique_ptr<VerbsClient::Pooled>> VerbsClient::ConnectOnce(const VerbsSession& session,
                                                                              absl::Time deadline) {
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
  if (absl::Status st = chunk_->Bind(id->verbs); !st.ok()) return st;
  std::optional<SharedChunk::Slice> slice = chunk_->Acquire();
  if (!slice) return absl::ResourceExhaustedError("verbs: no free slice in the registered chunk");
  auto p = std::make_unique<Pooled>();
  absl::StatusOr<std::unique_ptr<CompletionQueue>> cq =
      CompletionQueue::Create(id->verbs, static_cast<int>(kSendDepth + kRecvDepth + 4));
  if (!cq.ok()) {
    chunk_->Release(*slice);
    return cq.status();
  }
  p->cq = std::move(*cq);
  absl::StatusOr<uint32_t> max_inline = CreateQueuePair(id, chunk_->pd(), p->cq->cq());
  // From here the endpoint owns the id and the slice.
  p->ep = std::make_unique<Endpoint>(std::move(owned), chunk_.get(), *slice, max_inline.ok() ? *max_inline : 0);
  if (!max_inline.ok()) return max_inline.status();
  p->server_max = session.message_bytes;
  if (absl::Status st = p->ep->Replenish(0); !st.ok()) return st;

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

absl::Status VerbsClient::Call(Encoder encode, Decoder decode, absl::Time deadline, bool* transport_failed) {
  *transport_failed = false;
  calls_.fetch_add(1, std::memory_order_relaxed);
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

  const uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  const size_t limit = std::min(p->ep->half(), p->server_max);
  absl::StatusOr<size_t> n = encode(id, {p->ep->send_buf(), limit});
  if (!n.ok()) {
    Give(p, Outcome::kReuse);
    return n.status();
  }
  if (absl::Status st = p->ep->PostSend(id, *n); !st.ok()) return broken(st);

  uint32_t reply_len = 0;
  bool got = false;
  // Busy-poll only while there are cores for it: callers beyond that sleep on the channel at
  // once (16 spinners on 2 cores starved the threads with work to do).
  struct Waiting {
    std::atomic<int>* n;
    int now;
    explicit Waiting(std::atomic<int>* c) : n(c), now(c->fetch_add(1, std::memory_order_relaxed) + 1) {}
    ~Waiting() { n->fetch_sub(1, std::memory_order_relaxed); }
  } waiting(&waiting_);
  const absl::Duration spin = waiting.now <= max_spinners_ ? options_.spin : absl::ZeroDuration();
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
  absl::Status result = decode(id, {p->ep->recv_buf(), reply_len});
  p->ep->Received();
  if (absl::Status st = p->ep->Replenish(0); !st.ok()) {
    broken(st).IgnoreError();  // the call itself succeeded
    *transport_failed = false;
    return result;
  }
  Give(p, Outcome::kReuse);
  return result;
}

}  // namespace basalt::verbs
