// The server's embedded HTTP port (issue 15): `/metrics` in the Prometheus text format, on
// `http_listen` (default 127.0.0.1:16030, HBase's region server UI port). cpp-httplib (Debian's
// libcpp-httplib-dev) serves it on two threads of its own: scrapes are rare, and a slow one
// never touches the data path. The status pages come next on the same port.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

namespace basalt::server {

class HttpFront {
 public:
  struct Options {
    std::string listen;                 // HOST:PORT; port 0: a free one
    std::function<std::string()> metrics;  // the body of /metrics
  };
  // Binds and serves. Unavailable naming the address when it cannot bind (in use, not local).
  static absl::StatusOr<std::unique_ptr<HttpFront>> Start(Options options);
  ~HttpFront();  // stops serving
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  const std::string& address() const { return address_; }  // HOST:PORT bound

 private:
  HttpFront() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::string address_;
};

}  // namespace basalt::server
