// The client's network selector (DESIGN.md §4): every client call asks it which path carries
// an operation to a server. Get and Mutate go through a DataPath (the verbs path of
// transport/verbs/path.h, plugged in through SelectorOptions::verbs_factory, or gRPC); every other operation
// (scans, batches, Increment, admin...) takes the server's GrpcPath.
//
// A failure of a verbs path is reported with ReportFailure: the server's verbs path is marked
// down, calls fall back to gRPC, and verbs is tried again after SelectorOptions::verbs_retry.
//
// Thread-safety: NetworkSelector and the paths are safe to use from many threads. The set of
// servers is fixed when the selector is made (a standalone server), so Select takes no lock.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/basalt.grpc.pb.h"
#include "transport/stats.h"

namespace basalt {

// What an operation is, as far as routing cares.
enum class OpKind : uint8_t { kGet, kMutate, kOther };
enum class PathKind : uint8_t { kGrpc, kVerbs };
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

// gRPC to one server over `channels` channels (separate TCP connections), calls spread
// round-robin. Also hands out stubs for the operations no DataPath carries.
class GrpcPath final : public DataPath {
 public:
  // Dials lazily (the first call connects).
  static std::unique_ptr<GrpcPath> Open(const std::string& target, int channels);

  PathKind kind() const override { return PathKind::kGrpc; }
  absl::Status Get(const rpc::GetRequest& req, absl::Time deadline, rpc::GetResponse* resp) override;
  absl::Status Mutate(const rpc::MutateRequest& req, absl::Time deadline) override;
  void GetAsync(const rpc::GetRequest* req, absl::Time deadline, rpc::GetResponse* resp,
                PathCallback done) override;
  void MutateAsync(const rpc::MutateRequest* req, absl::Time deadline, rpc::MutateResponse* resp,
                   PathCallback done) override;

  // The next channel's stubs (round-robin).
  rpc::Basalt::Stub* data_stub();
  rpc::Admin::Stub* admin_stub();
  rpc::Echo::Stub* echo_stub();
  const std::string& target() const { return target_; }

 private:
  struct Channel {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<rpc::Basalt::Stub> data;
    std::unique_ptr<rpc::Admin::Stub> admin;
    std::unique_ptr<rpc::Echo::Stub> echo;
  };
  GrpcPath() = default;
  Channel& Next();

  std::string target_;
  std::vector<Channel> channels_;
  std::atomic<uint32_t> next_{0};
};

// Sets a context's deadline from an absl::Time (InfiniteFuture: none).
void SetDeadline(grpc::ClientContext* ctx, absl::Time deadline);

enum class PathPolicy : uint8_t {
  kAuto,      // Get/Mutate over verbs when a verbs path could be made, else gRPC
  kGrpcOnly,  // everything over gRPC
  kVerbsOnly, // Get/Mutate must use verbs; making the selector fails without a verbs path
};

// Makes the verbs path to a server (transport/verbs/path.h: asks for an RDMA session over
// `grpc`, then connects). NotFound / Unimplemented / FailedPrecondition mean "no verbs here": under kAuto the
// server is served by gRPC alone.
using VerbsPathFactory =
    std::function<absl::StatusOr<std::unique_ptr<DataPath>>(const std::string& server, GrpcPath* grpc)>;

struct SelectorOptions {
  PathPolicy policy = PathPolicy::kAuto;
  int grpc_channels = 1;
  absl::Duration verbs_retry = absl::Seconds(5);  // how long a failed verbs path stays down
  VerbsPathFactory verbs_factory;                 // empty: no verbs (transport/verbs/path.h makes one)
};

class NetworkSelector {
 public:
  virtual ~NetworkSelector() = default;
  // The path for `op` to `server`; kOther is always the gRPC path. NotFound for a server the
  // selector does not know.
  virtual absl::StatusOr<DataPath*> Select(OpKind op, const std::string& server) = 0;
  // The server's gRPC path (scans, batches, admin...).
  virtual absl::StatusOr<GrpcPath*> Grpc(const std::string& server) = 0;
  // A call on `path` to `server` failed with `status`. A verbs path failing with Unavailable
  // is marked down for verbs_retry (calls take gRPC meanwhile); gRPC failures change nothing.
  virtual void ReportFailure(const std::string& server, const DataPath* path, const absl::Status& status) = 0;
  // What the server's paths did; NotFound for a server the selector does not know.
  virtual absl::StatusOr<TransportStats> Stats(const std::string& server) = 0;
};

// The selector over `servers` (gRPC targets, e.g. "host:port"). FailedPrecondition when
// policy is kVerbsOnly and verbs cannot be had (the factory's error, or "no verbs path
// factory" without one).
absl::StatusOr<std::unique_ptr<NetworkSelector>> NewNetworkSelector(const SelectorOptions& options,
                                                                    const std::vector<std::string>& servers);

}  // namespace basalt
