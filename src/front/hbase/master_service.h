// HBase's MasterService over Basalt's AdminService: table admin (create with splits and family
// settings, describe, list, modify and the column calls, enable, disable, truncate, delete, flush,
// split, move), the table state, namespaces (Basalt's, and hbase), the cluster status (with each
// region's figures), the balancer (run once; its switch read), snapshots (take, list, delete, restore, clone), replication peers and the procedure poll. A method not in its table is refused by name
// (DoNotRetryIOException).
//
// Procedures: Basalt's admin calls finish before they answer, so a procedure is done when its id
// is handed out; getProcedureResult finds it FINISHED. A retry with the nonce of a call already
// done gets that call's procedure, not a second run (Procedures below).
//
// Threads: IsMasterRunning on the loop (it must be answered at once); the rest on the pool.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "proto/hbase/hbase_master.pb.h"
#include "src/front/hbase/hbase_service.h"
#include "src/front/hbase/meta_table.h"
#include "src/front/hbase/replication_sink.h"
#include "src/front/hbase/server_directory.h"
#include "src/services/service.h"

namespace re2 {
class RE2;
}

namespace basalt::hbase {

// A name pattern of HBase's listings (`list 'app.*'`, list_peers): the whole name must match, as
// java.util.regex's matches(). RE2's syntax, which is Java's for what such patterns use (classes,
// repetition, alternation) but has no backreferences or lookaround: those are refused when
// compiled, and no pattern can make a match take more than linear time.
class NamePattern {
 public:
  // InvalidArgument naming `what` and the pattern when RE2 refuses it.
  static absl::StatusOr<std::unique_ptr<NamePattern>> Compile(std::string_view what, const std::string& pattern);
  ~NamePattern();
  bool Matches(std::string_view name) const;
  // A Basalt table name, as HBase's master matches it: by its name as HBase writes it ("q", or
  // "ns:q"), and a table of the default namespace by "default:q" too.
  bool TableMatches(std::string_view table) const;

 private:
  explicit NamePattern(std::unique_ptr<re2::RE2> re);
  std::unique_ptr<re2::RE2> re_;
};

// The procedures admin calls hand out, and the nonces of the calls that made them.
class Procedures {
 public:
  // Runs `run` once per (nonce group, nonce): a call with the nonce of one already done gets that
  // one's procedure without running; a retry that arrives while the first attempt still runs
  // waits for it (as HBase's master: run twice, a create would answer the retry
  // TableExistsException for a table the first attempt made). A first attempt that failed leaves
  // the nonce free, and its error is returned. Nonce 0: no nonce, always run.
  absl::StatusOr<uint64_t> Run(uint64_t nonce_group, uint64_t nonce, const std::string& what,
                               const std::function<absl::Status()>& run);
  // Whether procedure `id` was handed out (and is among the newest kept).
  bool Known(uint64_t id) const;

 private:
  uint64_t Add(const std::string& what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  static constexpr uint64_t kRunning = 0;  // (procedure ids start at 1)
  static constexpr size_t kMax = 10000;    // the newest kept, of procedures and of nonces
  mutable absl::Mutex mu_;
  std::map<uint64_t, std::string> done_ ABSL_GUARDED_BY(mu_);  // id → what it did
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> nonces_ ABSL_GUARDED_BY(mu_);  // → id, or kRunning
  bool settled_ ABSL_GUARDED_BY(mu_) = false;  // a running call finished: waiters look again
};

class MasterService final : public Service {
 public:
  struct Options {
    server::AdminService* admin = nullptr;
    const MetaTable* meta = nullptr;        // a move's region by its encoded name
    ServerDirectory* directory = nullptr;   // the live region servers
    const ThisServer* self = nullptr;       // the active master
    std::string cluster_id;
    int info_port = 0;  // the HTTP port, 0: none
    // What this process's replication sink applied (its ServerLoad's replLoadSink); null: none.
    const SinkFigures* sink = nullptr;
    // Whether the balancer runs on its own (a cluster's master with balancer_period_ms > 0):
    // IsBalancerEnabled's answer and the cluster status's balancer_on.
    bool balancer_on = false;
  };
  // Everything `options` points to must outlive the service.
  explicit MasterService(const Options& options);

  // Under auth: each call as HBase's AccessController asks it, on Basalt's grants as the gRPC
  // port asks them (the table of rules: master_access.cc). Listings are filtered by their
  // handlers (Sees, SeesSnapshot, AdministersNamespace).
  absl::Status Authorize(const Request& r) const override;

  // The table of a "flush-table-proc" procedure (its instance); another procedure is refused by
  // name (ExecProcedure, IsProcedureDone).
  static absl::StatusOr<std::string> FlushProcedureTable(const ProcedureDescription& p);

 private:
  absl::StatusOr<std::string> IsMasterRunning(const Request& r);
  absl::StatusOr<std::string> GetTableNames(const Request& r);
  absl::StatusOr<std::string> GetTableDescriptors(const Request& r);
  absl::StatusOr<std::string> CreateTable(const Request& r);
  absl::StatusOr<std::string> ModifyTable(const Request& r);
  absl::StatusOr<std::string> GetSchemaAlterStatus(const Request& r);
  absl::StatusOr<std::string> AddColumn(const Request& r);
  absl::StatusOr<std::string> ModifyColumn(const Request& r);
  absl::StatusOr<std::string> DeleteColumn(const Request& r);
  absl::StatusOr<std::string> DisableTable(const Request& r);
  absl::StatusOr<std::string> EnableTable(const Request& r);
  absl::StatusOr<std::string> DeleteTable(const Request& r);
  absl::StatusOr<std::string> TruncateTable(const Request& r);
  absl::StatusOr<std::string> GetProcedureResult(const Request& r);
  absl::StatusOr<std::string> GetTableState(const Request& r);
  absl::StatusOr<std::string> ListNamespaces(const Request& r);
  absl::StatusOr<std::string> ListNamespaceDescriptors(const Request& r);
  absl::StatusOr<std::string> GetNamespaceDescriptor(const Request& r);
  // Namespaces (master_namespaces.cc): made, changed, dropped (with their grants) and listed.
  absl::StatusOr<std::string> CreateNamespace(const Request& r);
  absl::StatusOr<std::string> ModifyNamespace(const Request& r);
  absl::StatusOr<std::string> DeleteNamespace(const Request& r);
  absl::StatusOr<std::string> ListTableNamesByNamespace(const Request& r);
  absl::StatusOr<std::string> ListTableDescriptorsByNamespace(const Request& r);
  // The namespaces HBase's clients see: Basalt's (default among them) and hbase, by name.
  absl::StatusOr<std::vector<rpc::NamespaceDescriptor>> Namespaces();
  // OK when namespace `ns` is one of them, else NamespaceNotFoundException.
  absl::Status CheckNamespaceExists(std::string_view ns);
  absl::StatusOr<std::string> FlushTable(const Request& r);
  absl::StatusOr<std::string> ExecProcedure(const Request& r);
  absl::StatusOr<std::string> IsProcedureDone(const Request& r);

  absl::StatusOr<std::string> MoveRegion(const Request& r);
  absl::StatusOr<std::string> SplitRegion(const Request& r);
  absl::StatusOr<std::string> GetClusterStatus(const Request& r);
  absl::StatusOr<std::string> IsBalancerEnabled(const Request& r);
  absl::StatusOr<std::string> Balance(const Request& r);
  // Snapshots (master_snapshots.cc): taken, listed, deleted, restored and cloned.
  absl::StatusOr<std::string> Snapshot(const Request& r);
  absl::StatusOr<std::string> IsSnapshotDone(const Request& r);
  absl::StatusOr<std::string> GetCompletedSnapshots(const Request& r);
  absl::StatusOr<std::string> DeleteSnapshot(const Request& r);
  absl::StatusOr<std::string> RestoreSnapshot(const Request& r);
  // Replication peers (master_peers.cc): added, removed, enabled, disabled, changed and listed.
  absl::StatusOr<std::string> AddReplicationPeer(const Request& r);
  absl::StatusOr<std::string> RemoveReplicationPeer(const Request& r);
  absl::StatusOr<std::string> EnableReplicationPeer(const Request& r);
  absl::StatusOr<std::string> DisableReplicationPeer(const Request& r);
  absl::StatusOr<std::string> UpdateReplicationPeerConfig(const Request& r);
  absl::StatusOr<std::string> GetReplicationPeerConfig(const Request& r);
  absl::StatusOr<std::string> IsReplicationPeerEnabled(const Request& r);
  absl::StatusOr<std::string> ListReplicationPeers(const Request& r);
  template <typename Req, typename Resp>
  absl::StatusOr<std::string> PeerProcedure(const Request& r,
                                            absl::Status (server::AdminService::*op)(const rpc::PeerRequest&,
                                                                                     rpc::AdminResponse*));

  // A procedure's answer (`Response` with its proc_id) for `run`, once per nonce.
  template <typename Response>
  absl::StatusOr<std::string> Procedure(const Request& r, uint64_t nonce_group, uint64_t nonce,
                                        const std::function<absl::Status()>& run);
  // Disable, enable or delete: the table named by `Req`, which must be disabled (`from_disabled`)
  // or enabled, else TableNotDisabledException or TableNotEnabledException; then `op`.
  template <typename Req, typename Resp>
  absl::StatusOr<std::string> ChangeState(const Request& r, bool from_disabled,
                                          absl::Status (server::AdminService::*op)(const rpc::TableRequest&,
                                                                                   rpc::AdminResponse*));
  // Table `table` as it is (its descriptor, transactional and queue flags kept), changed by
  // `change`, then modified so (AdminService::ModifyTable: its regions reopen).
  absl::Status Modify(const std::string& table, const std::function<absl::Status(rpc::TableDescriptor*)>& change);
  // AddColumn (`add`) or ModifyColumn of `family` in `table`.
  absl::Status ChangeFamily(const std::string& table, const rpc::FamilyDescriptor& family, bool add);
  absl::StatusOr<rpc::DescribeTableResponse> Describe(const std::string& table);
  // The tables the port shows r's caller (ShownOnThePort, Sees), of namespace `ns` only unless it
  // is empty, and whose names `pattern` matches unless it is null (NamePattern::TableMatches);
  // and their names as HBase names them, added to `out`.
  absl::StatusOr<std::vector<rpc::TableDescriptor>> ShownTables(const Request& r, std::string_view ns,
                                                                const NamePattern* pattern = nullptr);
  absl::Status ShownTableNames(const Request& r, std::string_view ns, const NamePattern* pattern,
                               google::protobuf::RepeatedPtrField<TableName>* out);
  // Adds to `cs`, of the tables r's caller may see, in one pass over their regions: each
  // region's figures (RegionLoad) under its live server when `loads`, each table's regions by
  // state (TABLE_TO_REGIONS_COUNT) when `counts`.
  absl::Status AddRegionFigures(const Request& r, bool loads, bool counts, ClusterStatus* cs);

  // Under auth (master_access.cc): the owner, table and target of a snapshot call decide. It
  // reads the snapshot's manifest: the handlers ask it, on the pool. OK without auth.
  absl::Status AuthorizeSnapshotCall(const Request& r) const;
  // What a listing shows r.caller (all of it without auth): the tables they hold anything on,
  // their own snapshots (all, to global A), the namespaces they hold A on.
  static bool Sees(const Request& r, std::string_view table);
  static bool SeesSnapshot(const Request& r, std::string_view owner);
  static bool AdministersNamespace(const Request& r, const std::string& ns);
  // Whom a snapshot taken by r is owned by: its caller ("" without auth).
  static std::string OwnerOf(const Request& r);

  const Options options_;
  Procedures procedures_;
};

template <typename Response>
absl::StatusOr<std::string> MasterService::Procedure(const Request& r, uint64_t nonce_group, uint64_t nonce,
                                                     const std::function<absl::Status()>& run) {
  absl::StatusOr<uint64_t> id = procedures_.Run(nonce_group, nonce, r.method(), run);
  if (!id.ok()) return id.status();
  Response resp;
  resp.set_proc_id(*id);
  return EncodeResponse(r.id(), resp);
}

}  // namespace basalt::hbase
