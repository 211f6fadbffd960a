#include "client/wire.h"

#include <cctype>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "basalt/family_values.h"
#include "common/status.h"
#include "proto/kept_settings.h"

namespace basalt::client_internal {

namespace {
bool IsHostChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}
bool IsV6Char(char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.'; }

absl::Status BadAddress(std::string_view address, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("connection address \"", absl::CEscape(AV(address)), "\": ", AV(why),
                                                 " (expected host:port, [ipv6]:port or unix:/path)"));
}
}  // namespace

absl::Status ValidateAddress(std::string_view address) {
  if (address.empty()) return BadAddress(address, "empty");
  for (std::string_view scheme : {std::string_view("unix:"), std::string_view("unix-abstract:")}) {
    if (address.substr(0, scheme.size()) == scheme) {
      if (address.size() == scheme.size()) return BadAddress(address, "no socket path");
      return absl::OkStatus();
    }
  }
  std::string_view host;
  std::string_view port;
  if (address.front() == '[') {
    size_t close = address.find(']');
    if (close == std::string_view::npos) return BadAddress(address, "unterminated '['");
    host = address.substr(1, close - 1);
    if (host.empty()) return BadAddress(address, "empty host");
    size_t zone = host.find('%');  // a link-local zone ("%eth0") names an interface
    for (char c : host.substr(0, zone)) {
      if (!IsV6Char(c)) return BadAddress(address, "bad character in IPv6 address");
    }
    if (zone != std::string_view::npos) {
      for (char c : host.substr(zone + 1)) {
        if (!IsHostChar(c)) return BadAddress(address, "bad character in IPv6 zone");
      }
    }
    if (close + 1 >= address.size() || address[close + 1] != ':') return BadAddress(address, "no port");
    port = address.substr(close + 2);
  } else {
    size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) return BadAddress(address, "no port");
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.empty()) return BadAddress(address, "empty host");
    for (char c : host) {
      if (!IsHostChar(c)) return BadAddress(address, "bad character in host (IPv6 needs [brackets])");
    }
  }
  if (port.empty()) return BadAddress(address, "empty port");
  if (port.size() > 5) return BadAddress(address, "port out of range 1..65535");
  int n = 0;
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return BadAddress(address, "port is not a number");
    n = n * 10 + (c - '0');
  }
  if (n < 1 || n > 65535) return BadAddress(address, "port out of range 1..65535");
  return absl::OkStatus();
}

std::string PrintableRow(std::string_view row) {
  constexpr size_t kMax = 64;
  if (row.size() <= kMax) return absl::CEscape(AV(row));
  return absl::StrCat(absl::CEscape(AV(row.substr(0, kMax))), "...(", row.size(), " bytes)");
}

absl::Status WithContext(const absl::Status& s, std::string_view what) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(AV(what), ": ", s.message()));
}

rpc::Durability ToProto(Durability d) {
  switch (d) {
    case Durability::kSyncWal: return rpc::DURABILITY_SYNC_WAL;
    case Durability::kAsyncWal: return rpc::DURABILITY_ASYNC_WAL;
    case Durability::kSkipWal: return rpc::DURABILITY_SKIP_WAL;
    case Durability::kUseDefault: return rpc::DURABILITY_DEFAULT;
  }
  return rpc::DURABILITY_DEFAULT;
}

namespace {
void ColumnsToProto(const std::vector<ColumnRef>& columns, rpc::ReadOptions* read) {
  for (const ColumnRef& c : columns) {
    rpc::ColumnSelection* sel = read->add_columns();
    sel->set_family(c.family);
    for (const std::string& q : c.qualifiers) sel->add_qualifiers(q);
  }
}
}  // namespace

void ToProto(const Filter& f, rpc::Filter* out) {
  out->set_kind(static_cast<rpc::Filter::Kind>(f.kind));  // the same order (filter.h, basalt.proto)
  out->set_op(static_cast<rpc::FilterOp>(f.op));
  out->mutable_comparator()->set_kind(static_cast<rpc::Comparator::Kind>(f.comparator.kind));
  out->mutable_comparator()->set_value(f.comparator.value);
  out->set_prefix(f.prefix);
  out->set_family(f.family);
  out->set_qualifier(f.qualifier);
  out->set_filter_if_missing(f.filter_if_missing);
  out->set_latest_version_only(f.latest_version_only);
  out->set_min_column(f.min_column);
  out->set_min_inclusive(f.min_inclusive);
  out->set_max_column(f.max_column);
  out->set_max_inclusive(f.max_inclusive);
  out->set_limit(f.limit);
  out->set_offset(f.offset);
  out->mutable_timestamps()->Assign(f.timestamps.begin(), f.timestamps.end());
  for (const RowRange& r : f.ranges) {
    rpc::RowRange* o = out->add_ranges();
    o->set_start(r.start);
    o->set_start_inclusive(r.start_inclusive);
    o->set_stop(r.stop);
    o->set_stop_inclusive(r.stop_inclusive);
  }
  out->set_len_as_value(f.len_as_value);
  out->set_must_pass_all(f.must_pass_all);
  for (const Filter& c : f.filters) ToProto(c, out->add_filters());
}

namespace {
template <typename Op>
void ReadToProto(const Op& op, rpc::ReadOptions* read) {
  ColumnsToProto(op.columns, read);
  read->set_min_timestamp(op.min_ts);
  if (op.max_ts != kLatestTimestamp) read->set_max_timestamp(op.max_ts);
  read->set_max_versions(op.max_versions);
  read->set_skip_block_cache(!op.cache_blocks);
  if (op.filter.has_value()) ToProto(*op.filter, read->mutable_filter());
  if (op.transaction != nullptr) {
    rpc::TransactionSnapshot* t = read->mutable_transaction();
    t->set_write_pointer(op.transaction->write_pointer);
    t->set_read_pointer(op.transaction->read_pointer);
    t->mutable_excluded()->Add(op.transaction->excluded.begin(), op.transaction->excluded.end());
  }
}
}  // namespace

void ToProto(const Get& get, rpc::ReadOptions* read) { ReadToProto(get, read); }
void ToProto(const Scan& scan, rpc::ReadOptions* read) { ReadToProto(scan, read); }

namespace {
rpc::Mutation::Kind KindToProto(CellMutation::Kind k) {
  switch (k) {
    case CellMutation::Kind::kPut: return rpc::Mutation::PUT;
    case CellMutation::Kind::kDelete: return rpc::Mutation::DELETE;
    case CellMutation::Kind::kDeleteColumn: return rpc::Mutation::DELETE_COLUMN;
    case CellMutation::Kind::kDeleteFamily: return rpc::Mutation::DELETE_FAMILY;
    case CellMutation::Kind::kDeleteRow: return rpc::Mutation::DELETE_ROW;
  }
  return rpc::Mutation::PUT;
}
}  // namespace

absl::Status ToProto(const RowMutationsBase& m, rpc::RowMutations* out) {
  if (m.has_foreign_row()) {
    return absl::InvalidArgumentError(absl::StrCat("row mutations of row \"", PrintableRow(m.row),
                                                   "\" were given a mutation of row \"",
                                                   PrintableRow(m.foreign_row()), "\""));
  }
  out->set_row(m.row);
  if (m.mutations.empty()) {
    if (!m.deletes_row_when_empty) return absl::InvalidArgumentError("no columns to put or delete");
    out->add_mutations()->set_kind(rpc::Mutation::DELETE_ROW);
    return absl::OkStatus();
  }
  for (const CellMutation& c : m.mutations) {
    rpc::Mutation* pm = out->add_mutations();
    pm->set_kind(KindToProto(c.kind));
    pm->set_family(c.family);
    pm->set_qualifier(c.qualifier);
    if (c.timestamp != kLatestTimestamp) pm->set_timestamp(c.timestamp);
    if (c.kind == CellMutation::Kind::kPut) pm->set_value(c.value);
  }
  return absl::OkStatus();
}

rpc::CompareOp ToProto(CompareOp op) {
  switch (op) {
    case CompareOp::kEqual: return rpc::EQUAL;
    case CompareOp::kNotEqual: return rpc::NOT_EQUAL;
    case CompareOp::kLess: return rpc::LESS;
    case CompareOp::kLessOrEqual: return rpc::LESS_OR_EQUAL;
    case CompareOp::kGreater: return rpc::GREATER;
    case CompareOp::kGreaterOrEqual: return rpc::GREATER_OR_EQUAL;
    case CompareOp::kNotExists: return rpc::NOT_EXISTS;
  }
  return rpc::EQUAL;
}

Result FromProto(const rpc::Row& row) {
  std::vector<KeyValue> cells;
  cells.reserve(row.cells_size());
  for (const rpc::Cell& c : row.cells()) cells.push_back(KeyValue{c.family(), c.qualifier(), c.timestamp(), c.value()});
  return Result(row.row(), std::move(cells));
}

Result FromProto(rpc::Row&& row) {
  std::vector<KeyValue> cells;
  cells.reserve(row.cells_size());
  for (rpc::Cell& c : *row.mutable_cells()) {
    cells.push_back(KeyValue{std::move(*c.mutable_family()), std::move(*c.mutable_qualifier()), c.timestamp(),
                             std::move(*c.mutable_value())});
  }
  return Result(std::move(*row.mutable_row()), std::move(cells));
}

// ---------------------------------------------------------------------------------------------
// Family settings

namespace {

// Name <-> wire number through the one table of basalt/family_values.h.
template <typename E>
absl::StatusOr<E> ParseNamed(FamilySetting setting, std::string_view what, std::string_view name) {
  if (const FamilyValue* v = FindFamilyValueByName(setting, name); v != nullptr) return static_cast<E>(v->wire);
  std::string valid;
  for (const FamilyValue& v : kFamilyValues) {
    if (v.setting == setting) absl::StrAppend(&valid, valid.empty() ? "" : ", ", AV(v.name));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown ", AV(what), " \"", absl::CEscape(AV(name)),
                                                 "\" (valid: ", valid, ")"));
}

const char* NameOf(FamilySetting setting, int wire) {
  const FamilyValue* v = FindFamilyValueByWire(setting, wire);
  return v == nullptr ? "UNKNOWN" : v->name.data();  // the table's names are literals
}

}  // namespace

absl::StatusOr<rpc::DataBlockEncoding> ParseEncoding(std::string_view name) {
  return ParseNamed<rpc::DataBlockEncoding>(FamilySetting::kEncoding, "data block encoding", name);
}
absl::StatusOr<rpc::Compression> ParseCompression(std::string_view name) {
  return ParseNamed<rpc::Compression>(FamilySetting::kCompression, "compression", name);
}
absl::StatusOr<rpc::BloomType> ParseBloom(std::string_view name) {
  return ParseNamed<rpc::BloomType>(FamilySetting::kBloom, "bloom filter", name);
}
absl::StatusOr<rpc::ChecksumType> ParseChecksum(std::string_view name) {
  return ParseNamed<rpc::ChecksumType>(FamilySetting::kChecksum, "checksum type", name);
}
const char* EncodingName(rpc::DataBlockEncoding e) { return NameOf(FamilySetting::kEncoding, e); }
const char* CompressionName(rpc::Compression c) { return NameOf(FamilySetting::kCompression, c); }
const char* BloomName(rpc::BloomType b) { return NameOf(FamilySetting::kBloom, b); }
const char* ChecksumName(rpc::ChecksumType c) { return NameOf(FamilySetting::kChecksum, c); }

absl::Status ToProto(const FamilySettings& f, rpc::FamilyDescriptor* out) {
  std::string where = absl::StrCat("family \"", absl::CEscape(f.name), "\"");
  if (f.name.empty()) return absl::InvalidArgumentError("family with an empty name");
  out->set_name(f.name);
  out->set_max_versions(f.max_versions);
  out->set_min_versions(f.min_versions);
  out->set_ttl_seconds(f.ttl_seconds);
  out->set_block_size(f.block_size);
  BASALT_ASSIGN_OR_RETURN(rpc::DataBlockEncoding enc, WithContextOr(ParseEncoding(f.encoding), where));
  out->set_encoding(enc);
  BASALT_ASSIGN_OR_RETURN(rpc::Compression comp, WithContextOr(ParseCompression(f.compression), where));
  out->set_compression(comp);
  BASALT_ASSIGN_OR_RETURN(rpc::BloomType bloom, WithContextOr(ParseBloom(f.bloom), where));
  out->set_bloom(bloom);
  BASALT_ASSIGN_OR_RETURN(rpc::ChecksumType sum, WithContextOr(ParseChecksum(f.checksum), where));
  out->set_checksum(sum);
  out->set_bytes_per_checksum(f.bytes_per_checksum);
  out->set_block_cache(f.block_cache);
  out->set_cache_encoded(f.cache_encoded);
  rpc::KeptToProto(f.metadata, out->mutable_kept_attributes());
  rpc::KeptToProto(f.configuration, out->mutable_kept_configuration());
  return absl::OkStatus();
}

FamilySettings FromProto(const rpc::FamilyDescriptor& f) {
  FamilySettings s;
  s.name = f.name();
  s.max_versions = f.max_versions() == 0 ? 1 : f.max_versions();
  s.min_versions = f.min_versions();
  s.ttl_seconds = f.ttl_seconds();
  s.block_size = f.block_size() == 0 ? 64 * 1024 : f.block_size();
  s.encoding = EncodingName(f.encoding());
  s.compression = CompressionName(f.compression());
  s.bloom = BloomName(f.bloom());
  s.checksum = ChecksumName(f.checksum());
  s.bytes_per_checksum = f.bytes_per_checksum() == 0 ? 16 * 1024 : f.bytes_per_checksum();
  s.block_cache = f.has_block_cache() ? f.block_cache() : true;
  s.cache_encoded = f.cache_encoded();
  s.metadata = rpc::KeptFromProto(f.kept_attributes());
  s.configuration = rpc::KeptFromProto(f.kept_configuration());
  return s;
}

size_t MutationBytes(const RowMutationsBase& m) {
  size_t n = m.row.size() + 16;
  for (const CellMutation& c : m.mutations) n += c.family.size() + c.qualifier.size() + c.value.size() + 24;
  return n;
}

}  // namespace basalt::client_internal
