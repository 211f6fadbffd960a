#include "common/zookeeper.h"

#include <zookeeper/zookeeper.h>

#include <time.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"

namespace basalt {
namespace {

absl::Status ZkError(std::string_view op, std::string_view path, int rc) {
  std::string msg = absl::StrCat("zookeeper: ", AV(op), " ", AV(path), ": ", zerror(rc));
  switch (rc) {
    case ZNONODE: return absl::NotFoundError(msg);
    case ZNODEEXISTS: return absl::AlreadyExistsError(msg);
    case ZBADVERSION:
    case ZNOTEMPTY: return absl::FailedPreconditionError(msg);
    case ZNOAUTH:
    case ZAUTHFAILED: return absl::PermissionDeniedError(msg);
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE: return absl::AbortedError(absl::StrCat(msg, " (the session has ended)"));
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZCLOSING: return absl::UnavailableError(msg);
    case ZBADARGUMENTS:
    case ZNOCHILDRENFOREPHEMERALS: return absl::InvalidArgumentError(msg);
    default: return absl::InternalError(msg);
  }
}

int Flags(ZooKeeper::Mode mode) {
  switch (mode) {
    case ZooKeeper::Mode::kPersistent: return 0;
    case ZooKeeper::Mode::kEphemeral: return ZOO_EPHEMERAL;
    case ZooKeeper::Mode::kPersistentSequential: return ZOO_PERSISTENT_SEQUENTIAL;
    case ZooKeeper::Mode::kEphemeralSequential: return ZOO_EPHEMERAL_SEQUENTIAL;
  }
  return 0;
}

}  // namespace

int64_t SessionLease::NowNs() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void SessionLease::ExtendTo(int64_t until_ns) {
  int64_t now = until_ns_.load(std::memory_order_acquire);
  while (now < until_ns && !until_ns_.compare_exchange_weak(now, until_ns, std::memory_order_acq_rel)) {
  }
}

class ZooKeeper::Impl {
 public:
  explicit Impl(Options o) : options(std::move(o)) {}

  ~Impl() {
    {
      absl::MutexLock l(&mu);
      stopping = true;  // callbacks not yet run are dropped
    }
    if (dispatcher.joinable()) dispatcher.join();  // after the one running, if any
    if (lease_keeper.joinable()) lease_keeper.join();
    if (zh != nullptr) zookeeper_close(zh);  // after this, ZooKeeper calls none of our functions
    absl::MutexLock l(&mu);
    for (WatchContext* w : live_watches) delete w;  // never fired
  }

  // What a watch carries through the C client.
  struct WatchContext {
    Impl* impl;
    Watch fn;
  };

  Options options;
  zhandle_t* zh = nullptr;
  std::atomic<bool> expired{false};

  absl::Mutex mu;
  bool connected ABSL_GUARDED_BY(mu) = false;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  std::deque<std::function<void()>> queue ABSL_GUARDED_BY(mu);
  std::set<WatchContext*> live_watches ABSL_GUARDED_BY(mu);
  std::thread dispatcher;
  std::thread lease_keeper;
  int64_t lease_ns = 0;  // the negotiated session timeout less the margin (SessionLease)

  // Marks the session ended, once, and runs on_expired (on the dispatcher) saying why.
  void Expire(std::string why) {
    if (expired.exchange(true) || !options.on_expired) return;
    Post([this, why = std::move(why)] { options.on_expired(why); });
  }

  // A request answered: the server heard from the session when it was sent.
  struct Ping {
    Impl* impl;
    int64_t sent_ns;
  };
  static void Pinged(int rc, const struct Stat*, const void* data) {
    const Ping* p = static_cast<const Ping*>(data);
    if (rc == ZOK) p->impl->options.lease->ExtendTo(p->sent_ns + p->impl->lease_ns);
    delete p;
  }
  // Gives the session options.digest and waits for ZooKeeper's answer.
  absl::Status Authenticate() {
    struct Answer {
      absl::Mutex mu;
      bool done ABSL_GUARDED_BY(mu) = false;
      int rc ABSL_GUARDED_BY(mu) = ZOK;
    };
    // Freed here once answered; after a timeout left to the completion that may still come (a
    // few bytes, once).
    auto* answer = new Answer;
    auto done = [](int rc, const void* data) {
      auto* a = static_cast<Answer*>(const_cast<void*>(data));
      absl::MutexLock l(&a->mu);
      a->done = true;
      a->rc = rc;
    };
    const std::string& d = options.digest;
    int rc = zoo_add_auth(zh, "digest", d.data(), static_cast<int>(d.size()), done, answer);
    if (rc != ZOK) {
      delete answer;
      return ZkError("authenticate as", d.substr(0, d.find(':')), rc);
    }
    {
      absl::MutexLock l(&answer->mu);
      if (!answer->mu.AwaitWithTimeout(absl::Condition(&answer->done), options.connect_timeout)) {
        return absl::UnavailableError(absl::StrCat("zookeeper: no answer to authentication within ",
                                                   absl::FormatDuration(options.connect_timeout)));
      }
      rc = answer->rc;
    }
    delete answer;
    if (rc == ZOK) return absl::OkStatus();
    return absl::PermissionDeniedError(absl::StrCat("zookeeper: authentication as '", d.substr(0, d.find(':')),
                                                    "' (digest) refused: ", zerror(rc)));
  }

  // Bounds options.lease by a first request, answered (the session is established).
  absl::Status StartLease() {
    const int64_t timeout_ns = static_cast<int64_t>(zoo_recv_timeout(zh)) * 1000000;
    // The margin: a tenth of the timeout (at least 50 ms), for the clocks' rates and the wake-up.
    lease_ns = timeout_ns - std::max<int64_t>(timeout_ns / 10, 50000000);
    const int64_t first_ns = SessionLease::NowNs();
    struct Stat stat {};
    if (const int rc = zoo_exists(zh, "/", 0, &stat); rc != ZOK) return ZkError("exists", "/ (the lease's first)", rc);
    options.lease->Bound(first_ns + lease_ns);
    lease_keeper = std::thread([this] { KeepLease(); });
    return absl::OkStatus();
  }
  // Keeps options.lease: a request every fifth of the session timeout. While the lease has
  // lapsed its holder acts on nothing; an answer to a request sent since (ZooKeeper was slow,
  // or the connection came back before the session expired) renews it. Once it has been lapsed
  // for a whole session timeout more, the session is taken as expired (on_expired). Ends with the
  // session or when stopping.
  void KeepLease() {
    const int64_t timeout_ns = static_cast<int64_t>(zoo_recv_timeout(zh)) * 1000000;
    const int64_t every_ns = std::max<int64_t>(timeout_ns / 5, 1000000);
    while (!expired.load()) {
      const int64_t now = SessionLease::NowNs();
      const int64_t until = options.lease->until_ns();
      if (now >= until + timeout_ns) {
        Expire(absl::StrCat("no answer from ZooKeeper for ", (now - until + lease_ns) / 1000000,
                            " ms (its session timeout is ", timeout_ns / 1000000,
                            " ms): the session has expired, and a master may have acted on it"));
        return;
      }
      auto* ping = new Ping{this, now};
      if (zoo_aexists(zh, "/", 0, &Pinged, ping) != ZOK) delete ping;
      absl::MutexLock l(&mu);
      // Awake at the next request's time, or when the lease lapses, or at the end of its grace.
      const int64_t due = options.lease->until_ns();
      const int64_t wait_ns = std::min(every_ns, due > now ? due - now : due + timeout_ns - now);
      if (mu.AwaitWithTimeout(absl::Condition(+[](Impl* i) ABSL_EXCLUSIVE_LOCKS_REQUIRED(i->mu) { return i->stopping; }, this),
                              absl::Nanoseconds(std::max<int64_t>(wait_ns, 0)))) {
        return;
      }
    }
  }

  // Runs callbacks on our own thread, in the order ZooKeeper delivered them.
  void Dispatch() {
    while (true) {
      std::function<void()> fn;
      {
        absl::MutexLock l(&mu);
        mu.Await(absl::Condition(
            +[](Impl* i) ABSL_EXCLUSIVE_LOCKS_REQUIRED(i->mu) { return i->stopping || !i->queue.empty(); }, this));
        if (stopping) return;
        fn = std::move(queue.front());
        queue.pop_front();
      }
      fn();
    }
  }
  void Post(std::function<void()> fn) {
    absl::MutexLock l(&mu);
    if (!stopping) queue.push_back(std::move(fn));
  }

  // The session's watcher: connection state.
  static void SessionWatcher(zhandle_t*, int type, int state, const char*, void* ctx) {
    Impl* impl = static_cast<Impl*>(ctx);
    if (type != ZOO_SESSION_EVENT) return;
    if (state == ZOO_CONNECTED_STATE) {
      absl::MutexLock l(&impl->mu);
      impl->connected = true;
    } else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
      impl->Expire(state == ZOO_EXPIRED_SESSION_STATE ? "ZooKeeper session expired" : "ZooKeeper authentication failed");
    }
  }

  // A node's or children's watcher: fires once, or with the session's end.
  static void NodeWatcher(zhandle_t*, int type, int state, const char*, void* ctx) {
    WatchContext* w = static_cast<WatchContext*>(ctx);
    // A connection lost and found again keeps the watch registered: wait for the real event.
    if (type == ZOO_SESSION_EVENT && state != ZOO_EXPIRED_SESSION_STATE && state != ZOO_AUTH_FAILED_STATE) return;
    Impl* impl = w->impl;
    {
      absl::MutexLock l(&impl->mu);
      impl->live_watches.erase(w);
      if (!impl->stopping) impl->queue.push_back(std::move(w->fn));
    }
    delete w;
  }

  WatchContext* NewWatch(Watch fn) {
    if (!fn) return nullptr;
    auto* w = new WatchContext{this, std::move(fn)};
    absl::MutexLock l(&mu);
    live_watches.insert(w);
    return w;
  }
  // A watch the C client did not register (the call failed): ours to free.
  void DropWatch(WatchContext* w) {
    if (w == nullptr) return;
    {
      absl::MutexLock l(&mu);
      live_watches.erase(w);
    }
    delete w;
  }
};

ZooKeeper::ZooKeeper(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ZooKeeper::~ZooKeeper() = default;

absl::StatusOr<std::unique_ptr<ZooKeeper>> ZooKeeper::Connect(Options options) {
  if (options.quorum.empty()) return absl::InvalidArgumentError("zookeeper: no quorum given (HOST:PORT[,HOST:PORT...])");
  static std::once_flag quiet;
  std::call_once(quiet, [] { zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR); });
  auto impl = std::make_unique<Impl>(std::move(options));
  Impl* raw = impl.get();
  raw->dispatcher = std::thread([raw] { raw->Dispatch(); });
  const int timeout_ms = static_cast<int>(absl::ToInt64Milliseconds(raw->options.session_timeout));
  raw->zh = zookeeper_init(raw->options.quorum.c_str(), &Impl::SessionWatcher, timeout_ms, nullptr, raw, 0);
  if (raw->zh == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("zookeeper: cannot use quorum '", raw->options.quorum, "': ",
                                                   std::strerror(errno)));
  }
  {
    absl::MutexLock l(&raw->mu);
    const bool up = raw->mu.AwaitWithTimeout(
        absl::Condition(+[](Impl* i) ABSL_EXCLUSIVE_LOCKS_REQUIRED(i->mu) { return i->connected; }, raw),
        raw->options.connect_timeout);
    if (!up) {
      return absl::UnavailableError(absl::StrCat("zookeeper: no server of ", raw->options.quorum, " answered within ",
                                                 absl::FormatDuration(raw->options.connect_timeout)));
    }
  }
  if (!raw->options.digest.empty()) BASALT_RETURN_IF_ERROR(raw->Authenticate());
  if (raw->options.lease != nullptr) BASALT_RETURN_IF_ERROR(raw->StartLease());
  return std::unique_ptr<ZooKeeper>(new ZooKeeper(std::move(impl)));
}

absl::StatusOr<std::string> ZooKeeper::Create(const std::string& path, std::string_view data, Mode mode,
                                              Readers readers) {
  std::string created(path.size() + 32, '\0');
  // Under an identity: every right for it (ZOO_AUTH_IDS: the session's authenticated ids), and
  // reading for anyone where asked.
  struct ACL acls[2] = {{ZOO_PERM_ALL, ZOO_AUTH_IDS}, {ZOO_PERM_READ, ZOO_ANYONE_ID_UNSAFE}};
  struct ACL_vector mine = {readers == Readers::kAnyone ? 2 : 1, acls};
  const struct ACL_vector* acl = impl_->options.digest.empty() ? &ZOO_OPEN_ACL_UNSAFE : &mine;
  const int rc = zoo_create(impl_->zh, path.c_str(), data.data(), static_cast<int>(data.size()), acl, Flags(mode),
                            created.data(), static_cast<int>(created.size()));
  if (rc != ZOK) return ZkError("create", path, rc);
  created.resize(std::strlen(created.c_str()));
  return created;
}

absl::StatusOr<bool> ZooKeeper::OpenToAnyone(const std::string& path) {
  struct ACL_vector acl {};
  struct Stat stat {};
  const int rc = zoo_get_acl(impl_->zh, path.c_str(), &acl, &stat);
  if (rc != ZOK) return ZkError("ACL of", path, rc);
  bool open = false;
  for (int32_t i = 0; i < acl.count; ++i) {
    const struct ACL& a = acl.data[i];
    if (std::string_view(a.id.scheme) == "world" && std::string_view(a.id.id) == "anyone" &&
        (a.perms & ~ZOO_PERM_READ) != 0) {
      open = true;
    }
  }
  deallocate_ACL_vector(&acl);
  return open;
}

absl::Status ZooKeeper::CreatePath(const std::string& path, Readers readers) {
  std::string sofar;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    absl::StrAppend(&sofar, "/", part);
    absl::StatusOr<std::string> made = Create(sofar, "", Mode::kPersistent, readers);
    if (!made.ok() && !absl::IsAlreadyExists(made.status())) return made.status();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<ZkNode>> ZooKeeper::Get(const std::string& path, Watch watch) {
  Impl::WatchContext* w = impl_->NewWatch(std::move(watch));
  watcher_fn fn = w != nullptr ? &Impl::NodeWatcher : nullptr;
  std::string buf(64 << 10, '\0');
  while (true) {
    int len = static_cast<int>(buf.size());
    struct Stat stat {};
    int rc = zoo_wget(impl_->zh, path.c_str(), fn, w, buf.data(), &len, &stat);
    if (rc == ZNONODE) {
      if (w == nullptr) return std::nullopt;
      // zoo_wget sets no watch on a missing node; an exists-watch fires when it is made.
      rc = zoo_wexists(impl_->zh, path.c_str(), fn, w, &stat);
      if (rc == ZNONODE) return std::nullopt;
      if (rc == ZOK) continue;  // made meanwhile: read it
    }
    if (rc != ZOK) {
      impl_->DropWatch(w);  // registered only by a call that succeeded
      return ZkError("get", path, rc);
    }
    if (stat.dataLength > len) {  // larger than the buffer: read again, whole
      buf.resize(static_cast<size_t>(stat.dataLength));
      continue;
    }
    ZkNode node;
    node.data.assign(buf.data(), len < 0 ? 0 : static_cast<size_t>(len));
    node.version = stat.version;
    node.ephemeral_owner = stat.ephemeralOwner;
    return node;
  }
}

absl::StatusOr<std::vector<std::string>> ZooKeeper::Children(const std::string& path, Watch watch) {
  Impl::WatchContext* w = impl_->NewWatch(std::move(watch));
  struct String_vector v {};
  const int rc = zoo_wget_children(impl_->zh, path.c_str(), w != nullptr ? &Impl::NodeWatcher : nullptr, w, &v);
  if (rc != ZOK) {
    impl_->DropWatch(w);
    return ZkError("children of", path, rc);
  }
  std::vector<std::string> out(v.data, v.data + v.count);
  deallocate_String_vector(&v);
  std::sort(out.begin(), out.end());
  return out;
}

absl::Status ZooKeeper::Set(const std::string& path, std::string_view data, int32_t version) {
  const int rc = zoo_set(impl_->zh, path.c_str(), data.data(), static_cast<int>(data.size()), version);
  return rc == ZOK ? absl::OkStatus() : ZkError("set", path, rc);
}

absl::Status ZooKeeper::Delete(const std::string& path, int32_t version) {
  const int rc = zoo_delete(impl_->zh, path.c_str(), version);
  return rc == ZOK ? absl::OkStatus() : ZkError("delete", path, rc);
}

int64_t ZooKeeper::session_id() const {
  const clientid_t* id = zoo_client_id(impl_->zh);
  return id == nullptr ? 0 : id->client_id;
}

bool ZooKeeper::expired() const { return impl_->expired.load(); }
const ZooKeeper::Options& ZooKeeper::options() const { return impl_->options; }

// --- LeaderElection ---

struct LeaderElection::State {
  ZooKeeper* zk;
  std::string dir;
  std::string data;
  std::function<void()> on_elected;
  absl::Mutex mu;
  std::string node ABSL_GUARDED_BY(mu);  // this candidate's node name in dir, once made
  bool leader ABSL_GUARDED_BY(mu) = false;
  bool resigned ABSL_GUARDED_BY(mu) = false;
};

LeaderElection::LeaderElection(ZooKeeper* zk, std::string dir, std::string data, std::function<void()> on_elected)
    : state_(std::make_shared<State>()) {
  state_->zk = zk;
  state_->dir = std::move(dir);
  state_->data = std::move(data);
  state_->on_elected = std::move(on_elected);
}

LeaderElection::~LeaderElection() {
  absl::MutexLock l(&state_->mu);
  state_->resigned = true;  // a watch still pending finds the state and does nothing
}

absl::Status LeaderElection::Start() {
  BASALT_RETURN_IF_ERROR(state_->zk->CreatePath(state_->dir));
  BASALT_ASSIGN_OR_RETURN(std::string made,
                          state_->zk->Create(state_->dir + "/n_", state_->data, ZooKeeper::Mode::kEphemeralSequential));
  {
    absl::MutexLock l(&state_->mu);
    state_->node = made.substr(made.rfind('/') + 1);
  }
  return Check(state_);
}

// Leader when this candidate's node is the lowest; otherwise watch the one just before it.
absl::Status LeaderElection::Check(const std::shared_ptr<State>& state) {
  State* s = state.get();
  while (true) {
    std::string mine;
    {
      absl::MutexLock l(&s->mu);
      if (s->resigned) return absl::OkStatus();
      mine = s->node;
    }
    BASALT_ASSIGN_OR_RETURN(std::vector<std::string> children, s->zk->Children(s->dir));
    auto it = std::find(children.begin(), children.end(), mine);
    if (it == children.end()) {  // the session ended and took our node with it
      absl::MutexLock l(&s->mu);
      s->leader = false;
      return absl::AbortedError(absl::StrCat("election ", s->dir, ": this candidate's node ", mine, " is gone"));
    }
    if (it == children.begin()) {
      bool elected = false;
      {
        absl::MutexLock l(&s->mu);
        elected = !s->leader && !s->resigned;
        s->leader = true;
      }
      if (elected && s->on_elected) s->on_elected();
      return absl::OkStatus();
    }
    // Sequence numbers are zero-padded, so names sort as numbers do.
    const std::string before = absl::StrCat(s->dir, "/", *(it - 1));
    std::weak_ptr<State> weak = state;
    BASALT_ASSIGN_OR_RETURN(std::optional<ZkNode> pred, s->zk->Get(before, [weak] {
      if (std::shared_ptr<State> st = weak.lock()) Check(st).IgnoreError();
    }));
    if (pred.has_value()) return absl::OkStatus();  // watching it
    // It went between the listing and the watch: look again.
  }
}

bool LeaderElection::is_leader() const {
  absl::MutexLock l(&state_->mu);
  return state_->leader && !state_->resigned && !state_->zk->expired();
}

int64_t LeaderElection::sequence() const {
  absl::MutexLock l(&state_->mu);
  const size_t at = state_->node.rfind('_');
  int64_t seq = 0;
  if (at == std::string::npos || !absl::SimpleAtoi(state_->node.substr(at + 1), &seq)) return 0;
  return seq;
}

absl::Status LeaderElection::Resign() {
  std::string node;
  {
    absl::MutexLock l(&state_->mu);
    state_->resigned = true;
    state_->leader = false;
    node = state_->node;
  }
  if (node.empty()) return absl::OkStatus();
  absl::Status s = state_->zk->Delete(absl::StrCat(state_->dir, "/", node));
  return absl::IsNotFound(s) ? absl::OkStatus() : s;
}

absl::StatusOr<std::optional<std::string>> LeaderElection::Leader(ZooKeeper* zk, const std::string& dir) {
  while (true) {
    absl::StatusOr<std::vector<std::string>> children = zk->Children(dir);
    if (absl::IsNotFound(children.status())) return std::nullopt;
    if (!children.ok()) return children.status();
    if (children->empty()) return std::nullopt;
    BASALT_ASSIGN_OR_RETURN(std::optional<ZkNode> node, zk->Get(absl::StrCat(dir, "/", children->front())));
    if (node.has_value()) return node->data;
    // The leader went meanwhile: the next one is leader now.
  }
}

}  // namespace basalt
