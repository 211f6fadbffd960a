// Writes seed corpora for the fuzz targets: valid inputs of every format, in every encoding,
// compression, checksum and bloom type, so the fuzzers start deep instead of at the magic
// numbers. Usage: fuzz_make_seeds <out_dir>; creates <out_dir>/<fuzzer>/seed-*. Deterministic.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/env.h"
#include "storage/cell.h"
#include "storage/internal/block_codec.h"
#include "storage/internal/block_file.h"
#include "storage/internal/compression.h"
#include "storage/internal/manifest.h"
#include "src/schema/catalog_file.h"
#include "src/schema/snapshot_file.h"
#include "storage/internal/wal.h"
#include "proto/hbase/hbase_replication.pb.h"
#include "src/front/hbase/cell_block.h"
#include "tests/fuzz/fuzz_common.h"
#include "transport/verbs/frame.h"

namespace basalt::fuzz {
namespace {

constexpr DataBlockEncoding kEncodings[] = {DataBlockEncoding::kNone, DataBlockEncoding::kPrefix,
                                            DataBlockEncoding::kFastDiff, DataBlockEncoding::kRowIndex};

// Cells in cell order: rows share prefixes, columns share rows, versions share columns, and
// there are deletes, so every FAST_DIFF flag and ROW_INDEX row boundary is exercised.
std::vector<std::pair<std::string, std::string>> MakeCells(int rows, int value_len) {
  std::vector<std::pair<std::string, std::string>> cells;
  for (int r = 0; r < rows; ++r) {
    std::string row = absl::StrCat("row", r / 10, r % 10);
    cells.emplace_back(MakeFlatKey(row, "", 900, CellType::kDeleteFamily), "");
    for (const char* q : {"a", "b", "long-qualifier"}) {
      for (int64_t ts : {int64_t{1000} + r, int64_t{500}, int64_t{500}}) {
        cells.emplace_back(MakeFlatKey(row, q, ts, CellType::kPut), std::string(value_len + r % 3, 'v'));
      }
      cells.emplace_back(MakeFlatKey(row, q, 400, CellType::kDelete), "");
    }
  }
  return cells;
}

void Write(const std::string& dir, const std::string& name, std::string_view data) {
  std::filesystem::create_directories(dir);
  WriteWholeFile(dir + "/" + name, data);
}

void BlockDecodeSeeds(const std::string& out) {
  const std::string dir = out + "/fuzz_block_decode";
  for (int e = 0; e < 4; ++e) {
    for (int rows : {1, 3}) {
      BlockBuilder b(kEncodings[e]);
      for (const auto& [k, v] : MakeCells(rows, 4)) b.Add(k, v);
      std::string payload = b.Finish();
      Write(dir, absl::StrCat("seed-", EncodingName(kEncodings[e]), "-", rows), std::string(1, char(e)) + payload);
      // Compressed forms: selector 0x80 | (encoding << 1) | zlib.
      for (int z = 0; z < 2; ++z) {
        std::string comp;
        FUZZ_CHECK(CompressBlock(z ? Compression::kZlib : Compression::kSnappy, payload, &comp).ok(), "compress");
        std::string in(1, static_cast<char>(0x80 | (e << 1) | z));
        PutFixed32(&in, static_cast<uint32_t>(payload.size()));
        in += comp;
        Write(dir, absl::StrCat("seed-", EncodingName(kEncodings[e]), "-", rows, z ? "-zlib" : "-snappy"), in);
      }
    }
  }
}

void BlockFileSeeds(const std::string& out) {
  const std::string tmp = ScratchDir::Get() + "/seed.blk";
  int n = 0;
  struct Variant {
    DataBlockEncoding e;
    Compression c;
    ChecksumType ck;
    BloomType bloom;
    int rows;
  };
  std::vector<Variant> variants;
  for (DataBlockEncoding e : kEncodings) {
    variants.push_back({e, Compression::kNone, ChecksumType::kCrc32c, BloomType::kRow, 6});
    variants.push_back({e, Compression::kSnappy, ChecksumType::kNull, BloomType::kRowCol, 6});
  }
  variants.push_back({DataBlockEncoding::kNone, Compression::kZlib, ChecksumType::kCrc32, BloomType::kNone, 6});
  variants.push_back({DataBlockEncoding::kFastDiff, Compression::kZlib, ChecksumType::kCrc32c, BloomType::kRow, 12});
  variants.push_back({DataBlockEncoding::kPrefix, Compression::kNone, ChecksumType::kCrc32c, BloomType::kRow, 0});
  for (const Variant& v : variants) {
    FamilyOptions f;
    f.name = "f";
    f.encoding = v.e;
    f.compression = v.c;
    f.checksum = v.ck;
    f.bloom = v.bloom;
    f.block_size = 512;  // several data blocks per file
    f.bytes_per_checksum = 512;
    auto w = BlockFileWriter::Create(Env::Default(), tmp, f);
    FUZZ_CHECK(w.ok(), "BlockFileWriter::Create: %s", std::string(w.status().message()).c_str());
    for (const auto& [k, val] : MakeCells(v.rows, 8)) FUZZ_CHECK((*w)->Add(k, val).ok(), "Add");
    (*w)->set_max_seq(42);
    FUZZ_CHECK((*w)->Finish().ok(), "Finish");
    auto bytes = Env::Default()->ReadFileToString(tmp);
    FUZZ_CHECK(bytes.ok(), "read back");
    std::string name = absl::StrCat("seed-", n++, "-", EncodingName(v.e), "-", CompressionName(v.c), "-",
                                    ChecksumName(v.ck), "-", BloomName(v.bloom));
    Write(out + "/fuzz_block_file", name, *bytes);
    Write(out + "/fuzz_block_file_fixup", name, *bytes);
  }
}

void WalSeeds(const std::string& out) {
  const std::string dir = out + "/fuzz_wal";
  std::string segment;
  for (uint64_t seq = 1; seq <= 4; ++seq) {
    WalRecord r;
    r.region = "t,,1";
    r.seq = seq;
    for (int i = 0; i < static_cast<int>(seq); ++i) {
      r.edits.push_back({"f", MakeFlatKey(absl::StrCat("row", i), "q", 1000 + seq, CellType::kPut), "value"});
    }
    AppendFramedWalRecord(&segment, r);
    if (seq == 1) Write(dir, "seed-payload", std::string(1, '\0') + EncodeWalPayload(r));
  }
  Write(dir, "seed-segment", std::string(1, '\0') + segment);
  Write(dir, "seed-segment-fixup", std::string(1, '\1') + segment);
  Write(dir, "seed-two-segments", std::string(1, static_cast<char>(2 | 1 | (32 << 2))) + segment);
  Write(dir, "seed-torn-tail", std::string(1, '\0') + segment.substr(0, segment.size() - 3));
}

void ManifestSeeds(const std::string& out) {
  const std::string dir = out + "/fuzz_manifest";
  Manifest m;
  Write(dir, "seed-empty", EncodeManifest(m));
  m.next_file_number = 300;
  m.flushed_seq = 1234567;
  m.files["cf1"] = {299, 17, 3};
  m.files["cf2"] = {};
  m.files["family-three"] = {200};
  Write(dir, "seed-three-families", EncodeManifest(m));
}

// Snapshot manifests (src/schema/snapshot_file.h): one region and three.
void SnapshotSeeds(const std::string& out) {
  const std::string dir = out + "/fuzz_snapshot_manifest";
  server::SnapshotInfo s;
  s.name = "daily-2026.11.29";
  s.created_ms = 1795337627893;
  s.table.name = "users";
  FamilyOptions f;
  f.name = "info";
  s.table.families.push_back(f);
  s.regions.push_back({server::RegionInfo{"users", "", "", 1795337627000}, 2, 4096});
  Write(dir, "seed-one-region", server::EncodeSnapshot(s));
  s.ttl_s = 86400;
  s.owner = "alice";
  s.regions[0].info.end_key = "g";
  s.regions.push_back({server::RegionInfo{"users", "g", "n", 1795337627001}, 0, 0});
  s.regions.push_back({server::RegionInfo{"users", "n", "", 1795337627002}, 5, 1 << 20});
  Write(dir, "seed-three-regions", server::EncodeSnapshot(s));
  s.grants = {{"alice", "", "", 1}, {"@ops", "info", "", 3}, {"bob", "info", "email", 16}};
  Write(dir, "seed-grants", server::EncodeSnapshot(s));  // version 2
}

// Catalogues (src/schema/catalog_file.h): empty, one table, and every version's additions with
// namespaces (version 5).
void CatalogSeeds(const std::string& out) {
  const std::string dir = out + "/fuzz_catalog";
  Write(dir, "seed-empty", server::EncodeCatalog({}));
  server::TableSpec t;
  t.name = "users";
  FamilyOptions f;
  f.name = "info";
  t.families.push_back(f);
  Write(dir, "seed-one-table", server::EncodeCatalog({t}));
  server::TableSpec app = t;
  app.name = "app:events";
  app.enabled = false;
  app.max_file_size = 1 << 30;
  app.kept.attributes = {{"OWNER", "ops"}};
  app.kept_by_family["info"].configuration = {{"k", "v"}};
  server::NamespaceSpec ns{"app", {}};
  ns.kept.configuration = {{"hbase.namespace.quota.maxtables", "10"}};
  Write(dir, "seed-namespaces", server::EncodeCatalog({t, app}, {ns, server::NamespaceSpec{"ops", {}}}));
}

// Verbs frames: requests with every field set and unset, and every kind of reply.
void VerbsFrameSeeds(const std::string& out) {
  const std::string dir = out + "/fuzz_verbs_frame";
  std::vector<uint8_t> buf(4096);
  auto write = [&](const std::string& name, size_t n) {
    Write(dir, name, std::string_view(reinterpret_cast<const char*>(buf.data()), n));
  };
  auto request = [&](const std::string& name, absl::StatusOr<size_t> n) {
    FUZZ_CHECK(n.ok(), "encode %s: %s", name.c_str(), std::string(n.status().message()).c_str());
    write(name, *n);
  };

  rpc::GetRequest get;
  get.set_table("usertable");
  get.set_row("row1");
  get.mutable_read();
  request("seed-get-minimal", verbs::EncodeGetRequest(1, get, absl::MakeSpan(buf)));
  rpc::ReadOptions* read = get.mutable_read();
  read->set_min_timestamp(-5);
  read->set_max_timestamp(1700000000000);
  read->set_max_versions(3);
  read->set_skip_block_cache(true);
  rpc::ColumnSelection* col = read->add_columns();
  col->set_family("f");
  col->add_qualifiers("a");
  col->add_qualifiers(std::string("\0\xff", 2));
  read->add_columns()->set_family("g");
  request("seed-get-full", verbs::EncodeGetRequest(2, get, absl::MakeSpan(buf)));
  rpc::Filter* filter = read->mutable_filter();  // a Get with a filter (kFlagFilter)
  filter->set_kind(rpc::Filter::LIST);
  filter->set_must_pass_all(true);
  rpc::Filter* scvf = filter->add_filters();
  scvf->set_kind(rpc::Filter::SINGLE_COLUMN_VALUE);
  scvf->set_family("f");
  scvf->set_qualifier("a");
  scvf->set_op(rpc::FILTER_GREATER);
  scvf->mutable_comparator()->set_value("v");
  filter->add_filters()->set_kind(rpc::Filter::PAGE);
  request("seed-get-filter", verbs::EncodeGetRequest(3, get, absl::MakeSpan(buf)));
  rpc::TransactionSnapshot* tx = read->mutable_transaction();  // and a transaction's (kFlagTransaction)
  tx->set_write_pointer(1700000000000000009);
  tx->set_read_pointer(1700000000000000008);
  tx->add_excluded(1700000000000000002);
  request("seed-get-transaction", verbs::EncodeGetRequest(4, get, absl::MakeSpan(buf)));

  rpc::MutateRequest mut;
  mut.set_table("usertable");
  mut.set_durability(rpc::DURABILITY_ASYNC_WAL);
  mut.mutable_mutation()->set_row("row1");
  for (int kind = 0; kind <= 4; ++kind) {
    rpc::Mutation* m = mut.mutable_mutation()->add_mutations();
    m->set_kind(static_cast<rpc::Mutation::Kind>(kind));
    m->set_family("f");
    m->set_qualifier(absl::StrCat("q", kind));
    if (kind == 0) m->set_value("value");
    if (kind % 2) m->set_timestamp(1000 + kind);
  }
  request("seed-mutate", verbs::EncodeMutateRequest(3, mut, absl::MakeSpan(buf)));
  mut.set_transaction(1700000000000000009);
  mut.set_rollback(true);
  request("seed-mutate-transaction", verbs::EncodeMutateRequest(4, mut, absl::MakeSpan(buf)));

  rpc::GetResponse resp;
  resp.mutable_row()->set_row("row1");
  write("seed-get-reply-empty", verbs::EncodeGetReply(4, absl::OkStatus(), &resp, absl::MakeSpan(buf)));
  for (int i = 0; i < 3; ++i) {
    rpc::Cell* c = resp.mutable_row()->add_cells();
    c->set_family("f");
    c->set_qualifier(absl::StrCat("q", i));
    c->set_timestamp(1000 - i);
    c->set_value(std::string(i * 4, 'v'));
  }
  write("seed-get-reply", verbs::EncodeGetReply(5, absl::OkStatus(), &resp, absl::MakeSpan(buf)));
  resp.mutable_row()->mutable_cells(2)->set_value(std::string(verbs::kMinReplyBuffer, 'v'));
  write("seed-get-reply-too-large",
        verbs::EncodeGetReply(6, absl::OkStatus(), &resp, absl::MakeSpan(buf.data(), verbs::kMinReplyBuffer)));
  write("seed-get-reply-error", verbs::EncodeGetReply(7, absl::NotFoundError("table 'x' not found"), nullptr,
                                                      absl::MakeSpan(buf)));
  write("seed-mutate-reply", verbs::EncodeMutateReply(8, absl::OkStatus(), absl::MakeSpan(buf)));
  write("seed-mutate-reply-error",
        verbs::EncodeMutateReply(9, absl::FailedPreconditionError("table disabled"), absl::MakeSpan(buf)));
}

// fuzz_tcp_frame_stream: three control bytes (recv size, bound), then requests back to back as a
// connection carries them.
void TcpFrameStreamSeeds(const std::string& out) {
  const std::string dir = out + "/fuzz_tcp_frame_stream";
  std::string stream;
  std::vector<uint8_t> buf(4096);
  for (uint64_t id = 1; id <= 4; ++id) {
    rpc::GetRequest get;
    get.set_table("usertable");
    get.set_row(std::string(id * 11, 'r'));
    absl::StatusOr<size_t> n = verbs::EncodeGetRequest(id, get, absl::MakeSpan(buf));
    FUZZ_CHECK(n.ok(), "encode: %s", std::string(n.status().message()).c_str());
    stream.append(reinterpret_cast<const char*>(buf.data()), *n);
  }
  Write(dir, "seed-pieces-of-7", std::string("\x06\x00\x10", 3) + stream);
  Write(dir, "seed-one-read", std::string("\xff\x00\x10", 3) + stream);
  Write(dir, "seed-bound-too-small", std::string("\x20\x10\x00", 3) + stream);
}

// fuzz_hbase_rpc: the bytes the real HBase 2.6.0 client sent (tests/hbase/testdata), arriving in
// pieces of 1, 7 and 256 bytes, and a cell block of every cell type.
void HBaseRpcSeeds(const std::string& out) {
  const std::string dir = out + "/fuzz_hbase_rpc";
  std::filesystem::create_directories(dir);
  std::ifstream in(std::string(BASALT_SOURCE_DIR) + "/tests/hbase/testdata/client-2.6.0-getclusterid.bin",
                   std::ios::binary);
  const std::string client((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (int piece : {0, 6, 255}) {
    Write(dir, absl::StrCat("seed-client-", piece + 1), std::string(1, static_cast<char>(piece)) + client);
  }
  std::string block;
  int64_t ts = 1;
  for (hbase::KeyValueType t : {hbase::KeyValueType::kPut, hbase::KeyValueType::kDelete,
                                hbase::KeyValueType::kDeleteColumn, hbase::KeyValueType::kDeleteFamily,
                                hbase::KeyValueType::kDeleteFamilyVersion}) {
    hbase::AppendCell({"row", "cf", "q", ts++, t, t == hbase::KeyValueType::kPut ? "value" : ""}, &block).IgnoreError();
  }
  Write(dir, "seed-cell-block", std::string(1, '\0') + block);
  // A ReplicateWALEntry as an HBase source sends it: two entries of two tables, their cells (one
  // with tags, as KeyValueCodecWithTags writes it) in the block.
  hbase::ReplicateWALEntryRequest replicate;
  for (const char* table : {"t", "default:u"}) {
    hbase::WALEntry* e = replicate.add_entry();
    e->mutable_key()->set_encoded_region_name("0123456789abcdef0123456789abcdef");
    e->mutable_key()->set_table_name(table);
    e->mutable_key()->set_log_sequence_number(7);
    e->mutable_key()->set_write_time(1795954258030);
    hbase::UUID* source = e->mutable_key()->add_cluster_ids();
    source->set_most_sig_bits(0xbaa877d977fa4e68ULL);
    source->set_least_sig_bits(0xb925968afa50efb0ULL);
    e->set_associated_cell_count(2);
  }
  std::string cells;
  hbase::AppendCell({"r1", "f", "q", 5, hbase::KeyValueType::kPut, "v"}, &cells).IgnoreError();
  std::string tagged;
  hbase::AppendCell({"r1", "f", "w", 6, hbase::KeyValueType::kDeleteColumn, ""}, &tagged).IgnoreError();
  tagged[3] = static_cast<char>(tagged[3] + 2 + 3);
  tagged += std::string("\x00\x03" "tag", 5);
  cells += tagged;
  hbase::AppendCell({"r2", "f", "", 7, hbase::KeyValueType::kDeleteFamily, ""}, &cells).IgnoreError();
  hbase::AppendCell({"r2", "f", "q", 8, hbase::KeyValueType::kDelete, ""}, &cells).IgnoreError();
  const std::string param = replicate.SerializeAsString();
  Write(dir, "seed-replicate",
        std::string(1, '\0') + static_cast<char>(param.size() >> 8) + static_cast<char>(param.size() & 0xff) + param + cells);
  // The filters the real 2.6.0 client serialized (tests/hbase/testdata/filters-2.6.0.txt: a name,
  // a space, the hex of the Filter message).
  std::ifstream filters(std::string(BASALT_SOURCE_DIR) + "/tests/hbase/testdata/filters-2.6.0.txt");
  std::string line;
  while (std::getline(filters, line)) {
    const size_t space = line.find(' ');
    if (space == std::string::npos || line.empty() || line[0] == '#') continue;
    Write(dir, "seed-filter-" + line.substr(0, space), std::string(1, '\0') + absl::HexStringToBytes(line.substr(space + 1)));
  }
}

}  // namespace
}  // namespace basalt::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <out_dir>\n", argv[0]);
    return 2;
  }
  const std::string out = argv[1];
  basalt::fuzz::BlockDecodeSeeds(out);
  basalt::fuzz::BlockFileSeeds(out);
  basalt::fuzz::WalSeeds(out);
  basalt::fuzz::ManifestSeeds(out);
  basalt::fuzz::SnapshotSeeds(out);
  basalt::fuzz::CatalogSeeds(out);
  basalt::fuzz::VerbsFrameSeeds(out);
  basalt::fuzz::HBaseRpcSeeds(out);
  basalt::fuzz::TcpFrameStreamSeeds(out);
  std::printf("fuzz_make_seeds: seed corpora written under %s\n", out.c_str());
  return 0;
}
