// A durable log of opaque records, for state outside the regions (the transaction service's,
// src/transactions/transactions.h): the write-ahead log's segments, framing, checksums, group commit
// and recovery (storage/internal/wal.h), under one name and without regions. A checkpoint
// starts a new segment with a record holding the whole state and deletes the segments before
// it, so the log stays as small as that state plus what followed.
//
// Recovery is the WAL's strict mode: a torn tail of the newest segment (a crash mid-write) is
// cut, never applied; any other damage is DataLoss naming the file and offset, and the owner
// does not start (nothing acknowledged is dropped without an operator saying so).
//
// Thread-safety: Append may be called from many threads at once (they share fdatasyncs);
// Checkpoint excludes them while it runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "storage/options.h"

namespace basalt {

class Env;
class Wal;

class RecordLog {
 public:
  struct Options {
    Env* env = nullptr;  // nullptr: Env::Default()
    std::string dir;
    std::string name;  // what the log's errors call it ("the transaction log")
  };

  // Replays every record the directory holds, in order, through `replay` (a checkpoint record
  // is one like any other: its owner knows it), then opens the log for appends. `replay`'s
  // error stops the open and is returned.
  static absl::StatusOr<std::unique_ptr<RecordLog>> Open(const Options& options,
                                                         const std::function<absl::Status(std::string_view)>& replay);
  ~RecordLog();
  RecordLog(const RecordLog&) = delete;
  RecordLog& operator=(const RecordLog&) = delete;

  // kSyncWal returns once the record is durable; kAsyncWal once it is queued (synced within
  // 100 ms). After a write error the log is dead: every later call gets that error.
  absl::Status Append(std::string_view record, Durability d);
  // Rolls to a new segment, appends `state` (durably) as its first record and deletes every
  // older segment. `state` is taken while no Append runs (`take_state` is called under the
  // exclusion), so it holds everything appended before.
  absl::Status Checkpoint(const std::function<std::string()>& take_state);
  // Bytes appended since the last checkpoint (or open).
  uint64_t BytesSinceCheckpoint() const;

 private:
  RecordLog() = default;
  std::string name_;
  std::unique_ptr<Wal> wal_;
  mutable absl::Mutex mu_;  // Append holds it shared, Checkpoint exclusively
  std::atomic<uint64_t> bytes_since_checkpoint_{0};
};

}  // namespace basalt
