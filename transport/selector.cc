#include "transport/selector.h"

#include <atomic>
#include <map>
#include <memory>
#include <vector>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"

namespace basalt {
namespace {

class DefaultSelector final : public NetworkSelector {
  // A server's paths. The gRPC path is made with the entry (cheap: channels connect lazily).
  // The fast path (verbs, else TCP) is asked for by the first Get or Mutate routed to the server
  // (a call to it, which may be slow or find it gone): meanwhile the other data calls to that
  // server wait on verbs_mu, and calls to other servers go on. A server that only ever gets
  // other calls (a cluster's master: meta reads, admin) is never asked.
  struct Entry {
    std::unique_ptr<GrpcPath> grpc;
    absl::Mutex verbs_mu;
    std::unique_ptr<DataPath> verbs_owner ABSL_GUARDED_BY(verbs_mu);  // the fast path; null: gRPC only
    std::string verbs_off ABSL_GUARDED_BY(verbs_mu);                  // why there is no verbs path
    std::string tcp_off ABSL_GUARDED_BY(verbs_mu);                    // ... and no TCP path
    std::atomic<bool> settled{false};        // the fast paths were asked for (with or without one)
    std::atomic<DataPath*> verbs{nullptr};   // verbs_owner, once settled
  };

 public:
  explicit DefaultSelector(const SelectorOptions& options) : options_(options) {}

  absl::StatusOr<DataPath*> Select(OpKind op, const std::string& server) override {
    Entry* e = EntryFor(server);
    if (op == OpKind::kOther) return e->grpc.get();
    if (!e->settled.load(std::memory_order_acquire)) BASALT_RETURN_IF_ERROR(AskVerbs(server, e));
    if (DataPath* v = e->verbs.load(std::memory_order_acquire)) return v;
    return e->grpc.get();
  }

  absl::StatusOr<TransportStats> Stats(const std::string& server) override {
    Entry* e = Lookup(server);
    if (e == nullptr || !e->settled.load(std::memory_order_acquire)) {
      return absl::NotFoundError(absl::StrCat("network selector: no Get or Mutate went to ", server, " yet"));
    }
    return StatsOf(e);
  }

  std::map<std::string, TransportStats> AllStats() override {
    std::vector<std::pair<std::string, Entry*>> entries;
    {
      absl::ReaderMutexLock l(&mu_);
      for (const auto& [server, e] : servers_) entries.emplace_back(server, e.get());
    }
    std::map<std::string, TransportStats> out;
    for (const auto& [server, e] : entries) {
      if (e->settled.load(std::memory_order_acquire)) out.emplace(server, StatsOf(e));
    }
    return out;
  }

  absl::StatusOr<GrpcPath*> Grpc(const std::string& server) override { return EntryFor(server)->grpc.get(); }

  // Opens the server's paths, verbs included, now (a standalone server's, when the connection
  // opens): an error only when verbs is required and cannot be had.
  absl::Status OpenNow(const std::string& server) {
    Entry* e = EntryFor(server);
    return AskVerbs(server, e);
  }

 private:
  // The server's entry (never removed, so the pointer stays good), or null.
  Entry* Lookup(const std::string& server) {
    absl::ReaderMutexLock l(&mu_);
    auto it = servers_.find(server);
    return it == servers_.end() ? nullptr : it->second.get();
  }
  Entry* EntryFor(const std::string& server) {
    if (Entry* e = Lookup(server)) return e;
    absl::MutexLock l(&mu_);
    auto [it, added] = servers_.try_emplace(server, nullptr);
    if (added) {
      it->second = std::make_unique<Entry>();
      it->second->grpc = GrpcPath::Open(server, options_.grpc_channels, options_.security);
    }
    return it->second.get();
  }

  // Asks the fast paths' factories once per server, verbs first (a required path that cannot
  // be had is asked for again by the next call).
  absl::Status AskVerbs(const std::string& server, Entry* e) {
    absl::MutexLock l(&e->verbs_mu);
    if (e->settled.load(std::memory_order_relaxed)) return absl::OkStatus();
    struct Choice {
      const FastPathFactory* factory;
      const char* name;
      std::string* off;
    };
    for (const Choice& c : {Choice{&options_.verbs_factory, "verbs", &e->verbs_off},
                            Choice{&options_.tcp_factory, "tcp", &e->tcp_off}}) {
      if (!*c.factory || e->verbs_owner != nullptr) continue;
      absl::StatusOr<FastPathResult> made = (*c.factory)(server, e->grpc.get());
      if (!made.ok()) {
        return absl::Status(made.status().code(),
                            absl::StrCat(c.name, " path to ", server, ": ", made.status().message()));
      }
      e->verbs_owner = std::move(made->path);
      *c.off = std::move(made->why_not);
    }
    e->verbs.store(e->verbs_owner.get(), std::memory_order_release);
    e->settled.store(true, std::memory_order_release);
    return absl::OkStatus();
  }

  static TransportStats StatsOf(Entry* e) {
    TransportStats s;
    if (DataPath* v = e->verbs.load(std::memory_order_acquire)) {
      s.path = PathKindName(v->kind());
      v->AddStats(&s);
    }
    absl::MutexLock l(&e->verbs_mu);
    if (!e->verbs_off.empty()) s.verbs_state = "off: " + e->verbs_off;
    if (!e->tcp_off.empty()) s.tcp_state = "off: " + e->tcp_off;
    return s;
  }

  const SelectorOptions options_;
  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Entry>, std::less<>> servers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<NetworkSelector>> NewNetworkSelector(const SelectorOptions& options,
                                                                    const std::vector<std::string>& servers) {
  auto selector = std::make_unique<DefaultSelector>(options);
  for (const std::string& s : servers) {
    BASALT_RETURN_IF_ERROR(selector->OpenNow(s));
  }
  return std::unique_ptr<NetworkSelector>(std::move(selector));
}

}  // namespace basalt
