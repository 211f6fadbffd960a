// The server's embedded HTTP port (issue 15): `/metrics` in the Prometheus text format and the
// status pages (src/server/status_page.h), on `http_listen` (default 127.0.0.1:16030, HBase's
// region server UI port; the master's 16010). cpp-httplib (Debian's libcpp-httplib-dev) serves
// it on two threads of its own: scrapes and page loads are rare, and a slow one never touches
// the data path. GET only; any other path is 404.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

namespace basalt::server {

class HttpFront {
 public:
  // One page: its path ("/metrics"), content type and body, made at each request.
  struct Route {
    std::string path;
    std::string content_type;
    std::function<std::string()> body;
  };
  struct Options {
    std::string listen;  // HOST:PORT; port 0: a free one
    std::vector<Route> routes;
  };
  // The content types of the pages.
  static constexpr char kPrometheusText[] = "text/plain; version=0.0.4; charset=utf-8";
  static constexpr char kHtml[] = "text/html; charset=utf-8";
  static constexpr char kJson[] = "application/json";
  static constexpr char kText[] = "text/plain; charset=utf-8";
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
