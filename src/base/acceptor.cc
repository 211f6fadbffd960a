#include "src/base/acceptor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "src/base/config.h"

namespace basalt::server {
namespace {

constexpr int64_t kLogEveryMs = 10000;
constexpr int kAcceptsPerRound = 64;   // then the other sockets and Stop get a turn
constexpr int kBackoffMs = 100;        // after an accept error that is not about descriptors
constexpr uint32_t kEnhanceYourCalm = 0xb;  // HTTP/2 error code (RFC 9113 §7)

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Errno(int e) { return std::strerror(e); }

uint64_t SoftDescriptorLimit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return r.rlim_cur;
}

// An HTTP/2 frame header (RFC 9113 §4.1) followed by its payload.
void AppendFrame(std::string* out, uint8_t type, const std::string& payload) {
  const uint32_t len = static_cast<uint32_t>(payload.size());
  const char header[9] = {static_cast<char>(len >> 16), static_cast<char>(len >> 8), static_cast<char>(len),
                          static_cast<char>(type), 0, 0, 0, 0, 0};
  out->append(header, sizeof(header));
  *out += payload;
}

void AppendBigEndian32(std::string* out, uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                     static_cast<char>(v)};
  out->append(b, 4);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Acceptor>> Acceptor::Listen(const Options& options) {
  std::string host;
  int port = 0;
  if (absl::Status s = SplitHostPort(options.listen, &host, &port); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("listen address '", options.listen, "': ", s.message()));
  }
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen, ": ", ::gai_strerror(rc)));
  }
  std::unique_ptr<Acceptor> a(new Acceptor(options));
  std::vector<addrinfo*> addrs;
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6) addrs.push_back(ai);
  }
  std::string first_error;
  for (addrinfo* ai : addrs) {
    sockaddr_storage addr{};
    std::memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
    // Port 0 picks a port for the first address; the others take the same one.
    if (a->port_ != 0) {
      if (ai->ai_family == AF_INET) reinterpret_cast<sockaddr_in*>(&addr)->sin_port = htons(a->port_);
      if (ai->ai_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port = htons(a->port_);
    }
    const int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      if (first_error.empty()) first_error = Errno(errno);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6) {
      // Alone ("[::]"), the IPv6 socket takes IPv4 too; beside an IPv4 address it must not.
      const int v6only = addrs.size() > 1 ? 1 : 0;
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
    }
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), ai->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      if (first_error.empty()) first_error = Errno(errno);
      ::close(fd);
      continue;
    }
    if (a->port_ == 0) {
      sockaddr_storage bound{};
      socklen_t len = sizeof(bound);
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
      a->port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                   : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    }
    a->listen_fds_.push_back(fd);
  }
  ::freeaddrinfo(found);
  if (a->listen_fds_.empty()) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen, ": ",
                                               first_error.empty() ? "no IPv4 or IPv6 address" : first_error));
  }
  a->wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  a->spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (a->wake_fd_ < 0) return absl::InternalError(absl::StrCat("eventfd: ", Errno(errno)));
  return a;
}

Acceptor::~Acceptor() {
  Stop();
  for (int fd : {wake_fd_, spare_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

void Acceptor::Start(std::function<void(int fd)> take) {
  take_ = std::move(take);
  thread_ = std::thread([this] { Run(); });
}

void Acceptor::Stop() {
  stopping_.store(true);
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  for (int fd : listen_fds_) ::close(fd);
  listen_fds_.clear();
}

void Acceptor::Run() {
  std::vector<pollfd> fds;
  for (int fd : listen_fds_) fds.push_back(pollfd{fd, POLLIN, 0});
  fds.push_back(pollfd{wake_fd_, POLLIN, 0});
  while (!stopping_.load()) {
    const int timeout = backoff_ ? kBackoffMs : -1;
    backoff_ = false;
    const int n = ::poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno != EINTR) {
      Log(absl::StrCat("poll on the listening sockets: ", Errno(errno)));
      backoff_ = true;
      continue;
    }
    if (stopping_.load()) break;
    for (size_t i = 0; i + 1 < fds.size(); ++i) {
      if (fds[i].revents != 0) AcceptPending(fds[i].fd);
    }
  }
}

void Acceptor::AcceptPending(int listen_fd) {
  for (int i = 0; i < kAcceptsPerRound; ++i) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      if (e == EAGAIN || e == EWOULDBLOCK) return;
      if (e == EINTR || e == ECONNABORTED || e == EPROTO) continue;
      if ((e == EMFILE || e == ENFILE) && spare_fd_ >= 0) {
        // Out of descriptors: give up the spare to take the connection, tell the client, close
        // it, and take the spare back. Without this the connection stays in the backlog and
        // the socket polls readable forever.
        ::close(spare_fd_);
        spare_fd_ = -1;
        fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
          Refuse(fd, e == EMFILE ? absl::StrCat("out of file descriptors (all ", SoftDescriptorLimit(),
                                                " are open); try again later")
                                 : "the system is out of file descriptors (fs.file-max); try again later");
        }
        spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) continue;
      }
      // No spare (it could not be reopened), or another error: wait a little and retry.
      if (last_refusal_log_ms_ < 0 || NowMs() - last_refusal_log_ms_ >= kLogEveryMs) {
        last_refusal_log_ms_ = NowMs();
        Log(absl::StrCat("accepting a connection: ", Errno(e), "; retrying every ", kBackoffMs, " ms"));
      }
      backoff_ = true;
      return;
    }
    const uint64_t limit = SoftDescriptorLimit();
    const uint64_t reserved = static_cast<uint64_t>(std::max(0, options_.reserved_fds));
    if (reserved > 0 && static_cast<uint64_t>(fd) + reserved >= limit) {
      Refuse(fd, absl::StrCat("too many connections: ", fd, " descriptors are open of the limit ", limit, " and ",
                              reserved, " are kept for files (reserved_fds); try again later"));
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (refusing_) {
      refusing_ = false;
      Log(absl::StrCat("accepting connections again",
                       refused_unlogged_ > 0 ? absl::StrCat(" (", refused_unlogged_, " more refused)") : ""));
      refused_unlogged_ = 0;
    }
    if (options_.accepted != nullptr) options_.accepted->fetch_add(1, std::memory_order_relaxed);
    take_(fd);
  }
}

void Acceptor::Refuse(int fd, const std::string& why) {
  if (options_.refused != nullptr) options_.refused->fetch_add(1, std::memory_order_relaxed);
  const std::string text = "basalt-server refused the connection: " + why;
  std::string out;
  if (options_.refusal) {
    out = options_.refusal(text);
  } else {
    // The server's connection preface (an empty SETTINGS frame), then GOAWAY: last stream 0,
    // ENHANCE_YOUR_CALM, and the reason as debug data (gRPC 1.51 clients report only
    // UNAVAILABLE "GOAWAY received", which Basalt's client retries; the log says why).
    AppendFrame(&out, 0x4, "");
    std::string goaway;
    AppendBigEndian32(&goaway, 0);
    AppendBigEndian32(&goaway, kEnhanceYourCalm);
    goaway += text;
    AppendFrame(&out, 0x7, goaway);
  }
  (void)!::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  // Read what the client has sent so far: closing with unread bytes would reset the
  // connection, and the client could lose the GOAWAY.
  char sink[512];
  while (::recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0) {
  }
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
  const int64_t now = NowMs();
  if (!refusing_ || now - last_refusal_log_ms_ >= kLogEveryMs) {
    Log(refusing_ ? absl::StrCat("refused ", refused_unlogged_ + 1, " connections in the last ",
                                 (now - last_refusal_log_ms_) / 1000, " s; the latest: ", why)
                  : absl::StrCat("refused a connection: ", why));
    last_refusal_log_ms_ = now;
    refused_unlogged_ = 0;
  } else {
    ++refused_unlogged_;
  }
  refusing_ = true;
}

void Acceptor::Log(const std::string& line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    log::Info(line);
  }
}

absl::StatusOr<uint64_t> RaiseDescriptorLimit(uint64_t* before) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return absl::InternalError(absl::StrCat("getrlimit: ", Errno(errno)));
  *before = r.rlim_cur;
  rlim_t target = r.rlim_max;
  // An unlimited hard limit cannot be the soft one: the kernel's ceiling is fs.nr_open.
  if (target == RLIM_INFINITY) {
    std::ifstream nr_open("/proc/sys/fs/nr_open");
    uint64_t n = 0;
    target = (nr_open >> n) && n > 0 ? n : 1048576;
  }
  if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur >= target) return r.rlim_cur;
  r.rlim_cur = target;
  if (::setrlimit(RLIMIT_NOFILE, &r) != 0) {
    return absl::InternalError(absl::StrCat("raising the descriptor limit to ", target, ": ", Errno(errno)));
  }
  return target;
}

}  // namespace basalt::server
