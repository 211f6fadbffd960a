// A DataPath: one way to carry the data operations (Get, Mutate) to one server. The gRPC path
// (transport/grpc/path.h), the verbs path (transport/verbs/path.h) and the TCP path
// (transport/tcp/path.h) implement it; the
// network selector (transport/selector.h) picks one per call.
//
// Thread-safety: paths are safe to use from many threads.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "proto/basalt.pb.h"
#include "basalt/transport_stats.h"

namespace basalt {

// What an operation is, as far as routing cares.
enum class OpKind : uint8_t { kGet, kMutate, kOther };
enum class PathKind : uint8_t { kGrpc, kVerbs, kTcp };
const char* PathKindName(PathKind k);

// Completion of an asynchronous path call; runs exactly once, on a transport thread.
using PathCallback = std::function<void(absl::Status)>;

// A way to send the data operations (Get, Mutate) to one server. Requests and responses are
// the wire messages of basalt.proto, so a path may serialise them however it likes.
// Statuses carry the server's code; a path reports its own breakage as Unavailable.
class DataPath {
 public:
  virtual ~DataPath() = default;
  virtual PathKind kind() const = 0;

  virtual absl::Status Get(const rpc::GetRequest& req, absl::Time deadline, rpc::GetResponse* resp) = 0;
  virtual absl::Status Mutate(const rpc::MutateRequest& req, absl::Time deadline) = 0;

  // `req` and `resp` must stay valid until `done` runs.
  virtual void GetAsync(const rpc::GetRequest* req, absl::Time deadline, rpc::GetResponse* resp,
                        PathCallback done) = 0;
  virtual void MutateAsync(const rpc::MutateRequest* req, absl::Time deadline, rpc::MutateResponse* resp,
                           PathCallback done) = 0;
  // Adds what the path counts to *out (the gRPC path counts nothing).
  virtual void AddStats(TransportStats* out) const { (void)out; }
};

}  // namespace basalt
