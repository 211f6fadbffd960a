// The TCP path's byte stream (transport/tcp/frame_stream.h): real frames, cut every way a
// connection may deliver them, and the streams it must refuse.
#include "transport/tcp/frame_stream.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "transport/verbs/frame.h"

namespace basalt::tcp {
namespace {

std::vector<uint8_t> GetFrame(uint64_t id, const std::string& row) {
  rpc::GetRequest req;
  req.set_table("usertable");
  req.set_row(row);
  std::vector<uint8_t> out(verbs::kFrameHeaderSize + 64 + row.size());
  absl::StatusOr<size_t> n = verbs::EncodeGetRequest(id, req, absl::MakeSpan(out));
  EXPECT_TRUE(n.ok()) << n.status();
  out.resize(n.ok() ? *n : 0);
  return out;
}

// Feeds `bytes` in pieces of `piece` (the last one shorter) and takes every frame as it completes.
std::vector<std::vector<uint8_t>> Feed(FrameStreamReader* r, const std::vector<uint8_t>& bytes, size_t piece) {
  std::vector<std::vector<uint8_t>> frames;
  for (size_t at = 0; at < bytes.size();) {
    absl::Span<uint8_t> space = r->Space(piece);
    const size_t n = std::min({piece, space.size(), bytes.size() - at});
    std::memcpy(space.data(), bytes.data() + at, n);
    r->Commit(n);
    at += n;
    for (;;) {
      auto next = r->Next();
      EXPECT_TRUE(next.ok()) << next.status();
      if (!next.ok() || !next->has_value()) break;
      frames.emplace_back((*next)->begin(), (*next)->end());
    }
  }
  return frames;
}

TEST(FrameStream, FramesComeOutWholeHoweverTheBytesArrive) {
  std::vector<std::vector<uint8_t>> want;
  std::vector<uint8_t> stream;
  for (uint64_t id = 1; id <= 40; ++id) {
    want.push_back(GetFrame(id, std::string(id * 37, 'r')));
    stream.insert(stream.end(), want.back().begin(), want.back().end());
  }
  for (size_t piece : {size_t{1}, size_t{7}, size_t{24}, size_t{25}, size_t{1000}, stream.size()}) {
    FrameStreamReader r(4096);
    EXPECT_EQ(Feed(&r, stream, piece), want) << "in pieces of " << piece;
    EXPECT_EQ(r.buffered(), 0u);
  }
}

TEST(FrameStream, AFramePastTheBoundIsRefusedFromItsHeaderAlone) {
  const std::vector<uint8_t> frame = GetFrame(9, std::string(500, 'r'));
  FrameStreamReader r(frame.size() - 1);
  absl::Span<uint8_t> space = r.Space(verbs::kFrameHeaderSize);
  std::memcpy(space.data(), frame.data(), verbs::kFrameHeaderSize);
  r.Commit(verbs::kFrameHeaderSize);
  auto next = r.Next();
  EXPECT_EQ(next.status().code(), absl::StatusCode::kResourceExhausted) << next.status();
  // One byte more of bound: it is waited for, then whole.
  FrameStreamReader fits(frame.size());
  EXPECT_EQ(Feed(&fits, frame, 100), std::vector<std::vector<uint8_t>>{frame});
}

TEST(FrameStream, BytesThatAreNotAFrameAreRefused) {
  std::vector<uint8_t> frame = GetFrame(3, "row");
  for (size_t at : {size_t{0}, size_t{1}, size_t{2}}) {  // the magic's two bytes, the version
    std::vector<uint8_t> bad = frame;
    bad[at] ^= 0x40;
    FrameStreamReader r(4096);
    absl::Span<uint8_t> space = r.Space(bad.size());
    std::memcpy(space.data(), bad.data(), bad.size());
    r.Commit(bad.size());
    auto next = r.Next();
    EXPECT_EQ(next.status().code(), absl::StatusCode::kInvalidArgument) << at << ": " << next.status();
  }
  // A header not yet whole is waited for, however wrong its first bytes.
  FrameStreamReader r(4096);
  absl::Span<uint8_t> space = r.Space(3);
  std::memcpy(space.data(), "GET", 3);
  r.Commit(3);
  auto next = r.Next();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE(next->has_value());
}

TEST(FrameStream, ItsBufferStaysWithinABoundAndAFullRead) {
  constexpr size_t kBound = 4096;
  FrameStreamReader r(kBound);
  const std::vector<uint8_t> frame = GetFrame(5, std::string(kBound - 200, 'r'));
  ASSERT_LE(frame.size(), kBound);
  // Many frames, each nearly the bound, fed in 64 KiB reads: what it offers stays under the
  // bound plus one read.
  size_t largest = 0;
  for (int i = 0; i < 50; ++i) {
    for (size_t at = 0; at < frame.size();) {
      absl::Span<uint8_t> space = r.Space(65536);
      largest = std::max(largest, space.size() + r.buffered());
      const size_t n = std::min(space.size(), frame.size() - at);
      std::memcpy(space.data(), frame.data() + at, n);
      r.Commit(n);
      at += n;
    }
    auto next = r.Next();
    ASSERT_TRUE(next.ok() && next->has_value());
  }
  EXPECT_LE(largest, kBound + 65536);
  EXPECT_EQ(r.buffered(), 0u);
}

}  // namespace
}  // namespace basalt::tcp
