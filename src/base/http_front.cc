#include "src/base/http_front.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/sockaddr.h"
#include "common/status.h"
#include "src/base/acceptor.h"
#include "src/base/config.h"

namespace basalt::server {
namespace {

std::string_view Reason(int code) {
  switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
  }
}

// A whole response: status line, headers, body (left out for HEAD, its length still said).
std::string Response(int code, std::string_view content_type, std::string_view body, bool head,
                     std::string_view extra_headers = "") {
  std::string out = absl::StrCat("HTTP/1.1 ", code, " ", AV(Reason(code)), "\r\nContent-Type: ", AV(content_type),
                                 "\r\nContent-Length: ", body.size(),
                                 "\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
                                 "Connection: close\r\n",
                                 AV(extra_headers), "\r\n");
  if (!head) out.append(body);
  return out;
}

std::string PeerOf(int fd) {
  sockaddr_storage sa{};
  socklen_t len = sizeof(sa);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return "?";
  return SockaddrString(reinterpret_cast<const sockaddr*>(&sa));
}

// Writes all of `data` (the socket blocking, with a send timeout): false when it could not.
bool WriteAll(int fd, SSL* ssl, std::string_view data) {
  while (!data.empty()) {
    const int chunk = static_cast<int>(std::min<size_t>(data.size(), 1 << 20));
    const ssize_t n = ssl != nullptr ? SSL_write(ssl, data.data(), chunk) : ::send(fd, data.data(), chunk, MSG_NOSIGNAL);
    if (n <= 0) {
      if (ssl == nullptr && n < 0 && errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

struct Request {
  std::string method;
  std::string path;  // the target without its query
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
  std::string Header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (n == name) return v;
    }
    return "";
  }
  bool Has(std::string_view name) const {
    return std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return h.first == name; });
  }
};

// Parses a request head (without its blank line): 0 and *out, or the status to answer.
int ParseHead(absl::string_view head, Request* out) {
  std::vector<absl::string_view> lines = absl::StrSplit(head, "\r\n");
  std::vector<absl::string_view> first = absl::StrSplit(lines[0], ' ');
  if (first.size() != 3 || first[0].empty() || first[1].empty()) return 400;
  if (first[2] != "HTTP/1.1" && first[2] != "HTTP/1.0") return absl::StartsWith(first[2], "HTTP/") ? 505 : 400;
  out->method = std::string(first[0]);
  absl::string_view target = first[1];
  if (target.front() != '/') return 400;
  out->path = std::string(target.substr(0, target.find('?')));
  for (size_t i = 1; i < lines.size(); ++i) {
    absl::string_view line = lines[i];
    const size_t colon = line.find(':');
    // (A line folded onto the one before, starting with a space, is refused as RFC 9112 allows.)
    if (colon == absl::string_view::npos || colon == 0 || line.front() == ' ' || line.front() == '\t') return 400;
    absl::string_view name = line.substr(0, colon);
    if (name.find_first_of(" \t") != absl::string_view::npos) return 400;
    out->headers.emplace_back(absl::AsciiStrToLower(name), std::string(absl::StripAsciiWhitespace(line.substr(colon + 1))));
  }
  return 0;
}

}  // namespace

struct HttpFront::Conn {
  int fd = -1;
  SSL* ssl = nullptr;
  bool handshaken = false;
  bool closing = false;  // answered: reading and dropping what the client still sends, then closed
  size_t dropped = 0;
  absl::Time deadline;
  std::string peer;
  std::string in;
  ~Conn() {
    if (ssl != nullptr) SSL_free(ssl);
  }
};

struct HttpFront::Job {
  int fd = -1;
  SSL* ssl = nullptr;
  Request request;
  HttpCaller caller;
  ~Job() {
    if (ssl != nullptr) SSL_free(ssl);
    if (fd >= 0) ::close(fd);
  }
};

HttpFront::HttpFront(Options options) : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<HttpFront>> HttpFront::Start(Options options) {
  std::string host;
  int port = 0;
  if (absl::Status s = SplitHostPort(options.listen, &host, &port); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("http_listen '", options.listen, "': ", s.message()));
  }
  std::unique_ptr<HttpFront> front(new HttpFront(std::move(options)));
  HttpFront* f = front.get();
  const Options& o = f->options_;
  if (!o.tls_cert.empty()) {
    absl::StatusOr<std::shared_ptr<TlsContext>> tls = TlsContext::Server(o.tls_cert, o.tls_key, o.tls_ca);
    if (!tls.ok()) return absl::InvalidArgumentError(absl::StrCat("the HTTP port's TLS: ", tls.status().message()));
    f->tls_ = *std::move(tls);
  }
  Acceptor::Options ao;
  ao.listen = o.listen;
  ao.log = o.log;
  ao.refusal = [](const std::string& why) { return Response(503, kText, why + "\n", false); };
  absl::StatusOr<std::unique_ptr<Acceptor>> acceptor = Acceptor::Listen(ao);
  if (!acceptor.ok()) {
    return absl::UnavailableError(absl::StrCat("http_listen ", o.listen,
                                               ": cannot listen there (in use, or not this host's address: ",
                                               acceptor.status().message(),
                                               "); set http_listen to another HOST:PORT, port 0 for a free one, or off"));
  }
  f->acceptor_ = *std::move(acceptor);
  f->address_ = absl::StrCat(host, ":", f->acceptor_->port());
  f->epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  f->wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (f->epoll_fd_ < 0 || f->wake_fd_ < 0) return absl::InternalError(absl::StrCat("the HTTP port: ", strerror(errno)));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = f->wake_fd_;
  ::epoll_ctl(f->epoll_fd_, EPOLL_CTL_ADD, f->wake_fd_, &ev);
  f->reader_ = std::thread([f] { f->Loop(); });
  for (int i = 0; i < std::max(1, o.workers); ++i) f->workers_.emplace_back([f] { f->Work(); });
  f->acceptor_->Start([f](int fd) {
    {
      absl::MutexLock l(&f->mu_);
      f->accepted_.push_back(fd);
    }
    const uint64_t one = 1;
    (void)!::write(f->wake_fd_, &one, sizeof(one));
  });
  return front;
}

HttpFront::~HttpFront() {
  if (acceptor_ != nullptr) acceptor_->Stop();
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
  }
  if (reader_.joinable()) reader_.join();
  for (std::thread& t : workers_) t.join();
  for (auto& [fd, c] : conns_) ::close(fd);
  conns_.clear();
  {
    absl::MutexLock l(&mu_);
    for (int fd : accepted_) ::close(fd);
    queue_.clear();
  }
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void HttpFront::Log(std::string_view line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    log::Info(line);
  }
}

void HttpFront::Loop() {
  epoll_event events[64];
  for (;;) {
    absl::Time next = absl::InfiniteFuture();
    for (const auto& [fd, c] : conns_) next = std::min(next, c->deadline);
    int timeout_ms = -1;
    if (next != absl::InfiniteFuture()) {
      timeout_ms = static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(next - absl::Now()) + 1, 0, 60000));
    }
    const int n = ::epoll_wait(epoll_fd_, events, 64, timeout_ms);
    // The wake-up is taken before the new connections are: one accepted after the take wakes
    // the next wait. (Taken after, a connection accepted in between waited for the next event
    // on the port, for ever when there was none: a client's request went unanswered.)
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd != wake_fd_) continue;
      uint64_t drained;
      (void)!::read(wake_fd_, &drained, sizeof(drained));
    }
    std::vector<int> fresh;
    {
      absl::MutexLock l(&mu_);
      if (stopping_) return;
      fresh.swap(accepted_);
    }
    for (int fd : fresh) Add(fd);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) continue;
      auto it = conns_.find(fd);
      if (it != conns_.end()) Pump(it->second.get());
    }
    // Heads not in by their deadline, and answered connections done draining.
    const absl::Time now = absl::Now();
    std::vector<int> late;
    for (const auto& [fd, c] : conns_) {
      if (c->deadline <= now) late.push_back(fd);
    }
    for (int fd : late) Close(fd);
  }
}

void HttpFront::Add(int fd) {
  if (static_cast<int>(conns_.size()) >= options_.max_connections) {
    if (tls_ == nullptr) {
      const std::string out = Response(503, kText, "too many connections to the HTTP port\n", false);
      (void)!::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
    return;
  }
  auto c = std::make_unique<Conn>();
  c->fd = fd;
  c->peer = PeerOf(fd);
  c->deadline = absl::Now() + options_.head_timeout;
  if (tls_ != nullptr) {
    c->ssl = SSL_new(tls_->get());
    if (c->ssl == nullptr || SSL_set_fd(c->ssl, fd) != 1) {
      Log(absl::StrCat("HTTP port: TLS for ", c->peer, ": ", OpenSslError()));
      ::close(fd);
      return;
    }
    SSL_set_accept_state(c->ssl);
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = fd;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    ::close(fd);
    return;
  }
  Conn* raw = c.get();
  conns_[fd] = std::move(c);
  Pump(raw);  // (a client may have sent its request with its connection)
}

void HttpFront::Close(int fd) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  conns_.erase(fd);
  ::close(fd);
}

void HttpFront::Pump(Conn* c) {
  const int fd = c->fd;
  char buf[4096];
  if (c->closing) {
    // Reading what is left of a request refused (a body, say): closing with it unread would reset
    // the connection, and the client could lose the answer. A little only, then closed.
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0 && (c->dropped += static_cast<size_t>(n)) < (8u << 20)) continue;
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      Close(fd);
      return;
    }
  }
  auto want = [&](uint32_t events) {
    epoll_event ev{};
    ev.events = events | EPOLLRDHUP;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
  };
  if (c->ssl != nullptr && !c->handshaken) {
    const int r = SSL_do_handshake(c->ssl);
    if (r != 1) {
      const int e = SSL_get_error(c->ssl, r);
      if (e == SSL_ERROR_WANT_READ) return want(EPOLLIN);
      if (e == SSL_ERROR_WANT_WRITE) return want(EPOLLOUT);
      ERR_clear_error();
      Close(fd);  // not TLS, or a certificate tls_ca does not vouch for
      return;
    }
    c->handshaken = true;
    want(EPOLLIN);
  }
  for (;;) {
    ssize_t n;
    if (c->ssl != nullptr) {
      n = SSL_read(c->ssl, buf, sizeof(buf));
      if (n <= 0) {
        const int e = SSL_get_error(c->ssl, static_cast<int>(n));
        if (e == SSL_ERROR_WANT_READ) return want(EPOLLIN);
        if (e == SSL_ERROR_WANT_WRITE) return want(EPOLLOUT);
        ERR_clear_error();
        Close(fd);
        return;
      }
    } else {
      n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      if (n <= 0) {
        Close(fd);
        return;
      }
    }
    const size_t scan_from = c->in.size() < 3 ? 0 : c->in.size() - 3;
    c->in.append(buf, static_cast<size_t>(n));
    const size_t end = c->in.find("\r\n\r\n", scan_from);
    if (end != std::string::npos && end + 4 <= options_.max_head_bytes) return Dispatch(c, end);
    if (c->in.size() >= options_.max_head_bytes) {
      return Refuse(c, 431, absl::StrCat("a request's line and headers are limited to ", options_.max_head_bytes,
                                         " bytes on this port"));
    }
  }
}

void HttpFront::Refuse(Conn* c, int code, std::string_view why, std::string_view extra_headers) {
  const std::string out = Response(code, kText, absl::StrCat(AV(why), "\n"), false, extra_headers);
  if (c->ssl != nullptr) {
    SSL_write(c->ssl, out.data(), static_cast<int>(out.size()));  // small: the socket buffer takes it
    SSL_shutdown(c->ssl);
    ERR_clear_error();
  } else {
    (void)!::send(c->fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  ::shutdown(c->fd, SHUT_WR);
  c->closing = true;
  c->deadline = absl::Now() + absl::Seconds(1);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = c->fd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
}

void HttpFront::Dispatch(Conn* c, size_t head_end) {
  auto job = std::make_unique<Job>();
  if (int code = ParseHead(absl::string_view(c->in).substr(0, head_end), &job->request); code != 0) {
    return Refuse(c, code, "not an HTTP/1.x request this port understands");
  }
  const Request& r = job->request;
  if (r.method != "GET" && r.method != "HEAD") {
    return Refuse(c, 405, absl::StrCat(r.method, " is not answered here: this port serves GET and HEAD only"),
                  "Allow: GET, HEAD\r\n");
  }
  const std::string length = r.Header("content-length");
  if ((!length.empty() && length != "0") || r.Has("transfer-encoding")) {
    return Refuse(c, 413, "a request to this port carries no body");
  }
  // The connection goes to a worker: blocking from now on, each write bounded in time.
  const int fd = c->fd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  const int64_t us = absl::ToInt64Microseconds(options_.write_timeout);
  timeval tv{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  timeval short_tv{0, 100 * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &short_tv, sizeof(short_tv));
  job->caller.peer = c->peer;
  job->caller.tls = c->ssl != nullptr;
  if (c->ssl != nullptr) job->caller.certificate_user = VerifiedCommonName(c->ssl);
  const std::string auth = r.Header("authorization");
  if (auth.size() > 7 && absl::EqualsIgnoreCase(absl::string_view(auth).substr(0, 7), "bearer ")) {
    job->caller.bearer_token = std::string(absl::StripAsciiWhitespace(absl::string_view(auth).substr(7)));
  }
  job->fd = fd;
  job->ssl = c->ssl;
  c->ssl = nullptr;
  conns_.erase(fd);  // (the descriptor is the job's now)
  bool queued = false;
  {
    absl::MutexLock l(&mu_);
    if (static_cast<int>(queue_.size()) < options_.max_queued) {
      queue_.push_back(std::move(job));
      queued = true;
    }
  }
  if (!queued) {
    const std::string out = Response(503, kText, "the HTTP port is busy: try again shortly\n", false);
    WriteAll(job->fd, job->ssl, out);
  }
}

void HttpFront::Work() {
  for (;;) {
    std::unique_ptr<Job> job;
    {
      absl::MutexLock l(&mu_);
      mu_.Await(absl::Condition(
          +[](HttpFront* f) ABSL_EXCLUSIVE_LOCKS_REQUIRED(f->mu_) { return f->stopping_ || !f->queue_.empty(); },
          this));
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    Answer(job.get());
  }
}

void HttpFront::Answer(Job* job) {
  const Request& r = job->request;
  const bool head = r.method == "HEAD";
  std::string out;
  auto route = std::find_if(options_.routes.begin(), options_.routes.end(),
                            [&](const Route& x) { return x.path == r.path; });
  if (route == options_.routes.end()) {
    out = Response(404, kText, absl::StrCat("no page ", r.path, " here\n"), head);
  } else {
    absl::Status allowed = options_.authorize ? options_.authorize(job->caller, *route) : absl::OkStatus();
    if (absl::IsUnauthenticated(allowed)) {
      out = Response(401, kText, absl::StrCat(allowed.message(), "\n"), head,
                     "WWW-Authenticate: Bearer realm=\"basalt\"\r\n");
    } else if (!allowed.ok()) {
      out = Response(403, kText, absl::StrCat(allowed.message(), "\n"), head);
    } else {
      out = Response(200, route->content_type, route->body ? route->body() : std::string(), head);
    }
  }
  if (WriteAll(job->fd, job->ssl, out) && job->ssl != nullptr) SSL_shutdown(job->ssl);
  ERR_clear_error();
  ::shutdown(job->fd, SHUT_WR);
  char sink[512];
  while (::recv(job->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0) {
  }
}

}  // namespace basalt::server
