#include "src/front/hbase/hbase_port.h"

#include <arpa/inet.h>
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
#include "absl/synchronization/mutex.h"
#include "src/base/acceptor.h"

namespace basalt::hbase {

inline constexpr char kCallQueueTooBig[] = "org.apache.hadoop.hbase.CallQueueTooBigException";
inline constexpr char kIOException[] = "java.io.IOException";
inline constexpr char kDoNotRetryIOException[] = "org.apache.hadoop.hbase.DoNotRetryIOException";

// One client's connection. The loop that owns it reads it and closes it; any thread queues
// answers on it (under mu_, which also orders the epoll interest changes).
class Connection {
 public:
  Connection(int fd, std::string peer, int epoll_fd, const HBasePort::Options& options)
      : fd_(fd), peer_(std::move(peer)), epoll_fd_(epoll_fd), reader_(options.max_request_bytes),
        max_queued_(options.max_queued_reply_bytes) {}

  const std::string& peer() const { return peer_; }
  const ConnectionHeader& header() const { return header_; }

  // Registers the socket with its loop's epoll (reading).
  bool Register() {
    absl::MutexLock l(&mu_);
    epoll_event ev{};
    ev.events = Interest();
    ev.data.ptr = this;
    return epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd_, &ev) == 0;
  }

  // Any thread: writes `frame` now if nothing is queued before it, and queues what the socket
  // does not take.
  void Queue(std::string_view frame, PortCounters* counters) {
    absl::MutexLock l(&mu_);
    if (closed_ || broken_) return;
    if (Pending() == 0) {
      const ssize_t n = ::send(fd_, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n == static_cast<ssize_t>(frame.size())) return;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        broken_ = true;  // the loop sees the error on the socket and closes it
        return;
      }
      if (n > 0) frame.remove_prefix(static_cast<size_t>(n));
    }
    out_.append(frame);
    if (!paused_ && static_cast<int64_t>(Pending()) > max_queued_) {
      paused_ = true;
      counters->reads_paused.fetch_add(1, std::memory_order_relaxed);
    }
    UpdateInterest();
  }

  // The loop, on EPOLLOUT: writes what is queued. False when the connection is to be closed.
  bool OnWritable() {
    absl::MutexLock l(&mu_);
    while (Pending() > 0) {
      const ssize_t n = ::send(fd_, out_.data() + out_offset_, Pending(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return false;
      }
      out_offset_ += static_cast<size_t>(n);
    }
    if (Pending() == 0) {
      out_.clear();
      out_offset_ = 0;
      if (close_after_flush_) return false;
    } else if (out_offset_ > (1 << 20)) {
      out_.erase(0, out_offset_);
      out_offset_ = 0;
    }
    if (paused_ && static_cast<int64_t>(Pending()) <= max_queued_ / 2) paused_ = false;
    UpdateInterest();
    return true;
  }

  // The loop, on EPOLLIN: reads what the socket has (a bounded amount per round, so one busy
  // connection cannot starve the others), and hands each whole call to `dispatch`. False when
  // the connection is to be closed now.
  template <typename Dispatch>
  bool OnReadable(const Dispatch& dispatch) {
    {
      absl::MutexLock l(&mu_);
      if (paused_ || close_after_flush_) return true;
      if (broken_) return false;
    }
    char buf[64 << 10];
    for (int round = 0; round < 4; ++round) {
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (n == 0) return false;  // the client closed
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return false;
      }
      reader_.Feed(std::string_view(buf, static_cast<size_t>(n)));
      if (static_cast<size_t>(n) < sizeof(buf)) break;
    }
    for (;;) {
      absl::StatusOr<std::optional<Call>> next = reader_.Next();
      if (!next.ok()) {
        // Said once, then the connection ends when the client has it.
        const std::string frame = ConnectionError(next.status());
        absl::MutexLock l(&mu_);
        close_after_flush_ = true;
        if (Pending() == 0) {
          ::send(fd_, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          return false;
        }
        out_.append(frame);
        UpdateInterest();
        return true;
      }
      if (!next->has_value()) return true;
      if (!header_read_) {
        header_ = *reader_.header();
        header_read_ = true;
      }
      dispatch(std::move(**next));
      absl::MutexLock l(&mu_);
      if (paused_) return true;  // the rest waits until the client takes its answers
    }
  }

  // The loop: no more answers are written; the socket is closed.
  void Close() {
    absl::MutexLock l(&mu_);
    if (closed_) return;
    closed_ = true;
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd_, nullptr);
    ::close(fd_);
  }

 private:
  size_t Pending() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return out_.size() - out_offset_; }
  uint32_t Interest() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // Not read (paused, or closing once written): no EPOLLIN nor EPOLLRDHUP either, which epoll
    // would report on every wait of a half-closed connection and spin the loop.
    uint32_t events = 0;
    if (!paused_ && !close_after_flush_) events |= EPOLLIN | EPOLLRDHUP;
    if (Pending() > 0) events |= EPOLLOUT;
    return events;
  }
  void UpdateInterest() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint32_t want = Interest();
    if (closed_ || want == registered_) return;
    epoll_event ev{};
    ev.events = want;
    ev.data.ptr = this;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd_, &ev) == 0) registered_ = want;
  }

  const int fd_;
  const std::string peer_;
  const int epoll_fd_;
  ConnectionReader reader_;  // the loop's
  // Copied from the reader before the first call is dispatched; constant after.
  ConnectionHeader header_;
  bool header_read_ = false;  // the loop's
  const int64_t max_queued_;

  absl::Mutex mu_;
  std::string out_ ABSL_GUARDED_BY(mu_);
  size_t out_offset_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;             // a write failed
  bool paused_ ABSL_GUARDED_BY(mu_) = false;             // too much queued: not read
  bool close_after_flush_ ABSL_GUARDED_BY(mu_) = false;  // refused: closes once written
  uint32_t registered_ ABSL_GUARDED_BY(mu_) = EPOLLIN | EPOLLRDHUP;  // as Register sets it
};

Responder::Responder(std::shared_ptr<Connection> connection, uint32_t call_id, std::shared_ptr<PortCounters> counters)
    : connection_(std::move(connection)), call_id_(call_id), counters_(std::move(counters)) {}

Responder::~Responder() {
  if (!sent_) Send(EncodeException(call_id_, kIOException, "the server dropped this call without an answer"));
}

const ConnectionHeader& Responder::connection_header() const { return connection_->header(); }
const std::string& Responder::peer() const { return connection_->peer(); }

void Responder::Send(std::string frame) {
  if (sent_) return;
  sent_ = true;
  // Counted out before the answer can reach its client: one that reads it and then asks the
  // counters never finds its own call still in flight.
  counters_->calls_in_flight.fetch_sub(1, std::memory_order_relaxed);
  connection_->Queue(frame, counters_.get());
}

namespace {

std::string PeerOf(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
    return absl::StrCat(host, ":", port);
  }
  auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
  inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
  port = ntohs(a->sin6_port);
  return absl::StrCat("[", host, "]:", port);
}

}  // namespace

struct HBasePort::Impl {
  struct Loop {
    int epoll_fd = -1;
    int wake_fd = -1;
    std::thread thread;
    absl::Mutex mu;
    absl::flat_hash_map<Connection*, std::shared_ptr<Connection>> connections ABSL_GUARDED_BY(mu);
  };

  Options options;
  Handler handler;
  std::shared_ptr<PortCounters> counters = std::make_shared<PortCounters>();
  std::unique_ptr<server::Acceptor> acceptor;
  std::vector<std::unique_ptr<Loop>> loops;
  std::atomic<uint64_t> next_loop{0};
  std::atomic<bool> stopping{false};
  bool shut_down = false;

  void Log(const std::string& line) const {
    if (options.log) {
      options.log(line);
    } else {
      std::cerr << "hbase port: " << line << std::endl;
    }
  }

  // The Acceptor's thread: a new connection joins a loop, or is refused past the cap.
  void Take(int fd) {
    if (counters->connections_open.load(std::memory_order_relaxed) >=
        static_cast<uint64_t>(options.max_connections)) {
      const std::string frame = ConnectionError(absl::ResourceExhaustedError(
          absl::StrCat("server busy: ", options.max_connections, " connections open (max_connections)")));
      counters->connections_refused.fetch_add(1, std::memory_order_relaxed);
      ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    Loop& loop = *loops[next_loop.fetch_add(1, std::memory_order_relaxed) % loops.size()];
    auto c = std::make_shared<Connection>(fd, PeerOf(fd), loop.epoll_fd, options);
    {
      absl::MutexLock l(&loop.mu);
      loop.connections.emplace(c.get(), c);
    }
    counters->connections_open.fetch_add(1, std::memory_order_relaxed);
    counters->connections_accepted.fetch_add(1, std::memory_order_relaxed);
    if (!c->Register()) Drop(loop, c.get());
  }

  void Drop(Loop& loop, Connection* c) {
    c->Close();
    std::shared_ptr<Connection> gone;
    {
      absl::MutexLock l(&loop.mu);
      auto it = loop.connections.find(c);
      if (it == loop.connections.end()) return;
      gone = std::move(it->second);
      loop.connections.erase(it);
    }
    counters->connections_open.fetch_sub(1, std::memory_order_relaxed);
  }

  void Dispatch(const std::shared_ptr<Connection>& c, Call call) {
    counters->calls.fetch_add(1, std::memory_order_relaxed);
    const uint32_t id = call.header.call_id();
    if (!call.malformed.ok()) {
      c->Queue(EncodeException(id, kDoNotRetryIOException, std::string(call.malformed.message()), /*do_not_retry=*/true),
               counters.get());
      return;
    }
    if (counters->calls_in_flight.fetch_add(1, std::memory_order_relaxed) >=
        static_cast<uint64_t>(options.max_calls_in_flight)) {
      counters->calls_in_flight.fetch_sub(1, std::memory_order_relaxed);
      counters->calls_refused_busy.fetch_add(1, std::memory_order_relaxed);
      c->Queue(EncodeException(id, kCallQueueTooBig,
                               absl::StrCat("server busy: ", options.max_calls_in_flight,
                                            " calls in flight (max_calls_in_flight)"),
                               /*do_not_retry=*/false, /*server_overloaded=*/true),
               counters.get());
      return;
    }
    handler(std::move(call), std::make_unique<Responder>(c, id, counters));
  }

  void Run(Loop& loop) {
    std::vector<epoll_event> events(256);
    while (!stopping.load(std::memory_order_acquire)) {
      const int n = epoll_wait(loop.epoll_fd, events.data(), static_cast<int>(events.size()), -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        Log(absl::StrCat("epoll_wait: ", std::strerror(errno)));
        return;
      }
      for (int i = 0; i < n; ++i) {
        auto* c = static_cast<Connection*>(events[i].data.ptr);
        if (c == nullptr) continue;  // woken to stop
        std::shared_ptr<Connection> hold;
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
        if (keep && (ev & (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
          keep = c->OnReadable([&](Call call) { Dispatch(hold, std::move(call)); });
        }
        if (!keep) Drop(loop, c);
      }
    }
  }
};

HBasePort::HBasePort(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<HBasePort>> HBasePort::Start(const Options& options, Handler handler) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->handler = std::move(handler);
  Impl* raw = impl.get();
  server::Acceptor::Options ao;
  ao.listen = options.listen;
  ao.reserved_fds = options.reserved_fds;
  ao.log = [raw](std::string_view line) { raw->Log(std::string(line)); };
  ao.refused = &impl->counters->connections_refused;
  ao.refusal = [](const std::string& why) { return ConnectionError(absl::ResourceExhaustedError(why)); };
  absl::StatusOr<std::unique_ptr<server::Acceptor>> acceptor = server::Acceptor::Listen(ao);
  if (!acceptor.ok()) return acceptor.status();
  impl->acceptor = *std::move(acceptor);
  const int threads = std::max(1, options.loop_threads);
  for (int i = 0; i < threads; ++i) {
    auto loop = std::make_unique<Impl::Loop>();
    loop->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    loop->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (loop->epoll_fd < 0 || loop->wake_fd < 0) {
      return absl::InternalError(absl::StrCat("hbase port: epoll/eventfd: ", std::strerror(errno)));
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
  return std::unique_ptr<HBasePort>(new HBasePort(std::move(impl)));
}

HBasePort::~HBasePort() { Shutdown(); }

int HBasePort::port() const { return impl_->acceptor->port(); }
const PortCounters& HBasePort::counters() const { return *impl_->counters; }

void HBasePort::RegisterMetrics(metrics::Registry* r) const {
  const PortCounters* c = impl_->counters.get();
  auto read = [](const std::atomic<uint64_t>& v) {
    return [&v] { return static_cast<double>(v.load(std::memory_order_relaxed)); };
  };
  struct Entry {
    const char* name;
    const char* help;
    const std::atomic<uint64_t>* value;
    bool counter;
  };
  const Entry entries[] = {
      {"basalt_hbase_connections", "Connections open on the HBase port.", &c->connections_open, false},
      {"basalt_hbase_connections_accepted_total", "Connections the HBase port accepted.", &c->connections_accepted,
       true},
      {"basalt_hbase_connections_refused_total",
       "Connections the HBase port refused (past max_connections or out of descriptors).", &c->connections_refused,
       true},
      {"basalt_hbase_calls_total", "Calls read on the HBase port.", &c->calls, true},
      {"basalt_hbase_calls_in_flight", "Calls of the HBase port taken and not yet answered.", &c->calls_in_flight,
       false},
      {"basalt_hbase_calls_refused_busy_total",
       "Calls of the HBase port answered CallQueueTooBigException (past max_calls_in_flight).",
       &c->calls_refused_busy, true},
      {"basalt_hbase_reads_paused_total",
       "Times a connection of the HBase port was not read until its client took its answers.", &c->reads_paused, true},
  };
  for (const Entry& e : entries) {
    absl::Status s = e.counter ? r->AddCounterFunction(e.name, e.help, {}, read(*e.value))
                               : r->AddGauge(e.name, e.help, {}, read(*e.value));
    if (!s.ok()) impl_->Log(absl::StrCat("metric ", e.name, ": ", s.message()));
  }
}

void HBasePort::Shutdown() {
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
    std::vector<Connection*> open;
    {
      absl::MutexLock l(&loop->mu);
      for (auto& [c, held] : loop->connections) open.push_back(c);
    }
    for (Connection* c : open) impl_->Drop(*loop, c);
    ::close(loop->wake_fd);
    ::close(loop->epoll_fd);
  }
}

}  // namespace basalt::hbase
