#include "src/front/hbase/zk_records.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/coding.h"
#include "common/status.h"

namespace basalt::hbase {
namespace {

constexpr char kMagic[] = "PBUF";
constexpr uint8_t kPrefixMark = 0xff;

}  // namespace

std::string ZkRecord(std::string_view writer, const google::protobuf::MessageLite& message) {
  std::string out;
  out.push_back(static_cast<char>(kPrefixMark));
  PutFixed32(&out, __builtin_bswap32(static_cast<uint32_t>(writer.size())));
  out.append(writer);
  out.append(kMagic, 4);
  message.AppendToString(&out);
  return out;
}

absl::Status ParseZkRecord(std::string_view bytes, google::protobuf::MessageLite* message) {
  if (!bytes.empty() && static_cast<uint8_t>(bytes[0]) == kPrefixMark) {
    if (bytes.size() < 5) return absl::InvalidArgumentError("a ZooKeeper record whose prefix is cut short");
    const uint32_t n = __builtin_bswap32(DecodeFixed32(bytes.data() + 1));
    if (n > bytes.size() - 5) return absl::InvalidArgumentError("a ZooKeeper record whose prefix runs past it");
    bytes.remove_prefix(5 + n);
  }
  if (bytes.substr(0, 4) != std::string_view(kMagic, 4)) {
    return absl::InvalidArgumentError("not a ZooKeeper record of HBase's (no PBUF magic)");
  }
  bytes.remove_prefix(4);
  if (!message->ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size())) || !message->IsInitialized()) {
    return absl::InvalidArgumentError(absl::StrCat("a ZooKeeper record whose ", message->GetTypeName(), " does not parse"));
  }
  return absl::OkStatus();
}

ServerName ServerNameOf(std::string_view host, int port, uint64_t start_code) {
  ServerName s;
  s.set_host_name(std::string(host));
  s.set_port(static_cast<uint32_t>(port));
  s.set_start_code(start_code);
  return s;
}

Master MasterRecordOf(const ServerName& master, int info_port) {
  Master m;
  *m.mutable_master() = master;
  m.set_rpc_version(0);
  if (info_port > 0) m.set_info_port(static_cast<uint32_t>(info_port));
  return m;
}

MetaRegionServer MetaRecordOf(const ServerName& server) {
  MetaRegionServer m;
  *m.mutable_server() = server;
  m.set_rpc_version(0);
  m.set_state(RegionState::OPEN);
  return m;
}

ClusterId ClusterIdOf(std::string_view id) {
  ClusterId c;
  c.set_cluster_id(std::string(id));
  return c;
}

std::string ServerNodeName(const ServerName& server) {
  return absl::StrCat(server.host_name(), ",", server.port(), ",", server.start_code());
}

absl::StatusOr<ClusterKey> ParseClusterKey(std::string_view key) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("cluster key '", AV(key), "': ", AV(why),
                                                   " (HBase's <quorum hosts>:<client port>:<znode parent>, e.g. ",
                                                   "zk1,zk2,zk3:2181:/hbase)"));
  };
  // As HBase's ZKConfig: the parent is the last part, the port the one before; the quorum's hosts
  // may name their own ports.
  const size_t parent_at = key.rfind(':');
  if (parent_at == std::string_view::npos || parent_at == 0) return bad("no client port and znode parent");
  const size_t port_at = key.rfind(':', parent_at - 1);
  if (port_at == std::string_view::npos || port_at == 0) return bad("no quorum hosts");
  ClusterKey out;
  out.parent = std::string(key.substr(parent_at + 1));
  int port = 0;
  if (!absl::SimpleAtoi(AV(key.substr(port_at + 1, parent_at - port_at - 1)), &port) || port < 1 || port > 65535) {
    return bad("the client port is not a number from 1 to 65535");
  }
  if (out.parent.size() < 2 || out.parent[0] != '/' || out.parent.back() == '/') {
    return bad("the znode parent must be an absolute path, e.g. /hbase");
  }
  std::vector<std::string> hosts;
  for (absl::string_view host : absl::StrSplit(AV(key.substr(0, port_at)), ',')) {
    std::vector<absl::string_view> parts = absl::StrSplit(host, ':');
    int own = port;
    if (parts.size() > 2 || parts[0].empty() || absl::StrContains(host, ' ') ||
        (parts.size() == 2 && (!absl::SimpleAtoi(parts[1], &own) || own < 1 || own > 65535))) {
      return bad(absl::StrCat("quorum host '", host, "' is not HOST or HOST:PORT"));
    }
    hosts.push_back(absl::StrCat(parts[0], ":", own));
  }
  out.quorum = absl::StrJoin(hosts, ",");
  return out;
}

}  // namespace basalt::hbase
