// The replication commands (HBase shell's "replication" group): add_peer, remove_peer,
// enable_peer, disable_peer, list_peers, enable_table_replication, disable_table_replication,
// and status 'replication'. docs/DESIGN.md §15 says what a peer is and what is shipped.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "src/tools/shell/command_args.h"

namespace basalt::shell::internal {
namespace {

constexpr char kScope[] = "REPLICATION_SCOPE";

// HBase's TABLE_CFS => {"t1" => [], "t2" => ["cf1", "cf2"]} (a family list of nil: all).
absl::Status TableCfs(const Ctx& c, const Value& v, ReplicationPeer* peer) {
  if (!v.is_hash()) return ArgError(c, v, "TABLE_CFS as a hash of table => [families]");
  for (const Value::Entry& e : v.entries) {
    BASALT_ASSIGN_OR_RETURN(std::string table, Bytes(c, e.first, "a table name", false));
    std::vector<std::string>& families = peer->table_cfs[table];
    if (e.second.kind == Value::Kind::kNil) continue;
    if (!e.second.is_array()) return ArgError(c, e.second, "a list of families, e.g. [\"cf1\"]");
    for (const Value& f : e.second.items) {
      BASALT_ASSIGN_OR_RETURN(std::string family, Bytes(c, f, "a family name", false));
      families.push_back(std::move(family));
    }
  }
  return absl::OkStatus();
}

std::string TableCfsText(const ReplicationPeer& p) {
  std::vector<std::string> parts;
  for (const auto& [table, families] : p.table_cfs) {
    parts.push_back(families.empty() ? table : absl::StrCat(table, ":", absl::StrJoin(families, ",")));
  }
  return absl::StrJoin(parts, ";");
}

// Every family of `table` given REPLICATION_SCOPE => `scope`.
absl::Status SetScope(Ctx& c, const std::string& table, const char* scope) {
  std::unique_ptr<Admin> admin = c.conn->GetAdmin();
  absl::StatusOr<TableInfo> info = admin->DescribeTable(table);
  BASALT_RETURN_IF_ERROR(Wrap(c, table, info.status()));
  for (FamilySettings& f : info->families) {
    bool set = false;
    for (auto& [key, value] : f.metadata) {
      if (key == kScope) {
        value = scope;
        set = true;
      }
    }
    if (!set) f.metadata.emplace_back(kScope, scope);
  }
  return Wrap(c, table, admin->ModifyTable(*info));
}

}  // namespace

// add_peer 'id', CLUSTER_KEY => "zk:2181:/hbase" [, STATE => "DISABLED"] [, TABLE_CFS => {...}]
// | add_peer 'id', "zk:2181:/hbase" (HBase 1's form)
absl::StatusOr<Reply> CmdAddPeer(Ctx& c) {
  ReplicationPeer peer;
  BASALT_ASSIGN_OR_RETURN(peer.id, Bytes(c, c.cmd.args[0], "a peer id"));
  if (c.cmd.args.size() < 2) return ArgError(c, c.cmd.args[0], "a peer id followed by CLUSTER_KEY => '...'");
  const Value& second = c.cmd.args[1];
  if (second.is_string()) {
    peer.cluster_key = second.str;
  } else if (second.is_hash()) {
    BASALT_RETURN_IF_ERROR(CheckKeys(c, second, {"CLUSTER_KEY", "STATE", "TABLE_CFS"}));
    const Value* key = second.Find("CLUSTER_KEY");
    if (key == nullptr) return ArgError(c, second, "CLUSTER_KEY => 'zk1,zk2:2181:/hbase'");
    BASALT_ASSIGN_OR_RETURN(peer.cluster_key, Bytes(c, *key, "a cluster key", false));
    if (const Value* state = second.Find("STATE")) {
      BASALT_ASSIGN_OR_RETURN(std::string s, Enum(c, *state, "STATE", {"ENABLED", "DISABLED"}));
      peer.enabled = s == "ENABLED";
    }
    if (const Value* cfs = second.Find("TABLE_CFS")) BASALT_RETURN_IF_ERROR(TableCfs(c, *cfs, &peer));
  } else {
    return ArgError(c, second, "CLUSTER_KEY => 'zk1,zk2:2181:/hbase'");
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, "", c.conn->GetAdmin()->AddPeer(peer)));
  return Done(c, "");
}

// remove_peer 'id' | enable_peer 'id' | disable_peer 'id'
absl::StatusOr<Reply> CmdPeerSwitch(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string id, Bytes(c, c.cmd.args[0], "a peer id"));
  std::unique_ptr<Admin> admin = c.conn->GetAdmin();
  absl::Status s = c.cmd.name == "remove_peer"   ? admin->RemovePeer(id)
                   : c.cmd.name == "enable_peer" ? admin->EnablePeer(id)
                                                 : admin->DisablePeer(id);
  BASALT_RETURN_IF_ERROR(Wrap(c, "", s));
  return Done(c, "");
}

// list_peers: HBase's columns that mean something here.
absl::StatusOr<Reply> CmdListPeers(Ctx& c) {
  auto peers = c.conn->GetAdmin()->ListPeers();
  BASALT_RETURN_IF_ERROR(Wrap(c, "", peers.status()));
  Reply r = Done(c, "");
  r.kind = Reply::Kind::kText;
  r.text = " PEER_ID CLUSTER_KEY STATE TABLE_CFS\n";
  for (const PeerStatus& p : *peers) {
    absl::StrAppend(&r.text, " ", p.peer.id, " ", p.peer.cluster_key, " ", p.peer.enabled ? "ENABLED" : "DISABLED", " ",
                    TableCfsText(p.peer), "\n");
  }
  absl::StrAppend(&r.text, peers->size(), " row(s)\n");
  return r;
}

// status 'replication': each peer's shipping, as HBase's SOURCE lines.
absl::StatusOr<Reply> CmdReplicationStatus(Ctx& c) {
  auto peers = c.conn->GetAdmin()->ListPeers();
  BASALT_RETURN_IF_ERROR(Wrap(c, "", peers.status()));
  Reply r = Done(c, "");
  r.kind = Reply::Kind::kText;
  absl::StrAppend(&r.text, "version basalt\n", peers->size(), " peer(s)\n");
  for (const PeerStatus& p : *peers) {
    absl::StrAppend(&r.text, "    SOURCE: PeerID=", p.peer.id, ", State=", p.state, ", AgeOfLastShippedOp=", p.age_ms,
                    ", LagBytes=", p.lag_bytes, ", ShippedEntries=", p.entries, ", ShippedCells=", p.cells,
                    ", ShippedBatches=", p.batches, ", FailedCalls=", p.failed_calls, ", Position=", p.segment, ":",
                    p.offset, p.last_error.empty() ? "" : absl::StrCat(", LastError=", p.last_error), "\n");
  }
  return r;
}

// enable_table_replication 't1' | disable_table_replication 't1': REPLICATION_SCOPE 1 or 0 on
// every family of the table.
absl::StatusOr<Reply> CmdTableReplication(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  BASALT_RETURN_IF_ERROR(SetScope(c, table, c.cmd.name == "enable_table_replication" ? "1" : "0"));
  return Done(c, table);
}

}  // namespace basalt::shell::internal
