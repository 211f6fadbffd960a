// What basalt-server and basalt-master count for /metrics (docs/DESIGN.md §11, common/metrics.h): per
// operation and transport, requests, errors, latency (data operations) and bytes, counted where
// the transport hands a call to its handler; and, read at each scrape, the tables (regions,
// memstores, store files), the server log, the block cache and the process.
#pragma once

#include <chrono>
#include <functional>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "common/metrics.h"
#include "proto/basalt.pb.h"

namespace basalt::server {

class TableSource;
struct ServerCounters;
struct SnapshotTotals;

// Whether the data path counts calls: off only in a build made to measure what counting costs
// (cmake -DBASALT_METRICS=OFF), where the transports make no OpMetrics at all.
#ifdef BASALT_NO_METRICS
inline constexpr bool kCountCalls = false;
#else
inline constexpr bool kCountCalls = true;
#endif

// One operation over one transport. Made at start-up; recording is lock-free.
struct OpMetrics {
  metrics::Counter* requests = nullptr;
  metrics::Counter* errors = nullptr;
  metrics::Histogram* latency = nullptr;  // data operations only (null: not timed)
  metrics::Counter* bytes_in = nullptr;   // the transport's, shared by its operations
  metrics::Counter* bytes_out = nullptr;

  void Record(bool ok, uint64_t micros, uint64_t in, uint64_t out) const {
    // (One call of each: requests, bytes in and out, the latency histogram; 4.8–10 ns each.)
    requests->Add();
    if (!ok) errors->Add();
    if (latency != nullptr) latency->Observe(micros);
    bytes_in->Add(in);
    bytes_out->Add(out);
  }
};

// Microseconds since `start` (steady clock), for OpMetrics::Record.
inline uint64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
}

// `op`: a method name as the proto spells it ("BatchMutate"), labelled in snake case
// ("batch_mutate"); `transport`: "grpc" or "verbs"; `timed`: with a latency histogram.
OpMetrics MakeOpMetrics(metrics::Registry* registry, std::string_view op, std::string_view transport, bool timed);
std::string SnakeCase(std::string_view camel);

// The figures read at scrape time: per table (regions, memstore bytes, store files and bytes,
// flushes, compactions), the server log (appends, bytes, syncs, records per sync), the block
// cache, and the process (resident bytes, threads, open files, uptime). `tables` and `counters`
// must outlive the registry's scrapes.
void RegisterScrapedMetrics(metrics::Registry* registry, const TableSource* tables, const ServerCounters* counters);
// The snapshots a catalogue keeps (basalt_snapshots, basalt_snapshot_bytes,
// basalt_snapshot_pinned_bytes), as `read` gives them at each scrape.
void RegisterSnapshotMetrics(metrics::Registry* registry, std::function<SnapshotTotals()> read);
// Each replication peer's shipping (basalt_replication_peer_*{peer}), as `read` lists the peers
// at each scrape (AdminService::ListPeers; an error: none).
void RegisterPeerMetrics(metrics::Registry* registry, std::function<absl::Status(rpc::ListPeersResponse*)> read);
// The process's figures alone (resident bytes, threads, open files, uptime since `start`): a
// master's /metrics, and part of the above.
void RegisterProcessMetrics(metrics::Registry* registry, std::chrono::steady_clock::time_point start);

}  // namespace basalt::server
