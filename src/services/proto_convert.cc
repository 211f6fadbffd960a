#include "src/services/proto_convert.h"

#include "absl/strings/escaping.h"
#include "basalt/family_values.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "proto/kept_settings.h"

namespace basalt::server {

absl::StatusOr<FamilyOptions> FamilyFromProto(const rpc::FamilyDescriptor& fd) {
  FamilyOptions f;
  f.name = fd.name();
  auto bad = [&](std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("column family '", absl::CHexEscape(f.name), "': ", AV(what)));
  };
  f.max_versions = fd.max_versions() == 0 ? 1 : fd.max_versions();
  f.min_versions = fd.min_versions();
  if (fd.ttl_seconds() < 0) return bad(absl::StrCat("TTL ", fd.ttl_seconds(), " is negative"));
  if (fd.ttl_seconds() > INT64_MAX / 1000) return bad(absl::StrCat("TTL ", fd.ttl_seconds(), " s is too large"));
  f.ttl_ms = fd.ttl_seconds() * 1000;
  if (fd.block_size() != 0) f.block_size = fd.block_size();
  // Wire number -> the engine's, through basalt/family_values.h.
  auto disk = [&](FamilySetting setting, int wire) -> absl::StatusOr<uint8_t> {
    const FamilyValue* v = FindFamilyValueByWire(setting, wire);
    if (v == nullptr) return bad(absl::StrCat("unknown ", AV(FamilySettingName(setting)), " ", wire));
    return v->disk;
  };
  BASALT_ASSIGN_OR_RETURN(uint8_t enc, disk(FamilySetting::kEncoding, fd.encoding()));
  BASALT_ASSIGN_OR_RETURN(uint8_t comp, disk(FamilySetting::kCompression, fd.compression()));
  BASALT_ASSIGN_OR_RETURN(uint8_t bloom, disk(FamilySetting::kBloom, fd.bloom()));
  BASALT_ASSIGN_OR_RETURN(uint8_t checksum, disk(FamilySetting::kChecksum, fd.checksum()));
  f.encoding = static_cast<DataBlockEncoding>(enc);
  f.compression = static_cast<Compression>(comp);
  f.bloom = static_cast<BloomType>(bloom);
  f.checksum = static_cast<ChecksumType>(checksum);
  if (fd.bytes_per_checksum() != 0) f.bytes_per_checksum = fd.bytes_per_checksum();
  f.cache_blocks = fd.has_block_cache() ? fd.block_cache() : true;
  f.cache_encoded = fd.cache_encoded();
  BASALT_RETURN_IF_ERROR(ValidateFamilyName(f.name));
  BASALT_RETURN_IF_ERROR(ValidateFamily(f));
  return f;
}

rpc::FamilyDescriptor FamilyToProto(const FamilyOptions& f) {
  rpc::FamilyDescriptor fd;
  fd.set_name(f.name);
  fd.set_max_versions(f.max_versions);
  fd.set_min_versions(f.min_versions);
  fd.set_ttl_seconds(f.ttl_ms / 1000);
  fd.set_block_size(f.block_size);
  // The engine's number -> wire, through basalt/family_values.h (a family that opened has
  // values the table knows).
  auto wire = [](FamilySetting setting, auto value) {
    const FamilyValue* v = FindFamilyValueByDisk(setting, static_cast<uint8_t>(value));
    return v == nullptr ? 0 : v->wire;
  };
  fd.set_encoding(static_cast<rpc::DataBlockEncoding>(wire(FamilySetting::kEncoding, f.encoding)));
  fd.set_compression(static_cast<rpc::Compression>(wire(FamilySetting::kCompression, f.compression)));
  fd.set_bloom(static_cast<rpc::BloomType>(wire(FamilySetting::kBloom, f.bloom)));
  fd.set_checksum(static_cast<rpc::ChecksumType>(wire(FamilySetting::kChecksum, f.checksum)));
  fd.set_bytes_per_checksum(f.bytes_per_checksum);
  fd.set_block_cache(f.cache_blocks);
  fd.set_cache_encoded(f.cache_encoded);
  return fd;
}

absl::StatusOr<TableSpec> TableFromProto(const rpc::TableDescriptor& td) {
  TableSpec spec;
  spec.name = td.name();
  spec.max_file_size = td.max_file_size();
  spec.transactional = td.transactional();
  spec.queue = td.queue();
  spec.kept = {rpc::KeptFromProto(td.kept_attributes()), rpc::KeptFromProto(td.kept_configuration())};
  BASALT_RETURN_IF_ERROR(ValidateTableName(spec.name));
  for (const rpc::FamilyDescriptor& fd : td.families()) {
    absl::StatusOr<FamilyOptions> f = FamilyFromProto(fd);
    if (!f.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("table '", spec.name, "': ", f.status().message()));
    }
    KeptSettings kept{rpc::KeptFromProto(fd.kept_attributes()), rpc::KeptFromProto(fd.kept_configuration())};
    if (!kept.empty()) spec.kept_by_family[f->name] = std::move(kept);
    spec.families.push_back(*std::move(f));
  }
  BASALT_RETURN_IF_ERROR(ValidateTableSpec(spec));
  return spec;
}

rpc::TableDescriptor TableToProto(const TableSpec& spec) {
  rpc::TableDescriptor td;
  td.set_name(spec.name);
  td.set_max_file_size(spec.max_file_size);
  td.set_transactional(spec.transactional);
  td.set_queue(spec.queue);
  rpc::KeptToProto(spec.kept.attributes, td.mutable_kept_attributes());
  rpc::KeptToProto(spec.kept.configuration, td.mutable_kept_configuration());
  for (const FamilyOptions& f : spec.families) {
    rpc::FamilyDescriptor* fd = td.add_families();
    *fd = FamilyToProto(f);
    if (auto it = spec.kept_by_family.find(f.name); it != spec.kept_by_family.end()) {
      rpc::KeptToProto(it->second.attributes, fd->mutable_kept_attributes());
      rpc::KeptToProto(it->second.configuration, fd->mutable_kept_configuration());
    }
  }
  return td;
}

// RegionLoad's fields carry the names of storage/region.h's BASALT_REGION_COUNTERS.
rpc::RegionLoad RegionLoadToProto(const RegionStats& st) {
  rpc::RegionLoad l;
#define BASALT_TO_PROTO(name, how) l.set_##name(st.name);
  BASALT_REGION_COUNTERS(BASALT_TO_PROTO)
#undef BASALT_TO_PROTO
  l.set_failed(st.failed);
  for (const auto& [f, n] : st.files_per_family) (*l.mutable_files_per_family())[f] = n;
  return l;
}

RegionStats RegionStatsFromProto(const rpc::RegionLoad& l) {
  RegionStats st;
#define BASALT_FROM_PROTO(name, how) st.name = l.name();
  BASALT_REGION_COUNTERS(BASALT_FROM_PROTO)
#undef BASALT_FROM_PROTO
  st.failed = l.failed();
  for (const auto& [f, n] : l.files_per_family()) st.files_per_family[f] = n;
  return st;
}

rpc::RegionSpec RegionSpecToProto(const RegionInfo& info) {
  rpc::RegionSpec r;
  r.set_table(info.table);
  r.set_start_key(info.start_key);
  r.set_end_key(info.end_key);
  r.set_id(info.id);
  return r;
}

absl::StatusOr<RegionInfo> RegionFromProto(const rpc::RegionSpec& r) {
  BASALT_RETURN_IF_ERROR(ValidateTableName(r.table()));
  if (r.id() == 0) return absl::InvalidArgumentError(absl::StrCat("region of table ", r.table(), " has no id"));
  if (!r.end_key().empty() && r.end_key() <= r.start_key()) {
    return absl::InvalidArgumentError(absl::StrCat("region of table ", r.table(), " ends before it starts"));
  }
  return RegionInfo{r.table(), r.start_key(), r.end_key(), r.id()};
}

}  // namespace basalt::server
