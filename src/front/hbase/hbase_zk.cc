#include "src/front/hbase/hbase_zk.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "src/front/hbase/zk_records.h"

namespace basalt::hbase {
namespace {

// The writer's id in each record's metadata, as HBase's RecoverableZooKeeper writes its own.
constexpr char kWriter[] = "basalt";

// Writes `data` at `path` in `mode`: a node left by an earlier session (an ephemeral one lives
// until that session times out) is replaced.
absl::Status Put(ZooKeeper* zk, const std::string& path, const std::string& data, ZooKeeper::Mode mode) {
  absl::StatusOr<std::string> made = zk->Create(path, data, mode, ZooKeeper::Readers::kAnyone);
  if (made.ok()) return absl::OkStatus();
  if (made.status().code() != absl::StatusCode::kAlreadyExists) return made.status();
  if (mode == ZooKeeper::Mode::kPersistent) return zk->Set(path, data);
  // (Gone meanwhile, with the session that made it: fine.)
  if (absl::Status gone = zk->Delete(path); !gone.ok() && gone.code() != absl::StatusCode::kNotFound) return gone;
  return zk->Create(path, data, mode, ZooKeeper::Readers::kAnyone).status();
}

}  // namespace

absl::Status ZkPublisher::Publish(ZooKeeper* zk, const Options& o) {
  // (World-readable, as a secure HBase's own: its clients, and a replicating HBase cluster that
  // lists rs/, have no identity. Only the cluster's identity may change them.)
  BASALT_RETURN_IF_ERROR(zk->CreatePath(o.parent, ZooKeeper::Readers::kAnyone));
  if (!o.session.digest.empty()) {
    // Made before the identity (open to anyone, as every HBase parent was before a master could
    // publish under one): anyone could delete master/ and name another address.
    for (const std::string& path : {o.parent, absl::StrCat(o.parent, "/", kClusterIdNode),
                                    absl::StrCat(o.parent, "/", kRegionServersNode)}) {
      absl::StatusOr<bool> open = zk->OpenToAnyone(path);
      if (absl::IsNotFound(open.status())) continue;
      if (!open.ok()) return open.status();
      if (*open) {
        return absl::FailedPreconditionError(absl::StrCat(
            "ZooKeeper node ", path, " may be changed by anyone (world:anyone): it was made before the cluster had "
            "an identity, and HBase's clients would trust whatever anyone wrote under it. Remove it (zkCli.sh "
            "deleteall ", o.parent, ") while the master is stopped, or set its ACL (setAcl -R ", o.parent,
            " auth::cdrwa,world:anyone:r, as the identity)"));
      }
    }
  }
  BASALT_RETURN_IF_ERROR(Put(zk, absl::StrCat(o.parent, "/", kClusterIdNode), ZkRecord(kWriter, ClusterIdOf(o.cluster_id)),
                             ZooKeeper::Mode::kPersistent));
  BASALT_RETURN_IF_ERROR(Put(zk, absl::StrCat(o.parent, "/", kMasterNode),
                             ZkRecord(kWriter, MasterRecordOf(o.self, o.info_port)), ZooKeeper::Mode::kEphemeral));
  BASALT_RETURN_IF_ERROR(Put(zk, absl::StrCat(o.parent, "/", kMetaRegionServerNode), ZkRecord(kWriter, MetaRecordOf(o.self)),
                             ZooKeeper::Mode::kEphemeral));
  return SyncSinks(zk, o.parent, o.sinks);
}

absl::Status ZkPublisher::SyncSinks(ZooKeeper* zk, const std::string& parent, const std::vector<ServerName>& sinks) {
  const std::string rs = absl::StrCat(parent, "/", kRegionServersNode);
  BASALT_RETURN_IF_ERROR(zk->CreatePath(rs, ZooKeeper::Readers::kAnyone));
  std::vector<std::string> wanted;
  for (const ServerName& sink : sinks) wanted.push_back(ServerNodeName(sink));
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> listed, zk->Children(rs));
  for (const std::string& node : listed) {
    if (std::find(wanted.begin(), wanted.end(), node) != wanted.end()) continue;
    if (absl::Status s = zk->Delete(absl::StrCat(rs, "/", node)); !s.ok() && !absl::IsNotFound(s)) return s;
  }
  for (const std::string& node : wanted) {
    // (One listed already is this session's or a gone one's: Put replaces it either way.)
    BASALT_RETURN_IF_ERROR(Put(zk, absl::StrCat(rs, "/", node), "", ZooKeeper::Mode::kEphemeral));
  }
  return absl::OkStatus();
}

void ZkPublisher::SetSinks(std::vector<ServerName> sinks) {
  absl::MutexLock l(&mu_);
  sinks_ = std::move(sinks);
  sinks_changed_ = true;
}

absl::StatusOr<std::unique_ptr<ZkPublisher>> ZkPublisher::Start(Options options) {
  std::unique_ptr<ZkPublisher> p(new ZkPublisher(std::move(options)));
  BASALT_RETURN_IF_ERROR(p->Connect());
  p->thread_ = std::thread([raw = p.get()] { raw->Republish(); });
  return p;
}

absl::Status ZkPublisher::Connect() {
  zk_.reset();  // (an expired session's: every call on it fails)
  ZooKeeper::Options s = options_.session;
  // (Runs on the session's thread: it only wakes Republish, which makes the new session.)
  s.on_expired = [this](std::string_view why) {
    if (options_.log) {
      options_.log(absl::StrCat("the HBase records' ZooKeeper session ended (", AV(why),
                                "): writing them again in a new session"));
    }
    absl::MutexLock l(&mu_);
    expired_ = true;
  };
  BASALT_ASSIGN_OR_RETURN(zk_, ZooKeeper::Connect(s));
  Options now = options_;
  {
    absl::MutexLock l(&mu_);
    now.sinks = sinks_;
    sinks_changed_ = false;
  }
  return Publish(zk_.get(), now);
}

void ZkPublisher::Republish() {
  for (;;) {
    std::optional<std::vector<ServerName>> sinks;
    {
      absl::MutexLock l(&mu_);
      mu_.Await(absl::Condition(
          +[](ZkPublisher* p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) { return p->expired_ || p->stop_ || p->sinks_changed_; },
          this));
      if (stop_) return;
      if (!expired_) {
        sinks = sinks_;
        sinks_changed_ = false;
      }
      expired_ = false;
    }
    if (sinks.has_value()) {
      if (options_.entitled && !options_.entitled()) continue;  // (a successor lists its own)
      // (An expiry meanwhile: the new session writes the list.)
      absl::Status s = SyncSinks(zk_.get(), options_.parent, *sinks);
      if (s.ok()) continue;
      if (options_.log) options_.log(absl::StrCat("listing the replication sinks under rs/: ", s.message(), "; again in 1 s"));
      absl::MutexLock l(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stop_), absl::Seconds(1))) return;
      sinks_changed_ = true;
      continue;
    }
    for (;;) {
      if (options_.entitled && !options_.entitled()) {
        if (options_.log) options_.log("the HBase records are not written again: this server no longer holds them");
        return;
      }
      absl::Status s = Connect();
      if (s.ok()) {
        if (options_.log) options_.log("the HBase records are written again");
        break;
      }
      if (options_.log) options_.log(absl::StrCat("writing the HBase records again: ", s.message(), "; again in 1 s"));
      absl::MutexLock l(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stop_), absl::Seconds(1))) return;
    }
  }
}

ZkPublisher::~ZkPublisher() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  zk_.reset();
}

}  // namespace basalt::hbase
