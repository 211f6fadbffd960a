// Basalt as a replication source (docs/DESIGN.md §15, "Replication from Basalt"): one shipper
// per peer follows its server's log and sends the edits of the replicated families to the peer's
// sink, an HBase port (a Basalt server's or an HBase region server's) that takes
// AdminService.ReplicateWALEntry (src/front/hbase/replication_source.h makes the calls).
//
// The shipper's place in the log (segment, offset) is what it has shipped: it reads from there
// up to the log's durable end (storage/log_tail.h), in batches of at most max_batch_bytes of
// log, sends each batch and waits for the sink's answer (a sink answers once the edits are
// durable there), then moves on. A batch the sink refused, or that got no answer, is sent again
// after a pause that grows from 100 ms to 10 s: the peer down for an hour costs nothing but the
// log kept for it. Shipping a batch twice is harmless (each cell keeps its timestamp), so the
// place is kept on disk lazily (`<state_dir>/<peer>.position`, written durably at most once a
// second and when the shipper stops); after a crash the shipper resumes from there, sending again
// what it shipped after it. The log keeps the segments from that place on (ServerLog::Hold,
// carried over a restart by ServerLog::Options::holds, from ReadPositions); past the log's bound
// of held segments the hold is dropped and the peer is BROKEN (its state, a metric and the log
// say so), never the server's disk full: the peer must then be copied anew.
//
// In each batch the edits keep the log's order, so a row's edits reach the peer in the order
// they were made. Thread-safety: the figures may be read from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/env.h"
#include "src/front/hbase/replication_source.h"
#include "storage/log_record.h"
#include "storage/server_log.h"

namespace basalt::hbase {
class WireClient;
}

namespace basalt::replication {

// The places the shippers of `state_dir` had reached (peer id -> place), for the holds a server
// log is opened with. A file that does not parse is DataLoss naming it.
absl::StatusOr<std::map<std::string, WalPosition>> ReadPositions(Env* env, const std::string& state_dir);
// The place kept for `peer` in `state_dir`: NotFound when none is.
absl::StatusOr<WalPosition> ReadPosition(Env* env, const std::string& state_dir, std::string_view peer);
// The name of a peer's hold on the log, and the peer a hold's name is of (none: not a peer's).
std::string HoldName(std::string_view peer);
std::optional<std::string> PeerOfHold(std::string_view hold);

class LogShipper {
 public:
  // Whether family `family` of table `table` is replicated to this peer.
  using Scope = std::function<bool(std::string_view table, std::string_view family)>;
  // A sink of the peer: its HBase port, and the peer's cluster id (records that came through the
  // peer are not shipped back to it).
  struct Sink {
    std::string address;  // host:port
    std::string cluster_id;
  };
  struct Options {
    Env* env = nullptr;            // nullptr: Env::Default()
    ServerLog* log = nullptr;      // the server's log, which must outlive the shipper
    // Or, with no `log`: a log nobody writes any more (a dead region server's, split: what its
    // shippers still needed is in HeldLogDir(finished_dir)), shipped from the place kept for the
    // peer up to its end (FinishedLogEnd); then the shipper is DONE and calls on_done, once,
    // from its thread.
    std::string finished_dir;
    std::function<void()> on_done;
    std::string state_dir;         // where its place is kept
    std::string peer;              // the peer's id ([A-Za-z0-9_-]+)
    // A sink of the peer, asked each time the shipper connects (again after a failed call: the
    // peer's servers change).
    std::function<absl::StatusOr<Sink>()> find_sink;
    std::string cluster_id;        // this cluster's (a UUID)
    // What is replicated, as the tables are now (their REPLICATION_SCOPE): asked once per batch,
    // after the log's end was read, so that each edit is judged by its table's settings as they
    // were when it was written or later, never earlier.
    std::function<Scope()> scope;
    uint64_t max_batch_bytes = 8ull << 20;  // of log read per batch
    absl::Duration idle_poll = absl::Milliseconds(50);
    absl::Duration call_timeout = absl::Seconds(60);  // HBase's source waits as long
    std::function<void(std::string_view)> say;          // its log lines; empty: the server log
  };
  enum class State { kShipping, kRetrying, kBroken, kDone };

  // Starts shipping from the place kept in state_dir, or, for a new peer, from the log's durable
  // end (a peer added now gets the edits made from now on; what existed is copied another way).
  // A finished log's shipper starts from its kept place (NotFound when none is kept).
  static absl::StatusOr<std::unique_ptr<LogShipper>> Start(Options options);
  // A peer's place without shipping (a peer added disabled): kept from the log's durable end
  // unless it has one already, and held. Returns the place.
  static absl::StatusOr<WalPosition> Place(Env* env, ServerLog* log, const std::string& state_dir,
                                           std::string_view peer);
  // The same at a place given (a region server's first peers: its log's beginning, WalPosition{}).
  static absl::StatusOr<WalPosition> PlaceAt(Env* env, ServerLog* log, const std::string& state_dir,
                                             std::string_view peer, WalPosition at);
  // A removed peer's place forgotten and its hold released (`log` null: a finished log's).
  static absl::Status Forget(Env* env, ServerLog* log, const std::string& state_dir, std::string_view peer);
  // OK when `id` is a peer id this shipper takes: 1 to 64 of [A-Za-z0-9_-]; else InvalidArgument.
  static absl::Status CheckPeerId(std::string_view id);
  // Stops (a call in flight is waited for, up to call_timeout) and keeps the place.
  ~LogShipper();

  struct Figures {
    State state = State::kShipping;
    std::string last_error;
    WalPosition position;     // shipped up to here
    uint64_t entries = 0;     // log records shipped
    uint64_t cells = 0;
    uint64_t batches = 0;
    uint64_t failed_calls = 0;
    int64_t age_ms = 0;       // of the newest edit shipped, when it was acknowledged
    uint64_t lag_bytes = 0;   // of durable log not shipped yet
  };
  Figures figures() const;
  static const char* StateName(State s);
  // The hold on the log was dropped (the log's callback): the peer is BROKEN.
  void HoldDropped();

 private:
  explicit LogShipper(Options options);
  void Run();
  const std::string& dir() const { return options_.log != nullptr ? options_.log->dir() : options_.finished_dir; }
  WalPosition End() const { return options_.log != nullptr ? options_.log->DurableEnd() : finished_end_; }
  // Reads and ships one batch from `at`; how far it got. Unavailable/Internal etc. leave `at`.
  absl::StatusOr<WalPosition> ShipOnce(WalPosition at, WalPosition end);
  absl::Status SavePosition(WalPosition at);
  void Say(std::string_view line) const;
  // Waits up to `d` unless stopping; false once stopping.
  bool Pause(absl::Duration d);

  const Options options_;
  hbase::SourceOptions source_;  // made once; Run's own (its clock set per batch)
  std::unique_ptr<hbase::WireClient> sink_;  // the connection, Run's own
  std::string sink_address_;                 // its host:port, Run's own
  WalPosition finished_end_;                 // a finished log's end (set before Run)
  uint32_t next_call_ = 1;                   // Run's own
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  Figures figures_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace basalt::replication
