#include "storage/server_log.h"

#include <chrono>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/log.h"
#include "common/status.h"
#include "storage/cell.h"
#include "storage/internal/wal.h"
#include "storage/log_tail.h"

namespace basalt {

void ServerLog::Say(std::string_view line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    log::Info(line);
  }
}

ServerLog::ServerLog(const Options& options) : options_(options) {}
ServerLog::~ServerLog() {
  if (wal_ == nullptr) return;  // Open failed before the log started
  if (absl::Status s = wal_->Retire(); !s.ok()) Say(absl::StrCat("closing the server log: ", s.ToString()));
}

absl::StatusOr<std::unique_ptr<ServerLog>> ServerLog::Open(const Options& options_in) {
  Options o = options_in;
  if (o.env == nullptr) o.env = Env::Default();
  if (o.dir.empty()) return absl::InvalidArgumentError("ServerLog::Open: empty dir");
  std::unique_ptr<ServerLog> log(new ServerLog(o));
  BASALT_ASSIGN_OR_RETURN(const bool old, HasWalSegments(o.env, o.dir));
  absl::MutexLock l(&log->mu_);
  // Before this run's log starts: the old newest segment may end in a torn write to cut.
  absl::Status split = old ? log->Split(0) : absl::OkStatus();
  Wal::Options wo;
  wo.env = o.env;
  wo.dir = o.dir;
  wo.roll_size = o.roll_size;
  wo.max_logs = o.max_logs;
  wo.max_held_segments = o.max_held_segments;
  wo.recent_bytes = o.recent_bytes;
  ServerLog* raw = log.get();
  wo.on_hold_dropped = [raw](const std::string& name) {
    raw->PruneHeld();
    if (raw->options_.on_hold_dropped) raw->options_.on_hold_dropped(name);
  };
  BASALT_ASSIGN_OR_RETURN(log->wal_, Wal::Open(wo));
  log->first_own_ = log->wal_->current_segment();
  // (The old segments are not deleted meanwhile: a log keeps them all until Finish.)
  for (const auto& [name, from] : o.holds) log->wal_->Hold(name, from);
  if (old) log->Finish(split);
  log->PruneHeld();
  return log;
}

absl::StatusOr<ServerLog::SplitStats> ServerLog::SplitDeadServerLog(const Options& options) {
  Env* env = options.env == nullptr ? Env::Default() : options.env;
  if (!env->FileExists(options.dir)) return SplitStats{};  // split and removed before
  SplitStats st;
  {
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<ServerLog> log, Open(options));
    BASALT_RETURN_IF_ERROR(log->split_error());
    st = log->split_stats();
  }  // its own (empty) segment retired
  BASALT_RETURN_IF_ERROR(env->RemoveTree(options.dir));
  return st;
}

absl::Status ServerLog::RetrySplit(const std::map<std::string, std::string>& regions,
                                   const std::set<std::string>& tables) {
  absl::MutexLock l(&mu_);
  if (split_error_.ok()) return absl::OkStatus();
  options_.regions = regions;
  options_.tables = tables;
  split_stats_ = SplitStats{};
  blocked_tables_.clear();
  Finish(Split(first_own_));
  return split_error_;
}

void ServerLog::Finish(absl::Status split) {
  if (!split.ok()) {
    split_error_ = split;
    block_all_ = blocked_tables_.empty();
    Say(absl::StrCat("the server log's old segments stay in ", options_.dir, ": ", split.ToString()));
    return;
  }
  split_error_ = absl::OkStatus();
  block_all_ = false;
  // Every record is in its region's recovered.edits, durably: the old segments can go.
  std::string aside;
  if (!split_stats_.damage.empty()) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch()).count();
    aside = absl::StrCat(options_.lost_found.empty() ? options_.dir + "/lost+found" : options_.lost_found, "/wal.", ms);
  }
  // Readers' holds keep the old segments they still need, moved to where only readers look.
  const uint64_t keep = aside.empty() ? std::min(first_own_, wal_->FirstHeldSegment()) : first_own_;
  absl::Status s = wal_->DeleteSegmentsBefore(keep, aside);
  if (s.ok() && keep < first_own_) s = wal_->DeleteSegmentsBefore(first_own_, HeldLogDir(options_.dir));
  if (!s.ok()) {
    // Split whole, so regions may open; the next start splits the segments again (a region
    // skips records it already has).
    Say(absl::StrCat("split the server log but could not remove its old segments: ", s.ToString()));
  } else if (!aside.empty()) {
    Say(absl::StrCat("moved the server log's old segments, with the damage skipped, to ", aside));
  }
}

absl::Status ServerLog::Split(uint64_t below) {
  const Options& o = options_;
  std::map<std::string, std::unique_ptr<Wal>> writers;
  std::map<std::string, uint64_t> unplaced;  // table -> records
  std::set<std::string> dropped;
  ReplayOptions ro;
  ro.mode = o.recovery;
  ro.below = below;
  ReplayStats rs;
  SplitStats st;
  // Stored whatever the outcome (the caller holds mu_; the lambda below cannot say so).
  absl::Cleanup store = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { split_stats_ = st; };
  auto write = [&](const std::string& dir, const WalRecord& rec) -> absl::Status {
    std::unique_ptr<Wal>& w = writers[rec.region];
    if (w == nullptr) {
      Wal::Options wo;
      wo.env = o.env;
      wo.dir = absl::StrCat(dir, "/", kRecoveredEditsDir);
      wo.async_sync_interval_ms = 0;  // synced once, at the end
      BASALT_ASSIGN_OR_RETURN(w, Wal::Open(wo));
    }
    ++st.records;
    return w->Append(rec, Durability::kAsyncWal);
  };
  // A split region's record, edit by edit to the regions now holding their rows (keeping its
  // sequence id: they started above it, so it is never applied twice). False when some row has
  // no such region.
  auto route = [&](const WalRecord& rec, absl::Status* s) {
    if (!o.route) return false;
    std::map<std::string, WalRecord> parts;
    for (const WalEdit& e : rec.edits) {
      const std::string to = o.route(rec.region, ParseFlatKeyUnchecked(e.key).row);
      if (to.empty() || !o.regions.count(to)) return false;
      WalRecord& part = parts[to];
      part.region = to;
      part.seq = rec.seq;
      part.nonce_group = rec.nonce_group;
      part.nonce = rec.nonce;
      part.cluster_ids = rec.cluster_ids;
      part.edits.push_back(e);
    }
    for (const auto& [to, part] : parts) {
      if (s->ok()) *s = write(o.regions.at(to), part);
    }
    ++st.routed_records;
    return true;
  };
  absl::Status s = ReplayWal(o.env, o.dir, ro, [&](const WalRecord& rec) -> absl::Status {
    auto r = o.regions.find(rec.region);
    if (r == o.regions.end()) {
      absl::Status routed;
      if (route(rec, &routed)) return routed;
      const std::string table = o.table_of ? o.table_of(rec.region) : rec.region;
      if (o.tables.count(table) && !o.drop_unknown_regions) {
        ++unplaced[table];
      } else {
        ++st.dropped_records;
        dropped.insert(rec.region);
      }
      return absl::OkStatus();
    }
    return write(r->second, rec);
  }, &rs);
  st.regions = writers.size();
  for (auto& [region, w] : writers) {
    absl::Status synced = w->Sync();
    if (s.ok() && !synced.ok()) s = synced;
  }
  writers.clear();
  st.segments = rs.segments;
  st.truncated_bytes = rs.truncated_bytes;
  st.damage = rs.damage;
  if (rs.truncated_bytes > 0) {
    Say(absl::StrCat("cut a torn tail of the server log (a write a crash cut short, never synced) of ",
                        rs.truncated_bytes, " bytes at ", rs.truncated_at));
  }
  for (const std::string& d : rs.damage) Say(absl::StrCat("skipped server log damage: ", d));
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("splitting the server log in ", o.dir, ": ", s.message()));
  if (!unplaced.empty()) {
    std::string which;
    for (const auto& [table, n] : unplaced) {
      blocked_tables_.insert(table);
      absl::StrAppend(&which, which.empty() ? "" : ", ", n, " of table '", table, "'");
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "the server log in ", o.dir, " holds records (", which,
        ") of regions the server does not know; they are kept and those tables' regions stay closed until a start "
        "splits them: restore the tables' region records, then restart"));
  }
  std::string summary = absl::StrCat("split the server log (", st.segments, " segment(s)): ", st.records,
                                     " record(s) to the recovered.edits of ", st.regions, " region(s)");
  if (st.routed_records > 0) {
    absl::StrAppend(&summary, " (", st.routed_records, " of split regions, sent to the regions that hold their rows now)");
  }
  if (st.dropped_records > 0) {
    absl::StrAppend(&summary, "; dropped ", st.dropped_records, " record(s) of ", dropped.size(),
                    o.drop_unknown_regions ? " region(s) not open on the server (closed and flushed there before)"
                                           : " region(s) whose table is gone");
  }
  if (st.records > 0 || st.dropped_records > 0) Say(summary);  // a clean shutdown leaves nothing to say
  return absl::OkStatus();
}

absl::Status ServerLog::split_error() const {
  absl::MutexLock l(&mu_);
  return split_error_;
}

ServerLog::SplitStats ServerLog::split_stats() const {
  absl::MutexLock l(&mu_);
  return split_stats_;
}

absl::Status ServerLog::MayOpen(std::string_view region) const {
  absl::MutexLock l(&mu_);
  if (split_error_.ok()) return absl::OkStatus();
  const bool blocked = (block_all_ && options_.regions.count(std::string(region))) ||
                       (options_.table_of && blocked_tables_.count(options_.table_of(region)));
  if (!blocked) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "region ", AV(region), " may have edits in the server log that start-up could not split (",
      split_error_.message(), "); it opens once a start splits them"));
}

absl::Status ServerLog::ForgetRegion(const std::string& region) { return wal_->ForgetRegion(region); }

bool ServerLog::HoldsRecordsOf(const std::string& region) const {
  {
    absl::MutexLock l(&mu_);
    if (!split_error_.ok()) return true;
  }
  return wal_->HoldsRecordsOf(region);
}

LogStats ServerLog::GetStats() const { return wal_->GetStats(); }

void ServerLog::Hold(const std::string& name, uint64_t from) {
  wal_->Hold(name, from);
  PruneHeld();
}

void ServerLog::Release(const std::string& name) {
  wal_->Release(name);
  PruneHeld();
}

void ServerLog::PruneHeld() {
  const uint64_t keep = wal_->FirstHeldSegment();
  const std::string held = HeldLogDir(options_.dir);
  if (!options_.env->FileExists(held)) return;
  absl::StatusOr<std::vector<uint64_t>> segments = ListSegments(options_.env, held);
  absl::Status s = segments.status();
  for (uint64_t n : segments.value_or(std::vector<uint64_t>())) {
    if (n >= keep || !s.ok()) break;
    s = options_.env->DeleteFile(WalSegmentPath(held, n));
  }
  if (!s.ok()) Say(absl::StrCat("removing the held log segments readers no longer need: ", s.ToString()));
}

WalPosition ServerLog::DurableEnd() const { return wal_->DurableEnd(); }

std::optional<std::string> ServerLog::ReadRecent(uint64_t segment, uint64_t offset) const {
  return wal_->ReadRecent(segment, offset);
}

}  // namespace basalt
