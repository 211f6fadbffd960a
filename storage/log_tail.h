// Reading a live write-ahead log (storage/server_log.h) from a place in it on, as a replication
// source follows its server's log (docs/DESIGN.md §15): the records, in log order, that are
// durable (ServerLog::DurableEnd: never one a crash could still take back), each with the place
// just after it, where the next read resumes. The segments a reader still needs are kept by its
// hold (ServerLog::Hold) until it moves on.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/env.h"
#include "storage/log_record.h"

namespace basalt {

// Where a server log in `dir` keeps, over a restart, the previous run's segments that readers
// still need (ServerLog::Options::holds): beside it, never split again.
inline std::string HeldLogDir(const std::string& dir) { return dir + ".held"; }

// Reads the log in `dir` (and HeldLogDir(dir)) from `from` (WalPosition{}: its oldest segment) up to `end` (exclusive: a DurableEnd), calling fn for each
// region's record (a segment's header is not one) with the place after it; stops early once
// about `max_bytes` of records were read (at least one record is). `*reached` is where the
// next read starts (every record before it was passed to fn). A segment missing between the
// two (deleted: a hold was dropped) is NotFound naming it; a record that does not decode, or a
// segment that ends inside one before `end`, is DataLoss naming the file and offset. fn's error
// stops the read and is returned (`*reached` then is the place of that record).
//
// `recent`, when given (ServerLog::ReadRecent), is asked first for a segment's bytes from where
// the read starts in it: what it has is read from memory, not from the file.
using RecentLogBytes =
    std::function<std::optional<std::string>(uint64_t segment, uint64_t offset)>;
absl::Status ReadLogFrom(Env* env, const std::string& dir, WalPosition from, WalPosition end, uint64_t max_bytes,
                         const std::function<absl::Status(const WalRecord&, const WalPosition& after)>& fn,
                         WalPosition* reached, const RecentLogBytes& recent = nullptr);

// The end of a log nobody writes any more (a dead server's, split: what is left of it is in
// HeldLogDir(dir)): its last segment's end; WalPosition{} when no segment is left.
absl::StatusOr<WalPosition> FinishedLogEnd(Env* env, const std::string& dir);

// About how many bytes of log lie from `from` to `end` (a reader's lag): the segments between,
// where they still are, as their files' sizes say. 0 when `from` is not before `end`.
uint64_t LogBytesBetween(Env* env, const std::string& dir, WalPosition from, WalPosition end);

}  // namespace basalt
