#include "storage/record_log.h"

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/status.h"
#include "storage/cell.h"
#include "storage/internal/wal.h"

namespace basalt {

namespace {

// The WAL's records carry a region, a sequence id and edits of cells; a record log's carry its
// record as the value of one edit of family "r" and an empty cell key, under region "r" (the
// region "" is the segment headers').
constexpr char kFamily[] = "r";

WalRecord Wrap(std::string_view record, uint64_t seq) {
  WalRecord rec;
  rec.region = kFamily;
  rec.seq = seq;
  WalEdit& e = rec.edits.emplace_back();
  e.family = kFamily;
  e.key.resize(kKeyOverhead);
  e.value.assign(record.data(), record.size());
  return rec;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RecordLog>> RecordLog::Open(const Options& options,
                                                           const std::function<absl::Status(std::string_view)>& replay) {
  Env* env = options.env != nullptr ? options.env : Env::Default();
  std::unique_ptr<RecordLog> log(new RecordLog());
  log->name_ = options.name.empty() ? options.dir : options.name;
  BASALT_RETURN_IF_ERROR(env->CreateDirs(options.dir));
  absl::Status s = ReplayWal(
      env, options.dir,
      [&](const WalRecord& rec) -> absl::Status {
        if (rec.edits.size() != 1 || rec.edits[0].family != kFamily) {
          return absl::DataLossError(absl::StrCat(log->name_, " in ", options.dir, ": record ", rec.seq, " has ",
                                                  rec.edits.size(), " parts, not 1 of family ", kFamily));
        }
        return replay(rec.edits[0].value);
      },
      nullptr);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("replaying ", log->name_, ": ", s.message()));
  Wal::Options wo;
  wo.env = env;
  wo.dir = options.dir;
  BASALT_ASSIGN_OR_RETURN(log->wal_, Wal::Open(wo));
  return log;
}

RecordLog::~RecordLog() = default;

absl::Status RecordLog::Append(std::string_view record, Durability d) {
  absl::ReaderMutexLock l(&mu_);
  bytes_since_checkpoint_.fetch_add(record.size(), std::memory_order_relaxed);
  return wal_->Append(Wrap(record, 0), d);
}

absl::Status RecordLog::Checkpoint(const std::function<std::string()>& take_state) {
  absl::MutexLock l(&mu_);
  BASALT_ASSIGN_OR_RETURN(uint64_t segment, wal_->Roll());
  BASALT_RETURN_IF_ERROR(wal_->Append(Wrap(take_state(), segment), Durability::kSyncWal));
  bytes_since_checkpoint_.store(0, std::memory_order_relaxed);
  return wal_->DeleteSegmentsBefore(segment);
}

uint64_t RecordLog::BytesSinceCheckpoint() const { return bytes_since_checkpoint_.load(std::memory_order_relaxed); }

}  // namespace basalt
