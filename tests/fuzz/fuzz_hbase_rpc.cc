// libFuzzer target: what an HBase client sends (src/front/hbase/rpc_codec.h, cell_block.h,
// filter_convert.h).
//
// Input: a connection's bytes. The first byte picks the size of the pieces they arrive in (1 to
// 256), so that a frame cut anywhere is read; the rest goes to a ConnectionReader, whose calls
// are drained until it waits or refuses, to DecodeCellBlock whole, and, as a serialized Filter
// (a Scan's or a Get's), to FilterOf, which maps it onto Basalt's filter or refuses it.
//
// Checks beyond "no crash": the reader never yields more bytes than it was given, and once it
// refuses it refuses for good. The cell block encoding is canonical, so a block that decodes
// re-encodes cell by cell to exactly the same bytes. A filter is either mapped or refused with
// InvalidArgument, never another error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/front/hbase/cell_block.h"
#include "src/front/hbase/filter_convert.h"
#include "src/front/hbase/rpc_codec.h"
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
  FUZZ_CHECK(again == bytes, "a decoded block re-encodes differently (%zu bytes, input %zu)", again.size(),
             bytes.size());
}

void ConvertFilter(std::string_view bytes) {
  hbase::Filter filter;
  if (!filter.ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size())) || !filter.IsInitialized()) return;
  absl::StatusOr<rpc::Filter> mapped = hbase::FilterOf(filter);
  FUZZ_CHECK(mapped.ok() || mapped.status().code() == absl::StatusCode::kInvalidArgument,
             "a filter was refused with %s", mapped.status().ToString().c_str());
}

}  // namespace
}  // namespace basalt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  basalt::fuzz::ReadConnection(bytes, static_cast<size_t>(data[0]) + 1);
  basalt::fuzz::DecodeCells(bytes);
  basalt::fuzz::ConvertFilter(bytes);
  return 0;
}
