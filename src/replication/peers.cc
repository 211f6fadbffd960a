#include "src/replication/peers.h"

#include <algorithm>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "common/zookeeper.h"
#include "proto/hbase/hbase_cluster.pb.h"
#include "src/front/hbase/zk_records.h"
#include "src/schema/catalog_file.h"
#include "storage/log_tail.h"

namespace basalt::replication {
namespace {

constexpr char kPeersFile[] = "peers";
constexpr char kScopeAttribute[] = "REPLICATION_SCOPE";

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
  auto it = spec.kept_by_family.find(std::string(family));
  if (it == spec.kept_by_family.end()) return false;
  for (const auto& [key, value] : it->second.attributes) {
    int scope = 0;
    if (key == kScopeAttribute) return absl::SimpleAtoi(value, &scope) && scope != 0;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<Peers>> Peers::Open(Options o) {
  if (o.env == nullptr) o.env = Env::Default();
  if (o.log == nullptr || o.tables == nullptr) return absl::InvalidArgumentError("replication peers need a log and tables");
  std::unique_ptr<Peers> p(new Peers(std::move(o)));
  Env* env = p->options_.env;
  const std::string path = PeersPath(p->options_.state_dir);
  rpc::ListPeersResponse kept;  // (its PeerStatus.peer fields: the peers file's form)
  if (env->FileExists(path)) {
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

absl::Status Peers::StartShipper(Peer* peer) {
  if (stopped_) return absl::UnavailableError("the server is stopping: its replication is");
  LogShipper::Options so;
  so.env = options_.env;
  so.log = options_.log;
  so.state_dir = options_.state_dir;
  so.peer = peer->config.id();
  so.cluster_id = options_.cluster_id;
  so.idle_poll = options_.idle_poll;
  so.say = options_.say;
  const rpc::ReplicationPeer config = peer->config;
  if (options_.find_sink) {
    so.find_sink = [find = options_.find_sink, config] { return find(config); };
  } else {
    BASALT_ASSIGN_OR_RETURN(ClusterKey key, ParseClusterKey(config.cluster_key()));
    so.find_sink = [key, own = options_.cluster_id] { return FindSink(key, own); };
  }
  so.scope = [this, config] { return ScopeNow(config); };
  BASALT_ASSIGN_OR_RETURN(peer->shipper, LogShipper::Start(std::move(so)));
  SetLive(config.id(), peer->shipper.get());
  return absl::OkStatus();
}

absl::Status Peers::AddPeer(const rpc::ReplicationPeer& config) {
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
  BASALT_RETURN_IF_ERROR(LogShipper::Place(options_.env, options_.log, options_.state_dir, config.id()).status());
  Peer& peer = peers_[config.id()];
  peer.config = config;
  absl::Status s = Save();
  if (s.ok() && config.enabled()) s = StartShipper(&peer);
  if (!s.ok()) {
    peers_.erase(config.id());
    (void)LogShipper::Forget(options_.env, options_.log, options_.state_dir, config.id());
    (void)Save();
  }
  return s;
}

absl::Status Peers::RemovePeer(std::string_view id) {
  absl::MutexLock l(&mu_);
  auto it = peers_.find(std::string(id));
  if (it == peers_.end()) return NoSuchPeer(id);
  SetLive(it->first, nullptr);
  it->second.shipper.reset();
  const std::string name = it->first;
  peers_.erase(it);
  BASALT_RETURN_IF_ERROR(Save());
  return LogShipper::Forget(options_.env, options_.log, options_.state_dir, name);
}

absl::Status Peers::UpdatePeer(const rpc::ReplicationPeer& config) {
  BASALT_RETURN_IF_ERROR(ValidatePeer(config));
  absl::MutexLock l(&mu_);
  auto it = peers_.find(config.id());
  if (it == peers_.end()) return NoSuchPeer(config.id());
  Peer& peer = it->second;
  const rpc::ReplicationPeer before = peer.config;
  peer.config = config;
  peer.config.set_enabled(before.enabled());
  if (absl::Status s = Save(); !s.ok()) {
    peer.config = before;
    return s;
  }
  if (peer.shipper == nullptr) return absl::OkStatus();
  SetLive(it->first, nullptr);
  peer.shipper.reset();  // (its place kept: the new shipper goes on from there)
  return StartShipper(&peer);
}

absl::Status Peers::SetPeerEnabled(std::string_view id, bool enabled) {
  absl::MutexLock l(&mu_);
  auto it = peers_.find(std::string(id));
  if (it == peers_.end()) return NoSuchPeer(id);
  Peer& peer = it->second;
  if (peer.config.enabled() == enabled) return absl::OkStatus();
  peer.config.set_enabled(enabled);
  if (absl::Status s = Save(); !s.ok()) {
    peer.config.set_enabled(!enabled);
    return s;
  }
  if (enabled) return StartShipper(&peer);
  SetLive(it->first, nullptr);
  peer.shipper.reset();  // (its place kept, and held)
  return absl::OkStatus();
}

absl::Status Peers::ListPeers(rpc::ListPeersResponse* resp) const {
  absl::MutexLock l(&mu_);
  for (const auto& [id, peer] : peers_) {
    rpc::PeerStatus* st = resp->add_peers();
    *st->mutable_peer() = peer.config;
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

}  // namespace basalt::replication
