#include "src/front/hbase/data_convert.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "src/front/hbase/client_meta.h"
#include "src/front/hbase/region_names.h"
#include "src/schema/catalog_file.h"  // (its constants only)
#include "transport/grpc/grpc_settings.h"

namespace basalt::hbase {
namespace {

// A status that names the HBase exception it is carries it here.
constexpr char kClassPayload[] = "type.basalt/hbase.exception_class";

int64_t Int64Of(uint64_t ts) { return static_cast<int64_t>(ts); }

void SetAttribute(google::protobuf::RepeatedPtrField<BytesBytesPair>* attrs, std::string_view key, std::string value) {
  BytesBytesPair* p = attrs->Add();
  p->set_first(std::string(key));
  p->set_second(std::move(value));
}

absl::Status BadAttribute(std::string_view family, std::string_view key, std::string_view value, std::string_view want) {
  return absl::InvalidArgumentError(absl::StrCat("column family '", AV(family), "': ", AV(key), " => '", AV(value),
                                                 "' is not supported by Basalt (", AV(want), ")"));
}

template <typename T>
absl::Status ParseNumber(std::string_view family, std::string_view key, std::string_view value, T* out) {
  if (!absl::SimpleAtoi(AV(value), out)) return BadAttribute(family, key, value, "a number");
  return absl::OkStatus();
}

using KeptProto = google::protobuf::RepeatedPtrField<rpc::KeptSetting>;

void Keep(KeptProto* kept, std::string key, std::string value) {
  rpc::KeptSetting* k = kept->Add();
  k->set_key(std::move(key));
  k->set_value(std::move(value));
}

// HBase's configuration entries (NameStringPair): kept as given.
void KeepConfiguration(const google::protobuf::RepeatedPtrField<NameStringPair>& conf, KeptProto* kept) {
  for (const NameStringPair& p : conf) Keep(kept, p.name(), p.value());
}

void EchoConfiguration(const KeptProto& kept, google::protobuf::RepeatedPtrField<NameStringPair>* conf) {
  for (const rpc::KeptSetting& k : kept) {
    NameStringPair* p = conf->Add();
    p->set_name(k.key());
    p->set_value(k.value());
  }
}

// Kept attributes after the ones Basalt renders, each key once.
void EchoAttributes(const KeptProto& kept, google::protobuf::RepeatedPtrField<BytesBytesPair>* attrs) {
  for (const rpc::KeptSetting& k : kept) {
    if (std::none_of(attrs->begin(), attrs->end(), [&](const BytesBytesPair& p) { return p.first() == k.key(); })) {
      SetAttribute(attrs, k.key(), k.value());
    }
  }
}

// An HBase family's attributes on a Basalt family: the ones Basalt has settings for mapped onto
// them, the rest kept (the catalogue refuses the ones whose meaning Basalt would not honour:
// ValidateTableSpec).
absl::Status ApplyFamilyAttributes(const ColumnFamilySchema& cf, rpc::FamilyDescriptor* f) {
  const std::string& name = cf.name();
  for (const BytesBytesPair& p : cf.attributes()) {
    const std::string& key = p.first();
    const std::string& v = p.second();
    if (key == "VERSIONS") {
      int32_t n = 0;
      BASALT_RETURN_IF_ERROR(ParseNumber(name, key, v, &n));
      f->set_max_versions(n);
    } else if (key == "MIN_VERSIONS") {
      int32_t n = 0;
      BASALT_RETURN_IF_ERROR(ParseNumber(name, key, v, &n));
      f->set_min_versions(n);
    } else if (key == "TTL") {
      int64_t n = 0;
      BASALT_RETURN_IF_ERROR(ParseNumber(name, key, v, &n));
      f->set_ttl_seconds(n >= 0x7fffffff ? 0 : n);  // HBase's FOREVER is Integer.MAX_VALUE
    } else if (key == "BLOCKSIZE") {
      uint32_t n = 0;
      BASALT_RETURN_IF_ERROR(ParseNumber(name, key, v, &n));
      f->set_block_size(n);
    } else if (key == "COMPRESSION") {
      if (v == "NONE") {
        f->set_compression(rpc::COMPRESSION_NONE);
      } else if (v == "SNAPPY") {
        f->set_compression(rpc::COMPRESSION_SNAPPY);
      } else if (v == "GZ") {
        f->set_compression(rpc::COMPRESSION_ZLIB);
      } else {
        return BadAttribute(name, key, v, "NONE, SNAPPY or GZ");
      }
    } else if (key == "DATA_BLOCK_ENCODING") {
      if (v == "NONE") {
        f->set_encoding(rpc::ENCODING_NONE);
      } else if (v == "PREFIX") {
        f->set_encoding(rpc::ENCODING_PREFIX);
      } else if (v == "FAST_DIFF") {
        f->set_encoding(rpc::ENCODING_FAST_DIFF);
      } else if (v == "ROW_INDEX_V1") {
        f->set_encoding(rpc::ENCODING_ROW_INDEX);
      } else {
        return BadAttribute(name, key, v, "NONE, PREFIX, FAST_DIFF or ROW_INDEX_V1");
      }
    } else if (key == "BLOOMFILTER") {
      if (v == "ROW") {
        f->set_bloom(rpc::BLOOM_ROW);
      } else if (v == "NONE") {
        f->set_bloom(rpc::BLOOM_NONE);
      } else if (v == "ROWCOL") {
        f->set_bloom(rpc::BLOOM_ROWCOL);
      } else {
        return BadAttribute(name, key, v, "ROW, ROWCOL or NONE");
      }
    } else if (key == "BLOCKCACHE") {
      f->set_block_cache(v != "false");
    } else {
      Keep(f->mutable_kept_attributes(), key, v);
    }
  }
  KeepConfiguration(cf.configuration(), f->mutable_kept_configuration());
  return absl::OkStatus();
}

// An HBase table's attributes on a Basalt table, as ApplyFamilyAttributes: MAX_FILESIZE mapped,
// IS_META checked (and said back by SchemaOf), the rest kept.
absl::Status ApplyTableAttributes(const TableSchema& s, rpc::TableDescriptor* t) {
  for (const BytesBytesPair& p : s.attributes()) {
    const std::string& key = p.first();
    const std::string& v = p.second();
    if (key == "MAX_FILESIZE") {
      uint64_t n = 0;
      if (!absl::SimpleAtoi(v, &n)) {
        return absl::InvalidArgumentError(absl::StrCat("table ", t->name(), ": MAX_FILESIZE => '", v, "' is not a number"));
      }
      t->set_max_file_size(n);
    } else if (key == "IS_META") {
      // HBase's client says it of every table; a table of the client's is never hbase:meta.
      if (!absl::EqualsIgnoreCase(v, "false")) {
        return absl::InvalidArgumentError(absl::StrCat("table ", t->name(), ": IS_META => '", v,
                                                       "' (only hbase:meta is, and it is Basalt's own)"));
      }
    } else {
      Keep(t->mutable_kept_attributes(), key, v);
    }
  }
  KeepConfiguration(s.configuration(), t->mutable_kept_configuration());
  return absl::OkStatus();
}

}  // namespace

absl::Status AsException(absl::Status s, std::string_view class_name) {
  s.SetPayload(kClassPayload, absl::Cord(std::string(class_name)));
  return s;
}

absl::Status TableNotFound(std::string_view table) {
  return AsException(absl::NotFoundError(std::string(table)), kTableNotFound);
}

absl::Status NamespaceNotFound(std::string_view ns) {
  return AsException(absl::NotFoundError(absl::StrCat("namespace ", AV(ns), " does not exist")), kNamespaceNotFound);
}

Exception ExceptionOf(const absl::Status& s) {
  Exception e;
  e.message = std::string(s.message());
  if (auto c = s.GetPayload(kClassPayload)) {
    e.class_name = std::string(*c);
    // Retried: a region that moved, a quota that refills; the rest are for good.
    e.do_not_retry = e.class_name != kNotServingRegion && e.class_name != kRpcThrottling;
    return e;
  }
  if (IsNotServingRegion(s) || WrongServerOf(s).has_value()) {
    e.class_name = kNotServingRegion;  // the client looks the region up again and retries
    return e;
  }
  switch (s.code()) {
    case absl::StatusCode::kNotFound:
      e.class_name = kTableNotFound;
      e.do_not_retry = true;
      break;
    case absl::StatusCode::kAlreadyExists:
      e.class_name = kTableExists;
      e.do_not_retry = true;
      break;
    case absl::StatusCode::kFailedPrecondition:
      e.do_not_retry = true;
      if (absl::EndsWith(e.message, "is disabled") || absl::StrContains(e.message, "is already disabled")) {
        e.class_name = kTableNotEnabled;
      } else if (absl::StrContains(e.message, "is already enabled")) {
        e.class_name = kTableNotDisabled;
      } else if (absl::StrContains(e.message, kNamespaceQuotaWords)) {
        e.class_name = kQuotaExceeded;  // (Catalog::CheckNamespaceRoom)
      } else {
        e.class_name = kDoNotRetry;
      }
      break;
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
      e.class_name = kAccessDenied;
      e.do_not_retry = true;
      break;
    case absl::StatusCode::kResourceExhausted:
      e.class_name = "org.apache.hadoop.hbase.RegionTooBusyException";
      e.server_overloaded = true;
      break;
    case absl::StatusCode::kDeadlineExceeded:
      e.class_name = "org.apache.hadoop.hbase.exceptions.TimeoutIOException";
      break;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kUnknown:
      e.class_name = "java.io.IOException";  // retried
      break;
    default:  // InvalidArgument, OutOfRange, Unimplemented
      e.class_name = kDoNotRetry;
      e.do_not_retry = true;
      break;
  }
  return e;
}

absl::StatusOr<std::string> BasaltTableOf(const TableName& name) {
  const std::string& ns = name.namespace_();
  if (ns == kSystemNamespace || ns == server::kBasaltNamespace) return NamespaceNotFound(ns);
  if (name.qualifier().find(':') != std::string::npos) {  // (else "default:app:t" would be app:t)
    return absl::InvalidArgumentError(absl::StrCat("table qualifier '", name.qualifier(), "' has a ':'"));
  }
  if (ns.empty() || ns == kDefaultNamespace) return name.qualifier();
  return absl::StrCat(ns, ":", name.qualifier());
}

absl::StatusOr<std::string> BasaltTableOfText(std::string_view name) {
  TableName t;
  const size_t colon = name.find(':');
  t.set_namespace_(colon == std::string_view::npos ? "" : std::string(name.substr(0, colon)));
  t.set_qualifier(std::string(colon == std::string_view::npos ? name : name.substr(colon + 1)));
  return BasaltTableOf(t);
}

bool ShownOnThePort(std::string_view basalt_table) {
  // (catalog_file.h's TableNamespace, which this library, linked alone by its fuzzers, lacks.)
  const size_t colon = basalt_table.find(':');
  if (colon == std::string_view::npos) return true;
  const std::string_view ns = basalt_table.substr(0, colon);
  return ns != server::kBasaltNamespace && ns != kSystemNamespace;
}

TableName TableNameOfBasalt(std::string_view basalt_table) {
  TableName t;
  const size_t colon = basalt_table.find(':');
  t.set_namespace_(colon == std::string_view::npos ? std::string(kDefaultNamespace)
                                                   : std::string(basalt_table.substr(0, colon)));
  t.set_qualifier(std::string(colon == std::string_view::npos ? basalt_table : basalt_table.substr(colon + 1)));
  return t;
}

absl::StatusOr<RegionRef> ParseRegionName(std::string_view name) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat("'", absl::CHexEscape(AV(name)), "' is not an HBase region name"));
  };
  std::string_view rest = name;
  // The new form ends ".<32 hex digits>."; the old one (hbase:meta's) has no MD5 part.
  if (rest.size() > 34 && rest.back() == '.' && rest[rest.size() - 34] == '.') rest.remove_suffix(34);
  const size_t first = rest.find(',');
  const size_t last = rest.rfind(',');
  if (first == std::string_view::npos || first == last) return bad();
  RegionRef r;
  r.table = std::string(rest.substr(0, first));
  r.start_key = std::string(rest.substr(first + 1, last - first - 1));
  if (!absl::SimpleAtoi(AV(rest.substr(last + 1)), &r.id)) return bad();
  return r;
}

TableSchema SchemaOf(const rpc::TableDescriptor& t) {
  TableSchema s;
  *s.mutable_table_name() = TableNameOfBasalt(t.name());
  SetAttribute(s.mutable_attributes(), "IS_META", "false");
  if (t.max_file_size() != 0) SetAttribute(s.mutable_attributes(), "MAX_FILESIZE", absl::StrCat(t.max_file_size()));
  EchoAttributes(t.kept_attributes(), s.mutable_attributes());
  EchoConfiguration(t.kept_configuration(), s.mutable_configuration());
  for (const rpc::FamilyDescriptor& f : t.families()) {
    ColumnFamilySchema* cf = s.add_column_families();
    cf->set_name(f.name());
    auto* a = cf->mutable_attributes();
    SetAttribute(a, "VERSIONS", absl::StrCat(std::max(1, f.max_versions())));
    SetAttribute(a, "MIN_VERSIONS", absl::StrCat(f.min_versions()));
    SetAttribute(a, "TTL", absl::StrCat(f.ttl_seconds() == 0 ? 0x7fffffff : f.ttl_seconds()));
    SetAttribute(a, "BLOCKSIZE", absl::StrCat(f.block_size() == 0 ? 65536u : f.block_size()));
    SetAttribute(a, "COMPRESSION", f.compression() == rpc::COMPRESSION_SNAPPY ? "SNAPPY"
                                   : f.compression() == rpc::COMPRESSION_ZLIB ? "GZ"
                                                                              : "NONE");
    SetAttribute(a, "DATA_BLOCK_ENCODING", f.encoding() == rpc::ENCODING_PREFIX      ? "PREFIX"
                                           : f.encoding() == rpc::ENCODING_FAST_DIFF ? "FAST_DIFF"
                                           : f.encoding() == rpc::ENCODING_ROW_INDEX ? "ROW_INDEX_V1"
                                                                                     : "NONE");
    SetAttribute(a, "BLOOMFILTER", f.bloom() == rpc::BLOOM_NONE     ? "NONE"
                                   : f.bloom() == rpc::BLOOM_ROWCOL ? "ROWCOL"
                                                                    : "ROW");
    SetAttribute(a, "BLOCKCACHE", !f.has_block_cache() || f.block_cache() ? "true" : "false");
    EchoAttributes(f.kept_attributes(), a);
    EchoConfiguration(f.kept_configuration(), cf->mutable_configuration());
  }
  return s;
}

absl::StatusOr<rpc::FamilyDescriptor> FamilyOf(const ColumnFamilySchema& cf) {
  rpc::FamilyDescriptor f;
  f.set_name(cf.name());
  BASALT_RETURN_IF_ERROR(ApplyFamilyAttributes(cf, &f));
  return f;
}

absl::StatusOr<rpc::TableDescriptor> DescriptorOf(const TableSchema& s) {
  rpc::TableDescriptor t;
  BASALT_ASSIGN_OR_RETURN(std::string name, BasaltTableOf(s.table_name()));
  t.set_name(name);
  BASALT_RETURN_IF_ERROR(ApplyTableAttributes(s, &t));
  for (const ColumnFamilySchema& cf : s.column_families()) {
    BASALT_ASSIGN_OR_RETURN(*t.add_families(), FamilyOf(cf));
  }
  return t;
}

absl::StatusOr<rpc::ReadOptions> ReadOptionsOf(const google::protobuf::RepeatedPtrField<Column>& columns,
                                               const TimeRange* time_range, uint32_t max_versions,
                                               bool cache_blocks) {
  rpc::ReadOptions r;
  for (const Column& c : columns) {
    // HBase merges the qualifiers of a family named twice; a family named bare reads it whole.
    rpc::ColumnSelection* sel = nullptr;
    for (rpc::ColumnSelection& s : *r.mutable_columns()) {
      if (s.family() == c.family()) sel = &s;
    }
    if (sel == nullptr) {
      sel = r.add_columns();
      sel->set_family(c.family());
    } else if (sel->qualifiers().empty() || c.qualifier().empty()) {
      sel->clear_qualifiers();
      continue;
    }
    for (const std::string& q : c.qualifier()) sel->add_qualifiers(q);
  }
  if (time_range != nullptr) {
    r.set_min_timestamp(Int64Of(time_range->from()));
    if (time_range->has_to() && time_range->to() < kLatestTimestamp) r.set_max_timestamp(Int64Of(time_range->to()));
  }
  r.set_max_versions(static_cast<int32_t>(std::min<uint32_t>(max_versions, 0x7fffffff)));
  r.set_skip_block_cache(!cache_blocks);
  return r;
}

void AddCell(Result* r, std::string_view row, std::string_view family, std::string_view qualifier, int64_t ts,
             std::string value) {
  Cell* c = r->add_cell();
  c->set_row(std::string(row));
  c->set_family(std::string(family));
  c->set_qualifier(std::string(qualifier));
  c->set_timestamp(static_cast<uint64_t>(ts));
  c->set_cell_type(PUT);
  c->set_value(std::move(value));
}

void AppendResult(const rpc::Row& row, Result* result) {
  for (const rpc::Cell& c : row.cells()) AddCell(result, row.row(), c.family(), c.qualifier(), c.timestamp(), c.value());
}

absl::StatusOr<std::vector<BlockCell>> CellCursor::Take(int n) {
  if (n < 0 || static_cast<size_t>(n) > cells_.size() - next_) {
    return absl::InvalidArgumentError(absl::StrCat("a mutation claims ", n, " cells of the cell block, which has ",
                                                   cells_.size() - next_, " left"));
  }
  std::vector<BlockCell> out(cells_.begin() + static_cast<std::ptrdiff_t>(next_),
                             cells_.begin() + static_cast<std::ptrdiff_t>(next_ + static_cast<size_t>(n)));
  next_ += static_cast<size_t>(n);
  return out;
}

namespace {

// One cell of a mutation, wherever it came from: its family, qualifier, timestamp, value and
// (for a delete) kind.
struct MutationCell {
  std::string family;
  std::string qualifier;
  uint64_t timestamp = kLatestTimestamp;
  std::string value;
  KeyValueType type = KeyValueType::kPut;
};

KeyValueType TypeOfDelete(MutationProto::DeleteType d) {
  switch (d) {
    case MutationProto::DELETE_ONE_VERSION: return KeyValueType::kDelete;
    case MutationProto::DELETE_MULTIPLE_VERSIONS: return KeyValueType::kDeleteColumn;
    case MutationProto::DELETE_FAMILY: return KeyValueType::kDeleteFamily;
    case MutationProto::DELETE_FAMILY_VERSION: return KeyValueType::kDeleteFamilyVersion;
  }
  return KeyValueType::kDelete;
}

// The mutation's cells and its row (from the cells when the mutation has none of its own).
absl::Status CellsOf(const MutationProto& m, CellCursor* block, std::string* row, std::vector<MutationCell>* cells) {
  *row = m.row();
  const uint64_t default_ts = m.has_timestamp() ? m.timestamp() : kLatestTimestamp;
  if (m.associated_cell_count() > 0) {
    BASALT_ASSIGN_OR_RETURN(std::vector<BlockCell> taken, block->Take(m.associated_cell_count()));
    for (const BlockCell& c : taken) {
      if (row->empty()) *row = std::string(c.row);
      if (c.row != *row) return absl::InvalidArgumentError("a mutation's cells are of more than one row");
      MutationCell mc{std::string(c.family), std::string(c.qualifier), static_cast<uint64_t>(c.timestamp),
                      std::string(c.value), c.type};
      cells->push_back(std::move(mc));
    }
  }
  const bool is_delete = m.mutate_type() == MutationProto::DELETE;
  for (const MutationProto::ColumnValue& cv : m.column_value()) {
    for (const MutationProto::ColumnValue::QualifierValue& qv : cv.qualifier_value()) {
      MutationCell mc;
      mc.family = cv.family();
      mc.qualifier = qv.qualifier();
      mc.timestamp = qv.has_timestamp() ? qv.timestamp() : default_ts;
      mc.value = qv.value();
      mc.type = is_delete ? TypeOfDelete(qv.has_delete_type() ? qv.delete_type() : MutationProto::DELETE_ONE_VERSION)
                          : KeyValueType::kPut;
      cells->push_back(std::move(mc));
    }
  }
  if (row->empty()) return absl::InvalidArgumentError("a mutation without a row");
  return absl::OkStatus();
}

void SetTimestamp(uint64_t ts, rpc::Mutation* m) {
  if (ts != kLatestTimestamp) m->set_timestamp(Int64Of(ts));
}

}  // namespace

absl::Status RowMutationsOf(const MutationProto& m, CellCursor* block, rpc::RowMutations* out) {
  std::string row;
  std::vector<MutationCell> cells;
  BASALT_RETURN_IF_ERROR(CellsOf(m, block, &row, &cells));
  out->set_row(row);
  const bool is_delete = m.mutate_type() == MutationProto::DELETE;
  if (!is_delete && m.mutate_type() != MutationProto::PUT) {
    return absl::InvalidArgumentError(absl::StrCat("mutation type ", MutationProto::MutationType_Name(m.mutate_type()),
                                                   " is not a Put or a Delete"));
  }
  if (is_delete && cells.empty()) {  // a Delete of the whole row
    rpc::Mutation* d = out->add_mutations();
    d->set_kind(rpc::Mutation::DELETE_ROW);
    SetTimestamp(m.has_timestamp() ? m.timestamp() : kLatestTimestamp, d);
    return absl::OkStatus();
  }
  if (!is_delete && cells.empty()) return absl::InvalidArgumentError("a Put without a column");
  for (MutationCell& c : cells) {
    rpc::Mutation* x = out->add_mutations();
    x->set_family(std::move(c.family));
    x->set_qualifier(std::move(c.qualifier));
    SetTimestamp(c.timestamp, x);
    switch (c.type) {
      case KeyValueType::kPut:
        if (is_delete) return absl::InvalidArgumentError("a Delete carries a Put's cell");
        x->set_kind(rpc::Mutation::PUT);
        x->set_value(std::move(c.value));
        break;
      case KeyValueType::kDelete:
        x->set_kind(rpc::Mutation::DELETE);
        break;
      case KeyValueType::kDeleteColumn:
        x->set_kind(rpc::Mutation::DELETE_COLUMN);
        break;
      case KeyValueType::kDeleteFamily:
        x->set_kind(rpc::Mutation::DELETE_FAMILY);
        x->clear_qualifier();
        break;
      default:
        return absl::InvalidArgumentError(
            "Delete.addFamilyVersion (DeleteFamilyVersion) is not supported by Basalt's HBase port");
    }
  }
  return absl::OkStatus();
}

absl::Status IncrementOf(const MutationProto& m, CellCursor* block, rpc::IncrementRequest* req) {
  std::string row;
  std::vector<MutationCell> cells;
  BASALT_RETURN_IF_ERROR(CellsOf(m, block, &row, &cells));
  req->set_row(row);
  for (const MutationCell& c : cells) {
    if (c.value.size() != 8) {
      return absl::InvalidArgumentError(absl::StrCat("an Increment's amount for ", c.family, ":", c.qualifier, " is ",
                                                     c.value.size(), " bytes, not an 8-byte long"));
    }
    uint64_t v = 0;
    for (char ch : c.value) v = (v << 8) | static_cast<uint8_t>(ch);
    rpc::ColumnAmount* a = req->add_columns();
    a->set_family(c.family);
    a->set_qualifier(c.qualifier);
    a->set_amount(static_cast<int64_t>(v));
  }
  req->set_durability(DurabilityOf(m.durability()));
  return absl::OkStatus();
}

absl::Status AppendOf(const MutationProto& m, CellCursor* block, rpc::AppendRequest* req) {
  std::string row;
  std::vector<MutationCell> cells;
  BASALT_RETURN_IF_ERROR(CellsOf(m, block, &row, &cells));
  req->set_row(row);
  for (MutationCell& c : cells) {
    rpc::ColumnValue* v = req->add_columns();
    v->set_family(std::move(c.family));
    v->set_qualifier(std::move(c.qualifier));
    v->set_value(std::move(c.value));
  }
  req->set_durability(DurabilityOf(m.durability()));
  return absl::OkStatus();
}

rpc::Durability DurabilityOf(MutationProto::Durability d) {
  switch (d) {
    case MutationProto::SKIP_WAL: return rpc::DURABILITY_SKIP_WAL;
    case MutationProto::ASYNC_WAL: return rpc::DURABILITY_ASYNC_WAL;
    case MutationProto::SYNC_WAL:
    case MutationProto::FSYNC_WAL: return rpc::DURABILITY_SYNC_WAL;
    case MutationProto::USE_DEFAULT: break;
  }
  return rpc::DURABILITY_DEFAULT;
}

}  // namespace basalt::hbase
