// An in-memory basalt::Connection for the shell's tests: one process-local "server" with tables,
// cells, versions and time ranges, enough to check what the shell sends and prints. It records
// the last request of each kind so tests can check how arguments were translated. Not
// thread-safe; not HBase's full delete semantics (markers are applied at once).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "basalt/client.h"

namespace basalt::shell {

struct FakeServer {
  struct TableData {
    TableInfo info;
    std::vector<std::string> split_keys;  // as created, sorted
    std::map<std::string, std::vector<KeyValue>> rows;  // cells in client order
  };
  std::map<std::string, TableData> tables;
  int64_t clock = 1700000000000;  // the next server timestamp
  absl::Status fail_next;         // returned by the next call, then cleared
  // The verbs transport as Status reports it; "off..." means not served (SetVerbs then fails
  // with FailedPrecondition, as the real server does).
  std::string verbs = "off: no RDMA device (fake)";
  bool verbs_enabled = false;
  uint64_t verbs_endpoints = 0, verbs_requests = 0, verbs_connects_accepted = 0, verbs_connects_rejected = 0,
           verbs_malformed_frames = 0, verbs_sessions = 0;

  std::optional<Get> last_get;
  std::optional<Scan> last_scan;
  std::optional<RowMutationsBase> last_mutation;
  std::vector<std::string> admin_calls;  // "create t1", "disable t1", "set_verbs off", ...
  std::vector<Quota> quotas;  // set_quota's, in order
  std::map<std::string, SnapshotDescription> snapshots;  // by name
  std::map<std::string, PeerStatus> peers;               // by id
  std::map<std::string, TableData> snapshot_data;        // by snapshot name: the table then
};

std::unique_ptr<Connection> NewFakeConnection(FakeServer* server, std::string address = "fake:1");

}  // namespace basalt::shell
