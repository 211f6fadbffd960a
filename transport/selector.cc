#include "transport/selector.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"

namespace basalt {
namespace {

class DefaultSelector final : public NetworkSelector {
 public:
  explicit DefaultSelector(const SelectorOptions& options) : options_(options) {}

  absl::Status AddServer(const std::string& server) {
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
    servers_.emplace(server, std::move(paths));
    return absl::OkStatus();
  }

  absl::StatusOr<DataPath*> Select(OpKind op, const std::string& server) override {
    ServerPaths* p = Lookup(server);
    if (p == nullptr) return UnknownServer(server);
    if (op != OpKind::kOther && p->verbs != nullptr) return p->verbs.get();
    return p->grpc.get();
  }

  absl::StatusOr<TransportStats> Stats(const std::string& server) override {
    ServerPaths* p = Lookup(server);
    if (p == nullptr) return UnknownServer(server);
    TransportStats s;
    if (p->verbs != nullptr) {
      p->verbs->AddStats(&s);
    } else if (!p->verbs_off.empty()) {
      s.verbs_state = "off: " + p->verbs_off;
    }
    return s;
  }

  absl::StatusOr<GrpcPath*> Grpc(const std::string& server) override {
    ServerPaths* p = Lookup(server);
    if (p == nullptr) return UnknownServer(server);
    return p->grpc.get();
  }

 private:
  struct ServerPaths {
    std::unique_ptr<GrpcPath> grpc;
    std::unique_ptr<DataPath> verbs;  // null: gRPC only
    std::string verbs_off;            // why there is no verbs path
  };

  ServerPaths* Lookup(const std::string& server) {
    auto it = servers_.find(server);
    return it == servers_.end() ? nullptr : it->second.get();
  }
  static absl::Status UnknownServer(const std::string& server) {
    return absl::NotFoundError(absl::StrCat("network selector: unknown server ", server));
  }

  const SelectorOptions options_;
  std::map<std::string, std::unique_ptr<ServerPaths>, std::less<>> servers_;  // fixed after creation
};

}  // namespace

absl::StatusOr<std::unique_ptr<NetworkSelector>> NewNetworkSelector(const SelectorOptions& options,
                                                                    const std::vector<std::string>& servers) {
  auto selector = std::make_unique<DefaultSelector>(options);
  for (const std::string& s : servers) {
    absl::Status st = selector->AddServer(s);
    if (!st.ok()) return st;
  }
  return std::unique_ptr<NetworkSelector>(std::move(selector));
}

}  // namespace basalt
