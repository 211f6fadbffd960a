// A socket address as text, for logs and audit lines: "10.0.2.15:4791", "[::1]:80".
#pragma once

#include <sys/socket.h>

#include <string>

namespace basalt {

// IPv4 "A.B.C.D:PORT", IPv6 "[ADDR]:PORT"; "(unknown address family)" for any other.
std::string SockaddrString(const sockaddr* sa);

}  // namespace basalt
