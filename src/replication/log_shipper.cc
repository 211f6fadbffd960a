#include "src/replication/log_shipper.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/fault_point.h"
#include "common/log.h"
#include "common/status.h"
#include "common/uuid.h"
#include "proto/hbase/hbase_replication.pb.h"
#include "src/base/flags.h"
#include "src/front/hbase/replication_source.h"
#include "src/front/hbase/wire_client.h"
#include "src/schema/region_info.h"
#include "storage/log_tail.h"

namespace basalt::replication {
namespace {

constexpr char kSuffix[] = ".position";

std::string PositionPath(const std::string& dir, std::string_view peer) { return absl::StrCat(dir, "/", AV(peer), kSuffix); }

absl::Status WritePosition(Env* env, const std::string& dir, std::string_view peer, WalPosition at) {
  return env->WriteFileDurably(PositionPath(dir, peer), absl::StrCat(at.segment, " ", at.offset, "\n"));
}

absl::StatusOr<WalPosition> ParsePosition(std::string_view text, const std::string& path) {
  std::vector<absl::string_view> parts = absl::StrSplit(absl::StripAsciiWhitespace(AV(text)), ' ');
  WalPosition p;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &p.segment) || !absl::SimpleAtoi(parts[1], &p.offset)) {
    return absl::DataLossError(absl::StrCat("replication position ", path, ": '", absl::CEscape(AV(text)),
                                            "' is not \"<segment> <offset>\""));
  }
  return p;
}

constexpr char kHoldPrefix[] = "replication:";

}  // namespace

absl::Status LogShipper::CheckPeerId(std::string_view id) {
  const bool valid = !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("replication peer id '", AV(id), "': 1 to 64 of [A-Za-z0-9_-]"));
}

absl::StatusOr<WalPosition> ReadPosition(Env* env, const std::string& state_dir, std::string_view peer) {
  const std::string path = PositionPath(state_dir, peer);
  if (!env->FileExists(path)) return absl::NotFoundError(absl::StrCat("no replication position ", path));
  BASALT_ASSIGN_OR_RETURN(std::string text, env->ReadFileToString(path));
  return ParsePosition(text, path);
}

std::string HoldName(std::string_view peer) { return absl::StrCat(kHoldPrefix, AV(peer)); }

std::optional<std::string> PeerOfHold(std::string_view hold) {
  absl::string_view id = AV(hold);
  if (!absl::ConsumePrefix(&id, kHoldPrefix)) return std::nullopt;
  return std::string(id);
}

absl::StatusOr<std::map<std::string, WalPosition>> ReadPositions(Env* env, const std::string& state_dir) {
  std::map<std::string, WalPosition> out;
  if (!env->FileExists(state_dir)) return out;
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(state_dir));
  for (const std::string& name : names) {
    absl::string_view suffixed = name;
    if (!absl::ConsumeSuffix(&suffixed, kSuffix)) continue;
    const std::string peer(suffixed);
    if (!LogShipper::CheckPeerId(peer).ok()) continue;
    BASALT_ASSIGN_OR_RETURN(out[peer], ReadPosition(env, state_dir, peer));
  }
  return out;
}

const char* LogShipper::StateName(State s) {
  switch (s) {
    case State::kShipping:
      return "SHIPPING";
    case State::kRetrying:
      return "RETRYING";
    case State::kBroken:
      return "BROKEN";
    case State::kDone:
      return "DONE";
  }
  return "?";
}

LogShipper::LogShipper(Options options) : options_(std::move(options)) { source_.cluster_id = options_.cluster_id; }

absl::StatusOr<WalPosition> LogShipper::Place(Env* env, ServerLog* log, const std::string& state_dir,
                                              std::string_view peer) {
  if (env == nullptr) env = Env::Default();
  BASALT_RETURN_IF_ERROR(CheckPeerId(peer));
  absl::StatusOr<WalPosition> kept = ReadPosition(env, state_dir, peer);
  if (!kept.ok() && !absl::IsNotFound(kept.status())) return kept.status();
  return PlaceAt(env, log, state_dir, peer, kept.ok() ? *kept : log->DurableEnd());
}

absl::StatusOr<WalPosition> LogShipper::PlaceAt(Env* env, ServerLog* log, const std::string& state_dir,
                                                std::string_view peer, WalPosition at) {
  if (env == nullptr) env = Env::Default();
  BASALT_RETURN_IF_ERROR(CheckPeerId(peer));
  BASALT_RETURN_IF_ERROR(env->CreateDirs(state_dir));
  log->Hold(HoldName(peer), at.segment);
  BASALT_RETURN_IF_ERROR(WritePosition(env, state_dir, peer, at));
  return at;
}

absl::Status LogShipper::Forget(Env* env, ServerLog* log, const std::string& state_dir, std::string_view peer) {
  if (env == nullptr) env = Env::Default();
  const std::string path = PositionPath(state_dir, peer);
  if (env->FileExists(path)) BASALT_RETURN_IF_ERROR(env->DeleteFile(path));
  if (log != nullptr) log->Release(HoldName(peer));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LogShipper>> LogShipper::Start(Options o) {
  if (o.env == nullptr) o.env = Env::Default();
  if ((o.log == nullptr) == o.finished_dir.empty()) {
    return absl::InvalidArgumentError("a replication shipper needs the server's log, or a finished log's directory");
  }
  if (!ParseUuid(o.cluster_id).has_value()) {
    // (Every batch would be refused by the converter: refused here, once, instead.)
    return absl::InvalidArgumentError(absl::StrCat("replication to peer ", o.peer, ": this cluster's id '",
                                                   o.cluster_id, "' is not a UUID"));
  }
  if (!o.find_sink || !o.scope) {
    return absl::InvalidArgumentError(absl::StrCat("replication to peer ", o.peer, ": no sink or no scope given"));
  }
  WalPosition at, end;
  if (o.log != nullptr) {
    BASALT_ASSIGN_OR_RETURN(at, Place(o.env, o.log, o.state_dir, o.peer));
  } else {
    BASALT_ASSIGN_OR_RETURN(at, ReadPosition(o.env, o.state_dir, o.peer));
    BASALT_ASSIGN_OR_RETURN(end, FinishedLogEnd(o.env, o.finished_dir));
  }
  std::unique_ptr<LogShipper> s(new LogShipper(std::move(o)));
  s->finished_end_ = end;
  {
    absl::MutexLock l(&s->mu_);
    s->figures_.position = at;
  }
  s->thread_ = std::thread([raw = s.get()] { raw->Run(); });
  return s;
}

LogShipper::~LogShipper() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

LogShipper::Figures LogShipper::figures() const {
  Figures f;
  {
    absl::MutexLock l(&mu_);
    f = figures_;
  }
  f.lag_bytes = LogBytesBetween(options_.env, dir(), f.position, End());
  return f;
}

void LogShipper::HoldDropped() {
  absl::MutexLock l(&mu_);
  broken_ = true;
}

void LogShipper::Say(std::string_view line) const {
  const std::string text = absl::StrCat("replication to peer ", options_.peer, ": ", AV(line));
  if (options_.say) {
    options_.say(text);
  } else {
    log::Warning(text);
  }
}

bool LogShipper::Pause(absl::Duration d) {
  absl::MutexLock l(&mu_);
  return !mu_.AwaitWithTimeout(absl::Condition(&stop_), d);
}

absl::Status LogShipper::SavePosition(WalPosition at) {
  return WritePosition(options_.env, options_.state_dir, options_.peer, at);
}

absl::StatusOr<WalPosition> LogShipper::ShipOnce(WalPosition at, WalPosition end) {
  source_.now_ms = absl::ToUnixMillis(absl::Now());
  source_.replicated = options_.scope();
  hbase::SourceBatch batch;
  WalPosition reached;
  // A live log's newest bytes come from memory: a shipper that keeps up reads no file.
  RecentLogBytes recent;
  if (options_.log != nullptr) {
    recent = [log = options_.log](uint64_t segment, uint64_t offset) { return log->ReadRecent(segment, offset); };
  }
  auto read = [&] {
    batch.Clear();
    return ReadLogFrom(
        options_.env, dir(), at, end, options_.max_batch_bytes,
        [&](const WalRecord& rec, const WalPosition&) {
          return hbase::AddToSourceBatch(rec, server::TableOfRegionName(rec.region), source_, &batch);
        },
        &reached, recent);
  };
  BASALT_RETURN_IF_ERROR(read());
  if (batch.request.entry_size() > 0) {
    const auto timeout = absl::ToChronoMilliseconds(options_.call_timeout);
    if (sink_ == nullptr) {
      BASALT_ASSIGN_OR_RETURN(const Sink found, options_.find_sink());
      sink_address_ = found.address;
      const std::optional<Uuid> peer = ParseUuid(found.cluster_id);
      if (!peer.has_value()) {
        return absl::UnavailableError(absl::StrCat("sink ", found.address, ": its cluster id '", found.cluster_id,
                                                   "' is not a UUID"));
      }
      if (source_.peer != peer) {  // (the records that came through it are not its to get)
        source_.peer = peer;
        BASALT_RETURN_IF_ERROR(read());
        if (batch.request.entry_size() == 0) return reached;
      }
      std::string host;
      int port = 0;
      BASALT_RETURN_IF_ERROR(server::SplitHostPort(sink_address_, &host, &port));
      absl::StatusOr<std::unique_ptr<hbase::WireClient>> dialed =
          hbase::WireClient::Dial(host, port, "AdminService", "basalt", timeout);
      if (!dialed.ok()) {
        return absl::Status(dialed.status().code(), absl::StrCat("sink ", sink_address_, ": ", dialed.status().message()));
      }
      sink_ = *std::move(dialed);
    }
    const uint32_t id = next_call_++;
    absl::StatusOr<hbase::Answer> answer = absl::UnavailableError("the call could not be sent");
    if (sink_->Call(id, "ReplicateWALEntry", batch.request, batch.cell_block,
                    static_cast<uint32_t>(timeout.count()))) {
      answer = sink_->Read(timeout);
    }
    if (answer.ok() && answer->header.call_id() != id) {
      answer = absl::InternalError(absl::StrCat("the sink answered call ", answer->header.call_id(), " for call ", id));
    }
    if (!answer.ok()) {
      sink_.reset();  // (a late answer must not be taken for the next call's)
      return absl::Status(answer.status().code(), absl::StrCat("sink ", sink_address_, ": ", answer.status().message()));
    }
    if (answer->header.has_exception()) {
      const hbase::ExceptionResponse& e = answer->header.exception();
      sink_.reset();  // (the next try asks for a sink again: this one may be the wrong cluster's)
      return absl::UnavailableError(absl::StrCat("sink ", sink_address_, " refused the batch: ", e.exception_class_name(),
                                                 ": ", e.stack_trace().substr(0, 500)));
    }
    uint64_t newest = 0;
    for (const hbase::WALEntry& e : batch.request.entry()) newest = std::max(newest, e.key().write_time());
    absl::MutexLock l(&mu_);
    figures_.entries += static_cast<uint64_t>(batch.request.entry_size());
    figures_.cells += batch.cells;
    ++figures_.batches;
    figures_.age_ms = std::max<int64_t>(0, absl::ToUnixMillis(absl::Now()) - static_cast<int64_t>(newest));
  }
  return reached;
}

void LogShipper::Run() {
  WalPosition at;
  {
    absl::MutexLock l(&mu_);
    at = figures_.position;
  }
  WalPosition saved = at;
  absl::Time saved_when = absl::Now();
  absl::Duration backoff = absl::Milliseconds(100);
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      if (stop_) break;
      if (broken_ && figures_.state != State::kBroken) {
        figures_.state = State::kBroken;
        figures_.last_error = "its log was dropped: the server kept no more of it for this peer (max_held_segments)";
        Say(absl::StrCat("BROKEN: ", figures_.last_error, "; copy the tables to the peer anew and add it again"));
      }
      if (figures_.state == State::kBroken) {
        mu_.Await(absl::Condition(&stop_));
        break;
      }
    }
    const WalPosition end = End();
    if (!(at < end)) {
      if (options_.log == nullptr) {  // a finished log, shipped whole
        if (absl::Status s = SavePosition(at); !s.ok()) {
          Say(absl::StrCat("keeping its place: ", s.ToString()));
          if (!Pause(options_.idle_poll)) break;
          continue;
        }
        saved = at;
        {
          absl::MutexLock l(&mu_);
          figures_.position = at;
          figures_.state = State::kDone;
        }
        if (options_.on_done) options_.on_done();
        break;
      }
      if (!Pause(options_.idle_poll)) break;
      continue;
    }
    absl::StatusOr<WalPosition> reached = ShipOnce(at, end);
    if (!reached.ok()) {
      const bool lost = absl::IsNotFound(reached.status());
      {
        absl::MutexLock l(&mu_);
        ++figures_.failed_calls;
        figures_.last_error = reached.status().ToString();
        figures_.state = lost ? State::kBroken : State::kRetrying;
        if (lost) broken_ = true;
      }
      Say(absl::StrCat(reached.status().ToString(), lost ? "" : absl::StrCat("; again in ", absl::FormatDuration(backoff))));
      if (!Pause(backoff)) break;
      backoff = std::min(backoff * 2, absl::Seconds(10));
      continue;
    }
    backoff = absl::Milliseconds(100);
    at = *reached;
    if (options_.log == nullptr) FaultPoint("replication:dead-log-batch-shipped");  // (a master's crash tests)
    {
      absl::MutexLock l(&mu_);
      figures_.position = at;
      figures_.state = State::kShipping;
    }
    if (at.segment != saved.segment || absl::Now() - saved_when > absl::Seconds(1)) {
      if (absl::Status s = SavePosition(at); !s.ok()) {
        Say(absl::StrCat("keeping its place: ", s.ToString()));
      } else {
        // The log may let go of what is behind the kept place.
        if (at.segment != saved.segment && options_.log != nullptr) options_.log->Hold(HoldName(options_.peer), at.segment);
        saved = at;
        saved_when = absl::Now();
      }
    }
    // Caught up with what was durable when the batch began: wait as when idle before reading
    // again. Under a steady stream of writes the log is then read some 20 times a second, not
    // once per round trip to the peer; on RADOS each read opens the segment (a read per
    // directory of its path and a stat) on the OSDs that take the writes (BENCHMARKS §23).
    if (!(at < end) && options_.log != nullptr && !Pause(options_.idle_poll)) break;
  }
  if (!(saved == at)) {
    if (absl::Status s = SavePosition(at); !s.ok()) Say(absl::StrCat("keeping its place: ", s.ToString()));
  }
  sink_.reset();
}

}  // namespace basalt::replication
