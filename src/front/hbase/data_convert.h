// HBase's data and schema messages (proto/hbase/) as Basalt's (proto/basalt.proto), both ways:
// table names, region names, table schemas, reads (Get, Scan's options), writes (MutationProto
// with its cells inline or in the call's cell block), results, and a Basalt status as the HBase
// exception the Java client acts on. Pure: no I/O, no server state; the HBase front end
// (hbase_front.h) calls these and Basalt's services.
//
// Time: HBase's LATEST_TIMESTAMP (Long.MAX_VALUE) on a cell or a mutation means "the server's
// clock", which Basalt says with no timestamp. A TimeRange [from, to) is Basalt's [min, max).
//
// Namespaces: Basalt's tables live in HBase's "default" namespace; a table of another
// namespace is refused as its namespace not existing (hbase:meta is the front end's own).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/basalt.pb.h"
#include "proto/hbase/hbase_client.pb.h"
#include "proto/hbase/hbase_schema.pb.h"
#include "src/front/hbase/cell_block.h"

namespace basalt::hbase {

inline constexpr uint64_t kLatestTimestamp = 0x7fffffffffffffffULL;
inline constexpr char kDefaultNamespace[] = "default";
inline constexpr char kSystemNamespace[] = "hbase";

// The HBase exception a Basalt status becomes: the class the client rebuilds and whether it
// retries.
struct Exception {
  std::string class_name;
  std::string message;
  bool do_not_retry = false;
  bool server_overloaded = false;
};
Exception ExceptionOf(const absl::Status& status);
inline constexpr char kTableNotFound[] = "org.apache.hadoop.hbase.TableNotFoundException";
inline constexpr char kTableExists[] = "org.apache.hadoop.hbase.TableExistsException";
inline constexpr char kNamespaceNotFound[] = "org.apache.hadoop.hbase.NamespaceNotFoundException";
inline constexpr char kNotServingRegion[] = "org.apache.hadoop.hbase.NotServingRegionException";
inline constexpr char kUnknownRegion[] = "org.apache.hadoop.hbase.UnknownRegionException";
inline constexpr char kInvalidFamilyOperation[] = "org.apache.hadoop.hbase.InvalidFamilyOperationException";
inline constexpr char kUnknownScanner[] = "org.apache.hadoop.hbase.UnknownScannerException";
inline constexpr char kOutOfOrderScannerNext[] = "org.apache.hadoop.hbase.exceptions.OutOfOrderScannerNextException";
inline constexpr char kTableNotEnabled[] = "org.apache.hadoop.hbase.TableNotEnabledException";
inline constexpr char kTableNotDisabled[] = "org.apache.hadoop.hbase.TableNotDisabledException";
inline constexpr char kRpcThrottling[] = "org.apache.hadoop.hbase.quotas.RpcThrottlingException";
inline constexpr char kQuotaExceeded[] = "org.apache.hadoop.hbase.quotas.QuotaExceededException";
// What a refusal past a namespace's quota says (Catalog::CheckNamespaceRoom): QuotaExceededException.
inline constexpr char kNamespaceQuotaWords[] = "would exceed the quota of namespace";
inline constexpr char kAccessDenied[] = "org.apache.hadoop.hbase.security.AccessDeniedException";
inline constexpr char kSnapshotExists[] = "org.apache.hadoop.hbase.snapshot.SnapshotExistsException";
inline constexpr char kSnapshotDoesNotExist[] = "org.apache.hadoop.hbase.snapshot.SnapshotDoesNotExistException";
inline constexpr char kSnapshotCreation[] = "org.apache.hadoop.hbase.snapshot.SnapshotCreationException";
inline constexpr char kRestoreSnapshot[] = "org.apache.hadoop.hbase.snapshot.RestoreSnapshotException";

// `s` answered as `class_name` (one of the above), whatever its code says.
absl::Status AsException(absl::Status s, std::string_view class_name);
// A NotFound status naming a missing table (TableNotFoundException) or namespace.
absl::Status TableNotFound(std::string_view table);
absl::Status NamespaceNotFound(std::string_view ns);

// Basalt's name of an HBase table: "q" in `default` (or with no namespace), "ns:q" in any other
// namespace, as Basalt names a namespace's tables. NotFound (NamespaceNotFoundException) for a
// table of `hbase` (HBase's own: the port serves hbase:meta apart) or of `basalt` (Basalt's system
// tables, which no HBase client reaches); InvalidArgument for a qualifier with a ':'.
absl::StatusOr<std::string> BasaltTableOf(const TableName& name);
// The same for a table name as HBase writes it in text: "t" or "ns:t".
absl::StatusOr<std::string> BasaltTableOfText(std::string_view name);
TableName TableNameOfBasalt(std::string_view basalt_table);
// Whether the port shows Basalt table `basalt_table` to HBase's clients: a user's table of any
// namespace, not a system table (basalt:meta, basalt:acl, basalt:quota).
bool ShownOnThePort(std::string_view basalt_table);

// A region as an HBase region name names it: "<table>,<start key>,<id>.<md5>." (or the old
// form without the MD5 part).
struct RegionRef {
  std::string table;  // HBase's table name ("ns:qualifier", or the qualifier in "default")
  std::string start_key;
  uint64_t id = 0;
};
absl::StatusOr<RegionRef> ParseRegionName(std::string_view region_name);

// A table's schema as HBase's client reads it (every family with its attributes in HBase's
// spelling), and the Basalt descriptor an HBase schema asks for. Family attributes Basalt has
// settings for: VERSIONS, MIN_VERSIONS, TTL, BLOCKSIZE, COMPRESSION, DATA_BLOCK_ENCODING,
// BLOOMFILTER, BLOCKCACHE, and the table's MAX_FILESIZE; a value Basalt cannot honour is refused
// naming it. Every other attribute (IN_MEMORY: Basalt's cache has no in-memory tier;
// REPLICATION_SCOPE; OWNER; an application's own) and every configuration entry is kept
// (rpc::KeptSetting) and given back as given; the catalogue refuses the ones whose meaning Basalt
// would not honour unless they ask for the default (src/schema/catalog_file.h).
TableSchema SchemaOf(const rpc::TableDescriptor& table);
absl::StatusOr<rpc::TableDescriptor> DescriptorOf(const TableSchema& schema);
// One family's (AddColumn, ModifyColumn), as DescriptorOf takes each.
absl::StatusOr<rpc::FamilyDescriptor> FamilyOf(const ColumnFamilySchema& family);

// A read's options from a Get's or a Scan's fields (filters by filter_convert.h, which the
// caller applies).
absl::StatusOr<rpc::ReadOptions> ReadOptionsOf(const google::protobuf::RepeatedPtrField<Column>& columns,
                                               const TimeRange* time_range, uint32_t max_versions,
                                               bool cache_blocks);

// One cell (a Put's) added to a Result, inline.
void AddCell(Result* r, std::string_view row, std::string_view family, std::string_view qualifier, int64_t ts,
             std::string value);
// A row's cells as HBase's Result (cells inline).
void AppendResult(const rpc::Row& row, Result* result);

// The cells of a call's cell block, taken in order by the mutations that point into it
// (associated_cell_count).
class CellCursor {
 public:
  explicit CellCursor(std::vector<BlockCell> cells) : cells_(std::move(cells)) {}
  CellCursor() = default;
  // The next `n` cells; InvalidArgument when the block has fewer left.
  absl::StatusOr<std::vector<BlockCell>> Take(int n);

 private:
  std::vector<BlockCell> cells_;
  size_t next_ = 0;
};

// A Put's or a Delete's changes to one row (its row in `mutations->row()`), from its inline
// column values or its cells in the block.
absl::Status RowMutationsOf(const MutationProto& m, CellCursor* cells, rpc::RowMutations* mutations);
// An Increment's or an Append's columns (amounts are 8-byte big-endian longs, as HBase's).
absl::Status IncrementOf(const MutationProto& m, CellCursor* cells, rpc::IncrementRequest* req);
absl::Status AppendOf(const MutationProto& m, CellCursor* cells, rpc::AppendRequest* req);
rpc::Durability DurabilityOf(MutationProto::Durability d);

}  // namespace basalt::hbase
