// A snapshot's manifest (docs/DESIGN.md §16): `snapshots/<name>/SNAPSHOT` in the data directory,
// beside `snapshots/<name>/<encoded region name>/`, each a region directory whose block files are
// second names of the table's (Region::Snapshot) and whose MANIFEST names them. SNAPSHOT is
// written last, durably (Env::WriteFileDurably): a snapshot directory without it is one a crash
// cut short, removed at start-up.
//
// File layout (integers little-endian, varints as LevelDB):
//
//   +----------------------------------------+-----------------+---------+------------+
//   | stamp: "BSLTSNAP", version 1, min 1    | payload_len u32 | payload | crc32c u32 |
//   +----------------------------------------+-----------------+---------+------------+
//   crc32c: masked CRC32C of every byte before it.
//   payload: lp name | varint64 created_ms | varint64 ttl_s (0: kept until deleted) |
//            lp owner (the user who took it; empty without authentication) |
//            lp table (a one-table catalogue, as TABLEINFO: catalog_file.h) |
//            varint regions | per region: lp REGIONINFO (region_info.h) | varint64 files |
//            varint64 bytes (of its block files, when the snapshot was taken) |
//            [version 2: varint grants | per grant: lp principal | lp family | lp qualifier |
//             u8 perms (access_control.h Perm bits)]
// Version 2 (min reader 2) is written only for a snapshot that keeps its table's grants (HBase's
// users_and_permissions, for RESTORE_ACL); one without is written as version 1, which older
// servers read.
//
// A reader refuses a newer format (FailedPrecondition) and any damage (DataLoss naming the path).
// Thread-compatible: plain functions on values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/env.h"
#include "src/schema/catalog_file.h"
#include "src/schema/region_info.h"

namespace basalt::server {

inline constexpr char kSnapshotsDir[] = "snapshots";
inline constexpr char kSnapshotFileName[] = "SNAPSHOT";
inline constexpr uint32_t kSnapshotVersion = 2;

// A grant on the snapshot's table, kept for RESTORE_ACL: to a principal (a user, or @group) on the
// table (family and qualifier empty), one family, or one column.
struct SnapshotGrant {
  std::string principal;
  std::string family;
  std::string qualifier;
  uint8_t perms = 0;
  bool operator==(const SnapshotGrant&) const = default;
};

struct SnapshotInfo {
  std::string name;
  int64_t created_ms = 0;  // when it was taken (ms since the epoch)
  int64_t ttl_s = 0;       // deleted once this old (s); 0: kept until deleted
  std::string owner;       // who took it (HBase's snapshot owner); empty without authentication
  TableSpec table;         // the table's descriptor then
  struct Region {
    RegionInfo info;
    uint64_t files = 0;
    uint64_t bytes = 0;
    bool operator==(const Region&) const = default;
  };
  std::vector<Region> regions;  // by start key
  std::vector<SnapshotGrant> grants;  // the table's when it was taken (empty: none kept)
  // Its regions' files and their bytes, in sum.
  uint64_t files() const;
  uint64_t bytes() const;
  bool operator==(const SnapshotInfo&) const = default;
};

// HBase's rule for a snapshot's name: 1 to 128 bytes of letters, digits, '_', '-' and '.', not
// starting with '.'. InvalidArgument naming what is wrong.
absl::Status ValidateSnapshotName(std::string_view name);

std::string EncodeSnapshot(const SnapshotInfo& s);
absl::StatusOr<SnapshotInfo> DecodeSnapshot(std::string_view bytes, const std::string& path);

// `<data_dir>/snapshots`, and snapshot `name`'s directory in it.
std::string SnapshotsDirIn(std::string_view data_dir);
std::string SnapshotDirIn(std::string_view data_dir, std::string_view name);
// Snapshot `name`'s SNAPSHOT under `data_dir`, read and decoded. NotFound ("no snapshot 'NAME'")
// when it is not there (a directory without it is a snapshot being taken, or cut short).
absl::StatusOr<SnapshotInfo> ReadSnapshotIn(Env* env, std::string_view data_dir, std::string_view name);

}  // namespace basalt::server
