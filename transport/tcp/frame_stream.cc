#include "transport/tcp/frame_stream.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "transport/verbs/frame.h"

namespace basalt::tcp {

FrameStreamReader::FrameStreamReader(size_t max_frame_bytes)
    : max_frame_bytes_(std::max(max_frame_bytes, verbs::kFrameHeaderSize)) {}

absl::Span<uint8_t> FrameStreamReader::Space(size_t at_least) {
  at_least = std::max<size_t>(at_least, 1);
  if (end_ + at_least > buf_.size() && start_ > 0) {  // move what is left to the front
    std::memmove(buf_.data(), buf_.data() + start_, end_ - start_);
    end_ -= start_;
    start_ = 0;
  }
  if (end_ + at_least > buf_.size()) {
    // Never more than a whole frame's bound plus the read asked for: a reader that is fed
    // without taking frames grows no further than that.
    const size_t cap = std::max(max_frame_bytes_ + at_least, buf_.size());
    buf_.resize(std::min(cap, std::max(end_ + at_least, buf_.size() * 2)));
  }
  space_ = buf_.size() - end_;
  return absl::MakeSpan(buf_.data() + end_, space_);
}

void FrameStreamReader::Commit(size_t n) {
  end_ += std::min(n, space_);
  space_ = 0;
}

absl::StatusOr<std::optional<absl::Span<const uint8_t>>> FrameStreamReader::Next() {
  const size_t have = end_ - start_;
  if (have < verbs::kFrameHeaderSize) {
    if (have == 0) start_ = end_ = 0;  // (empty: the next recv starts at the front)
    return std::nullopt;
  }
  const uint8_t* p = buf_.data() + start_;
  absl::StatusOr<uint64_t> size = verbs::FrameSize(absl::MakeConstSpan(p, have));
  if (!size.ok()) return absl::InvalidArgumentError(absl::StrCat("tcp: not a frame: ", size.status().message()));
  if (*size > max_frame_bytes_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("tcp: a frame of ", *size, " bytes, past this connection's bound of ", max_frame_bytes_));
  }
  if (have < *size) return std::nullopt;
  start_ += static_cast<size_t>(*size);
  return absl::MakeConstSpan(p, static_cast<size_t>(*size));
}

}  // namespace basalt::tcp
