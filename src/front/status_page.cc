#include "src/front/status_page.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/json_string.h"
#include "common/status.h"
#include "common/string_binary.h"
#include "src/services/service.h"

namespace basalt::server {

// ------------------------------------------------------------------ LatencyHistory

LatencyHistory::LatencyHistory(std::vector<Series> series, absl::Duration interval, size_t keep)
    : interval_(interval), keep_(std::max<size_t>(keep, 1)) {
  {
    absl::MutexLock l(&mu_);
    for (Series& s : series) {
      Tracked t;
      t.last = s.histogram->Snap().cumulative;
      t.series = std::move(s);
      tracked_.push_back(std::move(t));
    }
  }
  if (interval_ > absl::ZeroDuration()) {
    thread_ = std::thread([this] {
      for (;;) {
        {
          absl::MutexLock l(&mu_);
          if (mu_.AwaitWithTimeout(absl::Condition(&stop_), interval_)) return;
        }
        Sample();
      }
    });
  }
}

LatencyHistory::~LatencyHistory() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void LatencyHistory::Sample() {
  const absl::Time now = absl::Now();
  absl::MutexLock l(&mu_);
  for (Tracked& t : tracked_) {
    std::vector<uint64_t> cumulative = t.series.histogram->Snap().cumulative;
    std::vector<uint64_t> delta(cumulative.size(), 0);
    for (size_t i = 0; i < cumulative.size() && i < t.last.size(); ++i) {
      delta[i] = cumulative[i] >= t.last[i] ? cumulative[i] - t.last[i] : 0;
    }
    // Shards are read one after another, so a delta may be a moment off: keep it cumulative.
    for (size_t i = 1; i < delta.size(); ++i) delta[i] = std::max(delta[i], delta[i - 1]);
    Point p;
    p.at = now;
    p.count = delta.empty() ? 0 : delta.back();
    p.p50_us = metrics::Quantile(t.series.histogram->bounds(), delta, 0.5);
    p.p99_us = metrics::Quantile(t.series.histogram->bounds(), delta, 0.99);
    t.points.push_back(p);
    if (t.points.size() > keep_) t.points.erase(t.points.begin());
    t.last = std::move(cumulative);
  }
}

LatencyHistory::Points LatencyHistory::Get() const {
  absl::MutexLock l(&mu_);
  Points out;
  for (const Tracked& t : tracked_) out.emplace_back(t.series.name, t.points);
  return out;
}

// ------------------------------------------------------------------ sources and routes

void FillFromAdmin(AdminService* admin, StatusPageData* page) {
  admin->Status(rpc::StatusRequest(), &page->status).IgnoreError();
  for (const rpc::TableStatus& t : page->status.tables()) {
    rpc::TableRequest req;
    req.set_table(t.name());
    rpc::ListRegionsResponse regions;
    if (!admin->ListRegions(req, &regions).ok()) continue;
    for (rpc::RegionStatus& r : *regions.mutable_regions()) page->regions.push_back(std::move(r));
  }
  rpc::ListSnapshotsResponse snapshots;  // (refused where no catalogue is kept: no section)
  if (admin->ListSnapshots(rpc::ListSnapshotsRequest(), &snapshots).ok()) {
    page->snapshots_section = true;
    page->snapshots.assign(snapshots.snapshots().begin(), snapshots.snapshots().end());
  }
  rpc::ListPeersResponse peers;  // (refused where none are kept: no section)
  if (admin->ListPeers(rpc::ListPeersRequest(), &peers).ok()) {
    page->peers_section = true;
    page->peers.assign(peers.peers().begin(), peers.peers().end());
  }
}

std::vector<HttpFront::Route> StatusRoutes(const metrics::Registry* registry, std::function<StatusPageData()> page,
                                           std::function<std::vector<SettingInForce>()> conf) {
  auto with_conf = [page, conf] {
    StatusPageData d = page();
    d.conf = conf();
    return d;
  };
  return {
      {"/healthz", HttpFront::kText, [] { return std::string("ok\n"); }, HttpFront::Access::kOpen},
      {"/metrics", HttpFront::kPrometheusText, [registry] { return registry->Render(); }, HttpFront::Access::kMetrics},
      {"/", HttpFront::kHtml, [with_conf] { return RenderStatusHtml(with_conf()); }},
      {"/status.json", HttpFront::kJson, [with_conf] { return RenderStatusJson(with_conf()); }},
      {"/conf", HttpFront::kText, [conf] { return RenderConfText(conf()); }},
      {"/logs", HttpFront::kText, [] { return RenderLogText(log::Recent(500)); }},
  };
}

// ------------------------------------------------------------------ text helpers

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrCat(bytes, " B");
  return absl::StrFormat("%.1f %s", v, kUnits[unit]);
}

std::string HumanDuration(int64_t seconds) {
  if (seconds < 0) seconds = 0;
  const int64_t d = seconds / 86400, h = seconds / 3600 % 24, m = seconds / 60 % 60, s = seconds % 60;
  if (d > 0) return absl::StrCat(d, "d ", h, "h ", m, "m ", s, "s");
  if (h > 0) return absl::StrCat(h, "h ", m, "m ", s, "s");
  if (m > 0) return absl::StrCat(m, "m ", s, "s");
  return absl::StrCat(s, "s");
}

namespace {

std::string Iso8601(absl::Time t) { return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone()); }

std::string Micros(double us) {
  if (std::isnan(us)) return "–";
  if (us < 1000) return absl::StrFormat("%.0f µs", us);
  if (us < 1e6) return absl::StrFormat("%.2f ms", us / 1000);
  return absl::StrFormat("%.2f s", us / 1e6);
}

std::string_view TableStateName(rpc::TableState s) {
  switch (s) {
    case rpc::TABLE_ENABLED: return "ENABLED";
    case rpc::TABLE_DISABLED: return "DISABLED";
    case rpc::TABLE_FAILED_OPEN: return "FAILED_OPEN";
    default: return "UNKNOWN";
  }
}

// A table of key/value rows; values are already HTML.
std::string KeyValues(std::string_view id, const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string out = absl::StrCat("<table class=\"kv\" id=\"", AV(id), "\">");
  for (const auto& [k, v] : rows) absl::StrAppend(&out, "<tr><th>", HtmlEscape(k), "</th><td>", v, "</td></tr>");
  out += "</table>";
  return out;
}

std::string Num(uint64_t n) { return absl::StrCat("<span class=\"num\">", n, "</span>"); }

constexpr char kCss[] = R"css(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2733;background:#f5f7fa}
header{background:#24323f;color:#fff;padding:10px 24px;display:flex;align-items:baseline;gap:24px;flex-wrap:wrap}
header h1{font-size:20px;margin:0}header h1 small{font-weight:normal;color:#b8c4cf;margin-left:8px}
header nav a{color:#cfe3f7;margin-right:14px;text-decoration:none}header nav a:hover{text-decoration:underline}
main{padding:8px 24px 24px;max-width:1400px}
section{background:#fff;border:1px solid #dde3ea;border-radius:6px;margin:14px 0;padding:10px 16px}
h2{font-size:16px;margin:4px 0 10px;color:#24323f}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 10px;border-bottom:1px solid #edf0f4;white-space:nowrap}
table.kv{width:auto}table.kv th{color:#5a6b7b;font-weight:normal;padding-right:24px}
table.kv td{white-space:normal;overflow-wrap:anywhere}
thead th{background:#f0f3f7;color:#3d4c5a;font-weight:600}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:0 24px}
.state-OPEN,.state-ENABLED,.state-SHIPPING{color:#1a7f37}.state-FAILED_OPEN,.state-BROKEN{color:#cf222e;font-weight:600}
.state-CLOSED,.state-DISABLED,.state-RETRYING{color:#9a6700}
.err{color:#cf222e}
pre{background:#f6f8fa;padding:8px;overflow:auto;margin:0;font-size:12px;max-height:320px;white-space:pre-wrap}
#latency-graph{max-width:100%;height:auto}
svg text{font:11px system-ui,sans-serif;fill:#5a6b7b}
footer{color:#7a8896;font-size:12px;padding:0 24px 16px}
)css";

}  // namespace

// ------------------------------------------------------------------ the graph

std::string LatencySvg(const LatencyHistory::Points& points, absl::Duration interval, absl::Time now) {
  constexpr int kW = 900, kH = 240, kLeft = 64, kRight = 130, kTop = 10, kBottom = 26;
  constexpr double kMinUs = 10, kMaxUs = 1e7;  // 10 µs .. 10 s, log scale
  size_t keep = 1;
  for (const auto& [name, pts] : points) keep = std::max(keep, pts.size());
  keep = std::max<size_t>(keep, 30);
  const absl::Duration span = interval * static_cast<int64_t>(keep);
  const double plot_w = kW - kLeft - kRight, plot_h = kH - kTop - kBottom;
  auto x_of = [&](absl::Time t) {
    const double f = 1.0 - absl::FDivDuration(now - t, span);
    return kLeft + std::clamp(f, 0.0, 1.0) * plot_w;
  };
  auto y_of = [&](double us) {
    const double f = (std::log10(std::clamp(us, kMinUs, kMaxUs)) - std::log10(kMinUs)) /
                     (std::log10(kMaxUs) - std::log10(kMinUs));
    return kTop + (1.0 - f) * plot_h;
  };
  std::string svg = absl::StrFormat(
      "<svg id=\"latency-graph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
      "role=\"img\" aria-label=\"p50 and p99 latency over the last %s\">",
      kW, kH, kW, kH, absl::FormatDuration(span));
  // Grid: one line per decade, labelled.
  const char* labels[] = {"10 µs", "100 µs", "1 ms", "10 ms", "100 ms", "1 s", "10 s"};
  for (int i = 0; i < 7; ++i) {
    const double y = y_of(kMinUs * std::pow(10.0, i));
    absl::StrAppendFormat(&svg, "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e8ee\"/>", kLeft,
                          kLeft + plot_w, y, y);
    absl::StrAppendFormat(&svg, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>", kLeft - 6, y + 4, labels[i]);
  }
  absl::StrAppendFormat(&svg, "<text x=\"%d\" y=\"%d\">-%s</text>", kLeft, kH - 8, absl::FormatDuration(span));
  absl::StrAppendFormat(&svg, "<text x=\"%.0f\" y=\"%d\" text-anchor=\"end\">now</text>", kLeft + plot_w, kH - 8);
  static constexpr const char* kColors[] = {"#0969da", "#bf3989", "#1a7f37", "#9a6700", "#cf222e", "#8250df", "#1b7c83"};
  int legend_y = kTop + 12;
  for (size_t s = 0; s < points.size(); ++s) {
    const auto& [name, pts] = points[s];
    const char* color = kColors[s % std::size(kColors)];
    for (int q = 0; q < 2; ++q) {
      // A polyline per run of intervals with operations (none: a gap).
      std::vector<std::string> runs;
      std::string current;
      for (const LatencyHistory::Point& p : pts) {
        const double us = q == 0 ? p.p50_us : p.p99_us;
        if (p.count == 0 || std::isnan(us)) {
          if (!current.empty()) runs.push_back(std::move(current));
          current.clear();
          continue;
        }
        absl::StrAppendFormat(&current, "%s%.1f,%.1f", current.empty() ? "" : " ", x_of(p.at), y_of(us));
      }
      if (!current.empty()) runs.push_back(std::move(current));
      for (const std::string& run : runs) {
        absl::StrAppendFormat(&svg,
                              "<polyline class=\"series\" data-series=\"%s-p%s\" fill=\"none\" stroke=\"%s\" "
                              "stroke-width=\"%s\"%s points=\"%s\"/>",
                              HtmlEscape(name), q == 0 ? "50" : "99", color, q == 0 ? "2" : "1.5",
                              q == 0 ? "" : " stroke-dasharray=\"5 3\"", run);
        // A lone point shows as a dot.
        if (run.find(' ') == std::string::npos) {
          const size_t comma = run.find(',');
          absl::StrAppendFormat(&svg, "<circle cx=\"%s\" cy=\"%s\" r=\"2.5\" fill=\"%s\"/>", run.substr(0, comma),
                                run.substr(comma + 1), color);
        }
      }
      absl::StrAppendFormat(&svg,
                            "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>"
                            "<text x=\"%d\" y=\"%d\">%s p%s</text>",
                            kW - kRight + 12, kW - kRight + 34, legend_y - 4, legend_y - 4, color,
                            q == 0 ? "" : " stroke-dasharray=\"5 3\"", kW - kRight + 40, legend_y, HtmlEscape(name),
                            q == 0 ? "50" : "99");
      legend_y += 16;
    }
  }
  svg += "</svg>";
  return svg;
}

// ------------------------------------------------------------------ the page

namespace {

using Rows = std::vector<std::pair<std::string, std::string>>;

// The server's figures, its write-ahead log's (when the page shows them), its block cache's and
// its verbs transport's.
std::string ServerSections(const StatusPageData& d) {
  const rpc::StatusResponse& st = d.status;
  const Rows server = {
      {"Program", HtmlEscape(d.program)},
      {"Version", HtmlEscape(st.version())},
      {"Mode", HtmlEscape(st.mode())},
      {"Uptime", HtmlEscape(HumanDuration(st.uptime_seconds()))},
      {"Requests served", Num(st.requests())},
      {"gRPC calls in flight", Num(static_cast<uint64_t>(std::max(0, st.calls_in_flight())))},
      {"Resident memory", HtmlEscape(HumanBytes(st.resident_bytes()))},
      {"Open descriptors", absl::StrCat(Num(st.open_descriptors()), " of ", st.descriptor_limit())},
      {"Connections", absl::StrCat(Num(st.connections_accepted()), " accepted, ", st.connections_refused(), " refused")},
  };
  const uint64_t lookups = st.block_cache_hits() + st.block_cache_misses();
  const Rows cache = {
      {"Size", HtmlEscape(HumanBytes(st.block_cache_bytes()))},
      {"Capacity", HtmlEscape(HumanBytes(st.block_cache_capacity()))},
      {"Hits", Num(st.block_cache_hits())},
      {"Misses", Num(st.block_cache_misses())},
      {"Hit ratio", lookups > 0 ? absl::StrFormat("%.1f %%", 100.0 * static_cast<double>(st.block_cache_hits()) /
                                                               static_cast<double>(lookups))
                                : "–"},
      {"Evictions", Num(st.block_cache_evictions())},
  };
  Rows verbs = {{"State", HtmlEscape(st.verbs())}};
  if (st.verbs_enabled()) {
    verbs.push_back({"Endpoints open", Num(st.verbs_endpoints())});
    verbs.push_back({"Sessions", Num(st.verbs_sessions())});
    verbs.push_back({"Requests served", Num(st.verbs_requests())});
    verbs.push_back({"Connects", absl::StrCat(st.verbs_connects_accepted(), " accepted, ",
                                              st.verbs_connects_rejected(), " rejected")});
  }
  std::string h = absl::StrCat("<div class=\"grid\"><section id=\"server\"><h2>Server</h2>",
                               KeyValues("server-info", server), "</section>");
  if (d.wal_section) {
    const rpc::WalStatus& w = st.wal();
    const Rows wal = {
        {"Records appended", Num(w.records())},
        {"Bytes appended", HtmlEscape(HumanBytes(w.bytes()))},
        {"Syncs (fdatasync)", Num(w.syncs())},
        {"Writers per sync", w.syncs() > 0 ? absl::StrFormat("%.2f", static_cast<double>(w.synced_records()) /
                                                                         static_cast<double>(w.syncs()))
                                           : "–"},
        {"Mean sync", w.syncs() > 0 ? Micros(static_cast<double>(w.sync_micros()) / static_cast<double>(w.syncs()))
                                    : "–"},
        {"Live segments", Num(w.live_segments())},
    };
    absl::StrAppend(&h, "<section id=\"wal\"><h2>Write-ahead log</h2>", KeyValues("wal-info", wal), "</section>");
  }
  absl::StrAppend(&h, "<section id=\"block-cache\"><h2>Block cache</h2>", KeyValues("cache-info", cache),
                  "</section><section id=\"verbs\"><h2>Verbs (RDMA)</h2>", KeyValues("verbs-info", verbs),
                  "</section></div>");
  return h;
}

// The latency graph, with the last interval's figures (none: a process that times no data
// operation, as a master).
std::string LatencySection(const StatusPageData& d) {
  if (d.latency.empty()) return "";
  std::string h = absl::StrCat(
      "<section id=\"latency\"><h2>Latency (p50, p99; one point per ", HtmlEscape(absl::FormatDuration(d.latency_interval)),
      ")</h2>", LatencySvg(d.latency, d.latency_interval, d.now),
      "<table id=\"latency-now\"><thead><tr><th>Operation</th><th class=\"n\">Operations/s (last ",
      HtmlEscape(absl::FormatDuration(d.latency_interval)), ")</th><th class=\"n\">Operations (graph's span)",
      "</th><th class=\"n\">p50</th><th class=\"n\">p99</th><th>Of the interval ending</th></tr></thead><tbody>");
  for (const auto& [name, pts] : d.latency) {
    uint64_t total = 0;
    const LatencyHistory::Point* latest = nullptr;  // the last interval with operations
    for (const LatencyHistory::Point& p : pts) {
      total += p.count;
      if (p.count > 0) latest = &p;
    }
    const double rate = pts.empty() ? 0 : static_cast<double>(pts.back().count) / absl::ToDoubleSeconds(d.latency_interval);
    absl::StrAppend(&h, "<tr data-op=\"", HtmlEscape(name), "\"><td>", HtmlEscape(name), "</td><td class=\"n\">",
                    absl::StrFormat("%.1f", rate), "</td><td class=\"n\">", total, "</td><td class=\"n\">",
                    latest != nullptr ? Micros(latest->p50_us) : "–", "</td><td class=\"n\">",
                    latest != nullptr ? Micros(latest->p99_us) : "–", "</td><td>",
                    latest != nullptr ? HtmlEscape(Iso8601(latest->at)) : "", "</td></tr>");
  }
  return h + "</tbody></table></section>";
}

// The cluster's region servers (when the page shows them).
std::string ServersSection(const StatusPageData& d) {
  if (!d.servers_section) return "";
  const rpc::StatusResponse& st = d.status;
  std::string h = absl::StrCat("<section id=\"servers\"><h2>Region servers (", st.servers_size(), " live, ",
                               st.dead_servers(), " dead not yet recovered)</h2><table id=\"servers-table\"><thead><tr>",
                               "<th>Server</th><th class=\"n\">Regions</th><th class=\"n\">Requests</th>",
                               "<th class=\"n\">Memstore</th><th class=\"n\">Store files</th><th class=\"n\">Memory</th>",
                               "<th class=\"n\">Uptime</th><th>Error</th></tr></thead><tbody>");
  for (const rpc::ServerLoad& s : st.servers()) {
    absl::StrAppend(&h, "<tr data-server=\"", HtmlEscape(s.address()), "\"><td>", HtmlEscape(s.name()),
                    "</td><td class=\"n\">", s.regions(), "</td><td class=\"n\">", s.requests(),
                    "</td><td class=\"n\">", HtmlEscape(HumanBytes(s.memstore_bytes())), "</td><td class=\"n\">",
                    s.store_files(), "</td><td class=\"n\">", HtmlEscape(HumanBytes(s.resident_bytes())),
                    "</td><td class=\"n\">", HtmlEscape(HumanDuration(s.uptime_seconds())), "</td><td class=\"err\">",
                    HtmlEscape(s.error()), "</td></tr>");
  }
  h += "</tbody></table>";
  if (st.backup_masters_size() > 0) {
    absl::StrAppend(&h, "<p>Backup masters: ", HtmlEscape(absl::StrJoin(st.backup_masters(), ", ")), "</p>");
  }
  return h + "</section>";
}

std::string TablesSection(const StatusPageData& d) {
  const rpc::StatusResponse& st = d.status;
  std::string h = absl::StrCat("<section id=\"tables\"><h2>Tables (", st.tables_size(),
                               ")</h2><table id=\"tables-table\"><thead><tr><th>Table</th><th>State</th>",
                               "<th class=\"n\">Regions</th><th class=\"n\">Memstore</th><th class=\"n\">Store files</th>",
                               "<th class=\"n\">Store file bytes</th><th class=\"n\">Reads</th><th class=\"n\">Writes</th>",
                               "<th class=\"n\">Flushes</th><th class=\"n\">Compactions</th><th class=\"n\">Compacting now</th>",
                               "</tr></thead><tbody>");
  for (const rpc::TableStatus& t : st.tables()) {
    const std::string_view state = TableStateName(t.state());
    absl::StrAppend(&h, "<tr data-table=\"", HtmlEscape(t.name()), "\"><td>", HtmlEscape(t.name()),
                    "</td><td class=\"state-", AV(state), "\">", AV(state), "</td><td class=\"n\">", t.regions(),
                    "</td><td class=\"n\">", HtmlEscape(HumanBytes(t.memstore_bytes())), "</td><td class=\"n\">",
                    t.store_files(), "</td><td class=\"n\">", HtmlEscape(HumanBytes(t.store_file_bytes())),
                    "</td><td class=\"n\">", t.read_requests(), "</td><td class=\"n\">", t.write_requests(),
                    "</td><td class=\"n\">", t.flushes(), "</td><td class=\"n\">", t.compactions(),
                    "</td><td class=\"n\">", t.compactions_running(),
                    t.compactions_queued() > 0 ? absl::StrCat(" + ", t.compactions_queued(), " queued") : "",
                    "</td></tr>");
    if (!t.error().empty()) {
      absl::StrAppend(&h, "<tr><td></td><td colspan=\"10\" class=\"err\">", HtmlEscape(t.error()), "</td></tr>");
    }
  }
  return h + "</tbody></table></section>";
}

// HBase's master page lists them too (its "Snapshots" tab): here with what each alone keeps.
std::string SnapshotsSection(const StatusPageData& d) {
  if (!d.snapshots_section) return "";
  std::string h = absl::StrCat("<section id=\"snapshots\"><h2>Snapshots (", d.snapshots.size(),
                               ")</h2><table id=\"snapshots-table\"><thead><tr><th>Snapshot</th><th>Table</th>",
                               "<th>Taken</th><th>Expires</th><th>Owner</th><th class=\"n\">Regions</th>",
                               "<th class=\"n\">Files</th><th class=\"n\">Size</th><th class=\"n\">Its own</th>",
                               "</tr></thead><tbody>");
  for (const rpc::SnapshotDescription& s : d.snapshots) {
    const absl::Time taken = absl::FromUnixMillis(s.created_ms());
    const std::string expires = s.ttl_seconds() > 0 ? Iso8601(taken + absl::Seconds(s.ttl_seconds())) : "never";
    absl::StrAppend(&h, "<tr data-snapshot=\"", HtmlEscape(s.name()), "\"><td>", HtmlEscape(s.name()), "</td><td>",
                    HtmlEscape(s.table()), "</td><td>", Iso8601(taken), "</td><td>", expires, "</td><td>",
                    HtmlEscape(s.owner()), "</td><td class=\"n\">", s.regions(), "</td><td class=\"n\">", s.files(),
                    "</td><td class=\"n\">", HtmlEscape(HumanBytes(s.bytes())), "</td><td class=\"n\">",
                    HtmlEscape(HumanBytes(s.only_bytes())), "</td></tr>");
  }
  return h + "</tbody></table></section>";
}

// HBase's region server page shows its replication sources: here each peer, how far behind it is
// and why, when it is not shipping.
std::string PeersSection(const StatusPageData& d) {
  if (!d.peers_section) return "";
  std::string h = absl::StrCat("<section id=\"replication\"><h2>Replication peers (", d.peers.size(),
                               ")</h2><table id=\"peers-table\"><thead><tr><th>Peer</th><th>Cluster key</th>",
                               "<th>State</th><th class=\"n\">Not shipped</th><th class=\"n\">Age of last shipped</th>",
                               "<th class=\"n\">Entries shipped</th><th class=\"n\">Failed calls</th><th>Last error</th>",
                               "</tr></thead><tbody>");
  for (const rpc::PeerStatus& p : d.peers) {
    absl::StrAppend(&h, "<tr data-peer=\"", HtmlEscape(p.peer().id()), "\"><td>", HtmlEscape(p.peer().id()),
                    "</td><td>", HtmlEscape(p.peer().cluster_key()), "</td><td class=\"state-", HtmlEscape(p.state()),
                    "\">", HtmlEscape(p.state()), "</td><td class=\"n\">", HtmlEscape(HumanBytes(p.lag_bytes())),
                    "</td><td class=\"n\">", p.age_ms(), " ms</td><td class=\"n\">", p.entries(),
                    "</td><td class=\"n\">", p.failed_calls(), "</td><td>", HtmlEscape(p.last_error()), "</td></tr>");
  }
  return h + "</tbody></table></section>";
}

std::string RegionsSection(const StatusPageData& d) {
  std::string h = absl::StrCat("<section id=\"regions\"><h2>Regions (", d.regions.size(),
                               ")</h2><table id=\"regions-table\"><thead><tr><th>Region</th><th>Start key</th><th>End key</th>",
                               "<th>State</th><th>Server</th><th class=\"n\">Memstore</th><th class=\"n\">Store files</th>",
                               "<th class=\"n\">Store file bytes</th><th class=\"n\">Reads</th><th class=\"n\">Writes</th>",
                               "</tr></thead><tbody>");
  for (const rpc::RegionStatus& r : d.regions) {
    absl::StrAppend(&h, "<tr data-region=\"", HtmlEscape(r.encoded_name()), "\"><td>", HtmlEscape(r.name()),
                    "</td><td>", HtmlEscape(ToStringBinary(r.start_key())), "</td><td>",
                    HtmlEscape(ToStringBinary(r.end_key())), "</td><td class=\"state-", HtmlEscape(r.state()), "\">",
                    HtmlEscape(r.state()), "</td><td>", HtmlEscape(r.server()), "</td><td class=\"n\">",
                    HtmlEscape(HumanBytes(r.memstore_bytes())), "</td><td class=\"n\">", r.store_files(),
                    "</td><td class=\"n\">", HtmlEscape(HumanBytes(r.store_file_bytes())), "</td><td class=\"n\">",
                    r.read_requests(), "</td><td class=\"n\">", r.write_requests(), "</td></tr>");
  }
  return h + "</tbody></table></section>";
}

// The log's last lines.
std::string LogSection(const StatusPageData& d) {
  std::string h = "<section id=\"log\"><h2>Recent log (<a href=\"/logs\">all kept</a>)</h2><pre id=\"log-lines\">";
  const size_t first = d.log.size() > 20 ? d.log.size() - 20 : 0;
  for (size_t i = first; i < d.log.size(); ++i) {
    absl::StrAppend(&h, HtmlEscape(Iso8601(d.log[i].time)), " ", AV(log::LevelName(d.log[i].level)), " ",
                    HtmlEscape(d.log[i].text), "\n");
  }
  if (d.log.empty()) h += "(nothing logged since start)";
  return h + "</pre></section>";
}

}  // namespace

std::string RenderStatusHtml(const StatusPageData& d) {
  const rpc::StatusResponse& st = d.status;
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  absl::StrAppend(&h, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
  absl::StrAppend(&h, "<title>", HtmlEscape(d.program), " ", HtmlEscape(d.server_name), "</title><style>", kCss,
                  "</style></head><body>");
  absl::StrAppend(&h, "<header><h1>Basalt ", HtmlEscape(st.mode()), "<small>",
                  HtmlEscape(d.server_name), "</small></h1><nav><a href=\"/\">Status</a><a href=\"/metrics\">Metrics</a>",
                  "<a href=\"/status.json\">JSON</a><a href=\"/conf\">Configuration</a><a href=\"/logs\">Logs</a>",
                  "</nav></header><main>");
  if (!d.waiting_heading.empty()) {
    absl::StrAppend(&h, "<section id=\"backup\"><h2>", HtmlEscape(d.waiting_heading), "</h2><p>", HtmlEscape(d.waiting),
                    "</p>",
                    st.backup_masters_size() > 0 ? absl::StrCat("<p>", HtmlEscape(st.backup_masters(0)), "</p>") : "",
                    "</section>");
  } else {
    absl::StrAppend(&h, ServerSections(d), LatencySection(d), ServersSection(d), TablesSection(d), SnapshotsSection(d),
                    PeersSection(d), RegionsSection(d));
  }
  absl::StrAppend(&h, LogSection(d), "</main>");
  absl::StrAppend(&h, "<footer>Rendered ", HtmlEscape(Iso8601(d.now)), " by ", HtmlEscape(d.program),
                  ". The same figures: <a href=\"/status.json\">/status.json</a>, the shell's <code>status "
                  "'detailed'</code>.</footer></body></html>\n");
  return h;
}

// ------------------------------------------------------------------ JSON and text

namespace {

std::string ProtoJson(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions o;
  o.always_print_primitive_fields = true;
  o.preserve_proto_field_names = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(m, &out, o).ok()) return "null";
  return out;
}

std::string JsonNumber(double v) { return std::isnan(v) || std::isinf(v) ? "null" : absl::StrFormat("%.1f", v); }

}  // namespace

std::string RenderStatusJson(const StatusPageData& d) {
  std::string j = absl::StrCat("{\"program\":", JsonString(d.program), ",\"server\":", JsonString(d.server_name),
                               ",\"time\":", JsonString(Iso8601(d.now)), ",\"status\":", ProtoJson(d.status),
                               ",\"regions\":[");
  for (size_t i = 0; i < d.regions.size(); ++i) {
    absl::StrAppend(&j, i ? "," : "", ProtoJson(d.regions[i]));
  }
  j += "]";
  if (d.snapshots_section) {
    j += ",\"snapshots\":[";
    for (size_t i = 0; i < d.snapshots.size(); ++i) absl::StrAppend(&j, i ? "," : "", ProtoJson(d.snapshots[i]));
    j += "]";
  }
  if (d.peers_section) {
    j += ",\"replication_peers\":[";
    for (size_t i = 0; i < d.peers.size(); ++i) absl::StrAppend(&j, i ? "," : "", ProtoJson(d.peers[i]));
    j += "]";
  }
  absl::StrAppend(&j, ",\"latency\":{\"interval_seconds\":", absl::ToDoubleSeconds(d.latency_interval),
                  ",\"series\":{");
  for (size_t s = 0; s < d.latency.size(); ++s) {
    absl::StrAppend(&j, s ? "," : "", JsonString(d.latency[s].first), ":[");
    const auto& pts = d.latency[s].second;
    for (size_t i = 0; i < pts.size(); ++i) {
      absl::StrAppend(&j, i ? "," : "", "{\"time\":", JsonString(Iso8601(pts[i].at)), ",\"count\":", pts[i].count,
                      ",\"p50_us\":", JsonNumber(pts[i].p50_us), ",\"p99_us\":", JsonNumber(pts[i].p99_us), "}");
    }
    j += "]";
  }
  j += "}},\"conf\":{";
  for (size_t i = 0; i < d.conf.size(); ++i) {
    absl::StrAppend(&j, i ? "," : "", JsonString(d.conf[i].key), ":", JsonString(d.conf[i].value));
  }
  j += "},\"log\":[";
  for (size_t i = 0; i < d.log.size(); ++i) {
    absl::StrAppend(&j, i ? "," : "", "{\"time\":", JsonString(Iso8601(d.log[i].time)),
                    ",\"level\":", JsonString(log::LevelName(d.log[i].level)), ",\"text\":", JsonString(d.log[i].text),
                    "}");
  }
  j += "]}\n";
  return j;
}

std::string RenderConfText(const std::vector<SettingInForce>& conf) {
  std::string out = "# The settings in force: given (by the config file or a flag), or the default.\n";
  for (const SettingInForce& e : conf) {
    absl::StrAppend(&out, e.key, " = ", e.value, e.given ? "" : "    # default", "\n");
  }
  return out;
}

std::string RenderLogText(const std::vector<log::Line>& lines) {
  std::string out;
  for (const log::Line& l : lines) absl::StrAppend(&out, Iso8601(l.time), " ", AV(log::LevelName(l.level)), " ", l.text, "\n");
  return out;
}

}  // namespace basalt::server
