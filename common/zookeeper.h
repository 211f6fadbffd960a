// A ZooKeeper session, on the multi-threaded C client (Debian's libzookeeper-mt-dev), with what a
// cluster of Basalt needs: nodes (persistent, ephemeral, sequential), one-shot watches, and the
// end of the session. As in HBase, ZooKeeper holds only what must outlive any one process: the
// active master (LeaderElection below), the live region servers (ephemeral nodes), and where
// meta is; nothing on the data path touches it (docs/DESIGN.md §6).
//
// Every call is synchronous and thread-safe. Watches and the expiry callback run on one thread
// of this object's own, never on ZooKeeper's (the C client deadlocks when a watcher makes a
// synchronous call), so they may call back into it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace basalt {

// How long a daemon may take its ZooKeeper session to be alive (docs/DESIGN.md §6, "Leases"):
// until the send time of the last request a server answered, plus the session timeout, less a
// margin. A server that heard from the session at that send time cannot expire it before then,
// so a master cannot yet act on its expiry (assuming the two machines' clocks run at about the
// same rate). Unbounded until a session bounds it. Held() is an atomic load and a vDSO clock
// read: cheap enough for every call a region server serves.
class SessionLease {
 public:
  // CLOCK_BOOTTIME in ns: it runs through a SIGSTOP and a suspend, as the ZooKeeper server's
  // clock does.
  static int64_t NowNs();
  bool Held() const { return NowNs() < until_ns_.load(std::memory_order_acquire); }
  int64_t until_ns() const { return until_ns_.load(std::memory_order_acquire); }
  // Sets the bound (a session's first); ExtendTo moves it later, never earlier.
  void Bound(int64_t until_ns) { until_ns_.store(until_ns, std::memory_order_release); }
  void ExtendTo(int64_t until_ns);

 private:
  std::atomic<int64_t> until_ns_{std::numeric_limits<int64_t>::max()};
};

struct ZkNode {
  std::string data;
  int32_t version = 0;          // for a conditional Set or Delete
  int64_t ephemeral_owner = 0;  // the session that owns an ephemeral node (0: persistent)
};

class ZooKeeper {
 public:
  struct Options {
    std::string quorum;  // HOST:PORT[,HOST:PORT...] (HBase's hbase.zookeeper.quorum)
    // The session ends this long after the client was last heard from; then its ephemeral
    // nodes are deleted. The server bounds it (minSessionTimeout, maxSessionTimeout).
    absl::Duration session_timeout = absl::Seconds(4);
    absl::Duration connect_timeout = absl::Seconds(10);
    // Called once when the session has expired (`why`): this client's ephemeral nodes are gone
    // and every later call fails. A region server stops serving then (HBase's
    // YouAreDeadException).
    std::function<void(std::string_view why)> on_expired;
    // When set (a daemon's session): kept by a request every session_timeout/5 (SessionLease).
    // While it has lapsed, its holder acts on nothing (a region server serves nothing): a daemon
    // cut off from ZooKeeper stops within its session timeout, before a master can act on the
    // expiry. An answer to a later request renews it (ZooKeeper was only slow). Lapsed for a
    // whole session timeout more, the session is taken as expired (on_expired runs) without
    // waiting for the server to say so, which it can only once this client reaches it again.
    SessionLease* lease = nullptr;
    // The cluster's daemons' identity in ZooKeeper, "user:password" (the digest scheme), given
    // when the session starts (the client gives it again on each reconnection). With it, each
    // node this session creates may be changed and deleted only by that identity, and read only
    // by it unless made kReadableByAnyone (ZooKeeper's ACLs); a wrong password fails Connect.
    // Empty: nodes open to anyone (ZOO_OPEN_ACL_UNSAFE), as before ACLs.
    std::string digest;
  };
  // Who may read a node made under a digest identity (every other right is the identity's).
  enum class Readers { kIdentity, kAnyone };
  enum class Mode { kPersistent, kEphemeral, kPersistentSequential, kEphemeralSequential };
  // One-shot: called once when what it watches changes, or when the session ends.
  using Watch = std::function<void()>;

  // Connects and waits until the session is established. Unavailable when no server of the
  // quorum answers within connect_timeout.
  static absl::StatusOr<std::unique_ptr<ZooKeeper>> Connect(Options options);
  // Closes the session: its ephemeral nodes go at once (not after the timeout).
  ~ZooKeeper();

  // Makes a node; returns its path (with the sequence number a sequential node gets).
  // AlreadyExists, or NotFound when the parent is missing.
  absl::StatusOr<std::string> Create(const std::string& path, std::string_view data, Mode mode,
                                     Readers readers = Readers::kIdentity);
  // Makes a persistent node and its missing parents (each readable by `readers`); one that
  // exists is fine.
  absl::Status CreatePath(const std::string& path, Readers readers = Readers::kIdentity);
  // Whether anyone at all (world:anyone) may change, create under or delete `path`, or change
  // its ACL: a cluster with an identity refuses to run under such a node. NotFound when absent.
  absl::StatusOr<bool> OpenToAnyone(const std::string& path);
  // A node's data and version, or nullopt when it does not exist. A watch fires when it is
  // made, changed or deleted.
  absl::StatusOr<std::optional<ZkNode>> Get(const std::string& path, Watch watch = nullptr);
  // The names of a node's children, sorted. A watch fires when one is added or removed.
  absl::StatusOr<std::vector<std::string>> Children(const std::string& path, Watch watch = nullptr);
  // version -1: whatever the node's version. FailedPrecondition when the version differs.
  absl::Status Set(const std::string& path, std::string_view data, int32_t version = -1);
  absl::Status Delete(const std::string& path, int32_t version = -1);

  int64_t session_id() const;
  bool expired() const;
  const Options& options() const;

  class Impl;

 private:
  explicit ZooKeeper(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ZooKeeper's leader election recipe: each candidate makes an ephemeral sequential node
// "<dir>/n_<seq>" holding its data (a master's address); the lowest is the leader; every other
// candidate watches only the node just before its own, so one wakes up when the leader goes
// (no herd). A leader whose session expires loses its node and is no longer leader.
class LeaderElection {
 public:
  // `on_elected` runs (on the ZooKeeper's watch thread) once this candidate becomes leader.
  LeaderElection(ZooKeeper* zk, std::string dir, std::string data, std::function<void()> on_elected);
  ~LeaderElection();

  // Enters the election (makes this candidate's node); on_elected may run before it returns.
  absl::Status Start();
  bool is_leader() const;
  // This candidate's node's sequence number (0 before Start): it rises from each leader to the
  // next, so the leader's is its epoch (a master's calls carry it).
  int64_t sequence() const;
  // Leaves the election: deletes this candidate's node, so the next one takes over at once.
  absl::Status Resign();
  // The current leader's data, or nullopt when there is no candidate.
  static absl::StatusOr<std::optional<std::string>> Leader(ZooKeeper* zk, const std::string& dir);

 private:
  struct State;
  static absl::Status Check(const std::shared_ptr<State>& state);
  std::shared_ptr<State> state_;
};

}  // namespace basalt
