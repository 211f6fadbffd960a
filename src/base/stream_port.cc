#include "src/base/stream_port.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/sockaddr.h"
#include "common/status.h"
#include "src/base/acceptor.h"

namespace basalt::server {

struct StreamConnection::Port {
  StreamPort::Options options;
  StreamPort::Protocol protocol;
  PortCounters counters;
};

StreamConnection::StreamConnection(int fd, std::string peer, int epoll_fd, std::shared_ptr<Port> port,
                                   std::unique_ptr<StreamSession> session, std::unique_ptr<TlsStream> tls)
    : fd_(fd), peer_(std::move(peer)), epoll_fd_(epoll_fd), port_(std::move(port)), session_(std::move(session)),
      tls_(std::move(tls)) {
  if (tls_ != nullptr) cipher_in_.resize(64 << 10);
  absl::MutexLock l(&mu_);
  registered_ = EPOLLIN | EPOLLRDHUP;  // as Register sets it
}

PortCounters& StreamConnection::counters() const { return port_->counters; }

absl::Status StreamConnection::AdmitCall() {
  PortCounters& c = port_->counters;
  const StreamPort::Options& o = port_->options;
  c.calls.fetch_add(1, std::memory_order_relaxed);
  if (const int64_t queued = c.queued_bytes.load(std::memory_order_relaxed);
      o.max_reply_bytes_in_flight > 0 && queued > o.max_reply_bytes_in_flight) {
    c.calls_refused_memory.fetch_add(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(absl::StrCat("server busy: ", queued,
                                                     " bytes of answers wait for their clients to read them "
                                                     "(max_reply_bytes_in_flight ",
                                                     o.max_reply_bytes_in_flight, ")"));
  }
  if (c.calls_in_flight.fetch_add(1, std::memory_order_relaxed) >= static_cast<uint64_t>(o.max_calls_in_flight)) {
    c.calls_in_flight.fetch_sub(1, std::memory_order_relaxed);
    c.calls_refused_busy.fetch_add(1, std::memory_order_relaxed);
    return absl::UnavailableError(absl::StrCat("server busy: ", o.max_calls_in_flight, " calls in flight (",
                                               o.calls_in_flight_setting, ")"));
  }
  return absl::OkStatus();
}

void StreamConnection::Answer(std::string_view frame) {
  port_->counters.calls_in_flight.fetch_sub(1, std::memory_order_relaxed);
  Queue(frame);
}

bool StreamConnection::Register() {
  absl::MutexLock l(&mu_);
  epoll_event ev{};
  ev.events = Interest();
  ev.data.ptr = this;
  return epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd_, &ev) == 0;
}

bool StreamConnection::read_paused() {
  absl::MutexLock l(&mu_);
  return paused_;
}

void StreamConnection::Recount() {
  const int64_t now = static_cast<int64_t>(Pending() + seal_later_.size());
  if (now != counted_) {
    port_->counters.queued_bytes.fetch_add(now - counted_, std::memory_order_relaxed);
    counted_ = now;
  }
}

void StreamConnection::Queue(std::string_view frame) {
  absl::MutexLock l(&mu_);
  if (closed_ || broken_) return;
  if (tls_ != nullptr && corked_) {
    // Sealed with the other answers of the loop's read, in one record, when it flushes them.
    seal_later_.append(frame);
  } else if (tls_ != nullptr) {
    // Sealed into the queue, then sent as far as the socket takes it.
    if (!AppendLocked(frame) || !SendQueued()) {
      broken_ = true;
      ::shutdown(fd_, SHUT_RDWR);  // the loop sees the socket end and closes it
      return;
    }
  } else {
    if (Pending() == 0 && !corked_) {
      const ssize_t n = ::send(fd_, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n == static_cast<ssize_t>(frame.size())) return;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        broken_ = true;  // the loop sees the error on the socket and closes it
        return;
      }
      if (n > 0) frame.remove_prefix(static_cast<size_t>(n));
    }
    out_.append(frame);
  }
  Recount();
  if (!paused_ && counted_ > port_->options.max_queued_reply_bytes) {
    paused_ = true;
    port_->counters.reads_paused.fetch_add(1, std::memory_order_relaxed);
  }
  if (!corked_) UpdateInterest();  // (corked: the loop's flush does it)
}

bool StreamConnection::AppendLocked(std::string_view frame) {
  if (tls_ == nullptr) {
    out_.append(frame);
    return true;
  }
  if (!tls_->Write(frame).ok()) return false;
  tls_->TakeOutput(&out_);
  return true;
}

bool StreamConnection::OnWritable() {
  absl::MutexLock l(&mu_);
  return FlushLocked();
}

bool StreamConnection::SendQueued() {
  while (Pending() > 0) {
    const ssize_t n = ::send(fd_, out_.data() + out_offset_, Pending(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return false;
    }
    out_offset_ += static_cast<size_t>(n);
    sent_ += static_cast<uint64_t>(n);
  }
  if (Pending() == 0) {
    out_.clear();
    out_offset_ = 0;
  } else if (out_offset_ > (1 << 20)) {
    out_.erase(0, out_offset_);
    out_offset_ = 0;
  }
  Recount();
  return true;
}

bool StreamConnection::FlushLocked() {
  nudge_ = false;
  if (!SendQueued()) return false;
  if (Pending() == 0 && close_after_flush_) return false;
  if (paused_ && static_cast<int64_t>(Pending()) <= port_->options.max_queued_reply_bytes / 2) paused_ = false;
  UpdateInterest();
  return true;
}

bool StreamConnection::ReadPlain(bool* closed_by_client) {
  for (int round = 0; round < 4; ++round) {
    const absl::Span<char> space = session_->Space();
    if (space.empty()) break;  // the session holds all it may before it processes: process first
    const ssize_t n = ::recv(fd_, space.data(), space.size(), MSG_DONTWAIT);
    if (n == 0) {  // the client closed its side: what it sent before is still answered
      *closed_by_client = true;
      break;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return false;
    }
    session_->Commit(static_cast<size_t>(n));
    if (static_cast<size_t>(n) < space.size()) break;
  }
  return true;
}

bool StreamConnection::DrainTls(bool* closed_by_client, bool* full) {
  for (;;) {
    const absl::Span<char> space = session_->Space();
    if (space.empty()) {
      *full = true;
      return true;
    }
    absl::StatusOr<size_t> n = tls_->Read(space);
    if (!n.ok()) return false;
    if (*n == 0) break;
    session_->Commit(*n);
  }
  if (tls_->closed()) *closed_by_client = true;
  return true;
}

std::string StreamConnection::certificate_user() {
  absl::MutexLock l(&mu_);
  return certificate_user_;
}

bool StreamConnection::ReadTls(bool* closed_by_client, bool* full) {
  absl::MutexLock l(&mu_);
  // What TLS already holds goes to the session first (it may not have had room for it).
  if (tls_->handshake_done() && !DrainTls(closed_by_client, full)) return false;
  for (int round = 0; round < 4 && !*full && !*closed_by_client; ++round) {
    const ssize_t n = ::recv(fd_, cipher_in_.data(), cipher_in_.size(), MSG_DONTWAIT);
    if (n == 0) {
      *closed_by_client = true;
      break;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return false;
    }
    tls_->Feed(std::string_view(cipher_in_.data(), static_cast<size_t>(n)));
    if (!tls_->handshake_done()) {
      absl::StatusOr<bool> done = tls_->Handshake();
      tls_->TakeOutput(&out_);  // its next flight, or the alert that says why it failed
      if (!done.ok()) {
        SendQueued();
        return false;
      }
      if (!*done) continue;
      certificate_user_ = tls_->PeerCommonName();
    }
    if (!DrainTls(closed_by_client, full)) return false;
    if (static_cast<size_t>(n) < cipher_in_.size()) break;
  }
  tls_->TakeOutput(&out_);
  return true;
}

bool StreamConnection::OnReadable(const std::shared_ptr<StreamConnection>& self) {
  {
    // The answers given from here until the session has processed what is read (the loop's own:
    // Gets served inline) go out together, in one send, once it is done. (A read that fails
    // ends the connection, corked or not.)
    absl::MutexLock l(&mu_);
    if (paused_ || close_after_flush_) return true;
    if (broken_) return false;
    corked_ = true;
  }
  bool closed_by_client = false;
  bool tls_full = false;  // TLS holds plaintext the session had no room for
  if (!(tls_ != nullptr ? ReadTls(&closed_by_client, &tls_full) : ReadPlain(&closed_by_client))) return false;
  const absl::Status processed = session_->Process(self);
  absl::MutexLock l(&mu_);
  corked_ = false;
  if (!seal_later_.empty()) {
    const bool sealed = AppendLocked(seal_later_);
    seal_later_.clear();
    if (seal_later_.capacity() > (1 << 20)) std::string().swap(seal_later_);  // not kept for ever
    if (!sealed) return false;
  }
  if (processed.ok()) {
    if (broken_) return false;
    if (closed_by_client) {
      close_after_flush_ = true;
      if (!FlushLocked()) return false;
      UpdateInterest();
      return true;
    }
    // Paused while it processed, the session left calls it had read; if the flush unpauses the
    // connection, no EPOLLIN may come for them (their bytes are read): a writable event (at once,
    // or once the client has taken enough of what the socket holds) has the loop go on with them.
    // So for plaintext TLS holds that the session had no room for.
    const bool left_calls = paused_ || tls_full;
    if (!FlushLocked()) return false;
    if (left_calls && !paused_) {
      nudge_ = true;
      UpdateInterest();
    }
    return true;
  }
  // Said once, then the connection ends when the client has it.
  close_after_flush_ = true;
  if (!AppendLocked(port_->protocol.connection_error(processed)) || !SendQueued() || Pending() == 0) return false;
  UpdateInterest();
  return true;
}

bool StreamConnection::Stalled(absl::Time now, absl::Duration timeout) {
  absl::MutexLock l(&mu_);
  // Answers queued, or calls read and left for a writable socket: waiting for the client either
  // way. The clock starts at the first sweep that sees it waiting with nothing sent since the last.
  const bool waiting = Pending() > 0 || nudge_;
  if (!waiting || sent_ != swept_sent_) {
    swept_sent_ = sent_;
    waiting_since_ = now;
    return false;
  }
  return now - waiting_since_ >= timeout;
}

void StreamConnection::Close() {
  absl::MutexLock l(&mu_);
  if (closed_) return;
  closed_ = true;
  out_.clear();  // never sent: no longer the port's to hold
  out_offset_ = 0;
  seal_later_.clear();
  Recount();
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd_, nullptr);
  ::close(fd_);
}

uint32_t StreamConnection::Interest() const {
  // Not read (paused, or closing once written): no EPOLLIN nor EPOLLRDHUP either, which epoll
  // would report on every wait of a half-closed connection and spin the loop.
  // Never nothing: a connection paused or closing whose answers another thread sent (under TLS,
  // Queue sends what is queued) is woken by the socket's being writable, and the flush then
  // unpauses it or closes it; without, no event would ever come for it again.
  uint32_t events = 0;
  if (!paused_ && !close_after_flush_) events |= EPOLLIN | EPOLLRDHUP;
  if (Pending() > 0 || nudge_ || paused_ || close_after_flush_) events |= EPOLLOUT;
  return events;
}

void StreamConnection::UpdateInterest() {
  const uint32_t want = Interest();
  if (closed_ || want == registered_) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.ptr = this;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd_, &ev) == 0) registered_ = want;
}

namespace {

// "host:port" of the socket's peer (common/sockaddr.h), for logs.
std::string PeerOf(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  return SockaddrString(reinterpret_cast<const sockaddr*>(&addr));
}

}  // namespace

struct StreamPort::Impl {
  static constexpr absl::Duration kSweepEvery = absl::Milliseconds(250);

  struct Loop {
    int epoll_fd = -1;
    int wake_fd = -1;
    std::thread thread;
    absl::Mutex mu;
    absl::flat_hash_map<StreamConnection*, std::shared_ptr<StreamConnection>> connections ABSL_GUARDED_BY(mu);
  };

  std::shared_ptr<StreamConnection::Port> port = std::make_shared<StreamConnection::Port>();
  std::unique_ptr<Acceptor> acceptor;
  std::vector<std::unique_ptr<Loop>> loops;
  std::atomic<uint64_t> next_loop{0};
  std::atomic<bool> stopping{false};
  bool shut_down = false;

  const Options& options() const { return port->options; }
  PortCounters& counters() const { return port->counters; }

  void Log(const std::string& line) const {
    if (options().log) {
      options().log(line);
    } else {
      std::cerr << options().name << ": " << line << std::endl;
    }
  }

  // What a connection refused at accept time is sent: the protocol's error saying why; nothing
  // under TLS (the client could not read it before a handshake), only the close.
  std::string Refusal(const std::string& why) const {
    if (options().tls != nullptr) return "";
    return port->protocol.connection_error(absl::ResourceExhaustedError(why));
  }

  // The Acceptor's thread: a new connection joins a loop, or is refused past the cap.
  void Take(int fd) {
    if (counters().connections_open.load(std::memory_order_relaxed) >=
        static_cast<uint64_t>(options().max_connections)) {
      const std::string frame = Refusal(absl::StrCat("server busy: ", options().max_connections,
                                                     " connections open (max_connections)"));
      counters().connections_refused.fetch_add(1, std::memory_order_relaxed);
      ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      return;
    }
    std::unique_ptr<TlsStream> tls;
    if (options().tls != nullptr) {
      absl::StatusOr<std::unique_ptr<TlsStream>> made = TlsStream::New(options().tls);
      if (!made.ok()) {
        Log(absl::StrCat(PeerOf(fd), ": refused: ", made.status().message()));
        counters().connections_refused.fetch_add(1, std::memory_order_relaxed);
        ::close(fd);
        return;
      }
      tls = *std::move(made);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    // A client that vanished (a reset never seen, a host gone) is found by keepalive.
    int idle = 60, interval = 10, count = 6;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
    Loop& loop = *loops[next_loop.fetch_add(1, std::memory_order_relaxed) % loops.size()];
    auto c = std::make_shared<StreamConnection>(fd, PeerOf(fd), loop.epoll_fd, port, port->protocol.new_session(),
                                                 std::move(tls));
    {
      absl::MutexLock l(&loop.mu);
      loop.connections.emplace(c.get(), c);
    }
    counters().connections_open.fetch_add(1, std::memory_order_relaxed);
    counters().connections_accepted.fetch_add(1, std::memory_order_relaxed);
    if (!c->Register()) Drop(loop, c.get());
  }

  void Drop(Loop& loop, StreamConnection* c) {
    c->Close();
    std::shared_ptr<StreamConnection> gone;
    {
      absl::MutexLock l(&loop.mu);
      auto it = loop.connections.find(c);
      if (it == loop.connections.end()) return;
      gone = std::move(it->second);
      loop.connections.erase(it);
    }
    counters().connections_open.fetch_sub(1, std::memory_order_relaxed);
  }

  // Closes the loop's connections whose sessions say they expired, and those whose answers
  // stopped moving.
  void Sweep(Loop& loop) {
    const absl::Time now = absl::Now();
    std::vector<StreamConnection*> expired;
    {
      absl::MutexLock l(&loop.mu);
      for (const auto& [c, held] : loop.connections) {
        if (c->session()->Expired(now)) {
          expired.push_back(c);
        } else if (c->Stalled(now, options().stalled_write_timeout)) {
          Log(absl::StrCat(c->peer(), ": closed: its answers have not moved for ",
                           absl::FormatDuration(options().stalled_write_timeout), " (it stopped reading)"));
          expired.push_back(c);
        }
      }
    }
    for (StreamConnection* c : expired) Drop(loop, c);
  }

  void Run(Loop& loop) {
    std::vector<epoll_event> events(256);
    absl::Time next_sweep = absl::Now() + kSweepEvery;
    while (!stopping.load(std::memory_order_acquire)) {
      const int n = epoll_wait(loop.epoll_fd, events.data(), static_cast<int>(events.size()),
                               static_cast<int>(absl::ToInt64Milliseconds(kSweepEvery)));
      if (n < 0) {
        if (errno == EINTR) continue;
        Log(absl::StrCat("epoll_wait: ", std::strerror(errno)));
        return;
      }
      for (int i = 0; i < n; ++i) {
        auto* c = static_cast<StreamConnection*>(events[i].data.ptr);
        if (c == nullptr) continue;  // woken to stop
        std::shared_ptr<StreamConnection> hold;
        {
          absl::MutexLock l(&loop.mu);
          auto it = loop.connections.find(c);
          if (it == loop.connections.end()) continue;
          hold = it->second;
        }
        bool keep = true;
        const uint32_t ev = events[i].events;
        // Reset or closed both ways: nothing more can be read or delivered.
        if (ev & (EPOLLERR | EPOLLHUP)) {
          Drop(loop, c);
          continue;
        }
        if (ev & EPOLLOUT) keep = c->OnWritable();
        // After a write, too: a connection paused with whole calls read may go on with them.
        if (keep && (ev & (EPOLLIN | EPOLLOUT | EPOLLRDHUP))) keep = c->OnReadable(hold);
        if (!keep) Drop(loop, c);
      }
      // After the events: a connection dropped here is never one a pending event names.
      if (const absl::Time now = absl::Now(); now >= next_sweep) {
        Sweep(loop);
        next_sweep = now + kSweepEvery;
      }
    }
  }
};

StreamPort::StreamPort(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<StreamPort>> StreamPort::Start(const Options& options, Protocol protocol) {
  auto impl = std::make_unique<Impl>();
  impl->port->options = options;
  impl->port->protocol = std::move(protocol);
  Impl* raw = impl.get();
  Acceptor::Options ao;
  ao.listen = options.listen;
  ao.reserved_fds = options.reserved_fds;
  ao.log = [raw](std::string_view line) { raw->Log(std::string(line)); };
  ao.refused = &impl->counters().connections_refused;
  ao.refusal = [raw](const std::string& why) { return raw->Refusal(why); };
  absl::StatusOr<std::unique_ptr<Acceptor>> acceptor = Acceptor::Listen(ao);
  if (!acceptor.ok()) return acceptor.status();
  impl->acceptor = *std::move(acceptor);
  const int threads = std::max(1, options.loop_threads);
  for (int i = 0; i < threads; ++i) {
    auto loop = std::make_unique<Impl::Loop>();
    loop->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    loop->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (loop->epoll_fd < 0 || loop->wake_fd < 0) {
      return absl::InternalError(absl::StrCat(options.name, ": epoll/eventfd: ", std::strerror(errno)));
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;
    epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, loop->wake_fd, &ev);
    impl->loops.push_back(std::move(loop));
  }
  for (auto& loop : impl->loops) {
    Impl::Loop* l = loop.get();
    l->thread = std::thread([raw, l] { raw->Run(*l); });
  }
  impl->acceptor->Start([raw](int fd) { raw->Take(fd); });
  return std::unique_ptr<StreamPort>(new StreamPort(std::move(impl)));
}

StreamPort::~StreamPort() { Shutdown(); }

int StreamPort::port() const { return impl_->acceptor->port(); }
const PortCounters& StreamPort::counters() const { return impl_->counters(); }

void StreamPort::RegisterMetrics(metrics::Registry* r, std::string_view prefix) const {
  const PortCounters* c = &impl_->counters();
  const std::string& name = impl_->options().name;
  auto read = [](const auto& v) {
    return [&v] { return static_cast<double>(v.load(std::memory_order_relaxed)); };
  };
  struct Entry {
    std::string_view suffix;
    std::string help;
    std::function<double()> value;
    bool counter;
  };
  const Entry entries[] = {
      {"_connections", absl::StrCat("Connections open on the ", name, "."), read(c->connections_open), false},
      {"_connections_accepted_total", absl::StrCat("Connections the ", name, " accepted."),
       read(c->connections_accepted), true},
      {"_connections_refused_total",
       absl::StrCat("Connections the ", name, " refused (past max_connections or out of descriptors)."),
       read(c->connections_refused), true},
      {"_calls_total", absl::StrCat("Calls read on the ", name, "."), read(c->calls), true},
      {"_calls_in_flight", absl::StrCat("Calls of the ", name, " taken and not yet answered."),
       read(c->calls_in_flight), false},
      {"_calls_refused_busy_total",
       absl::StrCat("Calls of the ", name, " answered busy at once (past max_calls_in_flight)."),
       read(c->calls_refused_busy), true},
      {"_reads_paused_total",
       absl::StrCat("Times a connection of the ", name, " was not read until its client took its answers."),
       read(c->reads_paused), true},
      {"_queued_reply_bytes",
       absl::StrCat("Answers of the ", name, " queued for clients that have not taken them yet, in bytes."),
       read(c->queued_bytes), false},
      {"_calls_refused_memory_total",
       absl::StrCat("Calls of the ", name, " answered busy at once (answers past max_reply_bytes_in_flight)."),
       read(c->calls_refused_memory), true},
  };
  for (const Entry& e : entries) {
    const std::string metric = absl::StrCat(AV(prefix), AV(e.suffix));
    absl::Status s = e.counter ? r->AddCounterFunction(metric, e.help, {}, e.value)
                               : r->AddGauge(metric, e.help, {}, e.value);
    if (!s.ok()) impl_->Log(absl::StrCat("metric ", metric, ": ", s.message()));
  }
}

void StreamPort::Shutdown() {
  if (impl_ == nullptr || impl_->shut_down) return;
  impl_->shut_down = true;
  impl_->acceptor->Stop();
  impl_->stopping.store(true, std::memory_order_release);
  for (auto& loop : impl_->loops) {
    const uint64_t one = 1;
    if (::write(loop->wake_fd, &one, sizeof(one)) < 0) {
      // The eventfd cannot be full with one write; nothing else can fail here.
    }
  }
  for (auto& loop : impl_->loops) {
    if (loop->thread.joinable()) loop->thread.join();
    std::vector<StreamConnection*> open;
    {
      absl::MutexLock l(&loop->mu);
      for (auto& [c, held] : loop->connections) open.push_back(c);
    }
    for (StreamConnection* c : open) impl_->Drop(*loop, c);
    ::close(loop->wake_fd);
    ::close(loop->epoll_fd);
  }
}

}  // namespace basalt::server
