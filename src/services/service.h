// The semantics of Basalt's data and admin services (proto/basalt.proto), apart from gRPC:
// each method validates its request, maps it to the engine (storage/region.h) and fills the
// response, returning an absl::Status whose code is the gRPC code to send. The gRPC front end
// (grpc_server.h) only moves messages; tests can call these directly.
//
// Thread-safety: every method may be called from any number of threads. A call holds a
// shared_ptr to its table for its whole duration (a scan: for the life of its cursor), so
// admin operations racing it are safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "proto/basalt.pb.h"
#include "src/security/access_control.h"
#include "src/base/config.h"
#include "src/services/filters.h"
#include "src/services/proto_convert.h"
#include "src/regions/region_host.h"
#include "src/services/admin_parts.h"
#include "src/services/region_server_admin.h"
#include "src/regions/table_source.h"
#include "src/catalog/catalog.h"
#include "src/transactions/transactions.h"
#include "transport/verbs/frame.h"

namespace basalt::server {

// A streaming scan in progress: the table, its scanner, and the batching settings.
class ScanCursor {
 public:
  ~ScanCursor();

  // Calls `cancel` (from another thread) if the table is disabled while the cursor lives: the
  // scan's stream may be waiting on a client that stopped reading, and holds the table.
  void CancelOnClose(std::function<void()> cancel);

  // Fills *out with the next rows, up to rows_per_message rows or about bytes_per_message
  // bytes (at least one row). Sets *done when the scan has no more rows (*out may then be
  // empty), and the rows each page filter let through (rpc::ScanResponse::page_rows). DataLoss
  // on a corrupt block; the table's closed error if it was disabled. A scan of one region (a
  // cluster's client names it) whose region is no longer served here ends with
  // NotServingRegion: the client resumes after the last row it got, where the row is now.
  absl::Status Next(rpc::ScanResponse* out, bool* done);
  // The same, stopping once `deadline` passes while the scan skips rows its filter refuses:
  // *time_up is then set (*out holds the rows found so far, maybe none) and the next call
  // resumes there (HBase's scan heartbeat, so a selective scan never outlasts its client's
  // timeout).
  absl::Status Next(rpc::ScanResponse* out, bool* done, absl::Time deadline, bool* time_up);

 private:
  friend class DataService;
  ScanCursor() = default;
  // OK while the scan's named region is served here. Once it split, merged, moved or was
  // unassigned, its files may go while the scan still reads them (the master's janitor, a
  // compaction on its new server, on the storage they share), so the scan ends instead, as an
  // HBase region server's open scanners do when their region closes.
  absl::Status CheckRegionServed();
  // Declared before scanner_: the scanner must be destroyed before the region it reads.
  std::shared_ptr<Table> table_;
  std::unique_ptr<RegionScanner> scanner_;
  uint32_t rows_per_message_ = 100;
  uint64_t bytes_per_message_ = 1 << 20;
  RowResult row_;
  std::shared_ptr<RequestFilter> filter_;  // the scan's, or null
  uint64_t close_hook_ = 0;
  // A scan of one region: its encoded name, where to look whether it is still served, and the
  // newest table it was last seen in (the cursor's own once a move or split superseded that).
  std::string region_;
  const TableSource* tables_ = nullptr;
  std::weak_ptr<Table> served_in_;
};

class DataService {
 public:
  // `tables`: what this process serves (table_source.h). `transactions`: the transaction
  // service this process runs (a standalone server's, a master's), or null.
  DataService(const TableSource* tables, const ServerConfig& config, TransactionManager* transactions = nullptr)
      : tables_(tables), config_(config), transactions_(transactions) {}

  absl::Status Get(const rpc::GetRequest& req, rpc::GetResponse* resp);
  // Get's row as the engine returns it, for a caller that encodes the reply itself (the verbs
  // frame, without protobuf): *row stays valid until this thread's next Get or GetRow.
  absl::Status GetRow(const rpc::GetRequest& req, const RowResult** row);
  // The same for a Get read in place from a verbs frame (no GetRequest built on the way): the
  // same checks and errors, the same visibility for a transactional table.
  absl::Status GetRow(const verbs::GetRequestView& req, const RowResult** row);
  absl::Status Mutate(const rpc::MutateRequest& req, rpc::MutateResponse* resp);
  // Per-row results in resp; the returned status fails only the whole call (bad table,
  // durability).
  absl::Status BatchMutate(const rpc::BatchMutateRequest& req, rpc::BatchMutateResponse* resp);
  absl::Status Increment(const rpc::IncrementRequest& req, rpc::IncrementResponse* resp);
  absl::Status Append(const rpc::AppendRequest& req, rpc::AppendResponse* resp);
  absl::Status CheckAndMutate(const rpc::CheckAndMutateRequest& req, rpc::CheckAndMutateResponse* resp);
  absl::StatusOr<std::unique_ptr<ScanCursor>> OpenScan(const rpc::ScanRequest& req);
  // The transaction service (transactions.h); FailedPrecondition where this process runs none.
  // `caller`: who asks; a transaction belongs to the user who started it (TxCaller).
  absl::Status StartTransaction(const TxCaller& caller, const rpc::StartTransactionRequest& req,
                                rpc::StartTransactionResponse* resp);
  absl::Status CommitTransaction(const TxCaller& caller, const rpc::CommitTransactionRequest& req,
                                 rpc::CommitTransactionResponse* resp);
  absl::Status AbortTransaction(const TxCaller& caller, const rpc::TransactionRequest& req,
                                rpc::TransactionResponse* resp);
  absl::Status InvalidateTransaction(const TxCaller& caller, const rpc::TransactionRequest& req,
                                     rpc::TransactionResponse* resp);
  // The transaction service's answer to a region server (TransactionManager::CheckWriter).
  absl::Status CheckTransactionWriter(const rpc::TransactionWriterRequest& req, rpc::TransactionResponse* resp);
  // Whether `caller` may write with `write_pointer` (TransactionManager::CheckWriter): asked of
  // this process's transaction service, or of a cluster's (SetRemoteWriterCheck). With access
  // control on, every transactional write is checked so: the pointer is the client's word.
  absl::Status CheckWriter(const TxCaller& caller, int64_t write_pointer) const;
  // A cluster's region server: how CheckWriter asks the active master, whose transaction
  // service the cluster's is (the transaction calls are refused here as the master's).
  void SetRemoteWriterCheck(std::function<absl::Status(const TxCaller&, int64_t)> check) {
    remote_writer_check_ = std::move(check);
  }

 private:
  // `region`: the encoded name the call named, if any (on a cluster's region server, a table with
  // no region here is then refused as not serving that region).
  absl::StatusOr<std::shared_ptr<Table>> FindTable(const std::string& name, const std::string& region = "") const;
  // The same for a write: PermissionDenied for basalt:meta.
  // `transaction`: the write's (0: none); a transactional table takes only those, and others none.
  absl::StatusOr<std::shared_ptr<Table>> FindWritableTable(const std::string& name, const std::string& region = "",
                                                           int64_t transaction = 0) const;
  // A read's spec; a transactional table's gets the visibility filter of its snapshot
  // (tx_filter.h). `request_filter`, if given, gets the request's own filter.
  absl::StatusOr<ReadSpec> ReadSpecOf(const Table& t, const rpc::ReadOptions& r, bool reversed,
                                      std::shared_ptr<RequestFilter>* request_filter = nullptr) const;
  // The visibility filter of a transactional table's read, wrapped around spec->filter: the
  // snapshot's (`tx`), or what has committed by now (null). A snapshot on a table that is not
  // transactional is refused.
  absl::Status AddVisibility(const Table& t, const rpc::TransactionSnapshot* tx, ReadSpec* spec) const;
  // The Get of `row` (its region: `named_region`'s, or the one holding it) into this thread's
  // reused row.
  absl::Status GetInto(const Table& t, std::string_view row, const std::string& named_region, const ReadSpec& spec,
                       const RowResult** out) const;
  absl::StatusOr<TransactionManager*> Transactions() const;
  absl::StatusOr<Durability> DurabilityOf(int d) const;

  const TableSource* tables_;
  const ServerConfig config_;
  TransactionManager* const transactions_;
  std::function<absl::Status(const TxCaller&, int64_t)> remote_writer_check_;  // set before serving
};

// The verbs transport as the services see it (main.cc fills it in; empty functions: not served).
// A fast path's controls (the verbs transport's, and the TCP path's, src/front/tcp_front.h).
struct VerbsControl {
  std::string state = "off";  // "off: <why>" when verbs is not served
  // A session issued to `caller` (its endpoints' requests are authorised as theirs).
  std::function<absl::StatusOr<rpc::VerbsSessionResponse>(std::shared_ptr<const Identity> caller)> open_session;
  std::function<void(bool enabled)> set_enabled;
  std::function<void(rpc::StatusResponse*)> fill_status;  // the verbs_* counters
};

// What Status reports besides the tables.
struct ServerCounters {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::atomic<uint64_t> requests{0};
  // gRPC calls admitted or being refused and not yet over (grpc_calls.h: Admit, Release); a
  // call past max_concurrent_calls is refused while this is at the limit.
  std::atomic<int> calls_in_flight{0};
  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<uint64_t> connections_refused{0};  // over the cap, or out of descriptors
  BlockCache* block_cache = nullptr;
  std::atomic<const VerbsControl*> verbs{nullptr};  // set once verbs is started (or not)
  std::atomic<const VerbsControl*> tcp{nullptr};    // ... and the TCP path
  std::string http_address;  // the HTTP port's HOST:PORT (empty: none); set before serving
};

// The Admin service of a process: what it reports comes from the tables it serves, and each
// other call goes to the part that makes it (admin_parts.h): table changes to its catalogue, moves
// and the balancer to a cluster's master, a master's calls to a region server's RegionHost. A part
// the process does not have is the NotServedHere refusal; the process chooses its parts where it
// is assembled (ForStandalone, ForMaster, ForRegionServer), and the service never asks which kind
// of process it is in.
class AdminService {
 public:
  struct Parts {
    TableSource* tables = nullptr;               // what it reports
    TableChanges* changes = nullptr;             // create, disable, enable, alter, drop, split, ...
    ClusterAdmin* cluster = nullptr;             // move, balancer, unassign and assign, servers
    RegionServerCalls* region_server = nullptr;  // open, close, a region's figures, hosted regions
    ReplicationPeers* peers = nullptr;           // add_peer, remove_peer, enable, disable, list
    std::string mode;                            // what Status says the process is
    std::vector<std::shared_ptr<void>> kept;     // parts the service keeps alive
  };
  // Every part must be given, and outlive the service.
  AdminService(Parts parts, const ServerCounters* counters);
  // A standalone server: `catalog` is what it keeps and serves, `peers` where its log is shipped
  // (null: the peers' calls refused); a cluster's calls are refused.
  static std::unique_ptr<AdminService> ForStandalone(Catalog* catalog, const ServerCounters* counters,
                                                     ReplicationPeers* peers = nullptr);
  // A cluster's active master: its catalogue, `master` for the cluster's calls, and the peers it
  // keeps.
  static std::unique_ptr<AdminService> ForMaster(Catalog* catalog, ClusterAdmin* master,
                                                 const ServerCounters* counters, ReplicationPeers* peers = nullptr);
  // A cluster's region server: its regions (table changes are the master's), and the peers it
  // follows and ships its log to.
  static std::unique_ptr<AdminService> ForRegionServer(RegionHost* host, const ServerCounters* counters,
                                                       ReplicationPeers* peers = nullptr);
  ~AdminService();

  absl::Status CreateTable(const rpc::CreateTableRequest& req, rpc::CreateTableResponse* resp);
  absl::Status DescribeTable(const rpc::TableRequest& req, rpc::DescribeTableResponse* resp);
  absl::Status ListTables(const rpc::ListTablesRequest& req, rpc::ListTablesResponse* resp);
  // Namespaces (TableChanges: a catalogue's). Describe lists the namespace's tables too.
  absl::Status CreateNamespace(const rpc::NamespaceRequest& req, rpc::AdminResponse* resp);
  absl::Status ModifyNamespace(const rpc::NamespaceRequest& req, rpc::AdminResponse* resp);
  // Only an empty one; then the namespace cleanup runs (set_namespace_cleanup).
  absl::Status DropNamespace(const rpc::NamespaceNameRequest& req, rpc::AdminResponse* resp);
  // What runs after each namespace is dropped, whichever port asked (the server's grants and
  // quotas on it: ForgetNamespace, src/security/authorize.h). Set before the service serves.
  void set_namespace_cleanup(std::function<absl::Status(const std::string& ns)> cleanup) {
    namespace_cleanup_ = std::move(cleanup);
  }
  absl::Status DescribeNamespace(const rpc::NamespaceNameRequest& req, rpc::DescribeNamespaceResponse* resp);
  absl::Status ListNamespaces(const rpc::ListNamespacesRequest& req, rpc::ListNamespacesResponse* resp);
  absl::Status DisableTable(const rpc::TableRequest& req, rpc::AdminResponse* resp);
  absl::Status EnableTable(const rpc::TableRequest& req, rpc::AdminResponse* resp);
  absl::Status ModifyTable(const rpc::ModifyTableRequest& req, rpc::AdminResponse* resp);
  // Drops a disabled table; then the table cleanup runs (set_table_cleanup).
  absl::Status DropTable(const rpc::TableRequest& req, rpc::AdminResponse* resp);
  // Drops a disabled table and makes it again with its descriptor, enabled: no cleanup, so its
  // grants and quotas stay (HBase's truncate keeps them).
  absl::Status TruncateTable(const rpc::TruncateTableRequest& req, rpc::AdminResponse* resp);
  // What runs after each table is dropped, as the namespace cleanup (ForgetTable).
  void set_table_cleanup(std::function<absl::Status(const std::string& table)> cleanup) {
    table_cleanup_ = std::move(cleanup);
  }
  absl::Status Flush(const rpc::TableRequest& req, rpc::AdminResponse* resp);
  absl::Status MajorCompact(const rpc::TableRequest& req, rpc::AdminResponse* resp);
  absl::Status AssignTable(const rpc::TableRequest& req, rpc::AdminResponse* resp);
  absl::Status ListRegions(const rpc::TableRequest& req, rpc::ListRegionsResponse* resp);
  absl::Status Split(const rpc::SplitRequest& req, rpc::AdminResponse* resp);
  absl::Status Merge(const rpc::MergeRequest& req, rpc::AdminResponse* resp);
  absl::Status Status(const rpc::StatusRequest& req, rpc::StatusResponse* resp);
  // An RDMA session for a client, issued to `caller`; FAILED_PRECONDITION when verbs is not served.
  absl::Status OpenVerbsSession(const Identity& caller, const rpc::VerbsSessionRequest& req,
                                rpc::VerbsSessionResponse* resp);
  absl::Status SetVerbs(const rpc::SetVerbsRequest& req, rpc::AdminResponse* resp);
  // Snapshots (TableChanges: a catalogue's). ListSnapshots with a table lists its snapshots only.
  absl::Status Snapshot(const rpc::SnapshotRequest& req, rpc::SnapshotResponse* resp);
  absl::Status ListSnapshots(const rpc::ListSnapshotsRequest& req, rpc::ListSnapshotsResponse* resp);
  absl::Status DeleteSnapshot(const rpc::DeleteSnapshotRequest& req, rpc::AdminResponse* resp);
  absl::Status CloneSnapshot(const rpc::CloneSnapshotRequest& req, rpc::AdminResponse* resp);
  absl::Status RestoreSnapshot(const rpc::RestoreSnapshotRequest& req, rpc::AdminResponse* resp);
  // The snapshot's owner and table, for the access checks (authorize.h): NotFound.
  absl::StatusOr<SnapshotInfo> ReadSnapshot(std::string_view name) const { return parts_.changes->ReadSnapshot(name); }
  // Replication peers (ReplicationPeers).
  absl::Status AddPeer(const rpc::AddPeerRequest& req, rpc::AdminResponse* resp);
  absl::Status RemovePeer(const rpc::PeerRequest& req, rpc::AdminResponse* resp);
  absl::Status UpdatePeer(const rpc::AddPeerRequest& req, rpc::AdminResponse* resp);
  absl::Status EnablePeer(const rpc::PeerRequest& req, rpc::AdminResponse* resp);
  absl::Status DisablePeer(const rpc::PeerRequest& req, rpc::AdminResponse* resp);
  absl::Status ListPeers(const rpc::ListPeersRequest& req, rpc::ListPeersResponse* resp);
  absl::Status GenerateConsistencyToken(const rpc::ConsistencyTokenRequest& req, rpc::ConsistencyTokenResponse* resp);
  absl::Status CheckConsistency(const rpc::CheckConsistencyRequest& req, rpc::CheckConsistencyResponse* resp);
  // A cluster's active master's (ClusterAdmin).
  absl::Status Move(const rpc::MoveRequest& req, rpc::AdminResponse* resp);
  absl::Status Balance(const rpc::BalanceRequest& req, rpc::BalanceResponse* resp);
  absl::Status Unassign(const rpc::RegionRequest& req, rpc::AdminResponse* resp);
  absl::Status AssignRegion(const rpc::RegionRequest& req, rpc::AdminResponse* resp);
  // A cluster's region server's (RegionServerCalls).
  absl::Status OpenRegion(const rpc::OpenRegionRequest& req, rpc::OpenRegionResponse* resp);
  absl::Status CloseRegion(const rpc::CloseRegionRequest& req, rpc::AdminResponse* resp);
  absl::Status RegionOperation(const rpc::RegionOpRequest& req, rpc::RegionOpResponse* resp);
  absl::Status HostedRegions(const rpc::HostedRegionsRequest& req, rpc::HostedRegionsResponse* resp);

 private:
  class TableNameLocks;
  const Parts parts_;
  // Held on a table's name for the whole of a call that makes, drops or remakes it (create,
  // clone, restore, drop, truncate): such calls on one name run one after the other, as HBase's
  // master runs a table's procedures. A truncate's name is never free to another create between
  // its drop and its create.
  const std::unique_ptr<TableNameLocks> name_locks_;
  std::function<absl::Status(const std::string& ns)> namespace_cleanup_;
  std::function<absl::Status(const std::string& table)> table_cleanup_;
  const ServerCounters* counters_;
};

}  // namespace basalt::server
