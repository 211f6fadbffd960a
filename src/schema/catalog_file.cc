#include "src/schema/catalog_file.h"

#include <algorithm>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/format_stamp.h"
#include "common/crc.h"
#include "common/env.h"
#include "common/status.h"

namespace basalt::server {
namespace {

constexpr std::string_view kMagic = "BSLTCATG";
constexpr size_t kHeaderSize = 8 + 4 + 4 + 4;
constexpr uint8_t kFlagCacheBlocks = 1, kFlagCacheEncoded = 2, kFlagVerifyChecksums = 4;
constexpr uint8_t kTableTransactional = 1, kTableQueue = 2;  // version 3's table flags

bool FamilyEq(const FamilyOptions& a, const FamilyOptions& b) {
  return a.name == b.name && a.max_versions == b.max_versions && a.min_versions == b.min_versions &&
         a.ttl_ms == b.ttl_ms && a.block_size == b.block_size && a.encoding == b.encoding &&
         a.compression == b.compression && a.bloom == b.bloom && a.checksum == b.checksum &&
         a.bytes_per_checksum == b.bytes_per_checksum && a.cache_blocks == b.cache_blocks &&
         a.cache_encoded == b.cache_encoded && a.verify_checksums == b.verify_checksums;
}

bool GetByte(std::string_view* in, uint8_t* v) {
  if (in->empty()) return false;
  *v = static_cast<uint8_t>((*in)[0]);
  in->remove_prefix(1);
  return true;
}

using KeptList = std::vector<std::pair<std::string, std::string>>;

// One list of kept settings: `what` ("attribute", "configuration") and `whose` ("table 't'",
// "table 't': column family 'f'") name it in errors.
absl::Status ValidateKeptList(const KeptList& list, std::string_view whose, std::string_view what) {
  if (list.size() > kMaxKeptEntries) {
    return absl::InvalidArgumentError(
        absl::StrCat(AV(whose), ": ", list.size(), " ", AV(what), " entries kept, more than ", kMaxKeptEntries));
  }
  std::set<std::string_view> keys;
  for (const auto& [k, v] : list) {
    if (k.empty() || k.size() > kMaxKeptKeyBytes || v.size() > kMaxKeptValueBytes) {
      return absl::InvalidArgumentError(absl::StrCat(AV(whose), ": ", AV(what), " '", absl::CHexEscape(k.substr(0, 64)),
                                                     "' (", k.size(), "-byte key, ", v.size(),
                                                     "-byte value) is outside 1..", kMaxKeptKeyBytes,
                                                     " bytes of key and ", kMaxKeptValueBytes, " of value"));
    }
    if (!keys.insert(k).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(AV(whose), ": ", AV(what), " '", absl::CHexEscape(k), "' given twice"));
    }
  }
  return absl::OkStatus();
}

// HBase's attributes whose meaning Basalt would not honour, kept only when they ask for what
// Basalt does anyway (a family's, or the table's).
absl::Status CheckHonoured(const KeptList& attributes, std::string_view whose, bool family) {
  for (const auto& [k, v] : attributes) {
    std::string_view why;
    if (family && k == "KEEP_DELETED_CELLS") {
      if (!absl::EqualsIgnoreCase(v, "false")) why = "deleted cells are not kept for reads back in time: FALSE";
    } else if (family && k == "NEW_VERSION_BEHAVIOR") {
      if (!absl::EqualsIgnoreCase(v, "false")) why = "deletes and versions behave as HBase's default: false";
    } else if (family && (k == "ENCRYPTION" || k == "ENCRYPTION_KEY")) {
      if (!v.empty()) why = "Basalt does not encrypt its stores";
    } else if (!family && k == "READONLY") {
      if (!absl::EqualsIgnoreCase(v, "false")) why = "a table takes writes: false";
    } else if (!family && k == "REGION_REPLICATION") {
      if (v != "1") why = "one replica of each region: 1";
    } else if (!family && absl::StartsWith(k, "coprocessor$")) {
      why = "Basalt runs no coprocessors";
    }
    if (!why.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(AV(whose), ": ", k, " => '", absl::CHexEscape(v.substr(0, 80)),
                                                     "' is not supported by Basalt (", AV(why), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateKept(const KeptSettings& kept, std::string_view whose, bool family) {
  BASALT_RETURN_IF_ERROR(ValidateKeptList(kept.attributes, whose, "attribute"));
  BASALT_RETURN_IF_ERROR(ValidateKeptList(kept.configuration, whose, "configuration"));
  return CheckHonoured(kept.attributes, whose, family);
}

void PutKeptList(std::string* out, const KeptList& list) {
  PutVarint64(out, list.size());
  for (const auto& [k, v] : list) {
    PutLengthPrefixed(out, k);
    PutLengthPrefixed(out, v);
  }
}

void PutKept(std::string* out, const KeptSettings& kept) {
  PutKeptList(out, kept.attributes);
  PutKeptList(out, kept.configuration);
}

bool GetKeptList(std::string_view* in, KeptList* list) {
  uint64_t n;
  if (!GetVarint64(in, &n) || n > in->size()) return false;
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view k, v;
    if (!GetLengthPrefixed(in, &k) || !GetLengthPrefixed(in, &v)) return false;
    list->emplace_back(std::string(k), std::string(v));
  }
  return true;
}

bool GetKept(std::string_view* in, KeptSettings* kept) {
  return GetKeptList(in, &kept->attributes) && GetKeptList(in, &kept->configuration);
}

}  // namespace

bool TableSpec::operator==(const TableSpec& o) const {
  if (name != o.name || enabled != o.enabled || max_file_size != o.max_file_size || transactional != o.transactional ||
      queue != o.queue || families.size() != o.families.size() || kept != o.kept || kept_by_family != o.kept_by_family) {
    return false;
  }
  for (size_t i = 0; i < families.size(); ++i) {
    if (!FamilyEq(families[i], o.families[i])) return false;
  }
  return true;
}

std::optional<std::string> ReplicationScopeOf(const TableSpec& spec, std::string_view family) {
  auto it = spec.kept_by_family.find(std::string(family));
  if (it == spec.kept_by_family.end()) return std::nullopt;
  for (const auto& [key, value] : it->second.attributes) {
    if (key == kReplicationScopeAttribute) return value;
  }
  return std::nullopt;
}

absl::Status ValidateNamespaceName(std::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("namespace name is empty");
  if (name.size() > 128) {
    return absl::InvalidArgumentError(absl::StrCat("namespace name of ", name.size(), " bytes is longer than 128"));
  }
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) {
      return absl::InvalidArgumentError(
          absl::StrCat("namespace name '", AV(name), "' has an illegal character (allowed: A-Z a-z 0-9 _)"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateNewNamespace(std::string_view name) {
  BASALT_RETURN_IF_ERROR(ValidateNamespaceName(name));
  if (name == kDefaultNamespace || name == kBasaltNamespace || name == kHBaseNamespace) {
    return absl::InvalidArgumentError(absl::StrCat("namespace '", AV(name), "' is reserved: ",
                                                   name == kDefaultNamespace ? "it always exists"
                                                   : name == kBasaltNamespace ? "Basalt's system tables are in it"
                                                                              : "HBase's system tables are in it"));
  }
  return absl::OkStatus();
}

absl::Status ValidateNamespaceSpec(const NamespaceSpec& spec) {
  BASALT_RETURN_IF_ERROR(ValidateNewNamespace(spec.name));
  const std::string whose = absl::StrCat("namespace '", spec.name, "'");
  BASALT_RETURN_IF_ERROR(ValidateKeptList(spec.kept.attributes, whose, "attribute"));
  return ValidateKeptList(spec.kept.configuration, whose, "configuration");
}

absl::Status ValidateNamespaceQuotas(const NamespaceSpec& spec) {
  for (const auto& [key, value] : spec.kept.configuration) {
    if (key != kNamespaceMaxTables && key != kNamespaceMaxRegions) continue;
    uint64_t n = 0;
    if (!absl::SimpleAtoi(value, &n) || n == 0) {
      return absl::InvalidArgumentError(absl::StrCat("namespace '", spec.name, "': ", key, " is '", value,
                                                     "'; it must be a whole number above 0"));
    }
  }
  return absl::OkStatus();
}

uint64_t NamespaceLimit(const NamespaceSpec& spec, std::string_view key) {
  uint64_t n = 0;
  for (const auto& [k, value] : spec.kept.configuration) {
    if (k == key && absl::SimpleAtoi(value, &n)) return n;
  }
  return 0;
}

std::string_view TableNamespace(std::string_view table) {
  const size_t colon = table.find(':');
  return colon == std::string_view::npos ? std::string_view(kDefaultNamespace) : table.substr(0, colon);
}

absl::Status ValidateTableName(std::string_view full) {
  if (full.size() > 255) {
    return absl::InvalidArgumentError(absl::StrCat("table name of ", full.size(), " bytes is longer than 255"));
  }
  std::string_view name = full;
  if (const size_t colon = full.find(':'); colon != std::string_view::npos) {
    const std::string_view ns = full.substr(0, colon);
    if (ns == kDefaultNamespace) {
      return absl::InvalidArgumentError(absl::StrCat("table name '", AV(full), "': a table in namespace default is named without it ('",
                                                     AV(full.substr(colon + 1)), "')"));
    }
    if (absl::Status s = ValidateNewNamespace(ns); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("table name '", AV(full), "': ", s.message()));
    }
    name = full.substr(colon + 1);
  }
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat("table name '", AV(full), "' is empty"));
  if (name[0] == '.' || name[0] == '-') {
    return absl::InvalidArgumentError(absl::StrCat("table name '", AV(name), "' must not start with '.' or '-'"));
  }
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("table name '", AV(full), "' has an illegal character (allowed: A-Z a-z 0-9 _ . -, and one ':' after a namespace)"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateFamilyName(std::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("column family name is empty");
  if (name[0] == '.') {
    return absl::InvalidArgumentError(absl::StrCat("column family name '", AV(name), "' must not start with '.'"));
  }
  for (char c : name) {
    auto u = static_cast<unsigned char>(c);
    if (c == ':' || c == '\\' || c == '/' || u < 0x20 || u == 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrCat("column family name '", AV(name), "' has an illegal character (':', '\\', '/' or a control character)"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateTableSpec(const TableSpec& spec) {
  BASALT_RETURN_IF_ERROR(ValidateTableName(spec.name));
  if (spec.families.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("table '", spec.name, "' needs at least one column family"));
  }
  std::set<std::string> seen;
  for (const FamilyOptions& f : spec.families) {
    BASALT_RETURN_IF_ERROR(ValidateFamilyName(f.name));
    BASALT_RETURN_IF_ERROR(ValidateFamily(f));
    if (!seen.insert(f.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("table '", spec.name, "': column family '", f.name, "' given twice"));
    }
  }
  if (spec.queue && !spec.transactional) {
    return absl::InvalidArgumentError(absl::StrCat("table '", spec.name, "': a queue's table is transactional"));
  }
  if (spec.transactional) {
    for (const FamilyOptions& f : spec.families) {
      // Its cells' timestamps are write pointers (docs/DESIGN.md §7), not milliseconds.
      if (f.ttl_ms != 0) {
        return absl::InvalidArgumentError(absl::StrCat("table '", spec.name, "': column family '", f.name,
                                                       "' has a TTL, which a transactional table does not take yet"));
      }
    }
  }
  if (spec.max_file_size != 0 && spec.max_file_size < kMinMaxFileSize) {
    return absl::InvalidArgumentError(absl::StrCat("table '", spec.name, "': MAX_FILESIZE of ", spec.max_file_size,
                                                   " bytes is below the least, ", kMinMaxFileSize));
  }
  BASALT_RETURN_IF_ERROR(ValidateKept(spec.kept, absl::StrCat("table '", spec.name, "'"), /*family=*/false));
  for (const auto& [family, kept] : spec.kept_by_family) {
    const std::string whose = absl::StrCat("table '", spec.name, "': column family '", family, "'");
    if (!seen.contains(family)) return absl::InvalidArgumentError(absl::StrCat(whose, " keeps settings but is not a family of it"));
    BASALT_RETURN_IF_ERROR(ValidateKept(kept, whose, /*family=*/true));
  }
  return absl::OkStatus();
}

std::string EncodeCatalog(const std::vector<TableSpec>& tables, const std::vector<NamespaceSpec>& namespaces) {
  // The oldest version that says everything (an older build can read what it understands).
  const bool v5 = !namespaces.empty() || std::any_of(tables.begin(), tables.end(), [](const TableSpec& t) {
    return t.name.find(':') != std::string::npos;
  });
  const bool v4 = v5 || std::any_of(tables.begin(), tables.end(),
                                    [](const TableSpec& t) { return !t.kept.empty() || !t.kept_by_family.empty(); });
  const bool v3 = v4 || std::any_of(tables.begin(), tables.end(), [](const TableSpec& t) { return t.transactional; });
  const bool v2 = v3 || std::any_of(tables.begin(), tables.end(), [](const TableSpec& t) { return t.max_file_size != 0; });
  const uint32_t version = v5 ? 5 : v4 ? 4 : v3 ? 3 : v2 ? 2 : 1;
  std::string payload;
  PutVarint64(&payload, tables.size());
  for (const TableSpec& t : tables) {
    PutLengthPrefixed(&payload, t.name);
    payload.push_back(t.enabled ? 0 : 1);
    PutVarint64(&payload, t.families.size());
    for (const FamilyOptions& f : t.families) {
      PutLengthPrefixed(&payload, f.name);
      PutVarint64(&payload, static_cast<uint64_t>(f.max_versions));
      PutVarint64(&payload, static_cast<uint64_t>(f.min_versions));
      PutVarint64(&payload, static_cast<uint64_t>(f.ttl_ms));
      PutVarint64(&payload, f.block_size);
      payload.push_back(static_cast<char>(f.encoding));
      payload.push_back(static_cast<char>(f.compression));
      payload.push_back(static_cast<char>(f.bloom));
      payload.push_back(static_cast<char>(f.checksum));
      PutVarint64(&payload, f.bytes_per_checksum);
      uint8_t flags = (f.cache_blocks ? kFlagCacheBlocks : 0) | (f.cache_encoded ? kFlagCacheEncoded : 0) |
                      (f.verify_checksums ? kFlagVerifyChecksums : 0);
      payload.push_back(static_cast<char>(flags));
    }
    if (v2) PutVarint64(&payload, t.max_file_size);
    if (v3) {
      payload.push_back(static_cast<char>((t.transactional ? kTableTransactional : 0) | (t.queue ? kTableQueue : 0)));
    }
    if (v4) {
      PutKept(&payload, t.kept);
      PutVarint64(&payload, t.kept_by_family.size());
      for (const auto& [family, kept] : t.kept_by_family) {
        PutLengthPrefixed(&payload, family);
        PutKept(&payload, kept);
      }
    }
  }
  if (v5) {
    PutVarint64(&payload, namespaces.size());
    for (const NamespaceSpec& n : namespaces) {
      PutLengthPrefixed(&payload, n.name);
      PutKept(&payload, n.kept);
    }
  }
  std::string out;
  AppendFormatStamp(&out, kMagic, version, /*min_reader_version=*/version);
  PutFixed32(&out, static_cast<uint32_t>(payload.size()));
  out += payload;
  PutFixed32(&out, MaskCrc(Crc32c(out)));
  return out;
}

absl::StatusOr<std::vector<TableSpec>> DecodeCatalog(std::string_view bytes, const std::string& path,
                                                     std::vector<NamespaceSpec>* namespaces) {
  auto corrupt = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat("catalogue ", path, " is corrupt: ", what));
  };
  if (bytes.size() < kHeaderSize + 4) return corrupt(absl::StrCat("only ", bytes.size(), " bytes"));
  if (bytes.substr(0, kMagic.size()) != kMagic) return corrupt("bad magic");
  const uint32_t stored = DecodeFixed32(bytes.data() + bytes.size() - 4);
  const uint32_t computed = MaskCrc(Crc32c(bytes.substr(0, bytes.size() - 4)));
  if (stored != computed) {
    return corrupt(absl::StrCat("checksum mismatch (stored 0x", absl::Hex(stored), ", computed 0x",
                                absl::Hex(computed), ")"));
  }
  BASALT_ASSIGN_OR_RETURN(FormatStamp stamp,
                          ReadFormatStamp(bytes, kMagic, kCatalogVersion, absl::StrCat("catalogue ", path)));
  const uint32_t payload_len = DecodeFixed32(bytes.data() + kFormatStampSize);
  if (payload_len != bytes.size() - kHeaderSize - 4) {
    return corrupt(absl::StrCat("payload length ", payload_len, " does not match file size ", bytes.size()));
  }
  std::string_view in = bytes.substr(kHeaderSize, payload_len);
  uint64_t ntables;
  if (!GetVarint64(&in, &ntables) || ntables > in.size()) return corrupt("bad table count");
  std::vector<TableSpec> tables;
  std::set<std::string> names;
  for (uint64_t i = 0; i < ntables; ++i) {
    TableSpec t;
    std::string_view name;
    uint8_t state;
    uint64_t nfam;
    if (!GetLengthPrefixed(&in, &name) || !GetByte(&in, &state) || state > 1 || !GetVarint64(&in, &nfam) ||
        nfam > in.size()) {
      return corrupt(absl::StrCat("table ", i, " is truncated or malformed"));
    }
    t.name = std::string(name);
    t.enabled = state == 0;
    for (uint64_t j = 0; j < nfam; ++j) {
      FamilyOptions f;
      std::string_view fname;
      uint64_t maxv, minv, ttl, bs, bpc;
      uint8_t enc, comp, bloom, cks, flags;
      if (!GetLengthPrefixed(&in, &fname) || !GetVarint64(&in, &maxv) || !GetVarint64(&in, &minv) ||
          !GetVarint64(&in, &ttl) || !GetVarint64(&in, &bs) || !GetByte(&in, &enc) || !GetByte(&in, &comp) ||
          !GetByte(&in, &bloom) || !GetByte(&in, &cks) || !GetVarint64(&in, &bpc) || !GetByte(&in, &flags) ||
          maxv > INT32_MAX || minv > INT32_MAX || ttl > INT64_MAX || bs > UINT32_MAX || bpc > UINT32_MAX) {
        return corrupt(absl::StrCat("family ", j, " of table '", t.name, "' is truncated or malformed"));
      }
      f.name = std::string(fname);
      f.max_versions = static_cast<int>(maxv);
      f.min_versions = static_cast<int>(minv);
      f.ttl_ms = static_cast<int64_t>(ttl);
      f.block_size = static_cast<uint32_t>(bs);
      f.encoding = static_cast<DataBlockEncoding>(enc);
      f.compression = static_cast<Compression>(comp);
      f.bloom = static_cast<BloomType>(bloom);
      f.checksum = static_cast<ChecksumType>(cks);
      f.bytes_per_checksum = static_cast<uint32_t>(bpc);
      f.cache_blocks = (flags & kFlagCacheBlocks) != 0;
      f.cache_encoded = (flags & kFlagCacheEncoded) != 0;
      f.verify_checksums = (flags & kFlagVerifyChecksums) != 0;
      t.families.push_back(std::move(f));
    }
    if (stamp.version >= 2 && !GetVarint64(&in, &t.max_file_size)) {
      return corrupt(absl::StrCat("table '", t.name, "' is truncated after its families"));
    }
    if (stamp.version >= 3) {
      uint8_t tflags;
      if (!GetByte(&in, &tflags) || (tflags & ~(kTableTransactional | kTableQueue)) != 0) {
        return corrupt(absl::StrCat("table '", t.name, "' has bad table flags"));
      }
      t.transactional = (tflags & kTableTransactional) != 0;
      t.queue = (tflags & kTableQueue) != 0;
    }
    if (stamp.version >= 4) {
      uint64_t nkept;
      if (!GetKept(&in, &t.kept) || !GetVarint64(&in, &nkept) || nkept > in.size()) {
        return corrupt(absl::StrCat("table '", t.name, "' has malformed kept settings"));
      }
      for (uint64_t j = 0; j < nkept; ++j) {
        std::string_view family;
        KeptSettings kept;
        if (!GetLengthPrefixed(&in, &family) || !GetKept(&in, &kept) ||
            !t.kept_by_family.emplace(std::string(family), std::move(kept)).second) {
          return corrupt(absl::StrCat("table '", t.name, "' has malformed kept settings of family ", j));
        }
      }
    }
    if (absl::Status s = ValidateTableSpec(t); !s.ok()) return corrupt(s.message());
    if (!names.insert(t.name).second) return corrupt(absl::StrCat("table '", t.name, "' listed twice"));
    tables.push_back(std::move(t));
  }
  std::vector<NamespaceSpec> listed;
  if (stamp.version >= 5) {
    uint64_t n;
    if (!GetVarint64(&in, &n) || n > in.size()) return corrupt("bad namespace count");
    std::set<std::string> seen;
    for (uint64_t i = 0; i < n; ++i) {
      std::string_view name;
      NamespaceSpec ns;
      if (!GetLengthPrefixed(&in, &name) || !GetKept(&in, &ns.kept)) {
        return corrupt(absl::StrCat("namespace ", i, " is truncated or malformed"));
      }
      ns.name = std::string(name);
      if (absl::Status s = ValidateNamespaceSpec(ns); !s.ok()) return corrupt(s.message());
      if (!seen.insert(ns.name).second) return corrupt(absl::StrCat("namespace '", ns.name, "' listed twice"));
      listed.push_back(std::move(ns));
    }
  }
  if (!in.empty()) return corrupt(absl::StrCat(in.size(), " trailing bytes after the last table"));
  if (namespaces != nullptr) *namespaces = std::move(listed);
  return tables;
}

absl::StatusOr<std::vector<TableSpec>> LoadCatalog(Env* env, const std::string& data_dir,
                                                   std::vector<NamespaceSpec>* namespaces) {
  const std::string path = data_dir + "/" + kCatalogFileName;
  if (namespaces != nullptr) namespaces->clear();
  if (!env->FileExists(path)) return std::vector<TableSpec>{};
  BASALT_ASSIGN_OR_RETURN(std::string bytes, env->ReadFileToString(path));
  return DecodeCatalog(bytes, path, namespaces);
}

absl::Status SaveCatalog(Env* env, const std::string& data_dir, const std::vector<TableSpec>& tables,
                         const std::vector<NamespaceSpec>& namespaces) {
  // WriteFileDurably: CATALOG.tmp written and synced, renamed over CATALOG, directory synced.
  return env->WriteFileDurably(data_dir + "/" + kCatalogFileName, EncodeCatalog(tables, namespaces));
}

}  // namespace basalt::server
