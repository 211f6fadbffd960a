#include "src/tools/shell/format.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "src/tools/shell/escape.h"

namespace basalt::shell {
namespace {

// Width of the left column (ROW, COLUMN) in human output; longer entries push the right
// column over by one space, as HBase's formatter does when a row key is wider than its column.
constexpr size_t kLeftWidth = 32;

void AppendTwoColumns(std::string_view left, std::string_view right, std::string* out) {
  out->append(left);
  out->append(left.size() < kLeftWidth ? kLeftWidth - left.size() : 1, ' ');
  out->append(right);
  out->push_back('\n');
}

std::string ColumnName(const KeyValue& kv) { return absl::StrCat(AV(kv.family), ":", AV(kv.qualifier)); }

std::string RowCount(size_t n) { return absl::StrCat(n, " row(s)\n"); }

std::string Bytes(uint64_t n) {
  if (n < 1024) return absl::StrCat(n, " B");
  if (n < (1u << 20)) return absl::StrFormat("%.1f KiB", n / 1024.0);
  if (n < (1u << 30)) return absl::StrFormat("%.1f MiB", n / 1048576.0);
  return absl::StrFormat("%.1f GiB", n / 1073741824.0);
}

std::string Uptime(int64_t s) {
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrCat(s / 60, "m ", s % 60, "s");
  if (s < 86400) return absl::StrCat(s / 3600, "h ", (s % 3600) / 60, "m");
  return absl::StrCat(s / 86400, "d ", (s % 86400) / 3600, "h");
}

void FormatRowsHuman(const Reply& r, std::string* out) {
  size_t rows = 0;
  if (r.get_layout) {
    AppendTwoColumns("COLUMN", "CELL", out);
    for (const Result& row : r.rows) {
      if (!row.empty()) ++rows;
      for (const KeyValue& kv : row.cells()) {
        AppendTwoColumns(absl::StrCat(" ", ToStringBinary(ColumnName(kv))),
                         absl::StrCat("timestamp=", kv.timestamp, ", value=", ToStringBinary(kv.value)), out);
      }
    }
  } else {
    AppendTwoColumns("ROW", "COLUMN+CELL", out);
    for (const Result& row : r.rows) {
      ++rows;
      std::string key = absl::StrCat(" ", ToStringBinary(row.row()));
      for (const KeyValue& kv : row.cells()) {
        AppendTwoColumns(key,
                         absl::StrCat("column=", ToStringBinary(ColumnName(kv)), ", timestamp=", kv.timestamp,
                                      ", value=", ToStringBinary(kv.value)),
                         out);
      }
    }
  }
  out->append(RowCount(rows));
}

// Whether the server serves a verbs transport (its state is not "off...").
bool VerbsServed(const ServerStatus& s) { return !s.verbs.empty() && !s.verbs.starts_with("off"); }

void FormatStatusHuman(const Reply& r, std::string* out) {
  const ServerStatus& s = r.status;
  if (s.mode == "master") {
    // HBase's first line: masters, servers, dead ones, average load (regions per server).
    size_t regions = 0;
    for (const RegionServerLoad& l : s.servers) regions += l.regions;
    const double average = s.servers.empty() ? 0.0 : static_cast<double>(regions) / s.servers.size();
    absl::StrAppend(out, "1 active master, ", s.backup_masters.size(), " backup masters, ", s.servers.size(),
                    " servers, ", s.dead_servers, " dead, ", absl::StrFormat("%.4f", average),
                    " average load\n");
    absl::StrAppend(out, "master: version ", AV(s.version.empty() ? "unknown" : s.version), ", uptime ",
                    Uptime(s.uptime_seconds), ", ", s.tables.size(), " tables\n");
  } else {
    absl::StrAppend(out, "1 servers, 0 dead (", AV(s.mode.empty() ? "standalone" : s.mode), "), version ",
                    AV(s.version.empty() ? "unknown" : s.version), ", uptime ", Uptime(s.uptime_seconds), ", ",
                    s.requests, " requests, ", s.tables.size(), " tables\n");
  }
  absl::StrAppend(out, "block cache ", Bytes(s.block_cache_bytes), " of ", Bytes(s.block_cache_capacity),
                  ", resident memory ", Bytes(s.resident_bytes), "\n");
  if (!s.http_address.empty()) absl::StrAppend(out, "metrics: http://", AV(s.http_address), "/metrics\n");
  if (s.descriptor_limit > 0) {  // older servers do not report it
    absl::StrAppend(out, "connections ", s.connections_accepted, " accepted / ", s.connections_refused,
                    " refused, descriptors ", s.open_descriptors, " open of ", s.descriptor_limit, "\n");
  }
  if (!VerbsServed(s)) {
    absl::StrAppend(out, "verbs: ", AV(s.verbs.empty() ? "off" : s.verbs), "\n");
  } else {
    absl::StrAppend(out, "verbs: ", AV(s.verbs), s.verbs_enabled ? " (enabled)\n" : " (disabled: Get/Put take gRPC)\n");
    absl::StrAppend(out, "verbs endpoints ", s.verbs_endpoints, ", requests ", s.verbs_requests, ", connects ",
                    s.verbs_connects_accepted, " accepted / ", s.verbs_connects_rejected, " rejected, ",
                    s.verbs_malformed_frames, " malformed frames, ", s.verbs_sessions, " sessions\n");
  }
  if (!s.tcp.empty()) {  // older servers do not report it
    absl::StrAppend(out, "tcp path: ", AV(s.tcp), "\n");
    if (s.tcp.starts_with("on ")) {
      absl::StrAppend(out, "tcp connections ", s.tcp_connections, ", requests ", s.tcp_requests, ", ",
                      s.tcp_hellos_refused, " connects refused, ", s.tcp_malformed_frames, " malformed frames, ",
                      s.tcp_sessions, " sessions\n");
    }
  }
  // Out-of-service tables show even in the summary: they need the operator.
  for (const TableStatus& t : s.tables) {
    if (t.failed_open) {
      absl::StrAppend(out, "FAILED_OPEN: ", AV(ToStringBinary(t.name)), ": ", AV(t.error), "\n");
    } else if (!t.error.empty()) {
      absl::StrAppend(out, "FAILED: ", AV(ToStringBinary(t.name)), ": ", AV(t.error), "\n");
    }
  }
  if (!r.detailed) return;
  for (const TableStatus& t : s.tables) {
    absl::StrAppend(out, "    ", AV(ToStringBinary(t.name)), ": ",
                    t.failed_open ? "FAILED_OPEN" : t.enabled ? "ENABLED" : "DISABLED",
                    t.regions > 0 ? absl::StrCat(", ", t.regions, t.regions == 1 ? " region" : " regions") : "",
                    ", memstore ",
                    Bytes(t.memstore_bytes), ", ", t.store_files, " store files, ", t.flushes, " flushes, ",
                    t.compactions, " compactions");
    if (t.log_truncated_bytes + t.log_skipped_records + t.log_skipped_bytes > 0) {
      absl::StrAppend(out, ", log at open: ", t.log_truncated_bytes, " torn bytes cut, ", t.log_skipped_records,
                      " records and ", t.log_skipped_bytes, " damaged bytes skipped");
    }
    out->push_back('\n');
  }
  if (!s.backup_masters.empty()) absl::StrAppend(out, "backup masters: ", absl::StrJoin(s.backup_masters, ", "), "\n");
  for (const RegionServerLoad& l : s.servers) {
    absl::StrAppend(out, "    ", AV(l.name), ": ", l.regions, l.regions == 1 ? " region" : " regions");
    if (l.error.empty()) {
      absl::StrAppend(out, ", ", l.requests, " requests, memstore ", Bytes(l.memstore_bytes), ", ", l.store_files,
                      " store files, resident memory ", Bytes(l.resident_bytes), ", uptime ",
                      Uptime(l.uptime_seconds), "\n");
    } else {
      absl::StrAppend(out, " (load unknown: ", AV(l.error), ")\n");
    }
    for (const std::string& region : l.region_names) absl::StrAppend(out, "        ", AV(ToStringBinary(region)), "\n");
  }
}

// list_regions, in the layout of HBase's: one right-aligned column per field, '|' between.
// HBase's list_snapshots layout, SNAPSHOT and TABLE + CREATION TIME + TTL(Sec), and Basalt's
// files and bytes after it (ONLY: what deleting the snapshot would free).
void FormatSnapshotsHuman(const std::vector<SnapshotDescription>& snapshots, std::string* out) {
  AppendTwoColumns("SNAPSHOT", "TABLE + CREATION TIME + TTL(Sec)", out);
  for (const SnapshotDescription& d : snapshots) {
    AppendTwoColumns(
        absl::StrCat(" ", ToStringBinary(d.name)),
        absl::StrCat(ToStringBinary(d.table), " (",
                     absl::FormatTime("%Y-%m-%d %H:%M:%S %z", absl::FromUnixMillis(d.created_ms), absl::UTCTimeZone()),
                     ") ", d.ttl_seconds > 0 ? absl::StrCat(d.ttl_seconds) : "FOREVER", ", REGIONS => ", d.regions,
                     ", FILES => ", d.files, ", SIZE => ", Bytes(d.bytes), ", ONLY => ", Bytes(d.only_bytes)),
        out);
  }
  out->append(RowCount(snapshots.size()));
}

void FormatRegionsHuman(const std::vector<RegionStatus>& regions, std::string* out) {
  const std::vector<std::string> head = {"SERVER_NAME", "REGION_NAME", "START_KEY", "END_KEY",
                                         "SIZE",        "REQ",         "STOREFILES", "STATE"};
  std::vector<std::vector<std::string>> rows;
  for (const RegionStatus& g : regions) {
    rows.push_back({g.server, absl::StrCat(g.name, ".", g.encoded_name, "."), ToStringBinary(g.start_key),
                    ToStringBinary(g.end_key), absl::StrCat(g.store_file_bytes),
                    absl::StrCat(g.read_requests + g.write_requests), absl::StrCat(g.store_files), g.state});
  }
  std::vector<size_t> width(head.size());
  for (size_t i = 0; i < head.size(); ++i) {
    width[i] = head[i].size();
    for (const auto& row : rows) width[i] = std::max(width[i], row[i].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      absl::StrAppend(out, " ", std::string(width[i] - cells[i].size(), ' '), cells[i], " |");
    }
    out->push_back('\n');
  };
  line(head);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto& row : rows) line(row);
  absl::StrAppend(out, regions.size(), " rows\n");
}

// ---- JSON

class JsonObject {
 public:
  explicit JsonObject(std::string* out) : out_(out) { out_->push_back('{'); }
  void Key(std::string_view k) {
    if (!first_) out_->push_back(',');
    first_ = false;
    AppendJsonString(k, out_);
    out_->push_back(':');
  }
  void Str(std::string_view k, std::string_view v) {
    Key(k);
    AppendJsonString(v, out_);
  }
  void Int(std::string_view k, int64_t v) {
    Key(k);
    absl::StrAppend(out_, v);
  }
  void Uint(std::string_view k, uint64_t v) {
    Key(k);
    absl::StrAppend(out_, v);
  }
  void Bool(std::string_view k, bool v) {
    Key(k);
    out_->append(v ? "true" : "false");
  }
  void Null(std::string_view k) {
    Key(k);
    out_->append("null");
  }
  void Close() { out_->push_back('}'); }

 private:
  std::string* out_;
  bool first_ = true;
};

void AppendRowJson(const Result& row, std::string* out) {
  JsonObject o(out);
  o.Str("row", row.row());
  o.Key("cells");
  out->push_back('[');
  for (size_t i = 0; i < row.cells().size(); ++i) {
    const KeyValue& kv = row.cells()[i];
    if (i) out->push_back(',');
    JsonObject c(out);
    c.Str("family", kv.family);
    c.Str("qualifier", kv.qualifier);
    c.Int("timestamp", kv.timestamp);
    c.Str("value", kv.value);
    c.Close();
  }
  out->push_back(']');
  o.Close();
}

// Kept settings as a JSON object of strings under `key` (nothing when there are none).
void AppendKeptJson(JsonObject* o, std::string_view key, const std::vector<std::pair<std::string, std::string>>& kept,
                    std::string* out) {
  if (kept.empty()) return;
  o->Key(key);
  JsonObject k(out);
  for (const auto& [name, value] : kept) k.Str(name, value);
  k.Close();
}

void AppendFamilyJson(const FamilySettings& f, std::string* out) {
  JsonObject o(out);
  o.Str("NAME", f.name);
  o.Int("VERSIONS", f.max_versions);
  o.Int("MIN_VERSIONS", f.min_versions);
  o.Int("TTL", f.ttl_seconds);
  o.Uint("BLOCKSIZE", f.block_size);
  o.Str("DATA_BLOCK_ENCODING", f.encoding);
  o.Str("COMPRESSION", f.compression);
  o.Str("BLOOMFILTER", f.bloom);
  o.Str("CHECKSUM_TYPE", f.checksum);
  o.Uint("BYTES_PER_CHECKSUM", f.bytes_per_checksum);
  o.Bool("BLOCKCACHE", f.block_cache);
  o.Bool("CACHE_ENCODED", f.cache_encoded);
  AppendKeptJson(&o, "METADATA", f.metadata, out);
  AppendKeptJson(&o, "CONFIGURATION", f.configuration, out);
  o.Close();
}

// A JSON array of strings.
void AppendJsonStrings(const std::vector<std::string>& strings, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < strings.size(); ++i) {
    if (i) out->push_back(',');
    AppendJsonString(strings[i], out);
  }
  out->push_back(']');
}

void AppendStatusJson(const ServerStatus& s, JsonObject* o, std::string* out) {
  o->Str("version", s.version);
  o->Str("mode", s.mode);
  o->Int("uptime_seconds", s.uptime_seconds);
  o->Uint("requests", s.requests);
  o->Uint("block_cache_bytes", s.block_cache_bytes);
  o->Uint("block_cache_capacity", s.block_cache_capacity);
  o->Uint("resident_bytes", s.resident_bytes);
  o->Str("verbs", s.verbs);
  o->Bool("verbs_enabled", s.verbs_enabled);
  o->Uint("verbs_endpoints", s.verbs_endpoints);
  o->Uint("verbs_requests", s.verbs_requests);
  o->Uint("verbs_connects_accepted", s.verbs_connects_accepted);
  o->Uint("verbs_connects_rejected", s.verbs_connects_rejected);
  o->Uint("verbs_malformed_frames", s.verbs_malformed_frames);
  o->Uint("verbs_sessions", s.verbs_sessions);
  if (!s.tcp.empty()) {  // older servers do not report it
    o->Str("tcp", s.tcp);
    o->Uint("tcp_connections", s.tcp_connections);
    o->Uint("tcp_requests", s.tcp_requests);
    o->Uint("tcp_hellos_refused", s.tcp_hellos_refused);
    o->Uint("tcp_malformed_frames", s.tcp_malformed_frames);
    o->Uint("tcp_sessions", s.tcp_sessions);
  }
  o->Uint("connections_accepted", s.connections_accepted);
  o->Uint("connections_refused", s.connections_refused);
  o->Uint("open_descriptors", s.open_descriptors);
  o->Uint("descriptor_limit", s.descriptor_limit);
  o->Key("tables");
  out->push_back('[');
  for (size_t i = 0; i < s.tables.size(); ++i) {
    const TableStatus& t = s.tables[i];
    if (i) out->push_back(',');
    JsonObject to(out);
    to.Str("name", t.name);
    to.Bool("enabled", t.enabled);
    to.Uint("memstore_bytes", t.memstore_bytes);
    to.Uint("store_files", t.store_files);
    to.Uint("flushes", t.flushes);
    to.Uint("compactions", t.compactions);
    to.Bool("failed_open", t.failed_open);
    to.Str("error", t.error);
    to.Uint("log_truncated_bytes", t.log_truncated_bytes);
    to.Uint("log_skipped_records", t.log_skipped_records);
    to.Uint("log_skipped_bytes", t.log_skipped_bytes);
    to.Close();
  }
  out->push_back(']');
  if (s.mode != "master") return;
  o->Uint("dead_servers", s.dead_servers);
  o->Key("backup_masters");
  AppendJsonStrings(s.backup_masters, out);
  o->Key("servers");
  out->push_back('[');
  for (size_t i = 0; i < s.servers.size(); ++i) {
    const RegionServerLoad& l = s.servers[i];
    if (i) out->push_back(',');
    JsonObject so(out);
    so.Str("name", l.name);
    so.Str("address", l.address);
    so.Uint("regions", l.regions);
    so.Uint("requests", l.requests);
    so.Uint("memstore_bytes", l.memstore_bytes);
    so.Uint("store_files", l.store_files);
    so.Uint("resident_bytes", l.resident_bytes);
    so.Int("uptime_seconds", l.uptime_seconds);
    so.Str("error", l.error);
    so.Key("region_names");
    AppendJsonStrings(l.region_names, out);
    so.Close();
  }
  out->push_back(']');
}

}  // namespace

std::string HumanTtl(int64_t seconds) {
  if (seconds <= 0 || seconds >= 2147483647) return "FOREVER";
  if (seconds < 60) return absl::StrCat(seconds, " SECONDS");
  std::string out = absl::StrCat(seconds, " SECONDS (");
  const std::pair<int64_t, const char*> units[] = {{86400, "DAY"}, {3600, "HOUR"}, {60, "MINUTE"}, {1, "SECOND"}};
  int64_t left = seconds;
  bool first = true;
  for (const auto& [size, name] : units) {
    int64_t n = left / size;
    left %= size;
    if (n == 0) continue;
    absl::StrAppend(&out, first ? "" : " ", n, " ", name, n == 1 ? "" : "S");
    first = false;
  }
  return out + ")";
}

// Kept settings as HBase's describe shows them: ", METADATA => {'k' => 'v', ...}" (nothing when
// there are none).
std::string DescribeKept(std::string_view what, const std::vector<std::pair<std::string, std::string>>& kept) {
  if (kept.empty()) return "";
  std::string out = absl::StrCat(", ", AV(what), " => {");
  for (size_t i = 0; i < kept.size(); ++i) {
    absl::StrAppend(&out, i ? ", '" : "'", ToStringBinary(kept[i].first), "' => '", ToStringBinary(kept[i].second),
                    "'");
  }
  return out + "}";
}

// A table's kept settings: ", {TABLE_ATTRIBUTES => {METADATA => {...}, CONFIGURATION => {...}}}".
std::string DescribeTableKept(const TableInfo& t) {
  const std::string kept = DescribeKept("METADATA", t.metadata) + DescribeKept("CONFIGURATION", t.configuration);
  return kept.empty() ? "" : absl::StrCat(", {TABLE_ATTRIBUTES => {", kept.substr(2), "}}");
}

std::string DescribeFamily(const FamilySettings& f) {
  auto q = [](std::string_view v) { return absl::StrCat("'", AV(ToStringBinary(v)), "'"); };
  return absl::StrCat("{NAME => ", q(f.name), ", VERSIONS => '", f.max_versions, "', MIN_VERSIONS => '",
                      f.min_versions, "', TTL => '", HumanTtl(f.ttl_seconds), "', BLOCKSIZE => '", f.block_size,
                      "', DATA_BLOCK_ENCODING => ", q(f.encoding), ", COMPRESSION => ", q(f.compression),
                      ", BLOOMFILTER => ", q(f.bloom), ", CHECKSUM_TYPE => ", q(f.checksum),
                      ", BYTES_PER_CHECKSUM => '", f.bytes_per_checksum, "', BLOCKCACHE => '",
                      f.block_cache ? "true" : "false", "', CACHE_ENCODED => '", f.cache_encoded ? "true" : "false",
                      "'", DescribeKept("METADATA", f.metadata), DescribeKept("CONFIGURATION", f.configuration), "}");
}

std::string FormatHuman(const Reply& r) {
  std::string out;
  for (const std::string& m : r.messages) absl::StrAppend(&out, m, "\n");
  switch (r.kind) {
    case Reply::Kind::kDone:
      break;
    case Reply::Kind::kRows:
      FormatRowsHuman(r, &out);
      break;
    case Reply::Kind::kCounter:
      if (r.counter.has_value()) {
        absl::StrAppend(&out, "COUNTER VALUE = ", *r.counter, "\n");
      } else {
        out.append("No counter found at specified coordinates\n");
      }
      break;
    case Reply::Kind::kAppend:
      absl::StrAppend(&out, "CURRENT VALUE = ", ToStringBinary(r.value), "\n");
      break;
    case Reply::Kind::kCount:
      out.append(RowCount(r.count));
      break;
    case Reply::Kind::kDescribe:
      absl::StrAppend(&out, "Table ", ToStringBinary(r.info.name), " is ",
                      !r.info.open_error.empty() ? absl::StrCat("FAILED_OPEN: ", r.info.open_error)
                      : r.info.enabled           ? "ENABLED"
                                                 : "DISABLED",
                      "\n", ToStringBinary(r.info.name),
                      r.info.regions > 0 ? absl::StrCat(", {REGIONS => ", r.info.regions, "}") : "",
                      r.info.max_file_size > 0 ? absl::StrCat(", {MAX_FILESIZE => '", r.info.max_file_size, "'}")
                                               : "",
                      r.info.transactional ? ", {TRANSACTIONAL => 'true'}" : "",
                      r.info.queue ? ", {QUEUE => 'true'}" : "",
                      DescribeTableKept(r.info), "\nCOLUMN FAMILIES DESCRIPTION\n");
      for (const FamilySettings& f : r.info.families) absl::StrAppend(&out, DescribeFamily(f), "\n");
      absl::StrAppend(&out, "\n", RowCount(r.info.families.size()));
      break;
    case Reply::Kind::kList:
      out.append("TABLE\n");
      for (const std::string& t : r.tables) {
        absl::StrAppend(&out, ToStringBinary(t), r.failed_open.count(t) ? " (FAILED_OPEN)\n" : "\n");
      }
      out.append(RowCount(r.tables.size()));
      break;
    case Reply::Kind::kExists:
      absl::StrAppend(&out, "Table ", ToStringBinary(r.table), r.flag ? " does exist\n" : " does not exist\n");
      break;
    case Reply::Kind::kEnabled:
      out.append(r.flag == (r.command != "is_disabled") ? "true\n" : "false\n");
      break;
    case Reply::Kind::kStatus:
      FormatStatusHuman(r, &out);
      break;
    case Reply::Kind::kText:
      out.append(r.text);
      if (!r.text.empty() && r.text.back() != '\n') out.push_back('\n');
      break;
    case Reply::Kind::kRegions:
      FormatRegionsHuman(r.regions, &out);
      break;
    case Reply::Kind::kSnapshots:
      FormatSnapshotsHuman(r.snapshots, &out);
      break;
  }
  return out;
}

std::string FormatJson(const Reply& r) {
  std::string out;
  JsonObject o(&out);
  o.Str("command", r.command);
  if (!r.table.empty()) o.Str("table", r.table);
  switch (r.kind) {
    case Reply::Kind::kDone:
      o.Bool("ok", true);
      break;
    case Reply::Kind::kRows:
      o.Key("rows");
      out.push_back('[');
      {
        bool first = true;
        for (const Result& row : r.rows) {
          if (row.empty() && r.get_layout) continue;  // a get that found nothing has no rows
          if (!first) out.push_back(',');
          first = false;
          AppendRowJson(row, &out);
        }
      }
      out.push_back(']');
      break;
    case Reply::Kind::kCounter:
      o.Str("row", r.row);
      o.Str("column", r.column);
      if (r.counter.has_value()) {
        o.Int("value", *r.counter);
      } else {
        o.Null("value");
      }
      break;
    case Reply::Kind::kAppend:
      o.Str("row", r.row);
      o.Str("column", r.column);
      o.Str("value", r.value);
      break;
    case Reply::Kind::kCount:
      o.Uint("count", r.count);
      break;
    case Reply::Kind::kDescribe:
      o.Bool("enabled", r.info.enabled);
      if (!r.info.open_error.empty()) o.Str("open_error", r.info.open_error);
      AppendKeptJson(&o, "METADATA", r.info.metadata, &out);
      AppendKeptJson(&o, "CONFIGURATION", r.info.configuration, &out);
      o.Key("families");
      out.push_back('[');
      for (size_t i = 0; i < r.info.families.size(); ++i) {
        if (i) out.push_back(',');
        AppendFamilyJson(r.info.families[i], &out);
      }
      out.push_back(']');
      break;
    case Reply::Kind::kList:
      o.Key("tables");
      AppendJsonStrings(r.tables, &out);
      if (!r.failed_open.empty()) {  // only when some table is out of service
        o.Key("failed_open");
        out.push_back('[');
        for (auto it = r.failed_open.begin(); it != r.failed_open.end(); ++it) {
          if (it != r.failed_open.begin()) out.push_back(',');
          AppendJsonString(*it, &out);
        }
        out.push_back(']');
      }
      break;
    case Reply::Kind::kExists:
      o.Bool("exists", r.flag);
      break;
    case Reply::Kind::kEnabled:
      o.Bool("enabled", r.flag);
      break;
    case Reply::Kind::kStatus:
      AppendStatusJson(r.status, &o, &out);
      break;
    case Reply::Kind::kText:
      o.Str("text", r.text);
      break;
    case Reply::Kind::kRegions:
      o.Key("regions");
      out.push_back('[');
      for (size_t i = 0; i < r.regions.size(); ++i) {
        const RegionStatus& g = r.regions[i];
        if (i) out.push_back(',');
        JsonObject ro(&out);
        ro.Str("name", g.name);
        ro.Str("encoded_name", g.encoded_name);
        ro.Str("start_key", g.start_key);
        ro.Str("end_key", g.end_key);
        ro.Uint("id", g.id);
        ro.Str("state", g.state);
        ro.Str("server", g.server);
        ro.Uint("store_file_bytes", g.store_file_bytes);
        ro.Uint("store_files", g.store_files);
        ro.Uint("memstore_bytes", g.memstore_bytes);
        ro.Uint("read_requests", g.read_requests);
        ro.Uint("write_requests", g.write_requests);
        ro.Close();
      }
      out.push_back(']');
      break;
    case Reply::Kind::kSnapshots:
      o.Key("snapshots");
      out.push_back('[');
      for (size_t i = 0; i < r.snapshots.size(); ++i) {
        const SnapshotDescription& d = r.snapshots[i];
        if (i) out.push_back(',');
        JsonObject so(&out);
        so.Str("name", d.name);
        so.Str("table", d.table);
        so.Int("created_ms", d.created_ms);
        so.Int("ttl_seconds", d.ttl_seconds);
        so.Uint("regions", d.regions);
        so.Uint("files", d.files);
        so.Uint("bytes", d.bytes);
        so.Uint("only_bytes", d.only_bytes);
        so.Close();
      }
      out.push_back(']');
      break;
  }
  o.Close();
  out.push_back('\n');
  return out;
}

std::string FormatTook(absl::Duration elapsed) {
  return absl::StrFormat("Took %.4f seconds\n", absl::ToDoubleSeconds(elapsed));
}

}  // namespace basalt::shell
