// What a Connection's tables, scanners, mutators and admin share: the options, the network
// selector, the retry policy, a timer thread for async retries and the count of async calls in
// flight (the Connection's destructor waits for it). Thread-safe.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "basalt/client.h"
#include "client/region_cache.h"
#include "client/retry.h"
#include "client/wire.h"
#include "common/zookeeper.h"
#include "transport/grpc/grpc_settings.h"
#include "transport/selector.h"

namespace basalt::client_internal {

// Runs functions after a delay on one thread (started by the first task). The destructor
// drops tasks not yet run: owners finish their async work first.
class Scheduler {
 public:
  Scheduler() = default;
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  void After(absl::Duration delay, std::function<void()> fn);

 private:
  void Loop();

  absl::Mutex mu_;
  std::multimap<absl::Time, std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

class Core {
 public:
  // `server`: where calls go first (the address, or what ZooKeeper named); `zk`: the cluster's
  // ZooKeeper when the connection was opened with a quorum (null: a standalone server).
  Core(const ConnectionOptions& options, std::unique_ptr<NetworkSelector> selector, std::string server,
       std::unique_ptr<ZooKeeper> zk);
  // Waits for the async calls in flight.
  ~Core();

  const ConnectionOptions& options() const { return options_; }
  const RetryPolicy& policy() const { return policy_; }
  NetworkSelector* selector() const { return selector_.get(); }
  // The server calls go to (in a cluster, the one ZooKeeper names as holding meta).
  const std::string& server() const { return *server_.load(std::memory_order_acquire); }
  Scheduler& scheduler() { return scheduler_; }
  absl::Time Deadline() const { return absl::Now() + policy_.timeout; }

  // The server's gRPC path.
  absl::StatusOr<GrpcPath*> Grpc() { return selector_->Grpc(server()); }
  absl::StatusOr<GrpcPath*> Grpc(const std::string& to) { return selector_->Grpc(to); }
  // Opened through ZooKeeper: a cluster, whose regions each live on a server of their own.
  bool cluster() const { return cluster_; }
  // A new nonce for one Increment, Append or CheckAndMutate (every attempt of it carries the
  // same), when ConnectionOptions::nonces is set (else none); and whether such a call is retried.
  void SetNonce(rpc::Nonce* out);
  bool RetryNonIdempotent() const { return options_.nonces || options_.retry_non_idempotent; }

  // Async accounting: every async operation calls BeginAsync before it starts and EndAsync after
  // its callback returned.
  void BeginAsync();
  void EndAsync();
  void WaitAsyncIdle();

  // One async attempt: starts the call and returns OK (done will run once), or returns the
  // error that kept it from starting (done will not run).
  using AsyncAttempt = std::function<absl::Status(absl::Time deadline, PathCallback done)>;
  // Runs attempts with the retry policy until success or the end of the budget, then finish
  // with the final status (annotated with the attempts, without context), exactly once, on a
  // client thread. A failed attempt's refusal forgets its region (NoteRefusal). Brackets itself
  // with BeginAsync / EndAsync.
  void RunAsync(bool retriable_op, AsyncAttempt attempt, std::function<void(absl::Status)> finish);

  // RetryLoop with the connection's policy and a deadline from now; a failed attempt's refusal
  // forgets its region (NoteRefusal), so the next attempt locates its row afresh.
  // `bounded`: each attempt also ends at attempt_timeout (data calls on a cluster), and an
  // attempt that ran out of it while the call's deadline lasts is retried as Unavailable.
  absl::Status Retry(bool retriable_op, const std::function<absl::Status(absl::Time deadline)>& attempt,
                     bool bounded = true);
  // The deadline of an attempt starting now within a call's `deadline` (bounded: see Retry).
  absl::Time AttemptDeadline(absl::Time deadline) const;
  // An attempt's status, as Retry sees it: DeadlineExceeded at `attempt_deadline` before the
  // call's `deadline` is Unavailable (the server did not answer in time: try again elsewhere).
  absl::Status AttemptStatus(absl::Status s, absl::Time attempt_deadline, absl::Time deadline) const;

  // A synchronous gRPC unary call with retries: call(stub path, ctx) per attempt.
  absl::Status CallGrpc(bool retriable_op,
                        const std::function<grpc::Status(GrpcPath* path, grpc::ClientContext* ctx)>& call);

  // CallGrpc for a call of one row: before each attempt *region is set to the region holding
  // `row` (Locate). CallGrpc is CallRow without a region.
  absl::Status CallRow(bool retriable_op, const std::string& table, std::string_view row, std::string* region,
                       const std::function<grpc::Status(GrpcPath* path, grpc::ClientContext* ctx)>& call);

  // Region locations (region_cache.h): the encoded name of the region holding `row` of
  // `table`, to name in the call (empty: name none).
  absl::Status Locate(const std::string& table, std::string_view row, absl::Time deadline, std::string* region) {
    return regions_.Locate(table, row, deadline, region);
  }
  // Locate, and where to send the call: in a cluster *to is the server meta names for the region
  // (a region meta names no server for is in transition: refused as not served, so that it is
  // located again after a backoff); else (and for a system table) it is left empty, for
  // Target(). In a cluster, *end_key (optional) gets the region's end (empty: the end of the
  // table).
  absl::Status Route(const std::string& table, std::string_view row, absl::Time deadline, std::string* region,
                     std::string* to, std::string* end_key = nullptr);
  // Route for a reversed scan (RegionCache::LocateBefore): the region holding the rows just
  // below `row` (empty: the last region) and its start key.
  absl::Status RouteBefore(const std::string& table, std::string_view row, absl::Time deadline, std::string* region,
                           std::string* to, std::string* start_key);
  // The server a call Route sent to `to` goes to: `to`, or when empty server() (no copy on a
  // standalone server's path).
  const std::string& Target(const std::string& to) const { return to.empty() ? server() : to; }
  // After a call to a region's server failed: in a cluster, a server that did not answer
  // (UNAVAILABLE, not a refusal) may be dead and its regions placed elsewhere by now, so the
  // region is forgotten and located again.
  void NoteUnanswered(const absl::Status& s, const std::string& region);
  // Forgets the region a status says no longer serves its row (NotServingRegionOf), so the next
  // call of one of its rows locates it afresh.
  void NoteRefusal(const absl::Status& s);
  // After a failed attempt: NoteRefusal, and in a cluster, when the server did not answer
  // (UNAVAILABLE), reads ZooKeeper again for the server that holds meta now, so the next attempt
  // goes there.
  void NoteFailure(const absl::Status& s);
  const RegionCache& region_cache() const { return regions_; }

 private:
  struct AsyncOp;
  static void Attempt(std::shared_ptr<AsyncOp> op);

  const ConnectionOptions options_;
  const RetryPolicy policy_;
  const absl::Duration attempt_timeout_;  // InfiniteDuration: attempts are not bounded
  std::unique_ptr<NetworkSelector> selector_;
  const bool cluster_;
  const uint64_t nonce_group_;  // this connection's (random), HBase's nonce group
  absl::Mutex mu_;
  int64_t async_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  Scheduler scheduler_;  // after selector_: stopped before the channels go
  RegionCache regions_;
  // Every server address calls went to, kept so that server() can hand out a reference without
  // a lock: the current one is server_.
  absl::Mutex servers_mu_;
  std::deque<std::string> servers_ ABSL_GUARDED_BY(servers_mu_);
  std::atomic<const std::string*> server_;
  std::unique_ptr<ZooKeeper> zk_ ABSL_GUARDED_BY(servers_mu_);
};

// Where meta is served, as ZooKeeper names it (<parent>/meta-server, written by that server).
absl::StatusOr<std::string> MetaServerFromZooKeeper(ZooKeeper* zk, const std::string& parent);

std::unique_ptr<Table> NewTable(Core* core, const std::string& name);
std::unique_ptr<Admin> NewAdmin(Core* core);
std::unique_ptr<BufferedMutator> NewBufferedMutator(Core* core, const std::string& table,
                                                    const BufferedMutatorOptions& options);
// Opens a scan's stream and reads its first batch.
absl::StatusOr<std::unique_ptr<ResultScanner>> OpenScanner(Core* core, const std::string& table, const Scan& scan);

// A BatchMutate request is kept to about this size, far below gRPC's 64 MiB message cap: a
// bigger batch goes as several requests (rows are independent anyway).
inline constexpr size_t kMaxBatchRequestBytes = 16 << 20;

// Splits rows into BatchMutate requests, one per durability (more past kMaxBatchRequestBytes),
// remembering each row's index.
struct BatchPart {
  rpc::BatchMutateRequest request;
  std::vector<size_t> indices;
  // Set by LocateBatch for an attempt: where the request goes, and (in a cluster) the rows of
  // regions on other servers, which wait for a later attempt.
  std::string server;
  google::protobuf::RepeatedPtrField<rpc::RowMutations> deferred;
  std::vector<size_t> deferred_indices;
};
// Rows that fail to convert get their error (without context) in (*statuses)[i] and are left out.
std::vector<BatchPart> SplitBatch(const std::string& table, const std::vector<RowMutationsBase>& rows,
                                  std::vector<absl::Status>* statuses);
// A BatchMutate response's row statuses (the server's per-row code and message; a row its
// region refused as not served is a NotServingRegionError).
absl::Status RowStatusToStatus(const rpc::RowStatus& rs);

// Before each attempt of a part: locates its rows, orders them by region (a row's mutations
// keep their order) and sets the request's region runs; none when some row has no region. In a
// cluster the attempt goes to the server of the first row's region (part->server) and the rows
// of other servers' regions are deferred to the next attempt.
absl::Status LocateBatch(Core* core, absl::Time deadline, BatchPart* part);
// After an attempt whose call failed (`s`): the deferred rows go back into the part and, in a
// cluster, an unanswered server's regions are forgotten. Returns s.
absl::Status UnsentBatch(Core* core, BatchPart* part, absl::Status s);
// After an answer to `part`: each row's status goes to (*statuses)[index]. Rows their region
// refused as not served stay in the part (their regions forgotten), as do deferred rows, and
// the return is a refusal, for the retry policy to send them again; otherwise the part is done
// and the return is OK. Internal when the answer does not count the rows.
absl::Status SettleBatch(Core* core, BatchPart* part, const rpc::BatchMutateResponse& resp,
                         std::vector<absl::Status>* statuses);

}  // namespace basalt::client_internal
