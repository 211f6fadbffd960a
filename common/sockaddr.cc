#include "common/sockaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "absl/strings/str_cat.h"

namespace basalt {

std::string SockaddrString(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    auto* v4 = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof(buf));
    return absl::StrCat(buf, ":", ntohs(v4->sin_port));
  }
  if (sa->sa_family == AF_INET6) {
    auto* v6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof(buf));
    return absl::StrCat("[", buf, "]:", ntohs(v6->sin6_port));
  }
  return "(unknown address family)";
}

}  // namespace basalt
