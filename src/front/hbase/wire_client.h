// A minimal blocking HBase RPC client (rpc_codec.h's client side on a TCP connection): the
// preamble and ConnectionHeader, then calls, and their answers. For a replication source's calls
// to its sinks (Dial: src/replication/), for the HBase port's tests, which send what the Java
// client would not (pipelined calls held unanswered, bad bytes, too many connections), and for
// basalt-bench, which measures the port without a JVM. The HBase jar is the real client
// (tests/hbase/).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/dial.h"
#include "src/front/hbase/rpc_codec.h"

namespace basalt::hbase {

class WireClient {
 public:
  // Connects to 127.0.0.1:port; with `service`, sends the preamble and a ConnectionHeader
  // naming it (empty: nothing is sent, for tests of the preamble itself).
  WireClient(int port, std::string_view service) : WireClient("127.0.0.1", port, service) {}
  // The same to an IPv4 address.
  WireClient(const std::string& ipv4, int port, std::string_view service) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, ipv4.c_str(), &addr.sin_addr) != 1 ||
        ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    NoDelay();
    if (!service.empty()) Hello(service, "tester");
  }
  // Connects to host:port (a name or an address, IPv4 or IPv6) within `timeout`, and opens the
  // connection for `service` as `user`: for a replication source's calls to its sinks. Sends and
  // reads then fail after `timeout` without progress. Unavailable, naming the address, when no
  // address of the host answers.
  static absl::StatusOr<std::unique_ptr<WireClient>> Dial(const std::string& host, int port, std::string_view service,
                                                         std::string_view user, std::chrono::milliseconds timeout) {
    absl::StatusOr<int> fd = DialTcp(host, port, absl::FromChrono(timeout));
    if (!fd.ok()) return fd.status();
    std::unique_ptr<WireClient> c(new WireClient());
    c->fd_ = *fd;
    // Each send and receive bounded by the timeout.
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(c->fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (!c->Hello(service, user, "org.apache.hadoop.hbase.codec.KeyValueCodec")) {
      return absl::UnavailableError(absl::StrCat("writing to ", host, ":", port, ": ", std::strerror(errno)));
    }
    return c;
  }
  ~WireClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  WireClient(const WireClient&) = delete;
  WireClient& operator=(const WireClient&) = delete;

  bool connected() const { return fd_ >= 0; }

  bool Write(std::string_view bytes) { return SendAll(fd_, bytes); }

  // Sends one call of `method` with the request's bytes (and a cell block; and the call's
  // timeout in the header, as the Java client sends its RPC timeout, when not 0).
  bool Call(uint32_t id, std::string_view method, const google::protobuf::MessageLite& request,
            std::string_view cell_block = {}, uint32_t timeout_ms = 0) {
    RequestHeader h;
    h.set_call_id(id);
    if (timeout_ms != 0) h.set_timeout(timeout_ms);
    h.set_method_name(std::string(method));
    h.set_request_param(true);
    if (!cell_block.empty()) h.mutable_cell_block_meta()->set_length(static_cast<uint32_t>(cell_block.size()));
    return Write(EncodeCall(h, request.SerializeAsString(), cell_block));
  }

  // The next answer; DeadlineExceeded after `timeout`, Unavailable once the server closed.
  absl::StatusOr<Answer> Read(std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (std::optional<size_t> n = WholeFrame(buffer_)) {
        absl::StatusOr<Answer> a = DecodeAnswer(std::string_view(buffer_).substr(4, *n - 4));
        buffer_.erase(0, *n);
        return a;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return absl::DeadlineExceededError("no answer in time");
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[1 << 16];
      const ssize_t got = ::recv(fd_, buf, sizeof(buf), 0);
      if (got <= 0) return absl::UnavailableError(absl::StrCat("the server closed the connection (", buffer_.size(), " bytes unread)"));
      buffer_.append(buf, static_cast<size_t>(got));
    }
  }

  // Whether the server has closed the connection (read to EOF within `timeout`, answers dropped).
  bool ClosedByServer(std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
      char buf[1 << 16];
      const ssize_t got = ::recv(fd_, buf, sizeof(buf), 0);
      if (got <= 0) return true;
    }
  }

 private:
  WireClient() = default;
  void NoDelay() {
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  // The preamble and a ConnectionHeader for `service` as `user` (with `codec` as its cell block
  // codec, when given).
  bool Hello(std::string_view service, std::string_view user, std::string_view codec = {}) {
    ConnectionHeader h;
    h.set_service_name(std::string(service));
    h.mutable_user_info()->set_effective_user(std::string(user));
    if (!codec.empty()) h.set_cell_block_codec_class(std::string(codec));
    return Write(EncodeHello(h));
  }
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace basalt::hbase
