// Basalt's C++ client library (docs/DESIGN.md, §5): a Connection to a server, Tables with HBase's
// operations, scanners, a buffered mutator for bulk writes, and async variants.
//
//   auto conn = basalt::Connection::Open({.address = "127.0.0.1:16020"});
//   auto table = (*conn)->GetTable("t1");
//   BASALT_RETURN_IF_ERROR(table->Put(basalt::Put("row1").Add("cf", "q", "v")));
//   absl::StatusOr<basalt::Result> r = table->Get(basalt::Get("row1").AddColumn("cf", "q"));
//
// Every call returns absl::Status / StatusOr with the server's code (NotFound: unknown table,
// InvalidArgument: bad request, ...) and a message prefixed with the call ("Get t1/row1: ...").
// A call has one deadline, ConnectionOptions::timeout from its start, covering all its attempts.
// Unavailable and ResourceExhausted are retried (but not a ResourceExhausted for a message over
// gRPC's size cap, which would fail again), up to max_attempts attempts in all, after a
// backoff of initial_backoff doubling per retry up to max_backoff, each delay drawn uniformly
// from [d/2, d] (jitter); a retry whose delay would pass the deadline is not made and the last
// error is returned. Every other code (DeadlineExceeded included) is returned at once. On a
// cluster each attempt of a data call also ends at attempt_timeout, which is retried as
// Unavailable (the row located afresh) while the call's deadline lasts.
// Increment, Append and CheckAndMutate are not idempotent: each carries a nonce (HBase's: this
// connection's random group and a random number per operation, the same in every attempt), and a
// region that applied it answers a retry from what is stored instead of applying it again, also
// after a crash, a failover or a move (for 5 minutes, longer than any call's timeout). So they
// are retried as everything else. An answered retry returns the columns' current values
// (Increment, Append) or true (CheckAndMutate: its condition held when it was applied). Without
// nonces (ConnectionOptions::nonces false) they are retried only with retry_non_idempotent.
// Everything else is retried. A single row's Put, Delete or RowMutations (sync or async) carries
// a nonce too, so a retry of one the region applied applies nothing more; batches carry none:
// puts and deletes with timestamps are idempotent, a put without one may leave an extra version,
// a delete of the newest version without one may delete two.
//
// Regions: a table's rows live in regions that basalt:meta lists. The connection reads a
// table's regions from meta on its first call of the table and caches them; each gRPC call of
// rows names their region (scans, and Get and Put over verbs, name none: the server routes
// them). A region that has split or merged refuses the call by name (nothing applied); the
// connection forgets it, reads meta again and retries within the call's deadline and
// max_attempts, for every operation, so a split or merge (milliseconds) surfaces no error
// (TransportStats counts the meta reads and the regions forgotten).
//
// Thread-safety: Connection, Table and BufferedMutator are safe to use from many threads; a
// ResultScanner belongs to one thread. Tables, scanners and mutators must not outlive their
// Connection; destroying the Connection waits for its async calls to complete.
//
// This header and the others in client/include/basalt/ are the whole public API; nothing else
// of the client is exported. It does not depend on the storage engine.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "basalt/filter.h"
#include "basalt/security.h"
#include "basalt/transport_choice.h"
#include "basalt/types.h"
#include "basalt/transport_stats.h"

namespace basalt {

// ---------------------------------------------------------------------------------------------
// Connection settings

struct ConnectionOptions {
  std::string address;  // "host:port" ("[v6addr]:port") of a standalone server, or "unix:/path"
  // Or a cluster, found through its ZooKeeper (as HBase's hbase.zookeeper.quorum): the client
  // reads there which server holds meta, and reads it again whenever that server stops answering
  // (it failed over, or moved), so a client never names a server. Give one of the two.
  std::string zookeeper_quorum = "";                 // HOST:PORT[,HOST:PORT...]
  std::string zookeeper_znode_parent = "/basalt";
  absl::Duration timeout = absl::Seconds(30);       // per call, retries included
  // Each attempt of a data call (Get, Put, Delete, a batch, Increment, Append, CheckAndMutate;
  // not scans or admin calls) on a cluster ends after this (HBase's hbase.rpc.timeout beside the
  // operation timeout): one stuck on a paused or cut-off region server is sent again after the
  // row is located afresh, so callers leave a frozen server within its failover time instead
  // of waiting for it to wake. 0: derived, min(timeout, 2 s); InfiniteDuration(): none (one
  // deadline for all attempts). A standalone server's calls have none.
  absl::Duration attempt_timeout = absl::ZeroDuration();
  // 15 attempts with backoff from 50 ms up to 2 s ride out a server restart (several seconds),
  // as HBase's client does with its 15 retries (hbase.client.retries.number).
  int max_attempts = 15;                   // 1: no retry
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(2);
  bool nonces = true;                      // Increment, Append, CheckAndMutate carry nonces (see above)
  bool retry_non_idempotent = false;       // retry them even without nonces
  // Get and Put (Mutate) take the verbs transport when the server offers an RDMA session and
  // this host has an RDMA device, else the TCP fast path when the server offers it (kAuto);
  // everything else always takes gRPC. kVerbs (kTcp) makes Open fail when verbs (the TCP path)
  // cannot be had. A fast path's failure sends the call over gRPC instead (it does not fail)
  // and keeps that path down for verbs_retry, then tries it again.
  TransportChoice transport = TransportChoice::kAuto;
  int channels = 1;  // gRPC channels (TCP connections) the calls are spread over
  int tcp_connections = 2;  // the TCP fast path's connections per server, calls pipelined on them
  int verbs_max_endpoints = 32;  // verbs endpoints (queue pairs) shared by the calling threads
  // ... and those of the async calls (GetAsync, PutAsync, Get of many rows), apart, completed
  // on one poller thread; 0: async calls run sync on 2 threads.
  int verbs_async_endpoints = 2;
  // Async calls in flight on each async endpoint at once (1..255; fewer if the server allows
  // fewer): 2 x 8 = 16 in flight by default, more wait in a queue.
  int verbs_async_credits = 8;
  absl::Duration verbs_spin = absl::Microseconds(20);  // busy-poll for a reply before sleeping
  absl::Duration verbs_retry = absl::Seconds(5);
  // TLS and credentials (security.h); default: plain text, no identity.
  ClientSecurity security = {};
};

// ---------------------------------------------------------------------------------------------
// Results

struct KeyValue {
  std::string family;
  std::string qualifier;
  int64_t timestamp = 0;
  std::string value;
};

// One row as read: cells in family, qualifier ascending, timestamp descending order.
class Result {
 public:
  Result() = default;
  Result(std::string row, std::vector<KeyValue> cells) : row_(std::move(row)), cells_(std::move(cells)) {}

  const std::string& row() const { return row_; }
  const std::vector<KeyValue>& cells() const { return cells_; }
  std::vector<KeyValue>& mutable_cells() { return cells_; }
  void set_row(std::string row) { row_ = std::move(row); }
  bool empty() const { return cells_.empty(); }
  size_t size() const { return cells_.size(); }
  // The newest value of a column, or nullopt.
  std::optional<std::string_view> Value(std::string_view family, std::string_view qualifier) const;

 private:
  std::string row_;
  std::vector<KeyValue> cells_;
};

// ---------------------------------------------------------------------------------------------
// Operations (HBase's names; builders return *this for chaining)

struct ColumnRef {
  std::string family;
  std::vector<std::string> qualifiers;  // empty: the whole family
};

// A transaction's snapshot (basalt/transaction.h): its write pointer (also the timestamp of
// every cell it writes) and what it sees: versions at or below read_pointer but the excluded
// ones (transactions in progress or invalid when it started), and its own.
struct TransactionSnapshot {
  int64_t write_pointer = 0;
  int64_t read_pointer = 0;
  std::vector<int64_t> excluded;  // ascending
  std::vector<int64_t> in_progress;  // those of excluded in progress (the rest are invalid), ascending
};

class Get {
 public:
  explicit Get(std::string row) : row(std::move(row)) {}
  Get& AddFamily(std::string family);
  Get& AddColumn(std::string family, std::string qualifier);
  Get& SetTimeRange(int64_t min, int64_t max) { min_ts = min; max_ts = max; return *this; }
  Get& SetTimestamp(int64_t ts) { return SetTimeRange(ts, ts + 1); }
  Get& SetMaxVersions(int n) { max_versions = n; return *this; }
  Get& SetCacheBlocks(bool b) { cache_blocks = b; return *this; }
  // Evaluated by the server (basalt/filter.h): an empty Result when it refuses the row.
  Get& SetFilter(Filter f) { filter = std::move(f); return *this; }

  std::string row;
  std::vector<ColumnRef> columns;  // empty: every family
  int64_t min_ts = 0;
  int64_t max_ts = kLatestTimestamp;  // [min_ts, max_ts)
  int max_versions = 1;
  bool cache_blocks = true;
  std::optional<Filter> filter;
  // Set by TransactionContext (basalt/transaction.h): the snapshot the read sees.
  std::shared_ptr<const TransactionSnapshot> transaction;
};

class Scan {
 public:
  Scan() = default;
  Scan& WithStartRow(std::string r) { start_row = std::move(r); return *this; }
  Scan& WithStopRow(std::string r) { stop_row = std::move(r); return *this; }
  Scan& AddFamily(std::string family);
  Scan& AddColumn(std::string family, std::string qualifier);
  Scan& SetTimeRange(int64_t min, int64_t max) { min_ts = min; max_ts = max; return *this; }
  Scan& SetMaxVersions(int n) { max_versions = n; return *this; }
  Scan& SetLimit(uint64_t n) { limit = n; return *this; }
  Scan& SetCaching(uint32_t rows) { caching = rows; return *this; }
  Scan& SetCacheBlocks(bool b) { cache_blocks = b; return *this; }
  // Evaluated by the servers (basalt/filter.h).
  Scan& SetFilter(Filter f) { filter = std::move(f); return *this; }
  // HBase's setReversed: rows in descending order, from start_row (inclusive; empty: the
  // table's last row) down to stop_row (exclusive; empty: the first row).
  Scan& SetReversed(bool r) { reversed = r; return *this; }
  // HBase's setRowPrefixFilter: the rows starting with prefix (empty: every row). It sets
  // start_row and stop_row for the current direction: call it after SetReversed, once.
  // Forward: [prefix, RowPrefixSuccessor(prefix)). Reversed, where no stop row can name the row
  // just below the prefix: from the successor down to the prefix with its last byte decremented
  // (dropped if 0x00), a range that may also hold the successor and rows starting with that
  // stop row; so it also sets filter to Filter::Prefix(prefix), ahead of a filter already set
  // (List(kMustPassAll, {Prefix, that filter})).
  Scan& SetRowPrefix(std::string_view prefix);

  // Forward: from start_row (inclusive) to stop_row (exclusive; empty: to the end).
  // Reversed: from start_row (inclusive; empty: the end) down to stop_row (exclusive).
  std::string start_row;
  std::string stop_row;
  std::vector<ColumnRef> columns;
  int64_t min_ts = 0;
  int64_t max_ts = kLatestTimestamp;
  int max_versions = 1;
  uint64_t limit = 0;     // rows; 0: all
  uint32_t caching = 0;   // rows per server message; 0: server default
  bool cache_blocks = true;
  bool reversed = false;
  std::optional<Filter> filter;
  std::shared_ptr<const TransactionSnapshot> transaction;  // as Get's
};

// The first row after every row starting with prefix: prefix without its trailing 0xff bytes,
// its last byte incremented; empty (no such row) for an empty or all-0xff prefix.
std::string RowPrefixSuccessor(std::string_view prefix);

// HBase's filter language (ParseFilter), as the shell's FILTER => "..." takes it:
//   SingleColumnValueFilter('cf', 'q', =, 'binary:x', true, true) AND PageFilter(10)
// Filters by HBase's names with their arguments (strings in single quotes, '' for a quote;
// integers; true/false; ops < <= = != >= >; comparators 'binary:', 'binaryprefix:',
// 'regexstring:', 'substring:'), joined by AND (binds tighter) and OR, with parentheses.
// InvalidArgument naming the offset and what was expected; SKIP and WHILE are refused as
// not supported.
absl::StatusOr<Filter> ParseFilterString(std::string_view text);
// The filter in that language; ParseFilterString reads it back to an equal Filter, except for
// what the language cannot say: a List of one filter is written as that filter (and read back
// as it), an empty List as "()" and FilterOp::kNoOp as NO_OP (both refused by the parser).
std::string FilterToString(const Filter& f);

// One change to a row. kind mirrors the wire's Mutation.Kind.
struct CellMutation {
  enum class Kind : uint8_t { kPut, kDelete, kDeleteColumn, kDeleteFamily, kDeleteRow };
  Kind kind = Kind::kPut;
  std::string family;
  std::string qualifier;
  int64_t timestamp = kLatestTimestamp;  // kLatestTimestamp: the server's clock
  std::string value;
};

// Put and Delete are both a row's list of CellMutations (HBase's Mutation).
class RowMutationsBase {
 public:
  explicit RowMutationsBase(std::string row) : row(std::move(row)) {}
  std::string row;
  std::vector<CellMutation> mutations;
  Durability durability = Durability::kUseDefault;  // the server's setting (SYNC_WAL by default)
  // Set by Delete: with no mutation added, the row is deleted (a DELETE_ROW mutation). A Put or
  // RowMutations with no mutation is refused with InvalidArgument.
  bool deletes_row_when_empty = false;
  // Set by TransactionContext (basalt/transaction.h): the transaction's write pointer (0: none),
  // and whether this takes its writes back.
  int64_t transaction = 0;
  bool rollback = false;

  // Set by RowMutations::Add given another row's mutation: the first such row. Sending a
  // mutation with a foreign row fails with InvalidArgument.
  const std::string& foreign_row() const { return foreign_row_; }
  bool has_foreign_row() const { return has_foreign_row_; }

 protected:
  std::string foreign_row_;
  bool has_foreign_row_ = false;
};

class Put : public RowMutationsBase {
 public:
  explicit Put(std::string row) : RowMutationsBase(std::move(row)) {}
  Put& Add(std::string family, std::string qualifier, std::string value, int64_t ts = kLatestTimestamp);
  Put& SetDurability(Durability d) { durability = d; return *this; }
};

class Delete : public RowMutationsBase {
 public:
  // With no column added, deletes the whole row (HBase's deleteall).
  explicit Delete(std::string row) : RowMutationsBase(std::move(row)) { deletes_row_when_empty = true; }
  // The newest visible version of the column (ts given: exactly that version).
  Delete& AddColumn(std::string family, std::string qualifier, int64_t ts = kLatestTimestamp);
  // Every version of the column at or below ts.
  Delete& AddColumns(std::string family, std::string qualifier, int64_t ts = kLatestTimestamp);
  // Every cell of the family at or below ts.
  Delete& AddFamily(std::string family, int64_t ts = kLatestTimestamp);
  Delete& SetDurability(Durability d) { durability = d; return *this; }
};

// Puts and deletes of one row applied atomically (HBase's RowMutations).
class RowMutations : public RowMutationsBase {
 public:
  explicit RowMutations(std::string row) : RowMutationsBase(std::move(row)) {}
  // Appends m's mutations (a whole-row Delete adds a kDeleteRow). m must be of the same row: if
  // not, nothing is added and the call that sends this fails with InvalidArgument.
  RowMutations& Add(const RowMutationsBase& m);
};

class Increment {
 public:
  explicit Increment(std::string row) : row(std::move(row)) {}
  Increment& AddColumn(std::string family, std::string qualifier, int64_t amount);
  Increment& SetDurability(Durability d) { durability = d; return *this; }
  struct Column { std::string family, qualifier; int64_t amount; };
  std::string row;
  std::vector<Column> columns;
  Durability durability = Durability::kUseDefault;  // the server's setting (SYNC_WAL by default)
};

class Append {
 public:
  explicit Append(std::string row) : row(std::move(row)) {}
  Append& Add(std::string family, std::string qualifier, std::string value);
  Append& SetDurability(Durability d) { durability = d; return *this; }
  struct Column { std::string family, qualifier, value; };
  std::string row;
  std::vector<Column> columns;
  Durability durability = Durability::kUseDefault;  // the server's setting (SYNC_WAL by default)
};

// As HBase's CompareOperator in checkAndMutate: the given value is compared with the stored one
// (kLess passes when given < stored, bytewise).
enum class CompareOp { kEqual, kNotEqual, kLess, kLessOrEqual, kGreater, kGreaterOrEqual, kNotExists };

// HBase's CheckAndMutate: if the column's newest value satisfies the condition, apply the
// mutations atomically.
struct CheckAndMutate {
  std::string row;
  std::string family;
  std::string qualifier;
  CompareOp op = CompareOp::kEqual;
  std::string value;  // ignored for kNotExists
  RowMutations mutations{""};  // its row must equal `row` (set by the constructor helpers)

  static CheckAndMutate IfEquals(std::string row, std::string family, std::string qualifier, std::string value);
  static CheckAndMutate IfNotExists(std::string row, std::string family, std::string qualifier);
  CheckAndMutate& Then(const RowMutationsBase& m);  // adds a Put / Delete / RowMutations
};

// ---------------------------------------------------------------------------------------------
// Scanner

// Rows of a scan, fetched in batches over a server stream. A broken stream (Unavailable,
// ResourceExhausted) is reopened after the last row returned (as HBase's scanner does), with
// the connection's retry budget per Next call: max_attempts attempts within timeout. A stream
// stays open for at most `timeout`; a long scan is then reopened the same way, so a scan may
// take longer than `timeout` as long as each batch arrives within it. Rows are whole: a row is
// never split across a reopening.
class ResultScanner {
 public:
  virtual ~ResultScanner() = default;
  // Fills *row with the next row; false at the end.
  virtual absl::StatusOr<bool> Next(Result* row) = 0;
  // Stops the scan early (also done by the destructor).
  virtual void Close() = 0;
};

// ---------------------------------------------------------------------------------------------
// Table

template <typename T>
using Callback = std::function<void(T)>;

class Table {
 public:
  virtual ~Table() = default;
  virtual const std::string& name() const = 0;

  virtual absl::StatusOr<Result> Get(const basalt::Get& get) = 0;
  // One Result per Get, in order (a batch of reads). The Gets are sent concurrently (up to 32
  // in flight, each with its own retries); the first failure, in order, is the call's error.
  virtual absl::StatusOr<std::vector<Result>> Get(const std::vector<basalt::Get>& gets) = 0;
  virtual absl::Status Put(const basalt::Put& put) = 0;
  virtual absl::Status Delete(const basalt::Delete& del) = 0;
  virtual absl::Status MutateRow(const RowMutations& mutations) = 0;
  // Rows are applied independently, each atomically; one status per mutation in order. The
  // returned Status is not OK only when the whole call failed with nothing applied; a failure
  // after some rows were applied is the status of each row not applied.
  virtual absl::StatusOr<std::vector<absl::Status>> Batch(const std::vector<RowMutationsBase>& rows) = 0;
  virtual absl::StatusOr<Result> Increment(const basalt::Increment& inc) = 0;
  // HBase's incrementColumnValue: returns the new value.
  virtual absl::StatusOr<int64_t> IncrementColumnValue(std::string row, std::string family, std::string qualifier,
                                                       int64_t amount) = 0;
  virtual absl::StatusOr<Result> Append(const basalt::Append& app) = 0;
  // True when the condition held and the mutations were applied.
  virtual absl::StatusOr<bool> CheckAndMutate(const basalt::CheckAndMutate& cam) = 0;
  // Opens the stream and waits for its first batch, so an unknown table or bad request fails
  // here rather than in the first Next.
  virtual absl::StatusOr<std::unique_ptr<ResultScanner>> GetScanner(const basalt::Scan& scan) = 0;

  // Async variants: the callback runs once, on a client thread, when the call completes (retries
  // included). It must not block for long, and must not destroy the Connection.
  virtual void GetAsync(basalt::Get get, Callback<absl::StatusOr<Result>> done) = 0;
  virtual void PutAsync(basalt::Put put, Callback<absl::Status> done) = 0;
  virtual void DeleteAsync(basalt::Delete del, Callback<absl::Status> done) = 0;
};

// ---------------------------------------------------------------------------------------------
// Buffered mutator (HBase's BufferedMutator): collects puts and deletes and sends them in
// batches from a background thread once the buffer passes its size, or on Flush.

struct BufferedMutatorOptions {
  size_t write_buffer_size = 2 << 20;  // bytes (HBase's hbase.client.write.buffer default)
  absl::Duration periodic_flush = absl::Seconds(1);  // 0: only by size and Flush
  int max_in_flight_batches = 2;
};

class BufferedMutator {
 public:
  virtual ~BufferedMutator() = default;  // closes (errors are lost: call Close to see them)
  // Buffers m (a Put, Delete or RowMutations). Blocks while max_in_flight_batches batches are
  // being sent and as many more wait. FailedPrecondition after Close.
  virtual absl::Status Mutate(const RowMutationsBase& m) = 0;
  // Sends everything buffered and waits; returns the first error since the last Flush (with
  // the number of failed mutations), OK if all were applied.
  virtual absl::Status Flush() = 0;
  // Flushes (returning Flush's status) and stops the background thread; later Mutate and
  // Flush calls fail with FailedPrecondition. Closing again returns OK.
  virtual absl::Status Close() = 0;
};

// ---------------------------------------------------------------------------------------------
// Admin

struct FamilySettings {
  std::string name;
  int max_versions = 1;
  int min_versions = 0;
  int64_t ttl_seconds = 0;  // 0: forever
  uint32_t block_size = 64 * 1024;
  std::string encoding = "NONE";       // NONE, PREFIX, FAST_DIFF, ROW_INDEX
  std::string compression = "NONE";    // NONE, SNAPPY, ZLIB (HBase's GZ is accepted as ZLIB)
  std::string bloom = "ROW";           // NONE, ROW, ROWCOL
  std::string checksum = "CRC32C";     // NULL, CRC32, CRC32C
  uint32_t bytes_per_checksum = 16 * 1024;
  bool block_cache = true;
  bool cache_encoded = false;
  // Settings the server keeps and gives back but does not act on, in the order given: HBase's
  // METADATA (a family's IN_MEMORY, REPLICATION_SCOPE, an application's own keys) and
  // CONFIGURATION. Keys are unique and not empty.
  std::vector<std::pair<std::string, std::string>> metadata = {};
  std::vector<std::pair<std::string, std::string>> configuration = {};
};

struct TableInfo {
  std::string name;
  bool enabled = true;
  std::vector<FamilySettings> families;
  // Not empty: the table is enabled but FAILED_OPEN (its region could not open), and why.
  // Admin::AssignTable reopens it once repaired.
  std::string open_error = {};
  uint32_t regions = 0;  // how many regions the table has (describe; ignored by create)
  // A region splits once its largest store passes this many bytes (HBase's MAX_FILESIZE; at
  // least 1 MiB); 0: the server's region_max_size.
  uint64_t max_file_size = 0;
  // Written and read in transactions only (basalt/transaction.h); fixed at create.
  bool transactional = false;
  bool queue = false;  // a queue's table (basalt/queue.h: CreateQueue sets it)
  // The table's kept settings (as FamilySettings'): HBase's table METADATA (OWNER, ...) and
  // CONFIGURATION.
  std::vector<std::pair<std::string, std::string>> metadata = {};
  std::vector<std::pair<std::string, std::string>> configuration = {};
};

// One region of a table (Admin::ListRegions), as HBase's list_regions shows it.
struct RegionStatus {
  std::string name;          // "<table>,<start key as HBase's Bytes.toStringBinary>,<region id>"
  std::string encoded_name;
  std::string start_key;     // the region holds rows [start_key, end_key)
  std::string end_key;       // empty: to the end of the key space
  uint64_t id = 0;
  std::string state;         // OPEN, CLOSED (table disabled), FAILED_OPEN
  std::string server;        // host:port serving it
  uint64_t store_file_bytes = 0, store_files = 0, memstore_bytes = 0;
  uint64_t read_requests = 0, write_requests = 0;  // since the region opened
};

// Split keys that cut the key space into `num_regions` regions, as HBase's RegionSplitter
// algorithms do: "HexStringSplit" (rows are 8 lowercase hex digits: 00000000 .. ffffffff; 16
// regions start at 10000000, 20000000, ...) and "UniformSplit" (rows are uniformly distributed
// bytes: 8-byte big-endian keys; 2 regions meet at 0x80 00 00 00 00 00 00 00). For
// create 't1', 'cf', {NUMREGIONS => 16, SPLITALGO => 'HexStringSplit'}. InvalidArgument for an
// unknown algorithm or num_regions < 2.
absl::StatusOr<std::vector<std::string>> SplitKeysFor(std::string_view algorithm, int num_regions);

struct TableStatus {
  std::string name;
  bool enabled = true;
  uint64_t memstore_bytes = 0, store_files = 0, flushes = 0, compactions = 0;
  bool failed_open = false;  // enabled, but its region could not open (error says why)
  std::string error = {};    // why it is FAILED_OPEN, or why its region failed while open
  // What opening the region did not replay from its log: a torn tail cut, and (with the
  // server's wal_recovery other than strict) intact records and damaged bytes left out.
  uint64_t log_truncated_bytes = 0, log_skipped_records = 0, log_skipped_bytes = 0;
  uint32_t regions = 0;
};

// A region server of a cluster, as the active master shows it (status 'detailed').
struct RegionServerLoad {
  std::string name;     // its ZooKeeper node: "host:port,start code"
  std::string address;  // host:port
  uint32_t regions = 0;
  std::vector<std::string> region_names;
  // As the server reports them; `error` says why they are missing.
  uint64_t requests = 0, memstore_bytes = 0, store_files = 0, resident_bytes = 0;
  int64_t uptime_seconds = 0;
  std::string error;
};

struct ServerStatus {
  std::string version;
  std::string mode;  // "standalone", "master" (a cluster's active master) or "region server"
  int64_t uptime_seconds = 0;
  uint64_t requests = 0;
  uint64_t block_cache_bytes = 0, block_cache_capacity = 0;
  uint64_t resident_bytes = 0;
  std::vector<TableStatus> tables;
  // The server's verbs transport (deploy/RDMA.md): where it listens, e.g. "rxe0 port 1, GID
  // index 1 (RoCE) on 10.0.2.15:4791", or why it is not served ("off: rdma=off", "off: no RDMA
  // device ..."). verbs_enabled is false while it is off or switched off with SetVerbs(false).
  std::string verbs;
  bool verbs_enabled = false;
  uint64_t verbs_endpoints = 0;          // open now
  uint64_t verbs_requests = 0;           // served since start
  uint64_t verbs_connects_accepted = 0;
  uint64_t verbs_connects_rejected = 0;  // bad or expired token, endpoint limit, switched off
  uint64_t verbs_malformed_frames = 0;
  uint64_t verbs_sessions = 0;           // sessions handed out (OpenVerbsSession)
  // The server's TCP fast path: "on HOST:PORT", or why it is off ("off: tcp=false").
  std::string tcp;
  uint64_t tcp_connections = 0;      // open now
  uint64_t tcp_requests = 0;         // read since start
  uint64_t tcp_hellos_refused = 0;   // connections whose session proof was refused
  uint64_t tcp_malformed_frames = 0;
  uint64_t tcp_sessions = 0;         // sessions handed out
  // gRPC connections since start; refused ones were past the cap below the descriptor limit
  // (the server's reserved_fds) or found every descriptor in use.
  uint64_t connections_accepted = 0, connections_refused = 0;
  uint64_t open_descriptors = 0, descriptor_limit = 0;  // the server process's, now
  std::string http_address;  // its HTTP port (/metrics), HOST:PORT; empty: none
  // A cluster's active master: the live region servers and how many dead ones are not yet
  // recovered, and the backup masters.
  std::vector<RegionServerLoad> servers;
  uint32_t dead_servers = 0;
  std::vector<std::string> backup_masters;
};

// A permission (README "Security"; HBase's UserPermission): `actions` (letters of R, W, X, C,
// A) held by `principal` (a user, or @group) on a scope: all of ns, table, family, qualifier
// empty is global; ns alone a namespace ("default" holds every user table); a table, with a
// family, with a qualifier.
struct Permission {
  std::string principal;
  std::string actions;
  std::string ns;
  std::string table;
  std::string family;
  std::string qualifier;
};

// A quota (README "Security"; HBase's set_quota TYPE => THROTTLE) on a user, a namespace or a
// table, or on a user for one table or namespace. Set: `limit` is HBase's LIMIT ("10req/sec",
// "10M/sec", "100K/min"; "NONE" removes) and `throttle` its THROTTLE_TYPE ("" for every call,
// "READ" or "WRITE"). Listed: `throttle` names the kind (REQUEST_NUMBER, READ_SIZE, ...).
struct Quota {
  std::string user;
  std::string ns;
  std::string table;
  std::string throttle;
  std::string limit;
};

// A namespace (HBase's): "ns" of a table named "ns:t". `default` always exists and holds the
// tables named without one; `basalt` and `hbase` are reserved. `configuration` is kept as given
// (HBase's hbase.namespace.quota.* among it); `tables` is filled by DescribeNamespace.
struct NamespaceInfo {
  std::string name;
  std::vector<std::pair<std::string, std::string>> configuration;
  std::vector<std::string> tables;
};

// Who the server takes this connection for.
struct Identity {
  std::string user;  // empty: the server does not authenticate
  std::vector<std::string> groups;
  bool superuser = false;
  std::string authentication;  // "token", "certificate" or "none"
  bool auth_enabled = false;   // the server authenticates and authorises every call
};

// A table's snapshot (docs/DESIGN.md §16): its files named again on the server, no byte copied.
struct SnapshotDescription {
  std::string name;
  std::string table;
  int64_t created_ms = 0;   // when it was taken (ms since the epoch)
  int64_t ttl_seconds = 0;  // deleted once this old; 0: kept until deleted
  uint32_t regions = 0;
  uint64_t files = 0;
  uint64_t bytes = 0;       // of its files
  uint64_t only_bytes = 0;  // of its files nothing else names: what deleting it frees
  std::string owner;        // who took it; empty on a server without authentication
};

// A replication peer (docs/DESIGN.md §15, HBase's add_peer): a cluster, Basalt's or HBase's, that
// a standalone server's log's edits are shipped to, found through its ZooKeeper.
struct ReplicationPeer {
  std::string id;           // 1 to 64 of [A-Za-z0-9_-]
  std::string cluster_key;  // HBase's "<quorum hosts>:<client port>:<znode parent>"
  bool enabled = true;      // disabled: its edits are kept (bounded) and shipped once enabled
  // HBase's TABLE_CFS: only these tables, and of each only the families listed (none: all of its
  // replicated ones); empty: every table. Only families with REPLICATION_SCOPE => 1 are shipped.
  std::map<std::string, std::vector<std::string>> table_cfs;
};

// A peer and where its shipping stands (HBase's status 'replication').
struct PeerStatus {
  ReplicationPeer peer;
  std::string state;       // SHIPPING, RETRYING, BROKEN or DISABLED
  std::string last_error;  // of the last failed batch
  uint64_t segment = 0;    // shipped up to here in the server's log
  uint64_t offset = 0;
  uint64_t entries = 0;    // log records shipped since the server started
  uint64_t cells = 0;
  uint64_t batches = 0;
  uint64_t failed_calls = 0;
  int64_t age_ms = 0;      // of the newest edit shipped, when the peer acknowledged it
  uint64_t lag_bytes = 0;  // of log not shipped yet
};

struct BalanceResult {
  int moves = 0;       // regions moved
  std::string reason;  // why none moved, or what went wrong with some
};

class Admin {
 public:
  virtual ~Admin() = default;
  // AlreadyExists if present. With split keys the table starts with a region per range they
  // make (pre-split, HBase's createTable(desc, splitKeys)); without, with one region.
  virtual absl::Status CreateTable(const TableInfo& table, const std::vector<std::string>& split_keys) = 0;
  absl::Status CreateTable(const TableInfo& table) { return CreateTable(table, {}); }
  virtual absl::StatusOr<TableInfo> DescribeTable(const std::string& name) = 0;
  virtual absl::StatusOr<std::vector<TableInfo>> ListTables() = 0;
  virtual absl::Status DisableTable(const std::string& name) = 0;
  virtual absl::Status EnableTable(const std::string& name) = 0;
  // FailedPrecondition if enabled. Its grants and quotas go with it, as HBase's.
  virtual absl::Status DropTable(const std::string& name) = 0;
  // Empties a disabled table (HBase's truncate, truncate_preserve): the server drops it and
  // makes it again with its descriptor, enabled, in one region or (`preserve_splits`) in the
  // regions it had; its grants and quotas stay. FailedPrecondition if enabled.
  virtual absl::Status TruncateTable(const std::string& name, bool preserve_splits) = 0;
  // Changes a table's families and settings (HBase's modifyTable, the shell's alter): `table`
  // is the whole table as it must be, families added, changed, or left out to be dropped (take
  // DescribeTable's and change it). Its regions reopen with them one after another, where they
  // are (calls on a region reopening are retried). Whether it is transactional or a queue
  // cannot change (InvalidArgument); NotFound.
  virtual absl::Status ModifyTable(const TableInfo& table) = 0;
  virtual absl::Status Flush(const std::string& name) = 0;
  virtual absl::Status MajorCompact(const std::string& name) = 0;
  // Reopens a FAILED_OPEN table (HBase's assign): FailedPrecondition when it is open or disabled.
  virtual absl::Status AssignTable(const std::string& name) = 0;
  virtual absl::StatusOr<ServerStatus> Status() = 0;
  // The table's regions by start key (basalt:meta's too).
  virtual absl::StatusOr<std::vector<RegionStatus>> ListRegions(const std::string& table) = 0;
  // Splits regions without copying data (HBase's split): `name` is a table (each region that can
  // split, or with `split_row` the region holding it) or a region (its name or encoded name).
  // Without `split_row` a region splits at the middle of its largest store. FailedPrecondition
  // when a region cannot split yet (too little data, or it still reads its parent's files).
  virtual absl::Status Split(const std::string& name, const std::string& split_row = "") = 0;
  // Merges two adjacent regions (each by its name or encoded name) into one, without copying
  // data (HBase's merge_region). InvalidArgument when they are not adjacent.
  virtual absl::Status MergeRegions(const std::string& first, const std::string& second) = 0;
  // Switches the server's verbs transport off (its endpoints are disconnected, connects and new
  // sessions refused: clients send Get/Put over gRPC) or back on, e.g. for NIC maintenance.
  // FailedPrecondition when the server serves no verbs transport (rdma=off, no device).
  virtual absl::Status SetVerbs(bool enabled) = 0;
  // A cluster's active master only (FailedPrecondition from a standalone server):
  // Moves a region (encoded name or region name) to `server` (a live region server's host:port
  // or "host:port,start code"; empty: wherever the master places it), as HBase's move: it closes
  // where it is, flushing, and opens there; calls on it meanwhile wait and are retried.
  virtual absl::Status Move(const std::string& region, const std::string& server = "") = 0;
  // Runs the balancer once (HBase's balancer, by region count): regions move from the servers
  // holding the most to those holding the fewest until no two differ by more than one.
  virtual absl::StatusOr<BalanceResult> Balance() = 0;
  // HBase 2's unassign: the region (encoded name or region name) closes where it is (flushing)
  // and stays closed, served nowhere, until AssignRegion (or enable_table): calls on its rows
  // are retried until their deadline. OK when it is closed already. A cluster's master only
  // (FailedPrecondition elsewhere).
  virtual absl::Status Unassign(const std::string& region) = 0;
  // HBase 2's assign of a region: an unassigned or FAILED_OPEN region opens on a server the
  // master picks. OK when it is open already.
  virtual absl::Status AssignRegion(const std::string& region) = 0;

  // Access control (HBase's grant, revoke, user_permission, whoami). Grant replaces what the
  // principal holds at exactly that scope; Revoke removes it (actions ignored); both need A on
  // the scope. UserPermissions lists the grants at or below `scope`'s scope, of its principal
  // only when set (anyone may list their own).
  virtual absl::Status Grant(const Permission& permission) = 0;
  virtual absl::Status Revoke(const Permission& permission) = 0;
  virtual absl::StatusOr<std::vector<Permission>> UserPermissions(const Permission& scope) = 0;
  virtual absl::StatusOr<Identity> WhoAmI() = 0;

  // Quotas (HBase's set_quota and list_quotas): both need global A. A cluster's are set on its
  // master, which hands them to every region server; each server enforces them on the calls it
  // serves.
  virtual absl::Status SetQuota(const Quota& quota) = 0;
  virtual absl::StatusOr<std::vector<Quota>> ListQuotas() = 0;

  // Namespaces (HBase's create_namespace, alter_namespace, drop_namespace, describe_namespace,
  // list_namespace): a table "ns:t" may be made only while `ns` exists, and `ns` dropped only
  // while it holds no table (FailedPrecondition naming them). Making, changing and dropping one
  // needs global A; describing one A on it; the list holds those the caller holds A on.
  // InvalidArgument for a name HBase refuses (or default, basalt, hbase); AlreadyExists;
  // NotFound. ModifyNamespace replaces its configuration. (An Admin that serves none: Unimplemented.)
  virtual absl::Status CreateNamespace(const NamespaceInfo& ns) { return NoNamespaces(ns.name); }
  virtual absl::Status ModifyNamespace(const NamespaceInfo& ns) { return NoNamespaces(ns.name); }
  virtual absl::Status DropNamespace(const std::string& name) { return NoNamespaces(name); }
  virtual absl::StatusOr<NamespaceInfo> DescribeNamespace(const std::string& name) { return NoNamespaces(name); }
  virtual absl::StatusOr<std::vector<NamespaceInfo>> ListNamespaces() { return NoNamespaces(""); }

  // Snapshots (HBase's snapshot, list_snapshots, delete_snapshot): a table's files named again on
  // the server, in a time that grows with its files, not their bytes; every write acknowledged
  // before the call is in it (a disabled table's: every write before it was disabled). Taking one
  // needs A on the table; deleting one global A, or being its owner. InvalidArgument for a name
  // HBase would refuse; AlreadyExists for a name taken; NotFound; FailedPrecondition for a region
  // still reading its split parent's files (major_compact it first). Listed by name, only
  // `table`'s when given; a caller without global A sees only their own.
  virtual absl::StatusOr<SnapshotDescription> Snapshot(const std::string& table, const std::string& name,
                                                        int64_t ttl_seconds = 0) = 0;
  virtual absl::StatusOr<std::vector<SnapshotDescription>> ListSnapshots(const std::string& table = "") = 0;
  virtual absl::Status DeleteSnapshot(const std::string& name) = 0;
  // A new table holding exactly the snapshot's rows (HBase's clone_snapshot), in a time that
  // grows with its files, not their bytes: AlreadyExists for a table of that name.
  // `restore_acl` (HBase's RESTORE_ACL): the grants the snapshot's table had when it was taken
  // are given on the new table too.
  virtual absl::Status CloneSnapshot(const std::string& snapshot, const std::string& table, bool restore_acl) = 0;
  absl::Status CloneSnapshot(const std::string& snapshot, const std::string& table) {
    return CloneSnapshot(snapshot, table, false);
  }
  // The snapshot's table back as the snapshot holds it, descriptor and all (HBase's
  // restore_snapshot): FailedPrecondition unless the table is disabled; it stays disabled.
  // A table dropped since comes back enabled, as a clone. Global A, or the snapshot's owner
  // with A on the table. `restore_acl`: the grants the table had then are given again (on top of
  // what it holds now, as HBase's).
  virtual absl::Status RestoreSnapshot(const std::string& snapshot, bool restore_acl) = 0;
  absl::Status RestoreSnapshot(const std::string& snapshot) { return RestoreSnapshot(snapshot, false); }

  // Replication peers (HBase's add_peer, remove_peer, enable_peer, disable_peer, list_peers), of a
  // standalone server or a cluster (kept by its master); each needs global A. A peer added
  // gets the edits made from then on, enabled or not: a disabled one's are kept for it and
  // shipped once it is enabled (copy what existed before with a snapshot). Removing one forgets
  // its place. AlreadyExists, NotFound, InvalidArgument (the id, the cluster key, a table name).
  virtual absl::Status AddPeer(const ReplicationPeer& peer) = 0;
  virtual absl::Status RemovePeer(const std::string& id) = 0;
  virtual absl::Status EnablePeer(const std::string& id) = 0;
  virtual absl::Status DisablePeer(const std::string& id) = 0;
  virtual absl::StatusOr<std::vector<PeerStatus>> ListPeers() = 0;  // by id

  // Bigtable's consistency token: a token for every edit the server (or the cluster) had
  // acknowledged when it was made, then whether each peer that replicates `table` has them all
  // (true), or what it does not have yet (false, said in `waiting_for`). R or W on the table.
  // A table that no peer replicates is consistent at once.
  virtual absl::StatusOr<std::string> GenerateConsistencyToken(const std::string& table) = 0;
  virtual absl::StatusOr<bool> CheckConsistency(const std::string& table, const std::string& token,
                                                std::string* waiting_for) = 0;
  // Both: returns once what was acknowledged before the call is on every peer replicating
  // `table`, polling every 50 ms; DeadlineExceeded after `timeout`, saying what is missing.
  absl::Status WaitForReplication(const std::string& table, absl::Duration timeout);

 private:
  static absl::Status NoNamespaces(const std::string& name) {
    return absl::UnimplementedError("namespace '" + name + "': this Admin does not serve namespaces");
  }
};

// ---------------------------------------------------------------------------------------------
// Connection

class Connection {
 public:
  // Connects (lazily: the first call dials). InvalidArgument for a malformed address.
  // InvalidArgument also for a non-positive timeout, max_attempts or channels. With
  // TransportChoice::kVerbs, the error that keeps verbs from being used (FailedPrecondition "no
  // RDMA device", a server without verbs, or Unavailable when it cannot be reached).
  static absl::StatusOr<std::unique_ptr<Connection>> Open(const ConnectionOptions& options);
  virtual ~Connection() = default;  // waits for the async calls in flight

  // Tables are cheap handles; the table's existence is checked by the first call.
  virtual std::unique_ptr<Table> GetTable(const std::string& name) = 0;
  virtual std::unique_ptr<Admin> GetAdmin() = 0;
  virtual std::unique_ptr<BufferedMutator> GetBufferedMutator(const std::string& table,
                                                              const BufferedMutatorOptions& options = {}) = 0;
  virtual const ConnectionOptions& options() const = 0;
  // What the transports did so far (verbs state, calls over verbs, fallbacks, endpoints), over
  // every server calls went to (in a cluster, the region servers): counts are summed; the state
  // is the one they share, else each server's ("host:port: state; ...").
  virtual TransportStats GetTransportStats() const = 0;
  // The same per server, by address (a cluster's region servers each have their own gRPC
  // channel and, with verbs, their own pool of endpoints). Region location counts are the
  // connection's and are left at 0 here.
  virtual std::map<std::string, TransportStats> GetServerTransportStats() const = 0;

  // The transaction service's calls, as TransactionContext (basalt/transaction.h) makes them;
  // use that. timeout 0: the server's default. Commit is not retried (a lost answer would leave
  // its outcome unknown; Unavailable or DeadlineExceeded then say so).
  virtual absl::StatusOr<TransactionSnapshot> StartTransaction(absl::Duration timeout);
  virtual absl::Status CommitTransaction(int64_t write_pointer, const std::vector<uint64_t>& changes);
  virtual absl::Status AbortTransaction(int64_t write_pointer);
  virtual absl::Status InvalidateTransaction(int64_t write_pointer);
};

// HBase's Bytes.toBytes(long) / toLong: 8-byte big-endian, the value format of counters.
std::string EncodeCounter(int64_t v);
absl::StatusOr<int64_t> DecodeCounter(std::string_view bytes);

}  // namespace basalt
