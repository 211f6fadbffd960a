// The HTTP port's pages (docs/DESIGN.md §11), beside /metrics: `/` a status page in the spirit of HBase's
// rs-status and master-status, `/status.json` the same figures for scripts, `/conf` the settings
// in force (secrets masked), `/logs` the last lines of the log. The figures are the ones the
// shell's `status` shows (AdminService::Status and ListRegions), so the page, the JSON and the
// shell agree. Plain server-rendered HTML with a little CSS and no script; the latency graph is
// an inline SVG.
//
// Rendering is pure (StatusPageData in, text out) so it is tested without a server;
// LatencyHistory is the one part with a thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "common/metrics.h"
#include "proto/basalt.pb.h"
#include "src/base/config.h"
#include "src/base/http_front.h"

namespace basalt::server {

// p50 and p99 of operations' latency, per interval, over the last minutes: every `interval` a
// thread reads each histogram (the ones /metrics exposes) and keeps the quantiles of what was
// observed since the last reading, estimated from the buckets as Prometheus does.
class LatencyHistory {
 public:
  struct Series {
    std::string name;  // "get", "mutate"
    const metrics::Histogram* histogram;  // in microseconds; must outlive this
  };
  struct Point {
    absl::Time at;        // the interval's end
    uint64_t count = 0;   // operations in the interval
    double p50_us = 0;    // NaN when count is 0
    double p99_us = 0;
  };
  using Points = std::vector<std::pair<std::string, std::vector<Point>>>;  // per series, oldest first

  // Starts the sampling thread (none when interval is zero: Sample() by hand).
  LatencyHistory(std::vector<Series> series, absl::Duration interval, size_t keep);
  ~LatencyHistory();  // stops the thread
  LatencyHistory(const LatencyHistory&) = delete;
  LatencyHistory& operator=(const LatencyHistory&) = delete;

  void Sample();
  Points Get() const;
  absl::Duration interval() const { return interval_; }

 private:
  struct Tracked {
    Series series;
    std::vector<uint64_t> last;  // cumulative counts at the last sample
    std::vector<Point> points;
  };
  const absl::Duration interval_;
  const size_t keep_;
  mutable absl::Mutex mu_;
  std::vector<Tracked> tracked_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// Everything one page shows, read at one request.
struct StatusPageData {
  std::string program;      // "basalt-server" or "basalt-master"
  std::string server_name;  // host:port of its gRPC port
  absl::Time now;
  rpc::StatusResponse status;
  std::vector<rpc::RegionStatus> regions;  // every table's, by table then start key
  std::vector<SettingInForce> conf;
  std::vector<log::Line> log;  // the last lines, oldest first
  LatencyHistory::Points latency;
  absl::Duration latency_interval;
  // What the page shows besides the server's figures, the tables and the log, as the process that
  // serves it says (the renderer never asks which kind of process it is):
  bool wal_section = true;       // the write-ahead log's figures (a server's; a master writes no data)
  bool servers_section = false;  // the cluster's region servers (the active master's)
  bool snapshots_section = false;  // the snapshots (where a catalogue is kept: FillFromAdmin sets it)
  std::vector<rpc::SnapshotDescription> snapshots;  // by name
  bool peers_section = false;  // the replication peers (where they are kept: FillFromAdmin sets it)
  std::vector<rpc::PeerStatus> peers;  // by id
  // A process that serves nothing yet (a backup master): the page shows only this, under its
  // heading, and the log. Empty heading: the process serves.
  std::string waiting_heading;
  std::string waiting;
};

class AdminService;

// The page's server figures as the shell's `status` has them: `admin`'s Status, every one of
// its tables' regions (ListRegions), its snapshots where it keeps them (ListSnapshots), and its
// replication peers where it has them (ListPeers).
void FillFromAdmin(AdminService* admin, StatusPageData* page);

// The HTTP port's routes, a server's and a master's alike: /healthz (open to anyone: "ok", a
// liveness check that names nothing); /metrics from `registry`; `/` and /status.json from
// `page` (read at each request, its `conf` from `conf`); /conf; /logs.
std::vector<HttpFront::Route> StatusRoutes(const metrics::Registry* registry, std::function<StatusPageData()> page,
                                           std::function<std::vector<SettingInForce>()> conf);

std::string RenderStatusHtml(const StatusPageData& d);
// One JSON object: {"program", "server", "time", "status" (StatusResponse as protobuf's JSON
// mapping writes it, field names as in the .proto), "regions", "snapshots" (where the page has
// the section), "latency", "conf", "log"}.
std::string RenderStatusJson(const StatusPageData& d);
// "key = value" lines, the defaults marked; as a config file would say them.
std::string RenderConfText(const std::vector<SettingInForce>& conf);
// "2026-11-25T22:40:01.123Z INFO text" lines.
std::string RenderLogText(const std::vector<log::Line>& lines);
// The latency graph: p50 (solid) and p99 (dashed) of each series on a log scale, 10 µs to 10 s.
std::string LatencySvg(const LatencyHistory::Points& points, absl::Duration interval, absl::Time now);

std::string HtmlEscape(std::string_view text);
// 1536 -> "1.5 KiB"; 0 -> "0 B".
std::string HumanBytes(uint64_t bytes);
// 93784 -> "1d 2h 3m 4s".
std::string HumanDuration(int64_t seconds);

}  // namespace basalt::server
