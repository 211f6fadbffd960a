// The TCP path's byte stream (issue 51; docs/DESIGN.md §4): a connection carries verbs frames
// (transport/verbs/frame.h) back to back, each delimited by its own header (magic, version, body
// length), so the TCP path needs no framing of its own and one decoder serves both transports.
// FrameStreamReader cuts what recv returns into whole frames as they complete.
//
// A frame is refused, before its body is waited for, when its header is not a frame's (magic,
// version) or it is longer than the reader's bound: the connection cannot be read further and
// must close. Its bytes are checked no further here; DecodeRequest and the reply decoders do
// that, as for a verbs receive buffer.
//
// Thread-safety: none (one per connection, on its event loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace basalt::tcp {

class FrameStreamReader {
 public:
  // `max_frame_bytes`: the longest frame taken (header included), at least a header's size.
  explicit FrameStreamReader(size_t max_frame_bytes);

  // Where the next recv may write: at least `at_least` bytes (or what the bound still allows,
  // when less; never none while a frame may still be incomplete). Moves the bytes not yet taken
  // to the front when that makes room; valid until the next call.
  absl::Span<uint8_t> Space(size_t at_least);
  // `n` bytes were written at the start of the last Space().
  void Commit(size_t n);

  // The next whole frame, when its bytes are all here (valid until the next Space()); nullopt
  // when more must arrive first. InvalidArgument when the bytes are not a frame (the magic or
  // the version), ResourceExhausted when its length is past the bound: both final.
  absl::StatusOr<std::optional<absl::Span<const uint8_t>>> Next();

  // Bytes received and not yet taken as frames (a partial frame's, at a connection's end).
  size_t buffered() const { return end_ - start_; }
  size_t max_frame_bytes() const { return max_frame_bytes_; }

 private:
  const size_t max_frame_bytes_;
  std::vector<uint8_t> buf_;
  size_t start_ = 0;  // the first byte not taken
  size_t end_ = 0;    // past the last byte received
  size_t space_ = 0;  // what the last Space() offered
};

}  // namespace basalt::tcp
