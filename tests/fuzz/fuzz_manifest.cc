// libFuzzer target: region manifests (storage/internal/manifest.h).
//
// The input is decoded as it is (magic and CRC checks) and again with its last four bytes
// replaced by the correct CRC, so mutations reach the body. A decoded manifest must survive an
// encode/decode round trip; failures must be DataLoss (or FailedPrecondition: a stamp asking for
// a newer reader).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "storage/internal/manifest.h"
#include "tests/fuzz/fuzz_common.h"

namespace basalt::fuzz {
namespace {

void Check(std::string_view bytes) {
  auto m = DecodeManifest(bytes, "fuzz-manifest");
  if (!m.ok()) {
    // DataLoss for damage; FailedPrecondition for an intact stamp asking for a newer reader.
    FUZZ_CHECK(m.status().code() == absl::StatusCode::kDataLoss ||
                   m.status().code() == absl::StatusCode::kFailedPrecondition,
               "DecodeManifest returned %s", CodeName(m.status()));
    return;
  }
  for (const auto& [family, files] : m->files) {
    for (uint64_t f : files) FUZZ_CHECK(f < m->next_file_number, "file number at or above next_file_number");
  }
  auto again = DecodeManifest(EncodeManifest(*m), "fuzz-manifest-again");
  FUZZ_CHECK(again.ok(), "re-encoded manifest does not decode: %s", std::string(again.status().message()).c_str());
  FUZZ_CHECK(again->next_file_number == m->next_file_number && again->flushed_seq == m->flushed_seq &&
                 again->files == m->files,
             "manifest does not survive a round trip");
}

}  // namespace
}  // namespace basalt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  basalt::fuzz::CheckAsIsAndWithTheCrcFixed(data, size, 12, basalt::fuzz::Check);
  return 0;
}
