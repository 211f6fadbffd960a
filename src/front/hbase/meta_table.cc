#include "src/front/hbase/meta_table.h"

#include <algorithm>
#include <optional>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "src/front/hbase/client_meta.h"
#include "src/front/hbase/data_convert.h"
#include "src/front/hbase/region_names.h"
#include "src/front/hbase/zk_records.h"

namespace basalt::hbase {
namespace {

constexpr char kPbufMagic[] = "PBUF";
constexpr uint32_t kMaxRowsPerScan = 10000;

std::string BigEndian64(int64_t v) {
  std::string out;
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((static_cast<uint64_t>(v) >> shift) & 0xff));
  return out;
}

// The Basalt table a meta key is about: its text up to the first ',' (a region row), or all of it
// (a table's state row).
std::string MetaTableOf(std::string_view key) {
  std::string_view t = key.substr(0, key.find(','));
  if (t.substr(0, 8) == "default:") t.remove_prefix(8);
  return std::string(t);
}

Result Project(const Result& r, const google::protobuf::RepeatedPtrField<Column>& columns) {
  if (columns.empty()) return r;
  Result out;
  for (const Cell& c : r.cell()) {
    for (const Column& col : columns) {
      if (col.family() != c.family()) continue;
      if (!col.qualifier().empty() &&
          std::find(col.qualifier().begin(), col.qualifier().end(), c.qualifier()) == col.qualifier().end()) {
        continue;
      }
      *out.add_cell() = c;
      break;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<MetaTable::Row>> MetaTable::Rows(const std::string& only_table) const {
  rpc::ListTablesResponse all;
  BASALT_RETURN_IF_ERROR(admin_->ListTables(rpc::ListTablesRequest(), &all));
  std::vector<Row> rows;
  for (const rpc::DescribeTableResponse& t : all.tables()) {
    const std::string& name = t.table().name();
    if (!ShownOnThePort(name)) continue;
    if (!only_table.empty() && name != only_table) continue;
    const TableName tn = TableNameOfBasalt(name);
    const std::string hbase_name = TableNameOf(tn.namespace_(), tn.qualifier());
    const bool disabled = t.state() == rpc::TABLE_DISABLED;
    {
      Row state;
      state.key = hbase_name;
      TableState ts;
      ts.set_state(disabled ? TableState::DISABLED : TableState::ENABLED);
      // No PBUF magic here: the client parses table:state as the bare message.
      AddCell(&state.result, state.key, "table", "state", 1, ts.SerializeAsString());
      rows.push_back(std::move(state));
    }
    rpc::TableRequest req;
    req.set_table(name);
    rpc::ListRegionsResponse regions;
    BASALT_RETURN_IF_ERROR(admin_->ListRegions(req, &regions));
    for (const rpc::RegionStatus& r : regions.regions()) {
      Row row;
      row.key = RegionNameOf(hbase_name, r.start_key(), r.id());
      RegionInfo info;
      info.set_region_id(r.id());
      *info.mutable_table_name() = tn;
      info.set_start_key(r.start_key());
      info.set_end_key(r.end_key());
      info.set_offline(false);
      info.set_split(false);
      info.set_replica_id(0);
      const int64_t ts = static_cast<int64_t>(r.id());
      AddCell(&row.result, row.key, "info", "regioninfo", ts, kPbufMagic + info.SerializeAsString());
      AddCell(&row.result, row.key, "info", "seqnumDuringOpen", ts, BigEndian64(1));
      // Where it serves: a region not open on a server with an HBase port has no server cells,
      // as HBase's meta has none for a region in transition (the client waits).
      // (A disabled table's regions keep the server they had, as in HBase's meta.)
      const std::optional<ServerName> at =
          disabled || r.state() == "OPEN" ? directory_->HBaseServerOf(r.server()) : std::nullopt;
      if (at.has_value()) {
        AddCell(&row.result, row.key, "info", "server", ts, absl::StrCat(at->host_name(), ":", at->port()));
        AddCell(&row.result, row.key, "info", "serverstartcode", ts, BigEndian64(static_cast<int64_t>(at->start_code())));
        AddCell(&row.result, row.key, "info", "sn", ts, ServerNodeName(*at));
      }
      AddCell(&row.result, row.key, "info", "state", ts, disabled ? "CLOSED" : "OPEN");
      rows.push_back(std::move(row));
    }
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return CompareMetaRows(a.key, b.key) < 0; });
  return rows;
}

absl::Status MetaTable::Get(const hbase::Get& get, GetResponse* resp) const {
  BASALT_ASSIGN_OR_RETURN(std::vector<Row> rows, Rows(MetaTableOf(get.row())));
  for (const Row& r : rows) {
    if (r.key != get.row()) continue;
    Result projected = Project(r.result, get.column());
    if (get.existence_only()) {
      resp->mutable_result()->set_exists(projected.cell_size() > 0);
    } else {
      *resp->mutable_result() = std::move(projected);
    }
    return absl::OkStatus();
  }
  if (get.existence_only()) {
    resp->mutable_result()->set_exists(false);
  } else {
    resp->mutable_result();
  }
  return absl::OkStatus();
}

absl::Status MetaTable::Scan(const ScanRequest& req, ScanResponse* resp) const {
  if (!req.has_scan()) {  // a next or close of a meta scan: the first call answered it all
    resp->set_more_results(false);
    return absl::OkStatus();
  }
  const hbase::Scan& scan = req.scan();
  std::string only;
  if (!scan.start_row().empty() && !scan.stop_row().empty() &&
      MetaTableOf(scan.start_row()) == MetaTableOf(scan.stop_row())) {
    only = MetaTableOf(scan.start_row());
  }
  BASALT_ASSIGN_OR_RETURN(std::vector<Row> rows, Rows(only));
  if (scan.reversed()) std::reverse(rows.begin(), rows.end());
  const int dir = scan.reversed() ? -1 : 1;
  // The answer is whole (more_results false below): only the scan's own limit cuts it, not its
  // caching, or a listing of a table's regions would stop at the client's caching.
  const uint32_t want = req.limit_of_rows() > 0 ? req.limit_of_rows() : kMaxRowsPerScan;
  for (const Row& r : rows) {
    if (!scan.start_row().empty()) {
      const int c = CompareMetaRows(r.key, scan.start_row()) * dir;
      if (c < 0 || (c == 0 && !scan.include_start_row())) continue;
    }
    if (!scan.stop_row().empty()) {
      const int c = CompareMetaRows(r.key, scan.stop_row()) * dir;
      if (c > 0 || (c == 0 && !scan.include_stop_row())) break;
    }
    Result projected = Project(r.result, scan.column());
    if (projected.cell_size() == 0) continue;
    *resp->add_results() = std::move(projected);
    if (static_cast<uint32_t>(resp->results_size()) >= want) break;
  }
  resp->set_more_results(false);
  resp->set_more_results_in_region(false);
  return absl::OkStatus();
}

absl::StatusOr<RegionInfo> MetaTable::RegionInfoOf(const NamedRegion& region, const RegionSpecifier& spec) const {
  if (region.meta) return MetaRegionInfo();
  BASALT_ASSIGN_OR_RETURN(std::vector<Row> rows, Rows(region.table));
  for (const Row& row : rows) {
    if (row.key != spec.value()) continue;
    for (const Cell& c : row.result.cell()) {
      if (c.qualifier() != "regioninfo") continue;
      RegionInfo info;
      if (info.ParseFromString(c.value().substr(4))) return info;
    }
  }
  return AsException(absl::UnavailableError(absl::StrCat("region ", absl::CHexEscape(spec.value()),
                                                         " is not served here (it split, merged or moved)")),
                     kNotServingRegion);
}

absl::StatusOr<NamedRegion> MetaTable::NamedAnyhow(const RegionSpecifier& spec) const {
  if (spec.type() != RegionSpecifier::ENCODED_REGION_NAME || spec.value() == kMetaEncodedName) return RegionOf(spec);
  BASALT_ASSIGN_OR_RETURN(std::vector<Row> rows, Rows(""));
  for (const Row& row : rows) {
    if (row.key.find(',') == std::string::npos || EncodedNameOf(row.key) != spec.value()) continue;
    RegionSpecifier named;
    named.set_type(RegionSpecifier::REGION_NAME);
    named.set_value(row.key);
    return RegionOf(named);
  }
  return AsException(absl::NotFoundError(absl::StrCat("no region is named ", absl::CHexEscape(spec.value()))),
                     kUnknownRegion);
}

}  // namespace basalt::hbase
