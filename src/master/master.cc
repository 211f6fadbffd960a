#include "src/master/master.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status.h"

namespace basalt::master {

Master::Master(Options options) : options_(std::move(options)) {}

Master::~Master() {
  zk_.reset();  // ends the session: no callback runs after this, and a backup takes over at once
}

absl::StatusOr<std::unique_ptr<Master>> Master::Start(Options options) {
  std::unique_ptr<Master> m(new Master(std::move(options)));
  Master* raw = m.get();
  ZooKeeper::Options zo = raw->options_.zk;
  zo.on_expired = [raw] {
    raw->Log("ZooKeeper session expired: a backup master takes over; stopping now");
    std::_Exit(3);
  };
  BASALT_ASSIGN_OR_RETURN(raw->zk_, ZooKeeper::Connect(zo));
  raw->election_ = std::make_unique<LeaderElection>(raw->zk_.get(), raw->options_.paths.masters(), raw->options_.name,
                                                    [raw] { raw->BecomeActive(); });
  BASALT_RETURN_IF_ERROR(raw->election_->Start());
  if (!raw->active()) {
    absl::StatusOr<std::optional<std::string>> leader = LeaderElection::Leader(raw->zk_.get(), raw->options_.paths.masters());
    raw->Log(absl::StrCat("backup master; the active one is ",
                          leader.ok() && leader->has_value() ? **leader : std::string("(none yet)")));
  }
  return m;
}

bool Master::active() const {
  absl::MutexLock l(&mu_);
  return active_;
}

std::vector<std::string> Master::LiveServers() const {
  absl::MutexLock l(&mu_);
  return live_;
}

void Master::Log(std::string_view line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    std::cerr << "basalt-master: " << line << std::endl;
  }
}

void Master::BecomeActive() {
  {
    absl::MutexLock l(&mu_);
    active_ = true;
  }
  Log(absl::StrCat("active master (", options_.name, ")"));
  const server::ClusterPaths& p = options_.paths;
  for (const std::string& dir : {p.live(), p.servers(), p.fenced()}) {
    if (absl::Status s = zk_->CreatePath(dir); !s.ok()) Log(absl::StrCat("making ", dir, ": ", s.message()));
  }
  Reconcile();
}

void Master::Reconcile() {
  absl::MutexLock rl(&reconcile_mu_);
  const server::ClusterPaths& p = options_.paths;
  absl::StatusOr<std::vector<std::string>> live = zk_->Children(p.live(), [this] { Reconcile(); });
  if (!live.ok()) {
    Log(absl::StrCat("listing live servers: ", live.status().message()));
    return;
  }
  {
    absl::MutexLock l(&mu_);
    live_ = *live;
  }
  absl::StatusOr<std::vector<std::string>> registered = zk_->Children(p.servers());
  if (!registered.ok()) {
    Log(absl::StrCat("listing registered servers: ", registered.status().message()));
    return;
  }
  for (const std::string& node : *registered) {
    if (std::binary_search(live->begin(), live->end(), node)) continue;
    absl::StatusOr<std::optional<ZkNode>> data = zk_->Get(p.servers() + "/" + node);
    if (!data.ok() || !data->has_value()) continue;  // another master handled it meanwhile
    absl::StatusOr<server::ServerRegistration> reg = server::ServerRegistration::Decode((*data)->data);
    if (!reg.ok()) {
      Log(absl::StrCat("server ", node, ": ", reg.status().message(), "; left for an operator"));
      continue;
    }
    if (absl::Status s = FenceServer(node, *reg); !s.ok()) {
      Log(absl::StrCat("server ", node, " is gone but could not be fenced: ", s.message(),
                       " (its regions stay closed until it is)"));
    }
  }
}

absl::Status Master::FenceServer(const std::string& node, const server::ServerRegistration& reg) {
  const server::ClusterPaths& p = options_.paths;
  const absl::Time start = absl::Now();
  std::string how;
  if (reg.rados_client.empty()) {
    how = "nothing to fence: it kept no files on shared storage";
  } else if (options_.rados == nullptr) {
    return absl::FailedPreconditionError("this master has no shared storage configured (rados_pool)");
  } else {
    BASALT_RETURN_IF_ERROR(options_.rados->Fence(reg.rados_client));
    how = absl::StrCat("RADOS client ", reg.rados_client, " blocklisted, newest OSD map, every placement group written");
  }
  const int64_t took_ms = absl::ToInt64Milliseconds(absl::Now() - start);
  const std::string record = absl::StrCat(reg.Encode(), "fenced_at_ms=", absl::ToUnixMillis(absl::Now()), "\ntook_ms=",
                                          took_ms, "\nby=", options_.name, "\nhow=", how, "\n");
  absl::StatusOr<std::string> made = zk_->Create(p.fenced() + "/" + node, record, ZooKeeper::Mode::kPersistent);
  if (!made.ok() && !absl::IsAlreadyExists(made.status())) return made.status();
  absl::Status gone = zk_->Delete(p.servers() + "/" + node);
  if (!gone.ok() && !absl::IsNotFound(gone)) return gone;
  Log(absl::StrCat("server ", node, " is gone: fenced in ", took_ms, " ms (", how, ")"));
  return absl::OkStatus();
}

}  // namespace basalt::master
