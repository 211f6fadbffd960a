// libFuzzer target: the verbs wire frame (transport/verbs/frame.h).
//
// Input: one frame, as it would arrive in a receive buffer. It goes to ParseHeader,
// DecodeRequest, DecodeGetReply, ParseReplyPlacement and DecodeMutateReply (expecting the
// request id the frame carries, so the bodies are reached).
//
// Checks beyond "no crash": a header that parses fits the input; a malformed request is
// InvalidArgument. The encoding is canonical, so a frame that decodes re-encodes to exactly the
// same bytes: a request into a buffer of exactly its size (one byte less is ResourceExhausted)
// and then decodes to an equal message; an OK reply, and an error reply whose status the
// decoder returned, re-encode byte for byte. Any other failure of a reply decoder is Internal.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "google/protobuf/util/message_differencer.h"
#include "common/coding.h"
#include "tests/fuzz/fuzz_common.h"
#include "transport/verbs/frame.h"

namespace basalt::fuzz {
namespace {

using google::protobuf::util::MessageDifferencer;
using verbs::DecodedRequest;
using verbs::FrameOp;
using verbs::kFrameHeaderSize;

template <typename Req, typename Encode>
void CheckRequestRoundTrip(absl::Span<const uint8_t> in, uint64_t id, const Req& req, Encode encode) {
  std::vector<uint8_t> out(in.size());
  absl::StatusOr<size_t> n = encode(id, req, absl::MakeSpan(out));
  FUZZ_CHECK(n.ok(), "re-encoding a decoded request: %s %s", CodeName(n.status()),
             std::string(n.status().message()).c_str());
  FUZZ_CHECK(*n == in.size() && std::equal(out.begin(), out.end(), in.begin()),
             "re-encoded request differs (%zu bytes, input %zu)", *n, in.size());
  std::vector<uint8_t> short_out(in.size() - 1);
  absl::StatusOr<size_t> s = encode(id, req, absl::MakeSpan(short_out));
  FUZZ_CHECK(s.status().code() == absl::StatusCode::kResourceExhausted,
             "encoding into one byte less than the frame returned %s", CodeName(s.status()));
  DecodedRequest again;
  absl::Status d = verbs::DecodeRequest(absl::MakeConstSpan(out), &again);
  FUZZ_CHECK(d.ok(), "decoding a re-encoded request: %s", std::string(d.message()).c_str());
  Req req2;
  if constexpr (std::is_same_v<Req, rpc::GetRequest>) {
    FUZZ_CHECK(again.header.op == FrameOp::kGet && again.header.request_id == id,
               "re-decoded request has another op or id");
    verbs::GetRequestFromView(again.get, &req2);  // views into `out`, still here
  } else {
    FUZZ_CHECK(again.header.op == FrameOp::kMutate && again.header.request_id == id,
               "re-decoded request has another op or id");
    req2 = again.mutate;
  }
  FUZZ_CHECK(MessageDifferencer::Equals(req2, req), "re-decoded request differs");
}

void CheckRequest(absl::Span<const uint8_t> in) {
  DecodedRequest d;
  absl::Status s = verbs::DecodeRequest(in, &d);
  if (!s.ok()) {
    FUZZ_CHECK(s.code() == absl::StatusCode::kInvalidArgument, "DecodeRequest returned %s", CodeName(s));
    return;
  }
  FUZZ_CHECK(d.header.op == FrameOp::kGet || d.header.op == FrameOp::kMutate, "request op %d",
             static_cast<int>(d.header.op));
  FUZZ_CHECK(kFrameHeaderSize + d.header.body_len == in.size(), "body length %u of a %zu-byte frame",
             d.header.body_len, in.size());
  // As the request a rendezvous read: the same checks, and never a descriptor itself.
  verbs::FrameHeader descriptor = d.header;
  DecodedRequest read;
  absl::Status rs = verbs::DecodeRendezvousRequest(in, descriptor, &read);
  FUZZ_CHECK(rs.ok() != d.rendezvous.has_value(), "DecodeRendezvousRequest took a descriptor, or refused a request");
  FUZZ_CHECK(rs.ok() || rs.code() == absl::StatusCode::kInvalidArgument, "DecodeRendezvousRequest returned %s",
             CodeName(rs));
  if (d.rendezvous.has_value()) {
    std::vector<uint8_t> out(verbs::kRendezvousFrameSize);
    const size_t n = verbs::EncodeRendezvous(d.header.op, d.header.request_id, *d.rendezvous, absl::MakeSpan(out));
    FUZZ_CHECK(n == in.size() && std::equal(out.begin(), out.end(), in.begin()), "re-encoded rendezvous differs");
    return;
  }
  if (d.header.op == FrameOp::kGet) {
    FUZZ_CHECK(d.get.frame_bytes == in.size(), "a Get view of %zu bytes from a %zu-byte frame", d.get.frame_bytes,
               in.size());
    rpc::GetRequest get;
    verbs::GetRequestFromView(d.get, &get);
    const verbs::RemoteBuffer* reply_buffer = d.reply_buffer.has_value() ? &*d.reply_buffer : nullptr;
    CheckRequestRoundTrip(in, d.header.request_id, get,
                          [reply_buffer](uint64_t id, const rpc::GetRequest& req, absl::Span<uint8_t> out) {
                            return verbs::EncodeGetRequest(id, req, out, reply_buffer);
                          });
  } else {
    CheckRequestRoundTrip(in, d.header.request_id, d.mutate,
                          verbs::EncodeMutateRequest);
  }
}

// A reply decoder's failure: either the server's status, which then re-encodes to the input,
// or Internal for a malformed frame.
template <typename EncodeError>
void CheckReplyError(absl::Span<const uint8_t> in, const absl::Status& s, EncodeError encode_error) {
  std::vector<uint8_t> out(std::max(in.size(), verbs::kMinReplyBuffer));
  const size_t n = encode_error(s, absl::MakeSpan(out));
  const bool same = n == in.size() && std::equal(in.begin(), in.end(), out.begin());
  FUZZ_CHECK(same || s.code() == absl::StatusCode::kInternal, "reply decoder returned %s for a frame that is not that reply",
             CodeName(s));
}

void CheckGetReply(absl::Span<const uint8_t> in, uint64_t id) {
  rpc::GetResponse resp;
  bool too_large = false;
  absl::Status s = verbs::DecodeGetReply(in, id, &resp, &too_large);
  absl::StatusOr<verbs::ReplyPlacement> placed = verbs::ParseReplyPlacement(in, id);
  FUZZ_CHECK(placed.ok() || placed.status().code() == absl::StatusCode::kInternal, "ParseReplyPlacement returned %s",
             CodeName(placed.status()));
  if (placed.ok() && placed->written) {
    std::vector<uint8_t> out(verbs::kMinReplyBuffer);
    const size_t n = verbs::EncodeReplyWritten(id, placed->length, absl::MakeSpan(out));
    FUZZ_CHECK(n == in.size() && std::equal(in.begin(), in.end(), out.begin()), "re-encoded written reply differs");
    FUZZ_CHECK(!s.ok(), "a written reply decoded as a Get reply");
  }
  if (too_large) {
    FUZZ_CHECK(s.code() == absl::StatusCode::kResourceExhausted, "too-large reply returned %s", CodeName(s));
    const uint16_t flags = DecodeFixed16(reinterpret_cast<const char*>(in.data()) + 18);
    FUZZ_CHECK(flags == verbs::kFlagTooLarge || flags == (verbs::kFlagTooLarge | verbs::kFlagReplyBuffer),
               "too-large without the flag");
    FUZZ_CHECK(placed.ok() && placed->too_large == (flags != verbs::kFlagTooLarge),
               "a too-large reply's size is not where ParseReplyPlacement finds it");
    return;
  }
  FUZZ_CHECK(!placed.ok() || !placed->too_large, "ParseReplyPlacement found a size DecodeGetReply did not");
  if (s.ok()) {
    std::vector<uint8_t> out(std::max(in.size(), verbs::kMinReplyBuffer));
    const size_t n = verbs::EncodeGetReply(id, absl::OkStatus(), &resp, absl::MakeSpan(out));
    FUZZ_CHECK(n == in.size() && std::equal(in.begin(), in.end(), out.begin()),
               "re-encoded Get reply differs (%zu bytes, input %zu)", n, in.size());
    FUZZ_CHECK(resp.has_row(), "OK Get reply without a row");
    return;
  }
  CheckReplyError(in, s, [&](const absl::Status& st, absl::Span<uint8_t> out) {
    return verbs::EncodeGetReply(id, st, nullptr, out);
  });
}

void CheckMutateReply(absl::Span<const uint8_t> in, uint64_t id) {
  bool too_large = false;
  absl::Status s = verbs::DecodeMutateReply(in, id, &too_large);
  FUZZ_CHECK(!s.ok() || in.size() == kFrameHeaderSize, "OK Mutate reply of %zu bytes", in.size());
  if (s.ok()) return;
  if (too_large) {
    FUZZ_CHECK(s.code() == absl::StatusCode::kResourceExhausted, "too-large Mutate reply returned %s", CodeName(s));
    std::vector<uint8_t> out(std::max(in.size(), verbs::kMinReplyBuffer));
    const std::string_view message(s.message().data(), s.message().size());
    const size_t n = verbs::EncodeTooLargeReply(FrameOp::kMutateReply, id, message, absl::MakeSpan(out));
    FUZZ_CHECK(n == in.size() && std::equal(in.begin(), in.end(), out.begin()), "re-encoded too-large reply differs");
    return;
  }
  CheckReplyError(in, s, [&](const absl::Status& st, absl::Span<uint8_t> out) {
    return verbs::EncodeMutateReply(id, st, out);
  });
}

}  // namespace
}  // namespace basalt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace basalt;
  using namespace basalt::fuzz;
  const absl::Span<const uint8_t> in(data, size);
  absl::StatusOr<verbs::FrameHeader> h = verbs::ParseHeader(in);
  if (h.ok()) {
    FUZZ_CHECK(verbs::kFrameHeaderSize + h->body_len <= size, "header's body of %u bytes overruns %zu",
               h->body_len, size);
  } else {
    FUZZ_CHECK(h.status().code() == absl::StatusCode::kInvalidArgument, "ParseHeader returned %s",
               CodeName(h.status()));
  }
  CheckRequest(in);
  const uint64_t id = size >= 16 ? DecodeFixed64(reinterpret_cast<const char*>(data) + 8) : 0;
  CheckGetReply(in, id);
  CheckMutateReply(in, id);
  return 0;
}
