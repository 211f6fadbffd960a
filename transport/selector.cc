#include "transport/selector.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"

namespace basalt {
namespace {

class DefaultSelector final : public NetworkSelector {
  struct ServerPaths {
    std::unique_ptr<GrpcPath> grpc;
    std::unique_ptr<DataPath> verbs;  // null: gRPC only
    std::string verbs_off;            // why there is no verbs path
  };

 public:
  explicit DefaultSelector(const SelectorOptions& options) : options_(options) {}

  // Opens the paths to a server (the first call routed to it, in a cluster); nothing to do
  // when they are open.
  absl::StatusOr<ServerPaths*> AddServer(const std::string& server) {
    absl::MutexLock l(&mu_);
    if (auto it = servers_.find(server); it != servers_.end()) return it->second.get();
    auto paths = std::make_unique<ServerPaths>();
    paths->grpc = GrpcPath::Open(server, options_.grpc_channels);
    if (options_.verbs_factory) {
      absl::StatusOr<VerbsPathResult> verbs = options_.verbs_factory(server, paths->grpc.get());
      if (!verbs.ok()) {
        return absl::Status(verbs.status().code(),
                            absl::StrCat("verbs path to ", server, ": ", verbs.status().message()));
      }
      paths->verbs = std::move(verbs->path);
      paths->verbs_off = std::move(verbs->why_not);
    }
    return servers_.emplace(server, std::move(paths)).first->second.get();
  }

  absl::StatusOr<DataPath*> Select(OpKind op, const std::string& server) override {
    BASALT_ASSIGN_OR_RETURN(ServerPaths * p, Paths(server));
    if (op != OpKind::kOther && p->verbs != nullptr) return p->verbs.get();
    return p->grpc.get();
  }

  absl::StatusOr<TransportStats> Stats(const std::string& server) override {
    ServerPaths* p = Lookup(server);
    if (p == nullptr) return absl::NotFoundError(absl::StrCat("network selector: no call went to ", server, " yet"));
    TransportStats s;
    if (p->verbs != nullptr) {
      p->verbs->AddStats(&s);
    } else if (!p->verbs_off.empty()) {
      s.verbs_state = "off: " + p->verbs_off;
    }
    return s;
  }

  absl::StatusOr<GrpcPath*> Grpc(const std::string& server) override {
    BASALT_ASSIGN_OR_RETURN(ServerPaths * p, Paths(server));
    return p->grpc.get();
  }

 private:

  // A server's paths (never removed once open, so the pointer stays good), or null.
  ServerPaths* Lookup(const std::string& server) {
    absl::ReaderMutexLock l(&mu_);
    auto it = servers_.find(server);
    return it == servers_.end() ? nullptr : it->second.get();
  }
  absl::StatusOr<ServerPaths*> Paths(const std::string& server) {
    if (ServerPaths* p = Lookup(server)) return p;
    return AddServer(server);
  }

  const SelectorOptions options_;
  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<ServerPaths>, std::less<>> servers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<NetworkSelector>> NewNetworkSelector(const SelectorOptions& options,
                                                                    const std::vector<std::string>& servers) {
  auto selector = std::make_unique<DefaultSelector>(options);
  for (const std::string& s : servers) {
    auto added = selector->AddServer(s);
    if (!added.ok()) return added.status();
  }
  return std::unique_ptr<NetworkSelector>(std::move(selector));
}

}  // namespace basalt
