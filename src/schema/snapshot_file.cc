#include "src/schema/snapshot_file.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/crc.h"
#include "common/format_stamp.h"
#include "common/status.h"

namespace basalt::server {
namespace {

constexpr std::string_view kMagic = "BSLTSNAP";
constexpr size_t kHeaderSize = kFormatStampSize + 4;
constexpr size_t kMaxNameBytes = 128;

}  // namespace

absl::Status ValidateSnapshotName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat("a snapshot's name has 1 to ", kMaxNameBytes, " bytes, not ", name.size()));
  }
  if (name[0] == '.') return absl::InvalidArgumentError(absl::StrCat("snapshot name '", AV(name), "' starts with '.'"));
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
      return absl::InvalidArgumentError(absl::StrCat("snapshot name '", AV(name),
                                                     "' may hold only letters, digits, '_', '-' and '.'"));
    }
  }
  return absl::OkStatus();
}

std::string EncodeSnapshot(const SnapshotInfo& s) {
  std::string payload;
  PutLengthPrefixed(&payload, s.name);
  PutVarint64(&payload, static_cast<uint64_t>(s.created_ms));
  PutVarint64(&payload, static_cast<uint64_t>(s.ttl_s));
  PutLengthPrefixed(&payload, s.owner);
  PutLengthPrefixed(&payload, EncodeCatalog({s.table}));
  PutVarint64(&payload, s.regions.size());
  for (const SnapshotInfo::Region& r : s.regions) {
    PutLengthPrefixed(&payload, EncodeRegionInfo(r.info));
    PutVarint64(&payload, r.files);
    PutVarint64(&payload, r.bytes);
  }
  const uint32_t version = s.grants.empty() ? 1 : 2;
  if (version >= 2) {
    PutVarint64(&payload, s.grants.size());
    for (const SnapshotGrant& g : s.grants) {
      PutLengthPrefixed(&payload, g.principal);
      PutLengthPrefixed(&payload, g.family);
      PutLengthPrefixed(&payload, g.qualifier);
      payload.push_back(static_cast<char>(g.perms));
    }
  }
  std::string out;
  AppendFormatStamp(&out, kMagic, version, version);
  PutFixed32(&out, static_cast<uint32_t>(payload.size()));
  out += payload;
  PutFixed32(&out, MaskCrc(Crc32c(out)));
  return out;
}

absl::StatusOr<SnapshotInfo> DecodeSnapshot(std::string_view bytes, const std::string& path) {
  auto corrupt = [&](std::string_view what) {
    return absl::DataLossError(absl::StrCat("snapshot manifest ", path, " is damaged: ", AV(what)));
  };
  if (bytes.size() < kHeaderSize + 4) return corrupt(absl::StrCat("only ", bytes.size(), " bytes"));
  if (!HasFormatMagic(bytes, kMagic)) return corrupt("bad magic");
  const uint32_t stored = DecodeFixed32(bytes.data() + bytes.size() - 4);
  const uint32_t computed = MaskCrc(Crc32c(bytes.substr(0, bytes.size() - 4)));
  if (stored != computed) {
    return corrupt(absl::StrCat("checksum mismatch (stored 0x", absl::Hex(stored), ", computed 0x", absl::Hex(computed), ")"));
  }
  BASALT_ASSIGN_OR_RETURN(FormatStamp stamp,
                          ReadFormatStamp(bytes, kMagic, kSnapshotVersion, absl::StrCat("snapshot manifest ", path)));
  const uint32_t payload_len = DecodeFixed32(bytes.data() + kFormatStampSize);
  if (payload_len != bytes.size() - kHeaderSize - 4) {
    return corrupt(absl::StrCat("payload length ", payload_len, " does not match file size ", bytes.size()));
  }
  std::string_view in = bytes.substr(kHeaderSize, payload_len);
  SnapshotInfo s;
  std::string_view name, owner, table;
  uint64_t created = 0, ttl = 0, regions = 0;
  if (!GetLengthPrefixed(&in, &name) || !GetVarint64(&in, &created) || !GetVarint64(&in, &ttl) ||
      !GetLengthPrefixed(&in, &owner) || !GetLengthPrefixed(&in, &table) || !GetVarint64(&in, &regions) || regions > in.size()) {
    return corrupt("its header is truncated");
  }
  s.name = std::string(name);
  s.created_ms = static_cast<int64_t>(created);
  s.ttl_s = static_cast<int64_t>(ttl);
  s.owner = std::string(owner);
  BASALT_ASSIGN_OR_RETURN(std::vector<TableSpec> tables, DecodeCatalog(table, absl::StrCat(path, " (its table)")));
  if (tables.size() != 1) return corrupt(absl::StrCat("it describes ", tables.size(), " tables, not one"));
  s.table = std::move(tables[0]);
  for (uint64_t i = 0; i < regions; ++i) {
    std::string_view info;
    SnapshotInfo::Region r;
    if (!GetLengthPrefixed(&in, &info) || !GetVarint64(&in, &r.files) || !GetVarint64(&in, &r.bytes)) {
      return corrupt(absl::StrCat("region ", i, " is truncated"));
    }
    BASALT_ASSIGN_OR_RETURN(r.info, DecodeRegionInfo(info, absl::StrCat(path, " (region ", i, ")")));
    if (r.info.table != s.table.name) {
      return corrupt(absl::StrCat("region ", i, " is of table '", r.info.table, "', not '", s.table.name, "'"));
    }
    s.regions.push_back(std::move(r));
  }
  if (stamp.version >= 2) {
    uint64_t grants = 0;
    if (!GetVarint64(&in, &grants) || grants > in.size()) return corrupt("its grants are truncated");
    for (uint64_t i = 0; i < grants; ++i) {
      std::string_view principal, family, qualifier;
      if (!GetLengthPrefixed(&in, &principal) || !GetLengthPrefixed(&in, &family) ||
          !GetLengthPrefixed(&in, &qualifier) || in.empty()) {
        return corrupt(absl::StrCat("grant ", i, " is truncated"));
      }
      const uint8_t perms = static_cast<uint8_t>(in[0]);
      in.remove_prefix(1);
      if (principal.empty() || perms == 0 || perms > 31 || (family.empty() && !qualifier.empty())) {
        return corrupt(absl::StrCat("grant ", i, " is malformed"));
      }
      s.grants.push_back(SnapshotGrant{std::string(principal), std::string(family), std::string(qualifier), perms});
    }
  }
  if (!in.empty()) return corrupt(absl::StrCat(in.size(), " bytes after its last ", stamp.version >= 2 ? "grant" : "region"));
  BASALT_RETURN_IF_ERROR(ValidateSnapshotName(s.name));
  return s;
}

uint64_t SnapshotInfo::files() const {
  uint64_t n = 0;
  for (const Region& r : regions) n += r.files;
  return n;
}

uint64_t SnapshotInfo::bytes() const {
  uint64_t n = 0;
  for (const Region& r : regions) n += r.bytes;
  return n;
}

std::string SnapshotsDirIn(std::string_view data_dir) { return absl::StrCat(AV(data_dir), "/", kSnapshotsDir); }

std::string SnapshotDirIn(std::string_view data_dir, std::string_view name) {
  return absl::StrCat(SnapshotsDirIn(data_dir), "/", AV(name));
}

absl::StatusOr<SnapshotInfo> ReadSnapshotIn(Env* env, std::string_view data_dir, std::string_view name) {
  const std::string manifest = absl::StrCat(SnapshotDirIn(data_dir, name), "/", kSnapshotFileName);
  if (!env->FileExists(manifest)) return absl::NotFoundError(absl::StrCat("no snapshot '", AV(name), "'"));
  BASALT_ASSIGN_OR_RETURN(std::string bytes, env->ReadFileToString(manifest));
  return DecodeSnapshot(bytes, manifest);
}

}  // namespace basalt::server
