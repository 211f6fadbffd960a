#include "src/services/server_metrics.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "src/base/process_stats.h"
#include "src/services/service.h"
#include "src/catalog/catalog.h"
#include "storage/block_cache.h"

namespace basalt::server {
namespace {

// Registering a fixed, valid name cannot fail: a failure is a bug in this file, stopped at
// start-up (every test that starts a server would show it).
void Must(const absl::Status& s) {
  if (s.ok()) return;
  log::Error(absl::StrCat("registering a metric failed: ", s.ToString()));
  std::abort();
}
template <typename T>
T Must(absl::StatusOr<T> v) {
  Must(v.status());
  return *v;
}

using Samples = std::vector<std::pair<metrics::Labels, double>>;

}  // namespace

std::string SnakeCase(std::string_view camel) {
  std::string out;
  for (size_t i = 0; i < camel.size(); ++i) {
    const char c = camel[i];
    if (c >= 'A' && c <= 'Z') {
      if (i > 0) out += '_';
      out += static_cast<char>(c - 'A' + 'a');
    } else {
      out += c;
    }
  }
  return out;
}

OpMetrics MakeOpMetrics(metrics::Registry* r, std::string_view op, std::string_view transport, bool timed) {
  const metrics::Labels labels = {{"op", SnakeCase(op)}, {"transport", std::string(transport)}};
  OpMetrics m;
  m.requests = Must(r->AddCounter("basalt_requests_total", "Calls answered, by operation and transport.", labels));
  m.errors = Must(r->AddCounter("basalt_request_errors_total",
                                "Calls answered with an error (any status but OK), by operation and transport.", labels));
  if (timed) {
    m.latency = Must(r->AddHistogram("basalt_request_duration_seconds",
                                     "Time from a call's handler start to its answer, by operation and transport.",
                                     labels, metrics::LatencyBucketsMicros(), 1e6));
  }
  const metrics::Labels by_transport = {{"transport", std::string(transport)}};
  m.bytes_in = Must(r->AddCounter("basalt_received_bytes_total", "Request message bytes, by transport.", by_transport));
  m.bytes_out = Must(r->AddCounter("basalt_sent_bytes_total", "Reply message bytes, by transport.", by_transport));
  return m;
}

void RegisterSnapshotMetrics(metrics::Registry* r, std::function<SnapshotTotals()> read) {
  auto gauge = [read](uint64_t SnapshotTotals::*v) { return [read, v] { return static_cast<double>(read().*v); }; };
  Must(r->AddGauge("basalt_snapshots", "Snapshots kept.", {}, gauge(&SnapshotTotals::snapshots)));
  Must(r->AddGauge("basalt_snapshot_bytes", "Bytes of the block files the snapshots name.", {},
                   gauge(&SnapshotTotals::bytes)));
  Must(r->AddGauge("basalt_snapshot_pinned_bytes",
                   "Bytes of block files one snapshot alone names (no table, no other snapshot): what deleting each would free, summed.",
                   {},
                   gauge(&SnapshotTotals::only_bytes)));
}

void RegisterPeerMetrics(metrics::Registry* r, std::function<absl::Status(rpc::ListPeersResponse*)> read) {
  auto per_peer = [read](auto value) {
    return [read, value]() {
      Samples out;
      rpc::ListPeersResponse all;
      if (!read(&all).ok()) return out;
      for (const rpc::PeerStatus& p : all.peers()) out.push_back({{{"peer", p.peer().id()}}, value(p)});
      return out;
    };
  };
  using PS = rpc::PeerStatus;
  Must(r->AddGaugeFamily("basalt_replication_peer_lag_bytes",
                         "Bytes of this server's log not yet shipped to each replication peer.",
                         per_peer([](const PS& p) { return static_cast<double>(p.lag_bytes()); })));
  Must(r->AddGaugeFamily("basalt_replication_peer_age_seconds",
                         "Age of the newest edit each peer acknowledged, when it did (HBase's ageOfLastShippedOp).",
                         per_peer([](const PS& p) { return static_cast<double>(p.age_ms()) / 1000.0; })));
  Must(r->AddGaugeFamily("basalt_replication_peer_up",
                         "1 while a peer ships or is idle (SHIPPING), 0 while retrying, broken or disabled.",
                         per_peer([](const PS& p) { return p.state() == "SHIPPING" ? 1.0 : 0.0; })));
  Must(r->AddCounterFamily("basalt_replication_peer_shipped_entries_total",
                           "Log records each peer acknowledged since the server started.",
                           per_peer([](const PS& p) { return static_cast<double>(p.entries()); })));
  Must(r->AddCounterFamily("basalt_replication_peer_shipped_cells_total",
                           "Cells each peer acknowledged since the server started.",
                           per_peer([](const PS& p) { return static_cast<double>(p.cells()); })));
  Must(r->AddCounterFamily("basalt_replication_peer_failed_calls_total",
                           "Batches a peer refused or did not answer (each sent again).",
                           per_peer([](const PS& p) { return static_cast<double>(p.failed_calls()); })));
}

void RegisterScrapedMetrics(metrics::Registry* r, const TableSource* tables, const ServerCounters* counters) {
  // Per table: one read of the tables' statistics per family.
  auto per_table = [tables](auto value) {
    return [tables, value]() {
      Samples out;
      for (const TableInfo& t : tables->Stats()) out.push_back({{{"table", t.spec.name}}, value(t)});
      return out;
    };
  };
  using TI = TableInfo;
  Must(r->AddGaugeFamily("basalt_table_regions", "Regions of each table, as meta records them.",
                         per_table([](const TI& t) { return static_cast<double>(t.regions); })));
  Must(r->AddGaugeFamily("basalt_table_memstore_bytes", "Bytes in each table's memstores on this server.",
                         per_table([](const TI& t) { return static_cast<double>(t.stats.memstore_bytes); })));
  Must(r->AddGaugeFamily("basalt_table_store_files", "Block files of each table on this server.",
                         per_table([](const TI& t) {
                           double n = 0;
                           for (const auto& [family, files] : t.stats.files_per_family) n += static_cast<double>(files);
                           return n;
                         })));
  Must(r->AddGaugeFamily("basalt_table_store_file_bytes", "Bytes of each table's block files on this server.",
                         per_table([](const TI& t) { return static_cast<double>(t.stats.store_file_bytes); })));
  Must(r->AddCounterFamily("basalt_table_flushes_total", "Memstore flushes of each table's regions.",
                           per_table([](const TI& t) { return static_cast<double>(t.stats.flushes); })));
  Must(r->AddCounterFamily(
      "basalt_table_compactions_total", "Compactions (minor and major) of each table's regions.",
      per_table([](const TI& t) { return static_cast<double>(t.stats.minor_compactions + t.stats.major_compactions); })));
  Must(r->AddGaugeFamily("basalt_table_compactions_running", "Store compactions under way in each table's regions.",
                         per_table([](const TI& t) { return static_cast<double>(t.stats.compactions_running); })));
  Must(r->AddGaugeFamily("basalt_table_compactions_queued",
                         "Compactions of each table's regions waiting for the one under way in their region.",
                         per_table([](const TI& t) { return static_cast<double>(t.stats.compactions_queued); })));
  Must(r->AddCounterFamily("basalt_table_compacted_bytes_total",
                           "Block file bytes read by the finished compactions of each table's regions.",
                           per_table([](const TI& t) { return static_cast<double>(t.stats.compacted_bytes); })));
  Must(r->AddCounterFamily("basalt_table_blocked_writes_total",
                           "Writes that waited for a flush (memstore past its blocking limit).",
                           per_table([](const TI& t) { return static_cast<double>(t.stats.blocked_writes); })));
  // The storage engine's process-wide counts, as every open table's statistics carry them.
  auto process_wide = [tables](uint64_t RegionStats::*count) {
    return [tables, count] {
      uint64_t n = 0;
      for (const TableInfo& t : tables->Stats()) n = std::max(n, t.stats.*count);
      return static_cast<double>(n);
    };
  };
  Must(r->AddCounterFunction("basalt_bloom_skips_total",
                             "Store files a read did not open because their bloom filter ruled the row out, process-wide.",
                             {}, process_wide(&RegionStats::bloom_skips)));
  Must(r->AddCounterFunction("basalt_checksum_failures_total",
                             "Blocks refused for a bad checksum (never served), process-wide.", {},
                             process_wide(&RegionStats::checksum_failures)));
  // The server log.
  auto log = [tables](auto value) { return [tables, value] { return static_cast<double>(value(tables->ServerLogStats())); }; };
  Must(r->AddCounterFunction("basalt_wal_appends_total", "Records appended to the server log.", {},
                             log([](const LogStats& s) { return s.records; })));
  Must(r->AddCounterFunction("basalt_wal_bytes_total", "Framed bytes appended to the server log.", {},
                             log([](const LogStats& s) { return s.bytes; })));
  Must(r->AddCounterFunction("basalt_wal_syncs_total", "fdatasync calls of the server log.", {},
                             log([](const LogStats& s) { return s.syncs; })));
  Must(r->AddCounterFunction("basalt_wal_synced_records_total",
                             "Records made durable by those syncs (divided by the syncs: writers per sync).", {},
                             log([](const LogStats& s) { return s.synced_records; })));
  Must(r->AddCounterFunction("basalt_wal_sync_seconds_total",
                             "Time spent in the server log's fdatasync calls (divided by the syncs: the mean sync latency).",
                             {}, log([](const LogStats& s) { return s.sync_micros / 1e6; })));
  Must(r->AddGauge("basalt_wal_live_segments", "Server log segments not deleted yet.", {},
                   log([](const LogStats& s) { return s.live_segments; })));
  RegisterSnapshotMetrics(r, [tables] { return tables->Snapshots(); });
  // The block cache.
  if (counters->block_cache != nullptr) {
    const BlockCache* cache = counters->block_cache;
    auto usage = [cache](auto value) { return [cache, value] { return static_cast<double>(value(GetBlockCacheUsage(*cache))); }; };
    Must(r->AddGauge("basalt_block_cache_bytes", "Bytes the block cache holds.", {},
                     usage([](const BlockCacheUsage& u) { return u.usage_bytes; })));
    Must(r->AddGauge("basalt_block_cache_capacity_bytes", "The block cache's capacity.", {},
                     usage([](const BlockCacheUsage& u) { return u.capacity_bytes; })));
    Must(r->AddCounterFunction("basalt_block_cache_hits_total", "Block cache lookups that found the block.", {},
                               usage([](const BlockCacheUsage& u) { return u.hits; })));
    Must(r->AddCounterFunction("basalt_block_cache_misses_total", "Block cache lookups that did not.", {},
                               usage([](const BlockCacheUsage& u) { return u.misses; })));
    Must(r->AddCounterFunction("basalt_block_cache_evictions_total", "Blocks dropped to make room.", {},
                               usage([](const BlockCacheUsage& u) { return u.evictions; })));
  }
  // The verbs transport (zero while it is off).
  auto verbs = [counters](auto value) {
    return [counters, value] {
      rpc::StatusResponse st;
      if (const VerbsControl* v = counters->verbs.load(); v != nullptr && v->fill_status) v->fill_status(&st);
      return static_cast<double>(value(st));
    };
  };
  using SR = rpc::StatusResponse;
  Must(r->AddGauge("basalt_verbs_endpoints", "Verbs endpoints (queue pairs) open.", {},
                   verbs([](const SR& s) { return s.verbs_endpoints(); })));
  Must(r->AddGauge("basalt_verbs_sessions", "Verbs sessions given to clients and not expired.", {},
                   verbs([](const SR& s) { return s.verbs_sessions(); })));
  Must(r->AddCounterFunction("basalt_verbs_connects_total", "Endpoint connects accepted.", {{"result", "accepted"}},
                             verbs([](const SR& s) { return s.verbs_connects_accepted(); })));
  Must(r->AddCounterFunction("basalt_verbs_connects_total", "Endpoint connects accepted.", {{"result", "rejected"}},
                             verbs([](const SR& s) { return s.verbs_connects_rejected(); })));
  Must(r->AddCounterFunction("basalt_verbs_malformed_frames_total", "Verbs frames refused as malformed.", {},
                             verbs([](const SR& s) { return s.verbs_malformed_frames(); })));
  // Connections and the process.
  Must(r->AddCounterFunction("basalt_connections_accepted_total", "gRPC connections accepted.", {},
                             [counters] { return static_cast<double>(counters->connections_accepted.load()); }));
  Must(r->AddGauge("basalt_grpc_calls_in_flight",
                   "gRPC calls taken and not yet over (a call past max_concurrent_calls is refused).", {},
                   [counters] { return static_cast<double>(counters->calls_in_flight.load()); }));
  Must(r->AddCounterFunction("basalt_connections_refused_total",
                             "gRPC connections refused (over the cap, or out of descriptors).", {},
                             [counters] { return static_cast<double>(counters->connections_refused.load()); }));
  RegisterProcessMetrics(r, counters->start);
}

void RegisterProcessMetrics(metrics::Registry* r, std::chrono::steady_clock::time_point start) {
  Must(r->AddGauge("basalt_process_resident_bytes", "Resident memory of the process.", {},
                   [] { return static_cast<double>(ResidentBytes()); }));
  Must(r->AddGauge("basalt_process_threads", "Threads of the process.", {},
                   [] { return static_cast<double>(ThreadCount()); }));
  Must(r->AddGauge("basalt_process_open_files", "Open file descriptors of the process.", {},
                   [] { return static_cast<double>(OpenDescriptors()); }));
  Must(r->AddGauge("basalt_process_uptime_seconds", "Seconds since the server started.", {}, [start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }));
}

}  // namespace basalt::server
