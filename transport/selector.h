// The client's network selector (docs/DESIGN.md, §4): every client call asks it which path carries
// an operation to a server. Get and Mutate go through a DataPath: the verbs path
// (transport/verbs/path.h, SelectorOptions::verbs_factory) where both sides have RDMA, else the
// TCP path (transport/tcp/path.h, tcp_factory) where the server offers it, else gRPC. Every
// other operation (scans, batches, Increment, admin...) takes the server's GrpcPath.
//
// The selector routes; it does not judge a path's health. A fast path that fails marks itself
// down, repeats the call over gRPC and tries again later (transport/verbs/path.h,
// transport/tcp/path.h): that one timer is the only owner of the fallback decision.
//
// Thread-safety: NetworkSelector and the paths are safe to use from many threads. A server's
// paths are opened by the first call routed to it (in a cluster, the client learns servers
// from meta and ZooKeeper) and kept; finding them takes a reader lock. Opening one (asking the
// server for a verbs session) holds up only the calls to that server.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "transport/grpc/path.h"
#include "transport/path.h"
#include "basalt/transport_stats.h"

namespace basalt {

// What a fast path's factory made (verbs', or the TCP path's): a path, or none and why (the
// server is then served by the next path in the selector's order).
struct FastPathResult {
  std::unique_ptr<DataPath> path;
  std::string why_not;
};
// Makes a fast path to a server (transport/verbs/path.h or transport/tcp/path.h: asks for a
// session over `grpc`, then connects). An error means that path was required and cannot be had:
// making the selector fails with it. Whether it is required is the factory's to know (the
// client's TransportChoice decides it, once).
using FastPathFactory = std::function<absl::StatusOr<FastPathResult>(const std::string& server, GrpcPath* grpc)>;

struct SelectorOptions {
  int grpc_channels = 1;
  ChannelSecurity security;  // how every server's channels are secured
  FastPathFactory verbs_factory;  // empty: no verbs (transport/verbs/path.h makes one)
  FastPathFactory tcp_factory;    // empty: no TCP path (transport/tcp/path.h makes one)
};

class NetworkSelector {
 public:
  virtual ~NetworkSelector() = default;
  // The path for `op` to `server`; kOther is always the gRPC path. Opens the server's paths
  // on its first call, and its verbs path on the first Get or Mutate (an error only when verbs
  // is required and cannot be had; the next call asks again).
  virtual absl::StatusOr<DataPath*> Select(OpKind op, const std::string& server) = 0;
  // The server's gRPC path (scans, batches, admin...).
  virtual absl::StatusOr<GrpcPath*> Grpc(const std::string& server) = 0;
  // What the server's paths did; NotFound for a server no Get or Mutate went to.
  virtual absl::StatusOr<TransportStats> Stats(const std::string& server) = 0;
  // Stats of every server a Get or Mutate went to, by address.
  virtual std::map<std::string, TransportStats> AllStats() = 0;
};

// The selector, with the paths to `servers` (gRPC targets, e.g. "host:port") opened now,
// verbs included: fails with the verbs path factory's error when it has one (verbs required and
// not to be had). Other servers' paths open with their first call; a server's verbs path with
// the first Get or Mutate routed to it.
absl::StatusOr<std::unique_ptr<NetworkSelector>> NewNetworkSelector(const SelectorOptions& options,
                                                                    const std::vector<std::string>& servers);

}  // namespace basalt
