// A record of the write-ahead log as its readers see it (storage/internal/wal.h has its encoding
// and storage/log_tail.h reads a live log), and a place in a log directory.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

namespace basalt {

// A place in a log directory: byte `offset` of segment `segment` (an offset at or before the
// segment's first record means that record).
struct WalPosition {
  uint64_t segment = 0;
  uint64_t offset = 0;
  bool operator==(const WalPosition&) const = default;
  auto operator<=>(const WalPosition&) const = default;
};

struct WalEdit {
  std::string family;
  std::string key;  // flat key (storage/cell.h)
  std::string value;
  bool operator==(const WalEdit&) const = default;
};

// At most this many cluster ids in a record, each 1 to 64 bytes (a UUID's text is 36).
inline constexpr size_t kMaxWalClusterIds = 64;

struct WalRecord {
  std::string region;
  uint64_t seq = 0;
  std::vector<WalEdit> edits;
  // The client's nonce of the operation that wrote it (0: none; storage/region.h Nonce).
  uint64_t nonce_group = 0;
  uint64_t nonce = 0;
  // The clusters its edits came through, the first where they were written (HBase's WALKey
  // cluster ids, as a replication sink applied them); empty: written here by a client. A
  // replication source never ships a record to a cluster it names (no loop between peers).
  std::vector<std::string> cluster_ids = {};
  bool operator==(const WalRecord&) const = default;
};

}  // namespace basalt
