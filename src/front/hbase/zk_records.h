// The records HBase 2.x clients read in ZooKeeper to find a cluster (its default
// ZKConnectionRegistry), under the cluster's parent node:
//
//   <parent>/hbaseid              the cluster id            ClusterId
//   <parent>/master               the active master         Master
//   <parent>/meta-region-server   where hbase:meta is       MetaRegionServer
//
// Each is 0xff | u32 BE length | that many bytes naming the writer | "PBUF" | the message. The
// Java client skips the first part when there is one; other clients (gohbase) need it, so it is
// always written.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "google/protobuf/message_lite.h"
#include "proto/hbase/hbase_cluster.pb.h"

namespace basalt::hbase {

inline constexpr char kClusterIdNode[] = "hbaseid";
inline constexpr char kMasterNode[] = "master";
inline constexpr char kMetaRegionServerNode[] = "meta-region-server";
inline constexpr char kRegionServersNode[] = "rs";

// A server's name as HBase writes it in text (hbase:meta's info:sn, the rs/ nodes):
// "host,port,startcode".
std::string ServerNodeName(const ServerName& server);

// A record of `message`, naming `writer` (a process, e.g. "basalt-master:<pid>") in its prefix.
std::string ZkRecord(std::string_view writer, const google::protobuf::MessageLite& message);

// The message of a record, with or without the prefix. InvalidArgument when the bytes are not a
// record of this kind (no "PBUF", a prefix that runs past them, a message that does not parse).
absl::Status ParseZkRecord(std::string_view bytes, google::protobuf::MessageLite* message);

// The records' messages.
ServerName ServerNameOf(std::string_view host, int port, uint64_t start_code);
Master MasterRecordOf(const ServerName& master, int info_port);
MetaRegionServer MetaRecordOf(const ServerName& server);
ClusterId ClusterIdOf(std::string_view id);

// A cluster key's parts (how one cluster names another, e.g. a replication peer): the ZooKeeper
// quorum as HOST:PORT,... and the parent node its records are under.
struct ClusterKey {
  std::string quorum;
  std::string parent;
};
// HBase's cluster key "<host>[,<host>...]:<port>:<parent>" (as its ZKConfig: a host may name its
// own port); InvalidArgument saying what is wrong.
absl::StatusOr<ClusterKey> ParseClusterKey(std::string_view key);

}  // namespace basalt::hbase
