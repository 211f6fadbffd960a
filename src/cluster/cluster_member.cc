#include "src/cluster/cluster_member.h"

#include "common/log.h"

#include "src/security/access_control.h"
#include "src/security/quotas.h"

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "grpcpp/grpcpp.h"
#include "proto/basalt.grpc.pb.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {

std::string ServerRegistration::NodeName() const { return absl::StrCat(name, ",", start_code); }

std::string ServerRegistration::Encode() const {
  return absl::StrCat("name=", name, "\nstart_code=", start_code, "\nrados_client=", rados_client, "\nwal_dir=", wal_dir,
                      "\n", hbase.empty() ? "" : absl::StrCat("hbase=", hbase, "\n"));
}

absl::StatusOr<ServerRegistration> ServerRegistration::Decode(std::string_view text) {
  ServerRegistration r;
  bool has_name = false, has_code = false;
  for (absl::string_view line : absl::StrSplit(AV(text), '\n', absl::SkipEmpty())) {
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return absl::DataLossError(absl::StrCat("server registration: line '", line, "' is not key=value"));
    }
    const absl::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "name") {
      r.name = std::string(value);
      has_name = !value.empty();
    } else if (key == "start_code") {
      has_code = absl::SimpleAtoi(value, &r.start_code);
    } else if (key == "rados_client") {
      r.rados_client = std::string(value);
    } else if (key == "wal_dir") {
      r.wal_dir = std::string(value);
    } else if (key == "hbase") {
      r.hbase = std::string(value);
    }  // other keys: from a newer server, ignored
  }
  if (!has_name || !has_code) return absl::DataLossError("server registration: no name or start_code");
  return r;
}

absl::StatusOr<std::unique_ptr<ZooKeeper>> JoinCluster(ZooKeeper::Options zk_options, const ClusterPaths& paths,
                                                       const ServerRegistration& me) {
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<ZooKeeper> zk, ZooKeeper::Connect(std::move(zk_options)));
  BASALT_RETURN_IF_ERROR(zk->CreatePath(paths.live()));
  BASALT_RETURN_IF_ERROR(zk->CreatePath(paths.servers()));
  BASALT_RETURN_IF_ERROR(zk->CreatePath(paths.fenced()));
  const std::string node = me.NodeName();
  if (absl::StatusOr<std::string> made = zk->Create(paths.live() + "/" + node, me.Encode(), ZooKeeper::Mode::kEphemeral);
      !made.ok()) {
    return absl::Status(made.status().code(), absl::StrCat("registering ", node, " as live: ", made.status().message()));
  }
  if (absl::StatusOr<std::string> made = zk->Create(paths.servers() + "/" + node, me.Encode(), ZooKeeper::Mode::kPersistent);
      !made.ok()) {
    return absl::Status(made.status().code(), absl::StrCat("registering ", node, ": ", made.status().message()));
  }
  return zk;
}

absl::StatusOr<std::vector<ServerRegistration>> LiveRegistrations(ZooKeeper* zk, const ClusterPaths& paths) {
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> nodes, zk->Children(paths.live()));
  std::vector<ServerRegistration> out;
  for (const std::string& node : nodes) {
    BASALT_ASSIGN_OR_RETURN(std::optional<ZkNode> got, zk->Get(paths.live() + "/" + node));
    if (!got.has_value()) continue;  // gone since
    absl::StatusOr<ServerRegistration> reg = ServerRegistration::Decode(got->data);
    if (!reg.ok()) return absl::DataLossError(absl::StrCat(paths.live(), "/", node, ": ", reg.status().message()));
    out.push_back(*std::move(reg));
  }
  return out;
}

absl::Status PublishMetaServer(ZooKeeper* zk, const ClusterPaths& paths, const std::string& server) {
  // (Readable by anyone: clients start there, and need nothing else of ZooKeeper.)
  absl::StatusOr<std::string> made =
      zk->Create(paths.meta_server(), server, ZooKeeper::Mode::kPersistent, ZooKeeper::Readers::kAnyone);
  if (absl::IsAlreadyExists(made.status())) return zk->Set(paths.meta_server(), server);
  return made.status();
}

absl::Status PublishHBaseMaster(ZooKeeper* zk, const ClusterPaths& paths, const std::optional<ServerRegistration>& master) {
  const std::string path = paths.hbase_master();
  if (!master.has_value()) {
    absl::Status s = zk->Delete(path);
    return absl::IsNotFound(s) ? absl::OkStatus() : s;
  }
  absl::StatusOr<std::string> made =
      zk->Create(path, master->Encode(), ZooKeeper::Mode::kPersistent, ZooKeeper::Readers::kAnyone);
  if (absl::IsAlreadyExists(made.status())) return zk->Set(path, master->Encode());
  return made.status();
}

absl::StatusOr<ServerRegistration> ReadHBaseMaster(ZooKeeper* zk, const ClusterPaths& paths) {
  BASALT_ASSIGN_OR_RETURN(std::optional<ZkNode> node, zk->Get(paths.hbase_master()));
  if (!node.has_value()) {
    return absl::NotFoundError(absl::StrCat("the active master serves no HBase port (", paths.hbase_master(),
                                            " is missing)"));
  }
  absl::StatusOr<ServerRegistration> reg = ServerRegistration::Decode(node->data);
  if (!reg.ok()) return absl::DataLossError(absl::StrCat(paths.hbase_master(), ": ", reg.status().message()));
  return reg;
}

namespace {
// Calls `method` of the active master's Admin service (meta-server names it), with a 30 s
// deadline.
template <class Req, class Resp>
absl::Status CallMaster(ZooKeeper* zk, const ClusterPaths& paths, const ChannelSecurity& security,
                        grpc::Status (rpc::Admin::Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                        const Req& req, Resp* resp) {
  BASALT_ASSIGN_OR_RETURN(std::optional<ZkNode> node, zk->Get(paths.meta_server()));
  if (!node.has_value() || node->data.empty()) return absl::UnavailableError("no master serves yet");
  auto stub = rpc::Admin::NewStub(CreateBasaltChannel(node->data, security));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return FromGrpcStatus(((*stub).*method)(&ctx, req, resp));
}
}  // namespace

absl::Status AskMasterToSplit(ZooKeeper* zk, const ClusterPaths& paths, const std::string& encoded_name,
                              const ChannelSecurity& security) {
  rpc::SplitRequest req;
  req.set_name(encoded_name);
  rpc::AdminResponse resp;
  return CallMaster(zk, paths, security, &rpc::Admin::Stub::Split, req, &resp);
}

namespace {

// Bumps the counter in `node` (made if missing): the watchers of it load again.
absl::Status AnnounceChange(ZooKeeper* zk, const std::string& node_path) {
  BASALT_ASSIGN_OR_RETURN(std::optional<ZkNode> node, zk->Get(node_path));
  const int64_t next = node.has_value() ? std::strtoll(node->data.c_str(), nullptr, 10) + 1 : 1;
  if (!node.has_value()) {
    absl::StatusOr<std::string> made = zk->Create(node_path, absl::StrCat(next), ZooKeeper::Mode::kPersistent);
    if (!absl::IsAlreadyExists(made.status())) return made.status();
  }
  return zk->Set(node_path, absl::StrCat(next));
}

// Every grant the active master keeps (UserPermissions on the global scope).
absl::StatusOr<std::vector<PermGrant>> FetchGrants(ZooKeeper* zk, const ClusterPaths& paths,
                                                   const ChannelSecurity& security) {
  rpc::UserPermissionRequest req;
  rpc::UserPermissionResponse resp;
  BASALT_RETURN_IF_ERROR(CallMaster(zk, paths, security, &rpc::Admin::Stub::UserPermissions, req, &resp));
  std::vector<PermGrant> out;
  for (const rpc::UserPermission& p : resp.permissions()) {
    PermGrant g;
    g.principal = p.principal();
    g.scope = ScopeFromProto(p.scope());
    BASALT_ASSIGN_OR_RETURN(g.perms, ParsePerms(p.permissions()));
    out.push_back(std::move(g));
  }
  return out;
}

// Runs `load` and watches `node_path` for the next change (the watch fires once; it is set
// again on every load). `what` names it in the log.
absl::Status LoadAndWatch(ZooKeeper* zk, const std::string& node_path, const std::string& what,
                          const std::function<absl::Status()>& load) {
  // The watch first, so a change made while loading is not missed.
  BASALT_RETURN_IF_ERROR(zk->Get(node_path, [zk, node_path, what, load] {
                                   absl::Status s = LoadAndWatch(zk, node_path, what, load);
                                   if (!s.ok()) log::Warning(absl::StrCat("loading the ", what, " again: ", s.message()));
                                 }).status());
  return load();
}

// Makes `node_path` once (a watch on a missing node would fire on its creation), then
// LoadAndWatch.
absl::Status Follow(ZooKeeper* zk, const ClusterPaths& paths, const std::string& node_path, const std::string& what,
                    std::function<absl::Status()> load) {
  BASALT_RETURN_IF_ERROR(zk->CreatePath(paths.parent));
  absl::StatusOr<std::string> made = zk->Create(node_path, "0", ZooKeeper::Mode::kPersistent);
  if (!made.ok() && !absl::IsAlreadyExists(made.status())) return made.status();
  return LoadAndWatch(zk, node_path, what, load);
}

}  // namespace

absl::Status AnnounceGrantsChanged(ZooKeeper* zk, const ClusterPaths& paths) { return AnnounceChange(zk, paths.acl()); }
absl::Status AnnounceQuotasChanged(ZooKeeper* zk, const ClusterPaths& paths) {
  return AnnounceChange(zk, paths.quota());
}

absl::Status FollowGrants(ZooKeeper* zk, const ClusterPaths& paths, const ChannelSecurity& security,
                          AccessController* access) {
  return Follow(zk, paths, paths.acl(), "grants", [zk, paths, security, access]() -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(std::vector<PermGrant> grants, FetchGrants(zk, paths, security));
    access->Replace(grants);
    return absl::OkStatus();
  });
}

absl::Status FollowQuotas(ZooKeeper* zk, const ClusterPaths& paths, const ChannelSecurity& security, Quotas* quotas) {
  return Follow(zk, paths, paths.quota(), "quotas", [zk, paths, security, quotas]() -> absl::Status {
    rpc::ListQuotasRequest req;
    rpc::ListQuotasResponse resp;
    BASALT_RETURN_IF_ERROR(CallMaster(zk, paths, security, &rpc::Admin::Stub::ListQuotas, req, &resp));
    BASALT_ASSIGN_OR_RETURN(std::vector<QuotaSetting> settings, QuotasFromProto(resp));
    quotas->Replace(settings);
    return absl::OkStatus();
  });
}

absl::Status AnnouncePeersChanged(ZooKeeper* zk, const ClusterPaths& paths) {
  return AnnounceChange(zk, paths.replication_peers());
}

absl::Status FollowPeers(ZooKeeper* zk, const ClusterPaths& paths, const ChannelSecurity& security,
                         std::function<absl::Status(const rpc::ListPeersResponse&)> apply) {
  return Follow(zk, paths, paths.replication_peers(), "replication peers",
                [zk, paths, security, apply = std::move(apply)]() -> absl::Status {
                  rpc::ListPeersRequest req;
                  req.set_settings_only(true);
                  rpc::ListPeersResponse resp;
                  BASALT_RETURN_IF_ERROR(CallMaster(zk, paths, security, &rpc::Admin::Stub::ListPeers, req, &resp));
                  return apply(resp);
                });
}

std::function<absl::Status(const TxCaller&, int64_t)> MasterWriterCheck(const std::atomic<ZooKeeper*>* zk,
                                                                        const ClusterPaths& paths,
                                                                        const ChannelSecurity& security) {
  struct Shared {
    absl::Mutex mu;
    std::string master ABSL_GUARDED_BY(mu);  // whose stub `stub` is
    std::shared_ptr<rpc::Basalt::Stub> stub ABSL_GUARDED_BY(mu);
    // The master's answers (OK, PermissionDenied, FailedPrecondition) and until when they hold.
    std::map<std::pair<int64_t, std::string>, std::pair<absl::Time, absl::Status>> answers ABSL_GUARDED_BY(mu);
  };
  auto shared = std::make_shared<Shared>();
  return [zk, paths, security, shared](const TxCaller& caller, int64_t write_pointer) -> absl::Status {
    const std::pair<int64_t, std::string> key(write_pointer, caller.user);
    const absl::Time now = absl::Now();
    std::shared_ptr<rpc::Basalt::Stub> stub;
    {
      absl::MutexLock l(&shared->mu);
      auto it = shared->answers.find(key);
      if (it != shared->answers.end() && it->second.first > now) return it->second.second;
      if (shared->answers.size() > 10000) {
        std::erase_if(shared->answers, [now](const auto& e) { return e.second.first <= now; });
      }
    }
    ZooKeeper* z = zk->load();
    if (z == nullptr) return absl::UnavailableError("not in the cluster yet: cannot check the transaction's writer");
    BASALT_ASSIGN_OR_RETURN(std::optional<ZkNode> node, z->Get(paths.meta_server()));
    if (!node.has_value() || node->data.empty()) return absl::UnavailableError("no master serves yet");
    {
      absl::MutexLock l(&shared->mu);
      if (shared->stub == nullptr || shared->master != node->data) {
        shared->master = node->data;
        shared->stub = rpc::Basalt::NewStub(CreateBasaltChannel(node->data, security));
      }
      stub = shared->stub;
    }
    rpc::TransactionWriterRequest req;
    req.set_write_pointer(write_pointer);
    req.set_user(caller.user);
    req.set_may_end_any(caller.may_end_any);
    rpc::TransactionResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    absl::Status s = FromGrpcStatus(stub->CheckTransactionWriter(&ctx, req, &resp));
    // The master's verdict is kept (a refused writer asking again costs the master nothing);
    // its absence is Unavailable, which the client retries.
    if (!s.ok() && s.code() != absl::StatusCode::kPermissionDenied &&
        s.code() != absl::StatusCode::kFailedPrecondition) {
      return absl::UnavailableError(absl::StrCat("checking the transaction's writer with the master: ", s.message()));
    }
    absl::MutexLock l(&shared->mu);
    shared->answers[key] = {now + absl::Seconds(1), s};
    return s;
  };
}

absl::StatusOr<std::string> ReadZooKeeperIdentity(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("zookeeper_auth_file ", path, ": cannot read it"));
  std::stringstream text;
  text << in.rdbuf();
  const std::string line(absl::StripAsciiWhitespace(text.str()));
  const size_t colon = line.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == line.size() || line.find('\n') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("zookeeper_auth_file ", path, ": expected one line 'user:password' (ZooKeeper's digest scheme)"));
  }
  return line;
}

absl::Status CheckZooKeeperClosed(ZooKeeper* zk, const ClusterPaths& paths) {
  if (zk->options().digest.empty()) {
    return absl::FailedPreconditionError(
        "auth=true needs a ZooKeeper identity (zookeeper_auth_file): without one every node of the cluster in "
        "ZooKeeper can be changed or deleted by anyone who reaches ZooKeeper");
  }
  for (const std::string& path : {paths.parent, paths.live(), paths.servers(), paths.fenced(), paths.masters(),
                                  paths.meta_server(), paths.active_master(), paths.hbase_master(), paths.acl(),
                                  paths.quota()}) {
    absl::StatusOr<bool> open = zk->OpenToAnyone(path);
    if (absl::IsNotFound(open.status())) continue;
    if (!open.ok()) return open.status();
    if (*open) {
      return absl::FailedPreconditionError(absl::StrCat(
          "ZooKeeper node ", path, " may be changed by anyone (world:anyone): it was made before the cluster had an "
          "identity. With auth=true the cluster runs only under nodes its identity alone may change: set its ACL "
          "(zkCli.sh setAcl -R ", paths.parent, " auth::cdrwa, as the identity) or remove it (deleteall ",
          paths.parent, ") while the cluster is stopped"));
    }
  }
  return absl::OkStatus();
}

}  // namespace basalt::server
