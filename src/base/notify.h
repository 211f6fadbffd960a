// Tells systemd how a service started with Type=notify is doing (sd_notify(3)'s protocol, without
// libsystemd: one datagram of "KEY=value" lines to the unix socket $NOTIFY_SOCKET names;
// "@name" is an abstract socket). basalt-server and basalt-master say READY=1 once they serve
// and STOPPING=1 when they begin to stop.
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace basalt::server {

// Sends `state` ("READY=1", "STATUS=...", several lines allowed). OK and nothing sent when
// $NOTIFY_SOCKET is unset (not started by systemd as Type=notify); Unavailable, naming the socket,
// when it cannot be sent.
absl::Status NotifySystemd(std::string_view state);

}  // namespace basalt::server
