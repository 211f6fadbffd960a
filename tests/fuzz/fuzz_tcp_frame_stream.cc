// libFuzzer target: the TCP path's byte stream (transport/tcp/frame_stream.h).
//
// Input: byte 0 picks the size of each recv (1 to 64 bytes, or 4 KiB), bytes 1 and 2 the reader's
// bound (a header's size plus 0 to 8191), the rest is what a connection delivers.
//
// Checks beyond "no crash": every frame that comes out is a frame's header (magic, version) and
// exactly as long as that header says, within the bound; the frames are the stream's bytes in
// order, none skipped or repeated; what is not taken is what is still buffered; a refusal is
// InvalidArgument or ResourceExhausted and only at a frame's start; Space never offers nothing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/coding.h"
#include "tests/fuzz/fuzz_common.h"
#include "transport/tcp/frame_stream.h"
#include "transport/verbs/frame.h"

namespace basalt::fuzz {
namespace {

void Run(const uint8_t* data, size_t size) {
  if (size < 3) return;
  const size_t piece = data[0] >= 192 ? 4096 : 1 + data[0] % 64;
  const size_t bound = verbs::kFrameHeaderSize + ((data[1] | (data[2] << 8)) % 8192);
  const uint8_t* stream = data + 3;
  const size_t len = size - 3;
  tcp::FrameStreamReader r(bound);
  size_t fed = 0, taken = 0;
  while (fed < len) {
    absl::Span<uint8_t> space = r.Space(piece);
    FUZZ_CHECK(!space.empty(), "Space offered nothing (%zu buffered, bound %zu)", r.buffered(), bound);
    const size_t n = std::min({piece, space.size(), len - fed});
    std::memcpy(space.data(), stream + fed, n);
    r.Commit(n);
    fed += n;
    for (;;) {
      absl::StatusOr<std::optional<absl::Span<const uint8_t>>> next = r.Next();
      if (!next.ok()) {
        FUZZ_CHECK(absl::IsInvalidArgument(next.status()) || absl::IsResourceExhausted(next.status()),
                   "refused with %s", CodeName(next.status()));
        FUZZ_CHECK(fed - taken >= verbs::kFrameHeaderSize, "refused before a header was whole");
        return;
      }
      if (!next->has_value()) break;
      const absl::Span<const uint8_t> f = **next;
      FUZZ_CHECK(f.size() >= verbs::kFrameHeaderSize && f.size() <= bound, "a frame of %zu bytes (bound %zu)",
                 f.size(), bound);
      FUZZ_CHECK(f[0] == (verbs::kFrameMagic & 0xff) && f[1] == (verbs::kFrameMagic >> 8) &&
                     f[2] == verbs::kFrameVersion,
                 "a frame without a frame's header");
      FUZZ_CHECK(f.size() == verbs::kFrameHeaderSize + DecodeFixed32(reinterpret_cast<const char*>(f.data()) + 4),
                 "a frame of %zu bytes whose header says otherwise", f.size());
      FUZZ_CHECK(taken + f.size() <= fed && std::memcmp(f.data(), stream + taken, f.size()) == 0,
                 "frame at %zu is not the stream's bytes", taken);
      taken += f.size();
    }
    FUZZ_CHECK(r.buffered() == fed - taken, "%zu buffered, %zu fed, %zu taken", r.buffered(), fed, taken);
  }
}

}  // namespace
}  // namespace basalt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  basalt::fuzz::Run(data, size);
  return 0;
}
