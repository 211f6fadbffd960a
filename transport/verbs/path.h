// The verbs DataPath (docs/DESIGN.md, §4): Get and Mutate to one server over the verbs transport,
// plugged into the client's NetworkSelector through SelectorOptions::verbs_factory.
//
//   - The session comes from the server over gRPC (OpenVerbsSession); a server without verbs
//     (FAILED_PRECONDITION) or a host without an RDMA device leaves that server to gRPC alone,
//     or, when verbs is `required`, makes the factory fail.
//   - A request or reply too large for a verbs message goes over gRPC (counted as oversized).
//   - A transport failure marks the path down for `retry`, and the call is repeated over gRPC at
//     once, so it does not fail; while down, calls take gRPC; after `retry` verbs is tried again
//     (with a new session if the server restarted). A server that could not be reached when the
//     connection opened is tried again the same way.
//   - GetAsync/MutateAsync run the call on the path's own small pool of threads.
#pragma once

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "transport/selector.h"
#include "transport/verbs/client.h"

namespace basalt::verbs {

struct VerbsPathOptions {
  VerbsClientOptions client;
  absl::Duration retry = absl::Seconds(5);  // how long a failed verbs path stays down
  int async_threads = 2;
  bool required = false;  // TransportChoice::kVerbs: the factory fails when verbs cannot be had
};

FastPathFactory MakeVerbsPathFactory(const VerbsPathOptions& options);

}  // namespace basalt::verbs
