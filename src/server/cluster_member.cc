#include "src/server/cluster_member.h"

#include "absl/strings/numbers.h"
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
                      "\n");
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

absl::Status PublishMetaServer(ZooKeeper* zk, const ClusterPaths& paths, const std::string& server) {
  absl::StatusOr<std::string> made = zk->Create(paths.meta_server(), server, ZooKeeper::Mode::kPersistent);
  if (absl::IsAlreadyExists(made.status())) return zk->Set(paths.meta_server(), server);
  return made.status();
}

absl::Status AskMasterToSplit(ZooKeeper* zk, const ClusterPaths& paths, const std::string& encoded_name) {
  BASALT_ASSIGN_OR_RETURN(std::optional<ZkNode> node, zk->Get(paths.meta_server()));
  if (!node.has_value() || node->data.empty()) return absl::UnavailableError("no master serves yet");
  auto stub = rpc::Admin::NewStub(
      grpc::CreateCustomChannel(node->data, grpc::InsecureChannelCredentials(), ClientChannelArguments()));
  rpc::SplitRequest req;
  req.set_name(encoded_name);
  rpc::AdminResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return FromGrpcStatus(stub->Split(&ctx, req, &resp));
}

}  // namespace basalt::server
