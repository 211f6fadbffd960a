#include "src/front/hbase/zk_records.h"

#include "absl/strings/str_cat.h"
#include "common/coding.h"

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

}  // namespace basalt::hbase
