#include "src/server/http_front.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "src/server/config.h"

namespace basalt::server {

absl::StatusOr<std::unique_ptr<HttpFront>> HttpFront::Start(Options options) {
  std::string host;
  int port = 0;
  if (absl::Status s = SplitHostPort(options.listen, &host, &port); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("http_listen '", options.listen, "': ", s.message()));
  }
  std::unique_ptr<HttpFront> front(new HttpFront());
  front->server_ = std::make_unique<httplib::Server>();
  httplib::Server& srv = *front->server_;
  srv.new_task_queue = [] { return new httplib::ThreadPool(2); };
  // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, with which a second server binds
  // the same port and the kernel splits the scrapes between the two.
  srv.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  for (Route& route : options.routes) {
    const std::string path = route.path;
    srv.Get(path, [route = std::move(route)](const httplib::Request&, httplib::Response& res) {
      res.set_content(route.body ? route.body() : std::string(), route.content_type);
      res.set_header("Cache-Control", "no-store");
    });
  }
  const int bound = port == 0 ? srv.bind_to_any_port(host) : (srv.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(absl::StrCat("http_listen ", options.listen,
                                               ": cannot listen there (in use, or not this host's address); set "
                                               "http_listen to another HOST:PORT, port 0 for a free one, or off"));
  }
  front->address_ = absl::StrCat(host, ":", bound);
  front->thread_ = std::thread([&srv] { srv.listen_after_bind(); });
  // Serving before Start returns, so that a stop (the destructor) never comes before the loop,
  // which would then run on.
  for (int i = 0; i < 5000 && !srv.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return front;
}

HttpFront::~HttpFront() {
  if (server_ != nullptr) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace basalt::server
