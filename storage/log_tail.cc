#include "storage/log_tail.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/status.h"
#include "storage/internal/wal.h"

namespace basalt {
namespace {

constexpr uint64_t kChunk = 1 << 20;  // bytes read from a segment at a time (more for a larger record)

// The segments of the log in `dir` and those held for its readers (HeldLogDir), ascending.
// (A dead server's log, split, is only its held segments.)
absl::StatusOr<std::vector<uint64_t>> AllSegments(Env* env, const std::string& dir) {
  std::vector<uint64_t> segments;
  if (env->FileExists(dir)) {
    BASALT_ASSIGN_OR_RETURN(segments, ListSegments(env, dir));
  }
  if (env->FileExists(HeldLogDir(dir))) {
    BASALT_ASSIGN_OR_RETURN(std::vector<uint64_t> held, ListSegments(env, HeldLogDir(dir)));
    segments.insert(segments.end(), held.begin(), held.end());
    std::sort(segments.begin(), segments.end());
  }
  return segments;
}

// The segment after `segment` that exists (in the log or among the held ones), no later than
// `last`; NotFound when none does.
absl::StatusOr<uint64_t> NextSegment(Env* env, const std::string& dir, uint64_t segment, uint64_t last) {
  BASALT_ASSIGN_OR_RETURN(std::vector<uint64_t> segments, AllSegments(env, dir));
  auto it = std::upper_bound(segments.begin(), segments.end(), segment);
  if (it == segments.end() || *it > last) {
    return absl::NotFoundError(absl::StrCat("log ", dir, ": no segment after ", segment, " up to ", last,
                                            " (deleted before it was read: the reader's hold was dropped)"));
  }
  return *it;
}

// A segment's bytes from `base` on, held in memory (Wal::ReadRecent): read as its file would be
// from there.
class RecentSegment final : public RandomAccessFile {
 public:
  RecentSegment(std::string name, uint64_t base, std::string bytes)
      : name_(std::move(name)), base_(base), bytes_(std::move(bytes)) {}
  absl::StatusOr<std::string_view> Read(uint64_t offset, size_t n, char* /*scratch*/) const override {
    if (offset < base_ || offset - base_ > bytes_.size() || n > bytes_.size() - (offset - base_)) {
      return absl::OutOfRangeError(absl::StrCat("log segment ", name_, " in memory: ", n, " bytes at ", offset,
                                                " outside ", base_, " to ", Size()));
    }
    return std::string_view(bytes_).substr(static_cast<size_t>(offset - base_), n);
  }
  uint64_t Size() const override { return base_ + bytes_.size(); }
  const std::string& name() const override { return name_; }

 private:
  const std::string name_;
  const uint64_t base_;
  const std::string bytes_;
};

}  // namespace

absl::Status ReadLogFrom(Env* env, const std::string& dir, WalPosition from, WalPosition end, uint64_t max_bytes,
                         const std::function<absl::Status(const WalRecord&, const WalPosition& after)>& fn,
                         WalPosition* reached, const RecentLogBytes& recent) {
  WalPosition at = from;
  *reached = at;
  uint64_t read = 0;
  std::string scratch;
  if (at.segment == 0 && end.segment > 0) {  // the log's beginning: its oldest segment
    BASALT_ASSIGN_OR_RETURN(const uint64_t first, NextSegment(env, dir, 0, end.segment));
    at = WalPosition{first, 0};
  }
  while (at < end && read < max_bytes) {
    // Opened straight away, not asked after first: on RADOS every lookup walks the path (a
    // read per directory), and a shipper opens its segment once a batch.
    const std::string path = WalSegmentPath(dir, at.segment);
    absl::StatusOr<std::unique_ptr<RandomAccessFile>> file = absl::NotFoundError("");
    if (recent && at.offset >= kWalSegmentPreambleSize) {
      // (All it has of the segment: a copy cut short would look like a segment that ended.)
      std::optional<std::string> bytes = recent(at.segment, at.offset);
      if (bytes.has_value()) file = std::make_unique<RecentSegment>(path, at.offset, *std::move(bytes));
    }
    if (!file.ok()) file = env->NewRandomAccessFile(path);
    if (absl::IsNotFound(file.status())) {  // the previous run's, kept for readers?
      file = env->NewRandomAccessFile(WalSegmentPath(HeldLogDir(dir), at.segment));
    }
    if (absl::IsNotFound(file.status())) {
      return absl::NotFoundError(absl::StrCat("log segment ", path, " is gone (deleted before it was read: the ",
                                              "reader's hold was dropped)"));
    }
    BASALT_RETURN_IF_ERROR(file.status());
    // A segment before the end's is whole (synced before the log rolled past it); the end's is
    // read as far as it is durable.
    const uint64_t limit = at.segment == end.segment ? std::min(end.offset, (*file)->Size()) : (*file)->Size();
    if (at.offset < kWalSegmentPreambleSize && limit > 0) {
      scratch.resize(kWalSegmentPreambleSize);
      BASALT_ASSIGN_OR_RETURN(std::string_view head,
                              (*file)->Read(0, std::min<uint64_t>(limit, kWalSegmentPreambleSize), scratch.data()));
      at.offset = std::max<uint64_t>(at.offset, WalFramesStart(head));
    }
    while (at.offset < limit && read < max_bytes) {
      scratch.resize(std::min(limit - at.offset, kChunk));
      BASALT_ASSIGN_OR_RETURN(std::string_view chunk, (*file)->Read(at.offset, scratch.size(), scratch.data()));
      size_t used = 0;
      while (read < max_bytes) {
        const std::string_view rest = chunk.substr(used);
        if (rest.size() < kWalHeaderSize) break;
        const uint64_t frame = kWalHeaderSize + DecodeFixed32(rest.data());
        if (frame > rest.size()) {
          if (used > 0 || at.offset + frame > limit) break;  // (the next chunk starts at it; or cut: below)
          // A record larger than a chunk, read whole.
          scratch.resize(frame);
          BASALT_ASSIGN_OR_RETURN(chunk, (*file)->Read(at.offset, frame, scratch.data()));
          if (chunk.size() < frame) break;
          continue;
        }
        size_t framed = 0;
        absl::StatusOr<WalRecord> rec = DecodeFramedWalRecord(rest.substr(0, frame), &framed);
        if (!rec.ok()) {
          return absl::DataLossError(absl::StrCat("log segment ", (*file)->name(), " at offset ", at.offset + used, ": ",
                                                  rec.status().message()));
        }
        used += framed;
        read += framed;
        const WalPosition after{at.segment, at.offset + used};
        if (!rec->region.empty()) {
          if (absl::Status s = fn(*rec, after); !s.ok()) {
            *reached = WalPosition{at.segment, at.offset + used - framed};
            return s;
          }
        }
        *reached = after;
      }
      if (used == 0) {
        return absl::DataLossError(absl::StrCat("log segment ", (*file)->name(), " ends inside a record at offset ", at.offset,
                                                " (", limit, " bytes to read)"));
      }
      at.offset += used;
    }
    if (at.segment == end.segment || read >= max_bytes) break;
    // This segment is read whole: on to the next one.
    BASALT_ASSIGN_OR_RETURN(const uint64_t next, NextSegment(env, dir, at.segment, end.segment));
    at = WalPosition{next, 0};
    *reached = at;
  }
  return absl::OkStatus();
}

absl::StatusOr<WalPosition> FinishedLogEnd(Env* env, const std::string& dir) {
  BASALT_ASSIGN_OR_RETURN(std::vector<uint64_t> segments, AllSegments(env, dir));
  if (segments.empty()) return WalPosition{};
  const uint64_t last = segments.back();
  absl::StatusOr<uint64_t> size = env->GetFileSize(WalSegmentPath(dir, last));
  if (!size.ok()) size = env->GetFileSize(WalSegmentPath(HeldLogDir(dir), last));
  BASALT_RETURN_IF_ERROR(size.status());
  return WalPosition{last, *size};
}

uint64_t LogBytesBetween(Env* env, const std::string& dir, WalPosition from, WalPosition end) {
  if (!(from < end)) return 0;
  if (from.segment == end.segment) return end.offset - from.offset;
  absl::StatusOr<std::vector<uint64_t>> segments = AllSegments(env, dir);
  if (!segments.ok()) return 0;
  uint64_t bytes = end.offset;
  for (uint64_t segment : *segments) {
    if (segment < from.segment || segment >= end.segment) continue;
    absl::StatusOr<uint64_t> size = env->GetFileSize(WalSegmentPath(dir, segment));
    if (!size.ok()) size = env->GetFileSize(WalSegmentPath(HeldLogDir(dir), segment));
    if (!size.ok()) continue;
    bytes += segment == from.segment ? *size - std::min(*size, from.offset) : *size;
  }
  return bytes;
}

}  // namespace basalt
