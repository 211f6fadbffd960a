// Blocking TCP client sockets: a connect bounded by a timeout, and a write of all of a buffer.
// For the clients of Basalt's own protocols (the TCP fast path, transport/tcp/client.h; a
// replication source's calls to its sinks, src/front/hbase/wire_client.h).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace basalt {

// Connects to host:port (a name or an address, IPv4 or IPv6; every address of the host in turn)
// within `timeout` each. A blocking, close-on-exec socket with TCP_NODELAY; Unavailable
// "resolving HOST: ..." or "connecting to HOST:PORT: ..." (the last address's reason).
absl::StatusOr<int> DialTcp(const std::string& host, int port, absl::Duration timeout);

// Writes all of `bytes` to a blocking socket (EINTR retried, SIGPIPE never raised); false, with
// errno set, when a send fails (or its SO_SNDTIMEO passes).
bool SendAll(int fd, std::string_view bytes);

}  // namespace basalt
