// libFuzzer target: snapshot manifests (src/schema/snapshot_file.h).
//
// The input is decoded as it is (magic and CRC checks) and again with its last four bytes
// replaced by the correct CRC, so mutations reach the body. A decoded manifest must survive an
// encode/decode round trip unchanged; failures must be DataLoss (or FailedPrecondition: a stamp
// asking for a newer reader, or InvalidArgument: a name no snapshot may have).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/schema/snapshot_file.h"
#include "tests/fuzz/fuzz_common.h"

namespace basalt::fuzz {
namespace {

void Check(std::string_view bytes) {
  absl::StatusOr<server::SnapshotInfo> s = server::DecodeSnapshot(bytes, "fuzz-snapshot");
  if (!s.ok()) {
    FUZZ_CHECK(s.status().code() == absl::StatusCode::kDataLoss ||
                   s.status().code() == absl::StatusCode::kFailedPrecondition ||
                   s.status().code() == absl::StatusCode::kInvalidArgument,
               "DecodeSnapshot returned %s", CodeName(s.status()));
    return;
  }
  absl::StatusOr<server::SnapshotInfo> again = server::DecodeSnapshot(server::EncodeSnapshot(*s), "fuzz-snapshot-again");
  FUZZ_CHECK(again.ok(), "re-encoded snapshot manifest does not decode: %s", std::string(again.status().message()).c_str());
  FUZZ_CHECK(again->name == s->name && again->created_ms == s->created_ms && again->ttl_s == s->ttl_s &&
                 again->regions == s->regions && again->table.name == s->table.name,
             "snapshot manifest does not survive a round trip");
}

}  // namespace
}  // namespace basalt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  basalt::fuzz::CheckAsIsAndWithTheCrcFixed(data, size, 24, basalt::fuzz::Check);
  return 0;
}
