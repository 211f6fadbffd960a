#include "src/schema/meta.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/string_binary.h"

namespace basalt::server {

RegionDescriptor MetaDescriptor() {
  RegionDescriptor d;
  d.name = absl::StrCat(kMetaTableName, ",,1");
  FamilyOptions f;
  f.name = kMetaFamily;
  f.max_versions = 3;  // as hbase:meta's info family
  d.families.push_back(f);
  return d;
}

namespace {
// The one region of system table `table`, with one family of one version (a grant or a quota
// setting replaces the one before it).
RegionDescriptor OneVersionSystemDescriptor(std::string_view table, std::string_view family) {
  RegionDescriptor d;
  d.name = absl::StrCat(AV(table), ",,1");
  FamilyOptions f;
  f.name = std::string(family);
  d.families.push_back(f);
  return d;
}
}  // namespace

RegionDescriptor AclDescriptor() { return OneVersionSystemDescriptor(kAclTableName, kAclFamily); }
RegionDescriptor QuotaDescriptor() { return OneVersionSystemDescriptor(kQuotaTableName, kQuotaFamily); }

std::string MetaRowKey(const RegionInfo& info) { return absl::StrCat(info.table, ",", info.start_key, ",", info.id); }

namespace {
void AddColumn(RowMutation* rm, std::string_view qualifier, std::string_view value) {
  Mutation m;
  m.family = kMetaFamily;
  m.qualifier.assign(qualifier);
  m.value.assign(value);
  rm->mutations.push_back(std::move(m));
}
}  // namespace

RowMutation MetaPut(const RegionInfo& info, std::string_view state, std::string_view server) {
  RowMutation rm;
  rm.row = MetaRowKey(info);
  AddColumn(&rm, "startkey", info.start_key);
  AddColumn(&rm, "endkey", info.end_key);
  AddColumn(&rm, "id", absl::StrCat(info.id));
  AddColumn(&rm, "encoded", info.EncodedName());
  AddColumn(&rm, "state", state);
  AddColumn(&rm, "server", server);
  return rm;
}

std::vector<RowMutation> MetaSplit(const RegionInfo& parent, const RegionInfo& a, const RegionInfo& b,
                                   std::string_view state, std::string_view server) {
  std::vector<RowMutation> rows;
  rows.push_back(MetaPut(parent, kSplitState, server));
  AddColumn(&rows.back(), "splitA", MetaRowKey(a));
  AddColumn(&rows.back(), "splitB", MetaRowKey(b));
  rows.push_back(MetaPut(a, state, server));
  rows.push_back(MetaPut(b, state, server));
  return rows;
}

std::vector<RowMutation> MetaMerge(const RegionInfo& a, const RegionInfo& b, const RegionInfo& merged,
                                   std::string_view state, std::string_view server) {
  std::vector<RowMutation> rows;
  for (const RegionInfo* p : {&a, &b}) {
    rows.push_back(MetaPut(*p, kMergedState, server));
    AddColumn(&rows.back(), "mergedinto", MetaRowKey(merged));
  }
  rows.push_back(MetaPut(merged, state, server));
  AddColumn(&rows.back(), "merge0", MetaRowKey(a));
  AddColumn(&rows.back(), "merge1", MetaRowKey(b));
  return rows;
}

RowMutation MetaDelete(const RegionInfo& info) {
  RowMutation rm;
  rm.row = MetaRowKey(info);
  Mutation m;
  m.kind = Mutation::Kind::kDeleteFamily;
  m.family = kMetaFamily;
  rm.mutations.push_back(std::move(m));
  return rm;
}

absl::StatusOr<std::map<std::string, std::vector<RegionInfo>>> LoadMeta(
    Region* meta, std::map<std::string, std::vector<RegionInfo>>* retired, std::set<std::string>* closed) {
  std::map<std::string, std::vector<RegionInfo>> out;
  absl::StatusOr<std::unique_ptr<RegionScanner>> sc = meta->Scan(ScanSpec{});
  if (!sc.ok()) return sc.status();
  RowResult row;
  for (;;) {
    absl::StatusOr<bool> more = (*sc)->Next(&row);
    if (!more.ok()) return more.status();
    if (!*more) break;
    const std::string_view key = row.row();
    auto bad = [&](std::string_view why) {
      return absl::DataLossError(
          absl::StrCat(kMetaTableName, " row '", ToStringBinary(key), "' does not describe a region: ", AV(why)));
    };
    const size_t comma = key.find(',');
    if (comma == std::string_view::npos || comma == 0) return bad("no table name");
    RegionInfo info;
    info.table.assign(key.substr(0, comma));
    bool have_start = false, have_end = false, have_id = false, retired_row = false, closed_row = false;
    for (const CellView& c : row.cells()) {
      if (c.qualifier == "startkey") {
        info.start_key.assign(c.value);
        have_start = true;
      } else if (c.qualifier == "endkey") {
        info.end_key.assign(c.value);
        have_end = true;
      } else if (c.qualifier == "id") {
        if (!absl::SimpleAtoi(AV(c.value), &info.id)) return bad("info:id is not a number");
        have_id = true;
      } else if (c.qualifier == "state") {
        retired_row = c.value == kSplitState || c.value == kMergedState;
        closed_row = c.value == kClosedState;
      }
    }
    if (!have_start || !have_end || !have_id) return bad("info:startkey, info:endkey or info:id is missing");
    if (MetaRowKey(info) != key) return bad("its row key does not match its columns");
    if (retired_row) {
      if (retired != nullptr) (*retired)[info.table].push_back(std::move(info));
      continue;
    }
    if (closed_row && closed != nullptr) closed->insert(info.EncodedName());
    out[info.table].push_back(std::move(info));
  }
  for (auto& [t, regions] : out) {
    std::sort(regions.begin(), regions.end(),
              [](const RegionInfo& a, const RegionInfo& b) { return a.start_key < b.start_key; });
  }
  return out;
}

}  // namespace basalt::server
