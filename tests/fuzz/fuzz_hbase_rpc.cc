// libFuzzer target: what an HBase client or replication source sends (src/front/hbase/rpc_codec.h,
// cell_block.h, filter_convert.h, replication_sink.h).
//
// Input: a connection's bytes. The first byte picks the size of the pieces they arrive in (1 to
// 256), so that a frame cut anywhere is read; the rest goes to a ConnectionReader, whose calls
// are drained until it waits or refuses, to DecodeCellBlock whole, as a serialized Filter (a
// Scan's or a Get's) to FilterOf, which maps it onto Basalt's filter or refuses it, and as a
// ReplicateWALEntry call (a u16 big-endian length, that many bytes of the request, the rest its
// cell block) to SinkEditsOf.
//
// Checks beyond "no crash": the reader never yields more bytes than it was given, and once it
// refuses it refuses for good. The cell block encoding is canonical but for tags, so a block that
// decodes re-encodes cell by cell to exactly the same bytes, or (its tags dropped) to fewer bytes
// that decode to the same cells. A filter is either mapped or refused with InvalidArgument, never
// another error. Replicated edits are made or refused as InvalidArgument, FailedPrecondition or
// NotFound, and never hold more cells than the block. The bytes as a replication peer's cluster key
// are taken or refused with InvalidArgument, and one taken reads back alike.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/front/hbase/cell_block.h"
#include "src/front/hbase/filter_convert.h"
#include "src/front/hbase/replication_sink.h"
#include "src/front/hbase/rpc_codec.h"
#include "src/front/hbase/zk_records.h"
#include "tests/fuzz/fuzz_common.h"

namespace basalt::fuzz {
namespace {

void ReadConnection(std::string_view bytes, size_t piece) {
  hbase::ConnectionReader reader(1 << 20);
  size_t yielded = 0;
  bool refused = false;
  for (size_t at = 0; at < bytes.size() && !refused; at += piece) {
    reader.Feed(bytes.substr(at, piece));
    for (;;) {
      absl::StatusOr<std::optional<hbase::Call>> next = reader.Next();
      if (!next.ok()) {
        refused = true;
        FUZZ_CHECK(!reader.Next().ok(), "a refused connection was read again");
        break;
      }
      if (!next->has_value()) break;
      yielded += (*next)->param.size() + (*next)->cell_block.size();
      FUZZ_CHECK(yielded <= bytes.size(), "calls hold %zu bytes of a %zu-byte input", yielded, bytes.size());
    }
  }
}

void DecodeCells(std::string_view bytes) {
  absl::StatusOr<std::vector<hbase::BlockCell>> cells = hbase::DecodeCellBlock(bytes);
  if (!cells.ok()) return;
  std::string again;
  for (const hbase::BlockCell& c : *cells) {
    absl::Status s = hbase::AppendCell(c, &again);
    FUZZ_CHECK(s.ok(), "a decoded cell does not encode: %s", std::string(s.message()).c_str());
  }
  if (again == bytes) return;
  FUZZ_CHECK(again.size() < bytes.size(), "a decoded block re-encodes differently (%zu bytes, input %zu)",
             again.size(), bytes.size());
  absl::StatusOr<std::vector<hbase::BlockCell>> back = hbase::DecodeCellBlock(again);
  FUZZ_CHECK(back.ok() && back->size() == cells->size(), "a block without its tags does not decode alike");
  for (size_t i = 0; i < cells->size(); ++i) {
    const hbase::BlockCell &a = (*cells)[i], &b = (*back)[i];
    FUZZ_CHECK(a.row == b.row && a.family == b.family && a.qualifier == b.qualifier && a.timestamp == b.timestamp &&
                   a.type == b.type && a.value == b.value,
               "cell %zu differs once its tags are dropped", i);
  }
}

void Replicate(std::string_view bytes) {
  if (bytes.size() < 2) return;
  const size_t n = (static_cast<uint8_t>(bytes[0]) << 8) | static_cast<uint8_t>(bytes[1]);
  if (bytes.size() - 2 < n) return;
  hbase::ReplicateWALEntryRequest req;
  if (!req.ParsePartialFromArray(bytes.data() + 2, static_cast<int>(n)) || !req.IsInitialized()) return;
  const std::string_view block = bytes.substr(2 + n);
  absl::StatusOr<hbase::SinkEdits> edits = hbase::SinkEditsOf(req, block, "7660d7e1-37b9-4f8e-9f3b-8119a02540d0");
  if (!edits.ok()) {
    const absl::StatusCode c = edits.status().code();
    FUZZ_CHECK(c == absl::StatusCode::kInvalidArgument || c == absl::StatusCode::kFailedPrecondition ||
                   c == absl::StatusCode::kNotFound,
               "replicated edits were refused with %s", edits.status().ToString().c_str());
    return;
  }
  uint64_t mutations = 0;
  for (const rpc::BatchMutateRequest& b : edits->batches) {
    for (const rpc::RowMutations& r : b.rows()) mutations += static_cast<uint64_t>(r.mutations_size());
  }
  absl::StatusOr<std::vector<hbase::BlockCell>> cells = hbase::DecodeCellBlock(block);
  FUZZ_CHECK(cells.ok() && mutations == edits->cells && edits->cells <= cells->size(),
             "%llu mutations, %llu cells counted, of a block of %zu", static_cast<unsigned long long>(mutations),
             static_cast<unsigned long long>(edits->cells), cells.ok() ? cells->size() : 0);
}

void ConvertFilter(std::string_view bytes) {
  hbase::Filter filter;
  if (!filter.ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size())) || !filter.IsInitialized()) return;
  absl::StatusOr<rpc::Filter> mapped = hbase::FilterOf(filter);
  FUZZ_CHECK(mapped.ok() || mapped.status().code() == absl::StatusCode::kInvalidArgument,
             "a filter was refused with %s", mapped.status().ToString().c_str());
}

// A cluster key (a replication peer's, src/front/hbase/zk_records.h): taken or refused with
// InvalidArgument; one taken names a quorum of HOST:PORT entries and an absolute parent, and the
// key written again from them is taken as the same.
void ParseKey(std::string_view bytes) {
  absl::StatusOr<hbase::ClusterKey> k = hbase::ParseClusterKey(bytes);
  if (!k.ok()) {
    FUZZ_CHECK(k.status().code() == absl::StatusCode::kInvalidArgument, "a cluster key was refused with %s",
               k.status().ToString().c_str());
    return;
  }
  FUZZ_CHECK(!k->quorum.empty() && k->parent.size() > 1 && k->parent[0] == '/', "a cluster key parsed as '%s' '%s'",
             k->quorum.c_str(), k->parent.c_str());
  for (absl::string_view host : absl::StrSplit(k->quorum, ',')) {
    FUZZ_CHECK(!host.empty() && host.find(':') != std::string_view::npos, "quorum '%s' has a host with no port",
               k->quorum.c_str());
  }
  const size_t colon = k->quorum.rfind(':');
  absl::StatusOr<hbase::ClusterKey> again =
      hbase::ParseClusterKey(absl::StrCat(k->quorum, ":", k->quorum.substr(colon + 1), ":", k->parent));
  FUZZ_CHECK(again.ok() && again->quorum == k->quorum && again->parent == k->parent,
             "cluster key '%s' written again does not parse alike", std::string(bytes).c_str());
}

}  // namespace
}  // namespace basalt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  basalt::fuzz::ReadConnection(bytes, static_cast<size_t>(data[0]) + 1);
  basalt::fuzz::DecodeCells(bytes);
  basalt::fuzz::ConvertFilter(bytes);
  basalt::fuzz::Replicate(bytes);
  basalt::fuzz::ParseKey(bytes);
  return 0;
}
