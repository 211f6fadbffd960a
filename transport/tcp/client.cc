#include "transport/tcp/client.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/dial.h"
#include "common/status.h"
#include "transport/tcp/frame_stream.h"
#include "transport/verbs/frame.h"

namespace basalt::tcp {
namespace {

thread_local bool on_reader = false;

absl::Status Errno(std::string_view what, int err) {
  return absl::UnavailableError(absl::StrCat("tcp path: ", std::string(what), ": ", std::strerror(err)));
}

bool IsWildcard(const std::string& host) { return host.empty() || host == "0.0.0.0" || host == "::"; }

// A connected, blocking socket to host:port within `timeout`, set up for a connection of the
// path (common/dial.h dials).
absl::StatusOr<int> Dial(const std::string& host, int port, absl::Duration timeout) {
  absl::StatusOr<int> dialled = DialTcp(host, port, timeout);
  if (!dialled.ok()) return absl::UnavailableError(absl::StrCat("tcp path: ", dialled.status().message()));
  const int fd = *dialled;
  // A sender blocked by a server that does not read gives up after the send timeout (the
  // connection is then broken); the reader wakes at least every 50 ms to end calls past their
  // deadline.
  timeval tv{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  timeval rtv{0, 50 * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rtv, sizeof(rtv));
  // A server that vanished (its host gone, a partition) breaks the connection, so that its
  // calls go to gRPC: sent bytes unacknowledged for 20 s, or an idle connection that stops
  // answering keepalive probes.
  int one = 1, idle = 30, interval = 5, count = 4;
  unsigned int user_timeout_ms = 20000;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof(user_timeout_ms));
  return fd;
}

}  // namespace

struct TcpClient::State {
  absl::Mutex mu;
  std::optional<verbs::VerbsSession> session ABSL_GUARDED_BY(mu);
  std::vector<std::shared_ptr<Connection>> connections ABSL_GUARDED_BY(mu);
  std::vector<std::unique_ptr<absl::Mutex>> slots;  // one per connection: held while it connects
  std::vector<std::shared_ptr<Connection>> closed ABSL_GUARDED_BY(mu);  // readers to join
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> connects{0}, failures{0}, sessions{0};
  std::atomic<bool> drop_session{false};  // a connect was refused: fetch a new one
};

struct TcpClient::Connection {
  Connection(int fd, size_t max_request, size_t max_reply, State* state, std::unique_ptr<TlsStream> tls_stream)
      : fd(fd), max_request(max_request), max_reply(max_reply), state(state), tls(std::move(tls_stream)) {}
  ~Connection() {
    Close();
    if (reader.joinable()) {
      if (reader.get_id() == std::this_thread::get_id()) {
        reader.detach();  // its own last call's Done dropped it: it returns from here
      } else {
        reader.join();
      }
    }
    ::close(fd);
  }

  void Close() { ::shutdown(fd, SHUT_RDWR); }
  // Without a lock: Pick asks for every call.
  bool broken() const { return broken_.load(std::memory_order_acquire); }

  // Encodes and queues the call; sends the queue when no one else is.
  void Send(std::unique_ptr<TcpCall> call) {
    const uint64_t id = next_id.fetch_add(1, std::memory_order_relaxed);
    thread_local std::vector<uint8_t> buffer;
    if (buffer.size() < (64 << 10)) buffer.resize(64 << 10);
    absl::StatusOr<size_t> n = call->Encode(id, absl::MakeSpan(buffer));
    if (!n.ok() && n.status().code() == absl::StatusCode::kResourceExhausted && buffer.size() < max_request) {
      buffer.resize(max_request);
      n = call->Encode(id, absl::MakeSpan(buffer));
    }
    // A large request's buffer is not kept for the thread's life.
    auto shrink = [] {
      if (buffer.size() > (4 << 20)) {
        buffer.resize(64 << 10);
        buffer.shrink_to_fit();
      }
    };
    if (!n.ok()) {
      shrink();
      return call->Done(id, {}, n.status(), false);
    }
    mu.Lock();
    if (!why.ok()) {
      const absl::Status s = why;
      mu.Unlock();
      shrink();
      return call->Done(id, {}, s, true);
    }
    pending.emplace(id, std::move(call));
    out.append(reinterpret_cast<const char*>(buffer.data()), *n);
    shrink();
    if (sending) return mu.Unlock();
    sending = true;
    std::string batch;
    while (!out.empty()) {
      batch.swap(out);
      mu.Unlock();
      const bool sent = Seal(&batch) && SendAll(fd, batch);
      const int err = errno;
      batch.clear();
      mu.Lock();
      if (!sent) {
        BreakLocked(Errno("send", err));
        break;
      }
    }
    sending = false;
    mu.Unlock();
  }

  // Under TLS, `batch` sealed in place (in the order batches are sent: one sender at a time).
  bool Seal(std::string* batch) {
    if (tls == nullptr) return true;
    absl::MutexLock l(&tls_mu);
    if (!tls->Write(*batch).ok()) {
      errno = EPROTO;
      return false;
    }
    batch->clear();
    tls->TakeOutput(batch);
    return true;
  }

  // The connection is broken: no more sends; the reader fails what is pending.
  void BreakLocked(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (why.ok()) why = std::move(status);
    broken_.store(!why.ok(), std::memory_order_release);
    out.clear();
    ::shutdown(fd, SHUT_RDWR);
  }

  // Removes the call `id` if it is still pending (its caller gave up); false when its reply
  // is being delivered.
  std::unique_ptr<TcpCall> Cancel(uint64_t id) {
    absl::MutexLock l(&mu);
    auto it = pending.find(id);
    if (it == pending.end()) return nullptr;
    std::unique_ptr<TcpCall> c = std::move(it->second);
    pending.erase(it);
    return c;
  }

  void ReadLoop() {
    on_reader = true;
    FrameStreamReader reader(max_reply + verbs::kFrameHeaderSize);
    absl::Status ended;
    absl::Time next_sweep = absl::InfinitePast();
    std::vector<char> sealed(tls != nullptr ? 64 << 10 : 0);
    for (;;) {
      // One system call per wake: into the frames, or, under TLS, into `sealed` to be opened.
      ssize_t n;
      if (tls != nullptr) {
        n = ::recv(fd, sealed.data(), sealed.size(), 0);
      } else {
        const absl::Span<uint8_t> space = reader.Space(64 << 10);
        n = ::recv(fd, space.data(), space.size(), 0);
      }
      if (n == 0) {
        ended = absl::UnavailableError("tcp path: the server closed the connection");
        break;
      }
      if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
        ended = Errno("recv", errno);
        break;
      }
      if (n > 0) {
        if (tls != nullptr) {
          ended = Open(std::string_view(sealed.data(), static_cast<size_t>(n)), reader);
        } else {
          reader.Commit(static_cast<size_t>(n));
          ended = Deliver(reader);
        }
        if (!ended.ok()) break;
      }
      if (const absl::Time now = absl::Now(); now >= next_sweep) {
        Expire(now);
        next_sweep = now + absl::Milliseconds(10);
      }
    }
    std::vector<std::pair<uint64_t, std::unique_ptr<TcpCall>>> failed;
    {
      absl::MutexLock l(&mu);
      BreakLocked(ended);
      for (auto& [id, c] : pending) failed.emplace_back(id, std::move(c));
      pending.clear();
    }
    state->failures.fetch_add(failed.size(), std::memory_order_relaxed);
    for (auto& [id, c] : failed) c->Done(id, {}, ended, true);
    reader_done.store(true, std::memory_order_release);
  }

  // TLS records read (one recv's): their plaintext into the frames under one lock (a recv's
  // worth always fits the reader), then every whole reply delivered.
  absl::Status Open(std::string_view records, FrameStreamReader& reader) {
    bool ended = false;
    {
      absl::MutexLock l(&tls_mu);
      tls->Feed(records);
      for (;;) {
        const absl::Span<uint8_t> space = reader.Space(64 << 10);
        absl::StatusOr<size_t> n = tls->Read(absl::MakeSpan(reinterpret_cast<char*>(space.data()), space.size()));
        if (!n.ok()) return absl::UnavailableError(absl::StrCat("tcp path: ", n.status().message()));
        if (*n == 0) break;
        reader.Commit(*n);
      }
      ended = tls->closed();
    }
    BASALT_RETURN_IF_ERROR(Deliver(reader));
    return ended ? absl::UnavailableError("tcp path: the server ended TLS") : absl::OkStatus();
  }

  // Every whole reply read: its call finished. An error: the connection is over.
  absl::Status Deliver(FrameStreamReader& reader) {
    for (;;) {
      absl::StatusOr<std::optional<absl::Span<const uint8_t>>> next = reader.Next();
      if (!next.ok()) return absl::UnavailableError(absl::StrCat("tcp path: ", next.status().message()));
      if (!next->has_value()) return absl::OkStatus();
      const absl::Span<const uint8_t> frame = **next;
      absl::StatusOr<verbs::FrameHeader> header = verbs::ParseHeader(frame);
      if (!header.ok()) return absl::UnavailableError(absl::StrCat("tcp path: ", header.status().message()));
      if (header->request_id == 0) {
        // The server ends the connection, saying why.
        rpc::GetResponse unused;
        absl::Status why = verbs::DecodeGetReply(frame, 0, &unused);
        if (why.code() == absl::StatusCode::kPermissionDenied) state->drop_session.store(true);
        return absl::UnavailableError(absl::StrCat("tcp path: the server refused the connection: ", why.ToString()));
      }
      std::unique_ptr<TcpCall> call = Cancel(header->request_id);
      if (call != nullptr) call->Done(header->request_id, frame, absl::OkStatus(), false);
    }
  }

  void Expire(absl::Time now) {
    std::vector<std::pair<uint64_t, std::unique_ptr<TcpCall>>> late;
    {
      absl::MutexLock l(&mu);
      for (auto it = pending.begin(); it != pending.end();) {
        if (it->second->deadline <= now) {
          late.emplace_back(it->first, std::move(it->second));
          pending.erase(it++);
        } else {
          ++it;
        }
      }
    }
    for (auto& [id, c] : late) c->Done(id, {}, absl::DeadlineExceededError("tcp path: deadline passed"), false);
  }

  const int fd;
  const size_t max_request;
  const size_t max_reply;
  State* const state;
  const std::unique_ptr<TlsStream> tls ABSL_PT_GUARDED_BY(tls_mu);  // null: plain text
  absl::Mutex tls_mu;  // the sender's Seal and the reader's Open
  std::thread reader;
  std::atomic<bool> reader_done{false};  // ReadLoop has returned (or is about to)
  std::atomic<uint64_t> next_id{1};  // 0 is the server's: the connection's end

  absl::Mutex mu;
  absl::flat_hash_map<uint64_t, std::unique_ptr<TcpCall>> pending ABSL_GUARDED_BY(mu);
  std::string out ABSL_GUARDED_BY(mu);
  bool sending ABSL_GUARDED_BY(mu) = false;
  absl::Status why ABSL_GUARDED_BY(mu);  // not OK once broken
  std::atomic<bool> broken_{false};      // why is not OK
};

TcpClient::TcpClient(SessionSource sessions, std::string fallback_host, const TcpClientOptions& options)
    : sessions_(std::move(sessions)), fallback_host_(std::move(fallback_host)), options_(options),
      state_(std::make_unique<State>()) {
  const size_t n = static_cast<size_t>(std::max(1, options_.connections));
  for (size_t i = 0; i < n; ++i) state_->slots.push_back(std::make_unique<absl::Mutex>());
  absl::MutexLock l(&state_->mu);
  state_->connections.resize(n);
}

TcpClient::~TcpClient() {
  std::vector<std::shared_ptr<Connection>> all;
  {
    absl::MutexLock l(&state_->mu);
    all = std::move(state_->connections);
    for (auto& c : state_->closed) all.push_back(std::move(c));
  }
  for (auto& c : all) {
    if (c != nullptr) c->Close();
  }
}

absl::StatusOr<std::unique_ptr<TcpClient>> TcpClient::Open(SessionSource sessions, std::string fallback_host,
                                                           const TcpClientOptions& options) {
  std::unique_ptr<TcpClient> client(new TcpClient(std::move(sessions), std::move(fallback_host), options));
  absl::StatusOr<std::shared_ptr<Connection>> first = client->Pick();
  if (!first.ok()) return first.status();
  return client;
}

bool TcpClient::OnReaderThread() { return on_reader; }

// The TLS handshake on a new connection (blocking, its recv timeout short) by `deadline`.
absl::StatusOr<std::unique_ptr<TlsStream>> TcpClient::Handshake(int fd, absl::Time deadline) const {
  const std::string name = options_.tls_server_name.empty() ? fallback_host_ : options_.tls_server_name;
  absl::StatusOr<std::unique_ptr<TlsStream>> tls = TlsStream::New(options_.tls, name);
  if (!tls.ok()) return tls.status();
  // A server that closes the connection at once (with our hello unread: a reset) refused it.
  auto refused = [](int err) { return err == ECONNRESET || err == EPIPE; };
  const absl::Status closed = absl::UnavailableError(
      "tcp path: the server closed the connection in the TLS handshake (not TLS there, or it refused the "
      "connection: past tcp_max_connections, or out of descriptors)");
  char buf[16 << 10];
  for (;;) {
    absl::StatusOr<bool> done = (*tls)->Handshake();
    std::string flight;
    (*tls)->TakeOutput(&flight);
    if (!flight.empty() && !SendAll(fd, flight)) return refused(errno) ? closed : Errno("TLS handshake: send", errno);
    if (!done.ok()) return absl::UnavailableError(absl::StrCat("tcp path: ", done.status().message()));
    if (*done) return tls;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && refused(errno))) return closed;
    if (n > 0) {
      (*tls)->Feed(std::string_view(buf, static_cast<size_t>(n)));
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      return Errno("TLS handshake: recv", errno);
    }
    if (absl::Now() >= deadline) return absl::UnavailableError("tcp path: the TLS handshake did not finish in time");
  }
}

// A new connection, with a session that is still good (fetched when there is none).
absl::StatusOr<std::shared_ptr<TcpClient::Connection>> TcpClient::Connect() {
  verbs::VerbsSession session;
  {
    absl::MutexLock l(&state_->mu);
    if (state_->drop_session.exchange(false)) state_->session.reset();
    if (state_->session.has_value() && state_->session->expires > absl::Now() + absl::Seconds(1)) {
      session = *state_->session;
    }
  }
  if (session.token.empty()) {
    absl::StatusOr<verbs::VerbsSession> s = sessions_();
    if (!s.ok()) return s.status();
    if (s->token.size() != verbs::ConnectData::kTokenBytes || s->key.size() != verbs::ConnectData::kKeyBytes) {
      return absl::FailedPreconditionError("tcp path: the server's session is malformed");
    }
    session = *std::move(s);
    state_->sessions.fetch_add(1, std::memory_order_relaxed);
    absl::MutexLock l(&state_->mu);
    state_->session = session;
  }
  const std::string host = IsWildcard(session.address) ? fallback_host_ : session.address;
  const absl::Time deadline = absl::Now() + options_.connect_timeout;
  absl::StatusOr<int> fd = Dial(host, session.port, options_.connect_timeout);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<TlsStream> tls;
  if (options_.tls != nullptr) {
    absl::StatusOr<std::unique_ptr<TlsStream>> shaken = Handshake(*fd, deadline);
    if (!shaken.ok()) {
      ::close(*fd);
      return shaken.status();
    }
    tls = *std::move(shaken);
  }
  verbs::ConnectData cd;
  std::memcpy(cd.token, session.token.data(), verbs::ConnectData::kTokenBytes);
  cd.max_reply = options_.max_reply_bytes;
  absl::StatusOr<std::string> nonce = verbs::RandomBytes(verbs::ConnectData::kNonceBytes);
  if (!nonce.ok()) {
    ::close(*fd);
    return nonce.status();
  }
  std::memcpy(cd.nonce, nonce->data(), verbs::ConnectData::kNonceBytes);
  uint8_t hello[verbs::ConnectData::kSize];
  cd.Encode(session.key, hello);
  std::string proof(reinterpret_cast<const char*>(hello), sizeof(hello));
  if (tls != nullptr) {
    if (absl::Status s = tls->Write(proof); !s.ok()) {
      ::close(*fd);
      return absl::UnavailableError(absl::StrCat("tcp path: ", s.message()));
    }
    proof.clear();
    tls->TakeOutput(&proof);
  }
  if (!SendAll(*fd, proof)) {
    const absl::Status s = Errno("sending the session's proof", errno);
    ::close(*fd);
    return s;
  }
  auto c = std::make_shared<Connection>(*fd, std::max<size_t>(session.message_bytes, verbs::kFrameHeaderSize),
                                        options_.max_reply_bytes, state_.get(), std::move(tls));
  Connection* raw = c.get();
  c->reader = std::thread([raw] { raw->ReadLoop(); });
  state_->connects.fetch_add(1, std::memory_order_relaxed);
  return c;
}

// The next connection in turn, opened (again) when it is not open: by one caller, while the
// others that picked it wait for that connect.
absl::StatusOr<std::shared_ptr<TcpClient::Connection>> TcpClient::Pick() {
  const size_t i = state_->next.fetch_add(1, std::memory_order_relaxed) % state_->slots.size();
  {
    absl::MutexLock l(&state_->mu);
    const std::shared_ptr<Connection>& slot = state_->connections[i];
    if (slot != nullptr && !slot->broken()) return slot;
  }
  // Closed connections whose readers have ended: destroyed (joined) after the locks go, never
  // the caller's own (a reader thread's, when an async call's callback calls again).
  std::vector<std::shared_ptr<Connection>> reap;
  absl::MutexLock connecting(state_->slots[i].get());
  {
    absl::MutexLock l(&state_->mu);
    std::shared_ptr<Connection>& slot = state_->connections[i];
    if (slot != nullptr && !slot->broken()) return slot;  // another caller connected it
    if (slot != nullptr) {
      slot->Close();
      state_->closed.push_back(std::move(slot));  // its reader is joined once it has ended
      slot = nullptr;
    }
    std::vector<std::shared_ptr<Connection>>& closed = state_->closed;
    for (auto it = closed.begin(); it != closed.end();) {
      if ((*it)->reader_done.load(std::memory_order_acquire) &&
          (*it)->reader.get_id() != std::this_thread::get_id()) {
        reap.push_back(std::move(*it));
        it = closed.erase(it);
      } else {
        ++it;
      }
    }
  }
  absl::StatusOr<std::shared_ptr<Connection>> c = Connect();
  if (!c.ok()) return c.status();
  absl::MutexLock l(&state_->mu);
  state_->connections[i] = *c;
  return *c;
}

void TcpClient::CallAsync(std::unique_ptr<TcpCall> call) {
  absl::StatusOr<std::shared_ptr<Connection>> c = Pick();
  if (!c.ok()) return call->Done(0, {}, c.status(), true);
  (*c)->Send(std::move(call));
}

namespace {

// A sync call's side of the wait.
struct Waiter {
  absl::Notification done;
  absl::Status status;
  bool failed = false;
  bool oversized = false;  // the request did not fit the largest frame the server takes
};

class SyncCall final : public TcpCall {
 public:
  SyncCall(const std::function<absl::StatusOr<size_t>(uint64_t, absl::Span<uint8_t>)>& encode,
           const std::function<absl::Status(uint64_t, absl::Span<const uint8_t>)>& decode,
           std::shared_ptr<Waiter> waiter, uint64_t* id)
      : encode_(encode), decode_(decode), waiter_(std::move(waiter)), id_(id) {}
  absl::StatusOr<size_t> Encode(uint64_t id, absl::Span<uint8_t> out) override {
    *id_ = id;
    absl::StatusOr<size_t> n = encode_(id, out);
    waiter_->oversized = !n.ok() && n.status().code() == absl::StatusCode::kResourceExhausted;
    return n;
  }
  void Done(uint64_t id, absl::Span<const uint8_t> reply, absl::Status status, bool transport_failed) override {
    waiter_->status = status.ok() ? decode_(id, reply) : std::move(status);
    waiter_->failed = transport_failed;
    waiter_->done.Notify();
  }

 private:
  // The caller's: valid until it has the answer (a caller that gives up first takes the call
  // back, or waits for its Done).
  const std::function<absl::StatusOr<size_t>(uint64_t, absl::Span<uint8_t>)>& encode_;
  const std::function<absl::Status(uint64_t, absl::Span<const uint8_t>)>& decode_;
  std::shared_ptr<Waiter> waiter_;
  uint64_t* id_;
};

}  // namespace

absl::Status TcpClient::Call(const std::function<absl::StatusOr<size_t>(uint64_t, absl::Span<uint8_t>)>& encode,
                             const std::function<absl::Status(uint64_t, absl::Span<const uint8_t>)>& decode,
                             absl::Time deadline, bool* failed, bool* oversized) {
  *failed = false;
  *oversized = false;
  if (OnReaderThread()) {
    *failed = true;
    return absl::FailedPreconditionError("tcp path: a sync call from a reader thread would wait for itself");
  }
  absl::StatusOr<std::shared_ptr<Connection>> c = Pick();
  if (!c.ok()) {
    *failed = true;
    return c.status();
  }
  auto waiter = std::make_shared<Waiter>();
  uint64_t id = 0;
  auto call = std::make_unique<SyncCall>(encode, decode, waiter, &id);
  call->deadline = deadline;
  (*c)->Send(std::move(call));
  if (!waiter->done.WaitForNotificationWithDeadline(deadline)) {
    if ((*c)->Cancel(id) != nullptr) return absl::DeadlineExceededError("tcp path: deadline passed");
    waiter->done.WaitForNotification();  // its reply is being delivered
  }
  *failed = waiter->failed;
  *oversized = waiter->oversized;
  return waiter->status;
}

TcpClientStats TcpClient::stats() const {
  TcpClientStats s;
  s.connects = state_->connects.load(std::memory_order_relaxed);
  s.failures = state_->failures.load(std::memory_order_relaxed);
  s.sessions = state_->sessions.load(std::memory_order_relaxed);
  absl::MutexLock l(&state_->mu);
  for (const auto& c : state_->connections) {
    if (c != nullptr && !c->broken()) ++s.connections_open;
  }
  return s;
}

}  // namespace basalt::tcp
