// Per-family settings (docs/DESIGN.md, §1) and per-region engine settings. Plain structs; the enum
// values are stored in block files and manifests, so they never change meaning.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "basalt/types.h"

namespace basalt {

class Env;
class BlockCache;
class ServerLog;

enum class DataBlockEncoding : uint8_t { kNone = 0, kPrefix = 1, kFastDiff = 2, kRowIndex = 3 };
enum class Compression : uint8_t { kNone = 0, kSnappy = 1, kZlib = 2 };
enum class BloomType : uint8_t { kNone = 0, kRow = 1, kRowCol = 2 };
enum class ChecksumType : uint8_t { kNull = 0, kCrc32 = 1, kCrc32c = 2 };

const char* EncodingName(DataBlockEncoding e);
const char* CompressionName(Compression c);
const char* ChecksumName(ChecksumType c);
const char* BloomName(BloomType b);

struct FamilyOptions {
  std::string name;
  int max_versions = 1;
  int min_versions = 0;
  int64_t ttl_ms = 0;  // 0: forever
  uint32_t block_size = 64 * 1024;
  DataBlockEncoding encoding = DataBlockEncoding::kNone;
  Compression compression = Compression::kNone;
  BloomType bloom = BloomType::kRow;  // HBase's default
  ChecksumType checksum = ChecksumType::kCrc32c;
  uint32_t bytes_per_checksum = 16 * 1024;
  bool cache_blocks = true;         // cache data blocks on read
  bool cache_encoded = false;       // cache blocks as stored (encoded, compressed) not decoded
  bool verify_checksums = true;
};

// Checks a family's settings: InvalidArgument naming the family and the bad value.
absl::Status ValidateFamily(const FamilyOptions& f);

// What replaying a region's log does with damage (RocksDB's WALRecoveryMode). In every mode a
// torn tail (the end of the newest segment cut short by a crash mid-write, never synced) is
// cut, logged and counted.
enum class WalRecoveryMode : uint8_t {
  // Any other damage — a damaged record, a missing segment, a segment that is not a log —
  // stops the region's recovery: it does not open, and the error names the file, the offset
  // and the sequence ids around what is lost. The default: nothing acknowledged is dropped
  // without an operator saying so.
  kStrict,
  // Replays up to the first damage and drops everything after it (a consistent point in time).
  kPointInTime,
  // Skips damaged records and missing segments and replays every intact record.
  kSkipCorrupted,
};

struct RegionOptions {
  Env* env = nullptr;                // nullptr: Env::Default()
  BlockCache* block_cache = nullptr;  // nullptr: no block cache
  uint64_t memstore_flush_size = 128ull << 20;
  // Writers wait for a flush when the memstores pass flush size × this (HBase's
  // hbase.hregion.memstore.block.multiplier).
  int memstore_block_multiplier = 4;
  // Minor compaction: when a store has at least this many files, pick by size ratio.
  int compaction_min_files = 3;
  int compaction_max_files = 10;
  double compaction_ratio = 1.2;
  bool background_compaction = true;
  // Milliseconds since the epoch; tests replace it to drive TTL.
  std::function<int64_t()> clock;
  // Where a region reports what it did on its own to its files (a file moved aside, log damage
  // cut or skipped), one line per call. Empty: standard error.
  std::function<void(std::string_view)> log;
  WalRecoveryMode wal_recovery = WalRecoveryMode::kStrict;
  // The region server's shared log (storage/server_log.h), which must outlive the region.
  // nullptr: the region keeps a log of its own in <dir>/wal (basalt:meta, a region alone).
  ServerLog* server_log = nullptr;
  // Called (with the region's name) on the region's background thread after a flush or a
  // compaction changed its files: where a region server looks whether it should split.
  std::function<void(const std::string& region)> on_files_changed;
  // How long a region remembers the nonce of a non-idempotent operation it applied (region.h
  // Nonce), in memory and in its manifest: a retry of it within this is answered, not applied
  // again. A client's call gives up within its timeout (30 s by default), so this covers every
  // retry of a client whose timeout is shorter.
  int64_t nonce_expiry_ms = 5 * 60 * 1000;
};

}  // namespace basalt
