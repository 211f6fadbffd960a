#include "src/replication/peers.h"

#include <algorithm>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/log.h"
#include "common/status.h"
#include "common/zookeeper.h"
#include "proto/hbase/hbase_cluster.pb.h"
#include "src/front/hbase/zk_records.h"
#include "src/schema/catalog_file.h"
#include "storage/log_tail.h"

namespace basalt::replication {
namespace {

constexpr char kPeersFile[] = "peers";

std::string PeersPath(const std::string& dir) { return absl::StrCat(dir, "/", kPeersFile); }

absl::Status ValidatePeer(const rpc::ReplicationPeer& p) {
  BASALT_RETURN_IF_ERROR(LogShipper::CheckPeerId(p.id()));
  BASALT_RETURN_IF_ERROR(ParseClusterKey(p.cluster_key()).status());
  for (const rpc::PeerTable& t : p.tables()) {
    BASALT_RETURN_IF_ERROR(server::ValidateTableName(t.table()));
    for (const std::string& f : t.families()) BASALT_RETURN_IF_ERROR(server::ValidateFamilyName(f));
  }
  return absl::OkStatus();
}

absl::Status NoSuchPeer(std::string_view id) {
  return absl::NotFoundError(absl::StrCat("replication peer ", AV(id), " does not exist"));
}

}  // namespace

absl::StatusOr<LogShipper::Sink> FindSink(const ClusterKey& key, const std::string& own_cluster_id) {
  ZooKeeper::Options zo;
  zo.quorum = key.quorum;
  zo.connect_timeout = absl::Seconds(5);
  absl::StatusOr<std::unique_ptr<ZooKeeper>> zk = ZooKeeper::Connect(zo);
  if (!zk.ok()) {
    return absl::UnavailableError(absl::StrCat("the peer's ZooKeeper ", key.quorum, ": ", zk.status().message()));
  }
  const std::string id_path = absl::StrCat(key.parent, "/", hbase::kClusterIdNode);
  BASALT_ASSIGN_OR_RETURN(std::optional<ZkNode> id_node, (*zk)->Get(id_path));
  if (!id_node.has_value()) {
    return absl::UnavailableError(absl::StrCat("no cluster at ", key.quorum, key.parent, ": ", id_path, " is missing"));
  }
  hbase::ClusterId id;
  if (absl::Status s = hbase::ParseZkRecord(id_node->data, &id); !s.ok()) {
    return absl::UnavailableError(absl::StrCat(id_path, " at ", key.quorum, ": ", s.message()));
  }
  if (absl::EqualsIgnoreCase(id.cluster_id(), own_cluster_id)) {
    return absl::FailedPreconditionError(absl::StrCat("the peer at ", key.quorum, key.parent,
                                                      " is this cluster (its id is ours, ", own_cluster_id,
                                                      "): a cluster never replicates to itself"));
  }
  const std::string rs_path = absl::StrCat(key.parent, "/", hbase::kRegionServersNode);
  absl::StatusOr<std::vector<std::string>> servers = (*zk)->Children(rs_path);
  if (!servers.ok() || servers->empty()) {
    return absl::UnavailableError(absl::StrCat("the peer at ", key.quorum, key.parent, " lists no region server under ",
                                               rs_path, servers.ok() ? "" : absl::StrCat(": ", servers.status().message())));
  }
  absl::BitGen gen;
  const std::string& name = (*servers)[absl::Uniform<size_t>(gen, 0, servers->size())];
  std::vector<std::string> parts = absl::StrSplit(name, ',');  // host,port,start code
  int port = 0;
  if (parts.size() != 3 || parts[0].empty() || !absl::SimpleAtoi(parts[1], &port) || port < 1 || port > 65535) {
    return absl::UnavailableError(absl::StrCat("the peer lists region server '", name, "' under ", rs_path,
                                               ", which is not host,port,startcode"));
  }
  return LogShipper::Sink{absl::StrCat(parts[0], ":", port), id.cluster_id()};
}

bool ReplicatedFamily(const server::TableSpec& spec, std::string_view family) {
  const std::optional<std::string> value = server::ReplicationScopeOf(spec, family);
  int scope = 0;
  return value.has_value() && absl::SimpleAtoi(*value, &scope) && scope != 0;
}

absl::StatusOr<std::unique_ptr<Peers>> Peers::Open(Options o) {
  if (o.env == nullptr) o.env = Env::Default();
  if (o.tables == nullptr) return absl::InvalidArgumentError("replication peers need the tables");
  if (o.follower && o.log == nullptr) return absl::InvalidArgumentError("a region server's replication needs its log");
  std::unique_ptr<Peers> p(new Peers(std::move(o)));
  Env* env = p->options_.env;
  const std::string path = PeersPath(p->options_.state_dir);
  rpc::ListPeersResponse kept;  // (its PeerStatus.peer fields: the peers file's form)
  if (!p->options_.follower) BASALT_RETURN_IF_ERROR(env->CreateDirs(p->options_.state_dir));
  if (!p->options_.follower && env->FileExists(path)) {
    BASALT_ASSIGN_OR_RETURN(std::string bytes, env->ReadFileToString(path));
    if (!kept.ParseFromString(bytes)) {
      return absl::DataLossError(absl::StrCat("replication peers file ", path, " does not parse"));
    }
  }
  absl::MutexLock l(&p->mu_);
  for (const rpc::PeerStatus& st : kept.peers()) {
    if (absl::Status s = ValidatePeer(st.peer()); !s.ok()) {
      return absl::DataLossError(absl::StrCat("replication peers file ", path, ": ", s.message()));
    }
    p->peers_[st.peer().id()].config = st.peer();
  }
  if (p->options_.log == nullptr) return p;  // (a master: it ships only dead runs' logs, ShipDeadLogs)
  // A place kept for no peer (its removal stopped between the two): forgotten.
  BASALT_ASSIGN_OR_RETURN(auto places, ReadPositions(env, p->options_.state_dir));
  for (const auto& [id, at] : places) {
    if (p->peers_.count(id) == 0) BASALT_RETURN_IF_ERROR(LogShipper::Forget(env, p->options_.log, p->options_.state_dir, id));
  }
  for (auto& [id, peer] : p->peers_) {
    if (peer.config.enabled()) {
      BASALT_RETURN_IF_ERROR(p->StartShipper(&peer));
    } else {
      BASALT_RETURN_IF_ERROR(LogShipper::Place(env, p->options_.log, p->options_.state_dir, id).status());
    }
  }
  return p;
}

Peers::~Peers() { Stop(); }

void Peers::Stop() {
  absl::MutexLock l(&mu_);
  stopped_ = true;
  for (auto& [id, peer] : peers_) {
    SetLive(id, nullptr);
    peer.shipper.reset();
  }
  dead_.clear();
}

absl::Status Peers::RefuseChange(std::string_view what) const {
  return absl::FailedPreconditionError(absl::StrCat(
      AV(what), ": a region server follows the replication peers its cluster's master keeps (ask the master: "
      "connect through ZooKeeper)"));
}

absl::Status Peers::Changed() const {
  BASALT_RETURN_IF_ERROR(Save());
  if (options_.on_change) options_.on_change();
  return absl::OkStatus();
}

absl::Status Peers::Save() const {
  rpc::ListPeersResponse all;
  for (const auto& [id, peer] : peers_) *all.add_peers()->mutable_peer() = peer.config;
  return options_.env->WriteFileDurably(PeersPath(options_.state_dir), all.SerializeAsString());
}

void Peers::SetLive(const std::string& id, LogShipper* shipper) {
  absl::MutexLock l(&dropped_mu_);
  if (shipper == nullptr) {
    live_.erase(id);
    return;
  }
  live_[id] = shipper;
  if (dropped_.count(id) != 0) shipper->HoldDropped();
}

LogShipper::Scope Peers::ScopeNow(const rpc::ReplicationPeer& peer) const {
  using Families = std::set<std::string, std::less<>>;
  auto scope = std::make_shared<std::map<std::string, Families, std::less<>>>();
  for (const server::TableSpec& t : options_.tables->List()) {
    const rpc::PeerTable* named = nullptr;
    for (const rpc::PeerTable& pt : peer.tables()) {
      if (pt.table() == t.name) named = &pt;
    }
    if (peer.tables_size() > 0 && named == nullptr) continue;
    for (const FamilyOptions& f : t.families) {
      if (!ReplicatedFamily(t, f.name)) continue;
      if (named != nullptr && named->families_size() > 0 &&
          std::find(named->families().begin(), named->families().end(), f.name) == named->families().end()) {
        continue;
      }
      (*scope)[t.name].insert(f.name);
    }
  }
  return [scope](std::string_view table, std::string_view family) {
    auto it = scope->find(table);
    return it != scope->end() && it->second.count(family) != 0;
  };
}

absl::StatusOr<LogShipper::Options> Peers::ShipperOptions(const rpc::ReplicationPeer& config, std::string state_dir,
                                                           const std::string& cluster_id) const {
  LogShipper::Options so;
  so.env = options_.env;
  so.state_dir = std::move(state_dir);
  so.peer = config.id();
  so.cluster_id = cluster_id;
  so.idle_poll = options_.idle_poll;
  so.say = options_.say;
  if (options_.find_sink) {
    so.find_sink = [find = options_.find_sink, config] { return find(config); };
  } else {
    BASALT_ASSIGN_OR_RETURN(ClusterKey key, ParseClusterKey(config.cluster_key()));
    so.find_sink = [key, own = cluster_id] { return FindSink(key, own); };
  }
  so.scope = [this, config] { return ScopeNow(config); };
  return so;
}

absl::Status Peers::StartShipper(Peer* peer) {
  if (stopped_) return absl::UnavailableError("the server is stopping: its replication is");
  if (options_.log == nullptr) return absl::OkStatus();  // (a master: no log of its own)
  BASALT_ASSIGN_OR_RETURN(LogShipper::Options so, ShipperOptions(peer->config, options_.state_dir, options_.cluster_id));
  so.log = options_.log;
  BASALT_ASSIGN_OR_RETURN(peer->shipper, LogShipper::Start(std::move(so)));
  SetLive(peer->config.id(), peer->shipper.get());
  return absl::OkStatus();
}

absl::Status Peers::AddPeer(const rpc::ReplicationPeer& config) {
  if (options_.follower) return RefuseChange("add_peer");
  BASALT_RETURN_IF_ERROR(ValidatePeer(config));
  absl::MutexLock l(&mu_);
  if (peers_.count(config.id()) != 0) {
    return absl::AlreadyExistsError(absl::StrCat("replication peer ", config.id(), " exists already"));
  }
  {
    absl::MutexLock d(&dropped_mu_);
    dropped_.erase(config.id());
  }
  // Its place first (from the log's end now): what is written from here on is the peer's.
  if (options_.log != nullptr) {
    BASALT_RETURN_IF_ERROR(LogShipper::Place(options_.env, options_.log, options_.state_dir, config.id()).status());
  }
  Peer& peer = peers_[config.id()];
  peer.config = config;
  absl::Status s = Save();
  if (s.ok() && config.enabled()) s = StartShipper(&peer);
  if (!s.ok()) {
    peers_.erase(config.id());
    if (options_.log != nullptr) (void)LogShipper::Forget(options_.env, options_.log, options_.state_dir, config.id());
    (void)Save();
    return s;
  }
  if (options_.on_change) options_.on_change();
  return s;
}

absl::Status Peers::Drop(std::map<std::string, Peer>::iterator it) {
  SetLive(it->first, nullptr);
  it->second.shipper.reset();
  const std::string name = it->first;
  peers_.erase(it);
  if (options_.log == nullptr) return absl::OkStatus();
  return LogShipper::Forget(options_.env, options_.log, options_.state_dir, name);
}

absl::Status Peers::RemovePeer(std::string_view id) {
  if (options_.follower) return RefuseChange("remove_peer");
  absl::MutexLock l(&mu_);
  auto it = peers_.find(std::string(id));
  if (it == peers_.end()) return NoSuchPeer(id);
  // Kept first: a crash between the two leaves a place for no peer, which Open forgets.
  const std::string name = it->first;
  SetLive(name, nullptr);
  it->second.shipper.reset();
  peers_.erase(it);
  BASALT_RETURN_IF_ERROR(Changed());
  if (options_.log == nullptr) {
    ShipDeadLogsLocked();  // (its shippers of dead runs stopped, their places forgotten)
    return absl::OkStatus();
  }
  return LogShipper::Forget(options_.env, options_.log, options_.state_dir, name);
}

absl::Status Peers::UpdatePeer(const rpc::ReplicationPeer& config) {
  if (options_.follower) return RefuseChange("update_peer_config");
  BASALT_RETURN_IF_ERROR(ValidatePeer(config));
  absl::MutexLock l(&mu_);
  auto it = peers_.find(config.id());
  if (it == peers_.end()) return NoSuchPeer(config.id());
  Peer& peer = it->second;
  const rpc::ReplicationPeer before = peer.config;
  peer.config = config;
  peer.config.set_enabled(before.enabled());
  if (absl::Status s = Changed(); !s.ok()) {
    peer.config = before;
    return s;
  }
  if (options_.log == nullptr) {
    for (auto& [run, shippers] : dead_) shippers.erase(config.id());  // (again with the new settings)
    ShipDeadLogsLocked();
  }
  if (peer.shipper == nullptr) return absl::OkStatus();
  SetLive(it->first, nullptr);
  peer.shipper.reset();  // (its place kept: the new shipper goes on from there)
  return StartShipper(&peer);
}

absl::Status Peers::SetPeerEnabled(std::string_view id, bool enabled) {
  if (options_.follower) return RefuseChange(enabled ? "enable_peer" : "disable_peer");
  absl::MutexLock l(&mu_);
  auto it = peers_.find(std::string(id));
  if (it == peers_.end()) return NoSuchPeer(id);
  Peer& peer = it->second;
  if (peer.config.enabled() == enabled) return absl::OkStatus();
  peer.config.set_enabled(enabled);
  if (absl::Status s = Changed(); !s.ok()) {
    peer.config.set_enabled(!enabled);
    return s;
  }
  if (options_.log == nullptr) ShipDeadLogsLocked();
  if (enabled) return StartShipper(&peer);
  SetLive(it->first, nullptr);
  peer.shipper.reset();  // (its place kept, and held)
  return absl::OkStatus();
}

absl::Status Peers::ListPeers(rpc::ListPeersResponse* resp) const {
  if (options_.log != nullptr) {
    const WalPosition end = options_.log->DurableEnd();
    resp->set_run(options_.run);
    resp->set_log_end_segment(end.segment);
    resp->set_log_end_offset(end.offset);
  }
  absl::MutexLock l(&mu_);
  for (const auto& [id, peer] : peers_) {
    rpc::PeerStatus* st = resp->add_peers();
    *st->mutable_peer() = peer.config;
    if (options_.log == nullptr) {
      // A master: the peer's settings, and what dead servers' logs still hold for it (each
      // region server has its own figures for its own log).
      st->set_state(peer.config.enabled() ? "ENABLED" : "DISABLED");
      for (const auto& [run, shippers] : dead_) {
        auto it = shippers.find(id);
        if (it == shippers.end()) continue;
        const LogShipper::Figures f = it->second->figures();
        st->set_lag_bytes(st->lag_bytes() + f.lag_bytes);
        st->set_entries(st->entries() + f.entries);
        st->set_cells(st->cells() + f.cells);
        st->set_batches(st->batches() + f.batches);
        st->set_failed_calls(st->failed_calls() + f.failed_calls);
        if (!f.last_error.empty()) st->set_last_error(absl::StrCat("dead server ", run, ": ", f.last_error));
      }
      continue;
    }
    if (peer.shipper == nullptr) {
      bool dropped;
      {
        absl::MutexLock d(&dropped_mu_);
        dropped = dropped_.count(id) != 0;
      }
      st->set_state(dropped ? "BROKEN" : "DISABLED");
      if (dropped) st->set_last_error("its log was dropped while it was disabled (replication_max_held_log)");
      if (absl::StatusOr<WalPosition> at = ReadPosition(options_.env, options_.state_dir, id); at.ok()) {
        st->set_segment(at->segment);
        st->set_offset(at->offset);
        st->set_lag_bytes(LogBytesBetween(options_.env, options_.log->dir(), *at, options_.log->DurableEnd()));
      }
      continue;
    }
    const LogShipper::Figures f = peer.shipper->figures();
    st->set_state(LogShipper::StateName(f.state));
    st->set_last_error(f.last_error);
    st->set_segment(f.position.segment);
    st->set_offset(f.position.offset);
    st->set_entries(f.entries);
    st->set_cells(f.cells);
    st->set_batches(f.batches);
    st->set_failed_calls(f.failed_calls);
    st->set_age_ms(f.age_ms);
    st->set_lag_bytes(f.lag_bytes);
  }
  return absl::OkStatus();
}

void Peers::HoldDropped(std::string_view hold) {
  std::optional<std::string> id = PeerOfHold(hold);
  if (!id.has_value()) return;
  absl::MutexLock l(&dropped_mu_);
  dropped_.insert(*id);
  if (auto it = live_.find(*id); it != live_.end()) it->second->HoldDropped();
}

absl::Status Peers::Replace(const rpc::ListPeersResponse& all) {
  std::map<std::string, rpc::ReplicationPeer> wanted;
  for (const rpc::PeerStatus& st : all.peers()) {
    BASALT_RETURN_IF_ERROR(ValidatePeer(st.peer()));
    wanted[st.peer().id()] = st.peer();
  }
  absl::MutexLock l(&mu_);
  if (stopped_) return absl::UnavailableError("the server is stopping: its replication is");
  const bool first = !replaced_;
  replaced_ = true;
  absl::Status result;
  for (auto it = peers_.begin(); it != peers_.end();) {
    auto next = std::next(it);
    if (wanted.count(it->first) == 0) {
      if (absl::Status s = Drop(it); !s.ok() && result.ok()) result = s;
    }
    it = next;
  }
  for (const auto& [id, config] : wanted) {
    auto it = peers_.find(id);
    if (it != peers_.end() && it->second.config.SerializeAsString() == config.SerializeAsString()) continue;
    if (it == peers_.end()) {
      {
        absl::MutexLock d(&dropped_mu_);
        dropped_.erase(id);
      }
      // The first peers from this run's log's beginning: what it wrote before it heard of them
      // (regions may open here before it does) is theirs. A peer added later, from now on.
      absl::StatusOr<WalPosition> at =
          first ? LogShipper::PlaceAt(options_.env, options_.log, options_.state_dir, id, WalPosition{})
                : LogShipper::Place(options_.env, options_.log, options_.state_dir, id);
      if (!at.ok()) {
        if (result.ok()) result = at.status();
        continue;
      }
      it = peers_.emplace(id, Peer{}).first;
    }
    Peer& peer = it->second;
    SetLive(id, nullptr);
    peer.shipper.reset();  // (its place kept: a new shipper goes on from there)
    peer.config = config;
    if (config.enabled()) {
      if (absl::Status s = StartShipper(&peer); !s.ok() && result.ok()) result = s;
    }
  }
  return result;
}

absl::StatusOr<std::map<std::string, uint64_t>> Peers::DeadLogHolds(Env* env, const std::string& runs_dir,
                                                                   const std::string& dir) {
  BASALT_ASSIGN_OR_RETURN(auto places, ReadPositions(env, absl::StrCat(runs_dir, "/", RunOfLogDir(dir))));
  std::map<std::string, uint64_t> holds;
  for (const auto& [peer, at] : places) holds[HoldName(peer)] = at.segment;
  return holds;
}

void Peers::ShipDeadLogs() {
  absl::MutexLock l(&mu_);
  ShipDeadLogsLocked();
}

void Peers::ShipDeadLogsLocked() {
  if (options_.runs_dir.empty() || stopped_) return;
  Env* env = options_.env;
  auto say = [this](std::string_view line) {
    const std::string text = absl::StrCat("replication: ", AV(line));
    if (options_.say) {
      options_.say(text);
    } else {
      log::Warning(text);
    }
  };
  if (!env->FileExists(options_.runs_dir)) return;
  absl::StatusOr<std::vector<std::string>> runs = env->ListDir(options_.runs_dir);
  if (!runs.ok()) {
    say(absl::StrCat("listing the region servers' places in ", options_.runs_dir, ": ", runs.status().message()));
    return;
  }
  // (A master learns the cluster's id once a dead run needs it: region servers made it then.)
  std::string cluster_id = options_.cluster_id;
  if (cluster_id.empty() && options_.load_cluster_id) {
    if (loaded_cluster_id_.empty()) {
      absl::StatusOr<std::string> loaded = options_.load_cluster_id();
      if (loaded.ok()) loaded_cluster_id_ = *loaded;
      if (!loaded.ok()) say(absl::StrCat("the cluster's id: ", loaded.status().message()));
    }
    cluster_id = loaded_cluster_id_;
  }
  std::set<std::string> seen;
  for (const std::string& run : *runs) {
    const std::string log_dir = absl::StrCat(options_.logs_dir, "/", run);
    if (env->FileExists(log_dir)) continue;  // a live server's, or a dead one's not split yet
    seen.insert(run);
    const std::string state_dir = absl::StrCat(options_.runs_dir, "/", run);
    std::map<std::string, std::unique_ptr<LogShipper>>& shippers = dead_[run];
    absl::StatusOr<std::map<std::string, WalPosition>> places = ReadPositions(env, state_dir);
    if (!places.ok()) {
      say(absl::StrCat("the places of dead server ", run, ": ", places.status().message()));
      continue;
    }
    for (const auto& [id, at] : *places) {
      auto peer = peers_.find(id);
      auto running = shippers.find(id);
      if (running != shippers.end() && running->second->figures().state == LogShipper::State::kDone) {
        running->second.reset();
        shippers.erase(running);
        running = shippers.end();
        // Shipped whole: its place goes (below, the run once it keeps none).
        if (absl::Status s = LogShipper::Forget(env, nullptr, state_dir, id); !s.ok()) say(s.ToString());
        continue;
      }
      if (peer == peers_.end()) {  // removed: nothing more is owed to it
        if (running != shippers.end()) shippers.erase(running);
        if (absl::Status s = LogShipper::Forget(env, nullptr, state_dir, id); !s.ok()) say(s.ToString());
        continue;
      }
      if (!peer->second.config.enabled()) {
        if (running != shippers.end()) shippers.erase(running);  // (its place kept)
        continue;
      }
      if (running != shippers.end()) continue;
      absl::StatusOr<LogShipper::Options> so = ShipperOptions(peer->second.config, state_dir, cluster_id);
      if (!so.ok()) continue;  // (its cluster key was validated when it was added)
      so->finished_dir = log_dir;
      if (options_.post) so->on_done = [this, post = options_.post] { post([this] { ShipDeadLogs(); }); };
      absl::StatusOr<std::unique_ptr<LogShipper>> started = LogShipper::Start(*std::move(so));
      if (!started.ok()) {
        say(absl::StrCat("shipping what dead server ", run, " had not shipped to peer ", id, ": ",
                         started.status().message()));
        continue;
      }
      say(absl::StrCat("shipping what dead server ", run, " had not shipped to peer ", id, " (from ", at.segment, ":",
                       at.offset, ")"));
      shippers[id] = *std::move(started);
    }
    if (!shippers.empty()) continue;
    absl::StatusOr<std::map<std::string, WalPosition>> left = ReadPositions(env, state_dir);
    if (!left.ok() || !left->empty()) continue;  // (a disabled peer's place, kept)
    // Nothing more is owed from this run: what was kept of its log, and its places, go.
    absl::Status s = env->FileExists(HeldLogDir(log_dir)) ? env->RemoveTree(HeldLogDir(log_dir)) : absl::OkStatus();
    if (s.ok()) s = env->RemoveTree(state_dir);
    if (!s.ok()) {
      say(absl::StrCat("removing dead server ", run, "'s shipped log: ", s.message()));
      continue;
    }
    dead_.erase(run);
    say(absl::StrCat("dead server ", run, ": every peer has what it wrote; its log is gone"));
  }
  for (auto it = dead_.begin(); it != dead_.end();) it = seen.count(it->first) == 0 ? dead_.erase(it) : std::next(it);
}

bool Peers::MayReplicate(const rpc::ReplicationPeer& peer, std::string_view table) const {
  if (peer.tables_size() > 0 && std::none_of(peer.tables().begin(), peer.tables().end(),
                                              [&](const rpc::PeerTable& t) { return t.table() == table; })) {
    return false;
  }
  absl::StatusOr<server::TableSpec> spec = options_.tables->Describe(table);
  if (!spec.ok()) return true;  // (a region server that held it earlier may still have its edits)
  return std::any_of(spec->families.begin(), spec->families.end(),
                     [&](const FamilyOptions& f) { return ReplicatedFamily(*spec, f.name); });
}

absl::StatusOr<rpc::ConsistencyToken> Peers::ConsistencyToken() const {
  rpc::ConsistencyToken token;
  if (options_.log != nullptr) {
    const WalPosition end = options_.log->DurableEnd();
    rpc::LogEnd* e = token.add_ends();
    e->set_run(options_.run);
    e->set_segment(end.segment);
    e->set_offset(end.offset);
    return token;
  }
  // A master: the dead runs whose places are still kept (their rest not shipped to every peer).
  Env* env = options_.env;
  if (options_.runs_dir.empty() || !env->FileExists(options_.runs_dir)) return token;
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> runs, env->ListDir(options_.runs_dir));
  for (const std::string& run : runs) {
    rpc::LogEnd* e = token.add_ends();
    e->set_run(run);
    e->set_whole(true);
  }
  return token;
}

absl::StatusOr<std::string> Peers::NotReplicated(std::string_view table, const rpc::ConsistencyToken& token) const {
  Env* env = options_.env;
  absl::MutexLock l(&mu_);
  for (const rpc::LogEnd& e : token.ends()) {
    const WalPosition end{e.segment(), e.offset()};
    std::string state_dir = options_.state_dir;
    if (options_.log != nullptr) {
      if (e.run() != options_.run) continue;  // (another process's)
    } else {
      // A master answers for dead runs: gone once shipped whole.
      state_dir = absl::StrCat(options_.runs_dir, "/", e.run());
      if (!env->FileExists(state_dir)) continue;
      if (env->FileExists(absl::StrCat(options_.logs_dir, "/", e.run()))) {
        return absl::StrCat("server run ", e.run(), ": its log is not split yet (a server that died a moment ago)");
      }
    }
    for (const auto& [id, peer] : peers_) {
      if (!MayReplicate(peer.config, table)) continue;
      WalPosition at;
      if (peer.shipper != nullptr) {
        at = peer.shipper->figures().position;
      } else {
        absl::StatusOr<WalPosition> kept = ReadPosition(env, state_dir, id);
        if (absl::IsNotFound(kept.status())) continue;  // (a dead run's, shipped whole)
        BASALT_RETURN_IF_ERROR(kept.status());
        at = *kept;
      }
      if (e.whole() || at < end) {
        return absl::StrCat("peer ", id, " has ", e.run().empty() ? "the log" : absl::StrCat("run ", e.run()),
                            e.whole() ? " not whole" : absl::StrCat(" up to ", at.segment, ":", at.offset, ", not ",
                                                                    end.segment, ":", end.offset),
                            peer.config.enabled() ? "" : " (the peer is disabled)");
      }
    }
  }
  return std::string();
}

}  // namespace basalt::replication
