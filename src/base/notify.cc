#include "src/base/notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace basalt::server {

absl::Status NotifySystemd(std::string_view state) {
  const char* socket_name = std::getenv("NOTIFY_SOCKET");
  if (socket_name == nullptr || socket_name[0] == '\0') return absl::OkStatus();
  const std::string name = socket_name;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name.size() >= sizeof(addr.sun_path) || (name[0] != '/' && name[0] != '@')) {
    return absl::InvalidArgumentError(absl::StrCat("NOTIFY_SOCKET '", name, "' is not a unix socket path or @name"));
  }
  std::memcpy(addr.sun_path, name.data(), name.size());
  if (name[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("notify socket: ", std::strerror(errno)));
  const ssize_t sent =
      ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), len);
  const int err = errno;
  ::close(fd);
  if (sent != static_cast<ssize_t>(state.size())) {
    return absl::UnavailableError(absl::StrCat("telling systemd (NOTIFY_SOCKET ", name, "): ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace basalt::server
