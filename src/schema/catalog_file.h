// The standalone catalogue: which tables exist, their families and whether they are enabled,
// persisted as one small file `CATALOG` in the data directory, replaced atomically
// (Env::WriteFileDurably: write CATALOG.tmp, fdatasync, rename, fsync the directory).
//
// File layout (integers little-endian, varints as LevelDB):
//
//   +----------------+--------------+------------------+-------------+---------+--------------+
//   | magic "BSLTCATG" | version u32 | min_read_ver u32 | payload_len u32 | payload | crc32c u32 |
//   +----------------+--------------+------------------+-------------+---------+--------------+
//   The first 16 bytes are the common format stamp (common/format_stamp.h).
//   crc32c: masked CRC32C of every byte before it.
//   payload: varint table count, then per table:
//     lp name | u8 state (0 enabled, 1 disabled) | varint family count | family*
//   family:
//     lp name | varint max_versions | varint min_versions | varint ttl_ms | varint block_size |
//     u8 encoding | u8 compression | u8 bloom | u8 checksum | varint bytes_per_checksum |
//     u8 flags (1 cache_blocks, 2 cache_encoded, 4 verify_checksums)
//   version 2 adds, after each table's families: varint max_file_size (0: the server's
//   region_max_size). A catalogue with no table setting it is written as version 1, so an
//   older build reads it.
//   version 3 adds, after max_file_size: u8 table flags (1 transactional, 2 queue). Written only
//   when a table is transactional (an older build must not read such a table as a plain one).
//   version 4 adds, after the table flags, the settings kept for clients (TableSpec::kept):
//     kept (the table's) | varint count | (lp family name | kept)*
//   kept: varint n | (lp key | lp value)*n (attributes) | varint m | (lp key | lp value)*m
//   (configuration). Written only when some table keeps one (an older build would drop them).
//   version 5 adds, after the last table, the namespaces beside `default` (NamespaceSpec):
//     varint count | (lp name | kept)*
//   Written only when a namespace exists or a table's name is in one ("ns:table"): an older
//   build refuses such a catalogue rather than read a table it would call malformed.
//   (enum bytes are storage/options.h's values, which never change meaning.)
//
// Each table directory's TABLEINFO (catalog.cc) is a one-table catalogue in this same format.
//
// A reader refuses a file whose min_read_ver is above what it knows (FailedPrecondition) and
// any damage (DataLoss naming the path). Thread-compatible: plain functions on values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/options.h"

namespace basalt {
class Env;
}

namespace basalt::server {

inline constexpr char kCatalogFileName[] = "CATALOG";
inline constexpr uint32_t kCatalogVersion = 5;

// Settings a client gave that Basalt keeps and gives back unchanged but does not act on: an HBase
// table's or family's attributes Basalt has no use for (IN_MEMORY, REPLICATION_SCOPE, OWNER, an
// application's own keys) and its configuration. Each list in the order given, keys unique.
// HBase's attributes whose meaning Basalt would not honour are refused unless they ask for what
// Basalt does anyway: a family's KEEP_DELETED_CELLS and NEW_VERSION_BEHAVIOR (false),
// ENCRYPTION and ENCRYPTION_KEY (empty); a table's READONLY (false), REGION_REPLICATION (1) and
// coprocessors (none).
struct KeptSettings {
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<std::pair<std::string, std::string>> configuration;
  bool empty() const { return attributes.empty() && configuration.empty(); }
  bool operator==(const KeptSettings&) const = default;
};
// What one table may keep: entries per list, and a key's and a value's bytes.
inline constexpr size_t kMaxKeptEntries = 256, kMaxKeptKeyBytes = 1024, kMaxKeptValueBytes = 64 * 1024;

struct TableSpec {
  std::string name;
  std::vector<FamilyOptions> families;
  bool enabled = true;
  // A region of the table splits once its largest store passes this (HBase's MAX_FILESIZE);
  // 0: the server's region_max_size.
  uint64_t max_file_size = 0;
  // Written and read in transactions only (docs/DESIGN.md §7): its stores keep every version
  // (what a snapshot sees is the transactions' to say), its cells' timestamps are write pointers.
  bool transactional = false;
  // A queue's table (basalt/queue.h; transactional too): consumed entries go at major compaction.
  bool queue = false;
  // Settings kept for clients (above): the table's, and its families' by family name (only
  // families that keep something; each names a family of the table).
  KeptSettings kept;
  std::map<std::string, KeptSettings> kept_by_family;
  bool operator==(const TableSpec&) const;
};

// HBase's REPLICATION_SCOPE of family `family` of `spec` (a kept attribute), when it keeps one:
// what replication ships (src/replication/peers.h), and what a region server must know.
inline constexpr char kReplicationScopeAttribute[] = "REPLICATION_SCOPE";
std::optional<std::string> ReplicationScopeOf(const TableSpec& spec, std::string_view family);

// A namespace (HBase's): a name a table's may start with ("ns:table"), and the settings kept
// for it (its configuration: HBase's hbase.namespace.quota.maxtables and .maxregions among them).
// `default` holds every table named without one and is never listed; `basalt` holds the
// system tables (basalt:meta, basalt:acl, basalt:quota) and `hbase` is HBase's own: neither
// holds a user's table.
struct NamespaceSpec {
  std::string name;
  KeptSettings kept;
  bool operator==(const NamespaceSpec&) const = default;
};
inline constexpr char kDefaultNamespace[] = "default";
inline constexpr char kBasaltNamespace[] = "basalt";
inline constexpr char kHBaseNamespace[] = "hbase";

// HBase's namespace-name rule: 1-128 bytes of [A-Za-z0-9_]. InvalidArgument naming the name.
absl::Status ValidateNamespaceName(std::string_view name);
// Whether a namespace of this name may be made (a legal name, not default, basalt or hbase);
// InvalidArgument saying why not.
absl::Status ValidateNewNamespace(std::string_view name);
// A namespace to keep: ValidateNewNamespace, and its kept settings within the kept bounds.
absl::Status ValidateNamespaceSpec(const NamespaceSpec& spec);
// HBase's namespace quotas, kept in a namespace's configuration: how many tables, and how many
// regions over all its tables, it may hold. Enforced whenever set (HBase enforces them only with
// hbase.quota.enabled).
inline constexpr char kNamespaceMaxTables[] = "hbase.namespace.quota.maxtables";
inline constexpr char kNamespaceMaxRegions[] = "hbase.namespace.quota.maxregions";
// Each of those that `spec` sets is a whole number above 0 (HBase's rule); InvalidArgument else.
absl::Status ValidateNamespaceQuotas(const NamespaceSpec& spec);
// The limit `key` sets in `spec` (0: none; a value that does not parse sets none).
uint64_t NamespaceLimit(const NamespaceSpec& spec, std::string_view key);
// The namespace table name `table` is in: the part before its ':', `default` when it has none.
std::string_view TableNamespace(std::string_view table);

// HBase's table-name rule: 1-255 bytes of [A-Za-z0-9_.-], not starting with '.' or '-', after
// an optional namespace ("ns:table", whose namespace is not default, basalt or hbase: a table in
// `default` is named without it). InvalidArgument naming the name.
absl::Status ValidateTableName(std::string_view name);
// HBase's family-name rule (non-empty, not starting with '.', no ':', '\', '/' or control
// characters) plus ValidateFamily's limits. InvalidArgument.
absl::Status ValidateFamilyName(std::string_view name);
// The smallest MAX_FILESIZE a table may set (as the server's region_max_size).
inline constexpr uint64_t kMinMaxFileSize = 1ull << 20;
// A whole table: legal name, at least one family, legal unique family names, valid settings.
absl::Status ValidateTableSpec(const TableSpec& spec);

std::string EncodeCatalog(const std::vector<TableSpec>& tables, const std::vector<NamespaceSpec>& namespaces = {});
// `path` names the file in errors. DataLoss for any damage; FailedPrecondition for a newer
// format than this build reads. The namespaces it lists go to *namespaces when given.
absl::StatusOr<std::vector<TableSpec>> DecodeCatalog(std::string_view bytes, const std::string& path,
                                                     std::vector<NamespaceSpec>* namespaces = nullptr);

// Reads data_dir/CATALOG; a missing file is an empty catalogue (a new data directory).
absl::StatusOr<std::vector<TableSpec>> LoadCatalog(Env* env, const std::string& data_dir,
                                                   std::vector<NamespaceSpec>* namespaces = nullptr);
// Replaces data_dir/CATALOG atomically and durably.
absl::Status SaveCatalog(Env* env, const std::string& data_dir, const std::vector<TableSpec>& tables,
                         const std::vector<NamespaceSpec>& namespaces = {});

}  // namespace basalt::server
