#include "src/schema/region_info.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/coding.h"
#include "common/crc.h"
#include "common/status.h"
#include "common/format_stamp.h"
#include "common/string_binary.h"

namespace basalt::server {
namespace {
constexpr std::string_view kMagic = "BSLTRGNI";
constexpr uint32_t kVersion = 1;
}  // namespace

std::string RegionInfo::Name() const { return absl::StrCat(table, ",", ToStringBinary(start_key), ",", id); }

std::string RegionInfo::EncodedName() const {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64
  for (unsigned char c : Name()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return absl::StrFormat("%016x", h);
}

std::string EncodeRegionInfo(const RegionInfo& info) {
  std::string out;
  AppendFormatStamp(&out, kMagic, kVersion, kVersion);
  PutLengthPrefixed(&out, info.table);
  PutLengthPrefixed(&out, info.start_key);
  PutLengthPrefixed(&out, info.end_key);
  PutVarint64(&out, info.id);
  PutFixed32(&out, MaskCrc(Crc32c(out)));
  return out;
}

absl::StatusOr<RegionInfo> DecodeRegionInfo(std::string_view bytes, const std::string& path) {
  const std::string what = absl::StrCat("region info ", path);
  absl::StatusOr<FormatStamp> stamp = ReadFormatStamp(bytes, kMagic, kVersion, what);
  if (!stamp.ok()) return stamp.status();
  auto damaged = [&](std::string_view why) {
    return absl::DataLossError(absl::StrCat(what, " is damaged: ", AV(why)));
  };
  if (bytes.size() < kFormatStampSize + 4) return damaged("too short");
  const uint32_t stored = DecodeFixed32(bytes.data() + bytes.size() - 4);
  if (MaskCrc(Crc32c(bytes.substr(0, bytes.size() - 4))) != stored) return damaged("checksum mismatch");
  std::string_view in = bytes.substr(kFormatStampSize, bytes.size() - 4 - kFormatStampSize);
  RegionInfo info;
  std::string_view table, start, end;
  if (!GetLengthPrefixed(&in, &table) || !GetLengthPrefixed(&in, &start) || !GetLengthPrefixed(&in, &end) ||
      !GetVarint64(&in, &info.id) || !in.empty()) {
    return damaged("malformed fields");
  }
  info.table.assign(table);
  info.start_key.assign(start);
  info.end_key.assign(end);
  return info;
}

absl::StatusOr<std::vector<RegionInfo>> RegionsFromSplitKeys(std::string_view table, std::vector<std::string> split_keys,
                                                             uint64_t first_id) {
  std::sort(split_keys.begin(), split_keys.end());
  for (size_t i = 0; i < split_keys.size(); ++i) {
    if (split_keys[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("table '", AV(table), "': a split key is empty"));
    }
    if (i > 0 && split_keys[i] == split_keys[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("table '", AV(table), "': split key '", ToStringBinary(split_keys[i]), "' is given twice"));
    }
  }
  std::vector<RegionInfo> out;
  std::string start;
  for (size_t i = 0; i <= split_keys.size(); ++i) {
    RegionInfo r;
    r.table.assign(table);
    r.start_key = start;
    if (i < split_keys.size()) r.end_key = split_keys[i];
    r.id = first_id;  // the same id for all: their names differ by start key, as HBase's
    start = r.end_key;
    out.push_back(std::move(r));
  }
  return out;
}

absl::Status CheckCoverage(std::string_view table, const std::vector<RegionInfo>& regions) {
  std::string expect;  // the next start key
  for (size_t i = 0; i < regions.size(); ++i) {
    const RegionInfo& r = regions[i];
    if (r.start_key != expect) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table '", AV(table), "': region ", r.Name(), " starts at '", ToStringBinary(r.start_key), "' where '",
          ToStringBinary(expect), "' was expected (a ", r.start_key > expect ? "gap" : "overlap", " in its regions)"));
    }
    if (r.end_key.empty() && i + 1 != regions.size()) {
      return absl::FailedPreconditionError(
          absl::StrCat("table '", AV(table), "': region ", r.Name(), " ends the key space but is not the last"));
    }
    expect = r.end_key;
  }
  if (regions.empty() || !regions.back().end_key.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("table '", AV(table), "': its regions do not reach the end of the key space"));
  }
  return absl::OkStatus();
}

std::string TableDirIn(std::string_view data_dir, std::string_view table) {
  return absl::StrCat(AV(data_dir), "/tables/", AV(table));
}

std::string RegionDirIn(std::string_view data_dir, const RegionInfo& info) {
  if (info.id == 0) return TableDirIn(data_dir, info.table);
  return absl::StrCat(TableDirIn(data_dir, info.table), "/", info.EncodedName());
}

std::string TableOfRegionName(std::string_view region) { return std::string(region.substr(0, region.find(','))); }

}  // namespace basalt::server
