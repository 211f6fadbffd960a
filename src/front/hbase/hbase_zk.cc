#include "src/front/hbase/hbase_zk.h"

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
  BASALT_RETURN_IF_ERROR(zk->CreatePath(o.parent));
  BASALT_RETURN_IF_ERROR(Put(zk, absl::StrCat(o.parent, "/", kClusterIdNode), ZkRecord(kWriter, ClusterIdOf(o.cluster_id)),
                             ZooKeeper::Mode::kPersistent));
  BASALT_RETURN_IF_ERROR(Put(zk, absl::StrCat(o.parent, "/", kMasterNode),
                             ZkRecord(kWriter, MasterRecordOf(o.self, o.info_port)), ZooKeeper::Mode::kEphemeral));
  return Put(zk, absl::StrCat(o.parent, "/", kMetaRegionServerNode), ZkRecord(kWriter, MetaRecordOf(o.self)),
             ZooKeeper::Mode::kEphemeral);
}

absl::StatusOr<std::unique_ptr<ZkPublisher>> ZkPublisher::Start(Options options) {
  std::unique_ptr<ZkPublisher> p(new ZkPublisher(std::move(options)));
  BASALT_RETURN_IF_ERROR(p->Connect());
  return p;
}

absl::Status ZkPublisher::Connect() {
  ZooKeeper::Options s = options_.session;
  // An expired session took the ephemeral records with it: say so; the server goes on serving
  // its clients, which already know where it is, and a restart publishes again.
  s.on_expired = [log = options_.log](std::string_view why) {
    if (log) log(absl::StrCat("the HBase records' ZooKeeper session ended (", AV(why), "): new HBase clients that look "
                              "in ZooKeeper will not find this server until it restarts"));
  };
  BASALT_ASSIGN_OR_RETURN(zk_, ZooKeeper::Connect(s));
  return Publish(zk_.get(), options_);
}

ZkPublisher::~ZkPublisher() = default;

}  // namespace basalt::hbase
