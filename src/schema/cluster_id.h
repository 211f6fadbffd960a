// A cluster's id (HBase's hbase.id, which HBase keeps in its root directory and copies to
// ZooKeeper's `hbaseid`): a random UUID made once, at the first start, and kept in
// `<data_dir>/CLUSTER_ID` (on the shared storage for a cluster, so its masters and region servers
// read the same one). HBase's replication reads a peer's id as a UUID (UUID.fromString) and tags
// every edit with its source cluster's, so it must be one, and two clusters must never share it
// (a loop of edits would go unnoticed): it is never derived from a name or an address.
//
// The file: the UUID's 36 characters and a newline. Whoever starts first makes it (a master or
// a region server): written under a name of its own, then linked as CLUSTER_ID, which fails when
// another got there first; the loser reads the winner's. Thread-compatible functions.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/env.h"

namespace basalt::server {

inline constexpr char kClusterIdFileName[] = "CLUSTER_ID";

// Whether `s` is a UUID as Java's UUID.fromString writes it: 8-4-4-4-12 lowercase hex digits.
bool IsUuid(std::string_view s);
// A random (version 4) UUID.
std::string NewUuid();
// The id in `data_dir`, made there when there is none. DataLoss naming the file when it holds
// something else than a UUID.
absl::StatusOr<std::string> LoadOrCreateClusterId(Env* env, const std::string& data_dir);

}  // namespace basalt::server
