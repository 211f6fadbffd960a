// The verbs transport's wire frame (docs/DESIGN.md, §4): a compact, versioned binary encoding of Get
// and Mutate (Put/Delete) requests and their replies, written straight into a registered buffer
// slice and read in place. Not protobuf: a fixed header, then length-prefixed fields.
//
// Header (24 bytes, little-endian):
//   0  u16 magic 0xBA5A      2  u8 version (1)      3  u8 op (FrameOp)
//   4  u32 body length       8  u64 request id (a reply echoes its request's)
//   16 u16 status code (absl::StatusCode; requests: 0)
//   18 u16 flags (kFlagTooLarge, kFlagFilter, kFlagTransaction, kFlagRendezvous, kFlagReplyBuffer,
//                 kFlagNonce)
//   20 u32 reserved, 0
// Bodies (str16/bytes16: u16 length + bytes; bytes32: u32 length + bytes):
//   Get request:    str16 table | bytes32 row | i64 min_ts | u8 has_max_ts | i64 max_ts |
//                   i32 max_versions | u8 skip_block_cache |
//                   u16 ncolumns × (bytes16 family | u32 nqualifiers × bytes32 qualifier) |
//                   with kFlagFilter: bytes32 filter (rpc::Filter, protobuf, as serialized)
//                   with kFlagTransaction: bytes32 snapshot (rpc::TransactionSnapshot, likewise)
//                   with kFlagReplyBuffer: u64 addr | u32 rkey | u32 capacity
//   Mutate request: str16 table | u8 durability | bytes32 row |
//                   u32 nmutations × (u8 kind | u8 has_ts | i64 ts | bytes16 family |
//                                     bytes32 qualifier | bytes32 value)
//                   with kFlagTransaction: i64 transaction (write pointer, not 0) | u8 rollback
//                   with kFlagNonce: u64 nonce group | u64 nonce (not 0)
//   Get reply, OK:  bytes32 row | u32 ncells × (bytes16 family | bytes32 qualifier | i64 ts |
//                                               bytes32 value)
//   Rendezvous (a Get or Mutate request with kFlagRendezvous, and no other flag):
//                   u64 addr | u32 rkey | u32 length — where the whole request frame is
//   Mutate reply, OK: empty
//   Get reply written to the client's reply buffer (kFlagReplyBuffer, OK): u32 length
//   Any reply with a status other than OK: bytes32 message
//     (a too-large Get reply to a request with a reply buffer, kFlagTooLarge | kFlagReplyBuffer,
//      then: u64 the bytes the reply needs)
//
// Decoding checks every length against the bytes that are there before it reads, refuses
// trailing bytes, unknown versions, ops and enum values, with InvalidArgument naming the field
// and offset. It never reads outside the span it is given. The encoding is canonical (flags and
// booleans are 0 or 1, an absent optional timestamp is written as 0 and must read as 0), so a
// frame that decodes re-encodes to the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proto/basalt.pb.h"

namespace basalt::verbs {

inline constexpr uint16_t kFrameMagic = 0xBA5A;
inline constexpr uint8_t kFrameVersion = 1;
inline constexpr size_t kFrameHeaderSize = 24;

enum class FrameOp : uint8_t {
  kGet = 1,
  kMutate = 2,
  kGetReply = 0x81,
  kMutateReply = 0x82,
};

// Reply flag: the reply would not fit a verbs message, or the server cannot take the request by
// rendezvous now (a Mutate's reply too); the client repeats the call over gRPC.
inline constexpr uint16_t kFlagTooLarge = 1;
// Get request flag: a filter (server-side, basalt/filter.h) follows the columns. A server that
// predates it refuses the flag, so a filter is never silently dropped.
inline constexpr uint16_t kFlagFilter = 2;
// Get and Mutate request flag: the call is a transaction's (docs/DESIGN.md §7): a Get carries its
// snapshot after the filter, a Mutate its write pointer and rollback flag after the mutations.
// Refused by a server that predates it, as kFlagFilter.
inline constexpr uint16_t kFlagTransaction = 4;
// Get and Mutate request flag: the frame is a rendezvous descriptor. The request itself, a whole
// request frame with the same id and op and without this flag, is in the client's registered
// memory at (addr, rkey, length), for the server to RDMA READ: how a request larger than the
// server's receive buffer travels over verbs. Sent only to a server whose session offers it
// (VerbsSession::rendezvous_bytes); one that predates it refuses the flag.
inline constexpr uint16_t kFlagRendezvous = 8;
inline constexpr size_t kRendezvousFrameSize = kFrameHeaderSize + 16;
// Get request flag: the client's reply buffer, registered for remote write, follows the body
// (its capacity may be 0: no buffer yet). A reply larger than the client's receive buffer but
// within the capacity is RDMA WRITten there (a whole Get reply frame), followed by a small reply
// with this flag carrying its length; one larger than the capacity is a too-large reply with
// this flag, carrying the bytes it needs, so that the client can ask again with a buffer that
// large. The server never exposes its own memory.
inline constexpr uint16_t kFlagReplyBuffer = 16;
// Mutate request flag: the client's nonce follows the body (after the transaction's fields):
// u64 group | u64 nonce (not 0). The server applies the write once however often it is sent
// (proto/basalt.proto Nonce). Refused by a server that predates it, as kFlagFilter.
inline constexpr uint16_t kFlagNonce = 32;

// Where a rendezvous's bytes are, in the peer's registered memory.
struct RemoteBuffer {
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint32_t length = 0;
};

struct FrameHeader {
  FrameOp op = FrameOp::kGet;
  uint32_t body_len = 0;
  uint64_t request_id = 0;
  uint16_t status = 0;  // absl::StatusCode of a reply
  uint16_t flags = 0;
};

// Parses and checks the header of the frame in `in` (magic, version, op, reserved == 0,
// kFrameHeaderSize + body_len <= in.size(), status a valid absl::StatusCode). Flags are left to
// the decoders below.
absl::StatusOr<FrameHeader> ParseHeader(absl::Span<const uint8_t> in);
// The whole size of the frame whose header `header` starts with (at least kFrameHeaderSize
// bytes), from its magic, version and body length alone: where a byte stream's frame ends
// (transport/tcp/frame_stream.h). InvalidArgument as ParseHeader for those fields.
absl::StatusOr<uint64_t> FrameSize(absl::Span<const uint8_t> header);

// Requests, encoded into `out`; they return the frame's total length. ResourceExhausted when
// the frame does not fit `out` (the caller sends the call over gRPC instead), InvalidArgument
// when a field cannot be encoded (a table name or family over 65535 bytes, > 65535 columns,
// a durability or mutation kind outside the proto's enum).
// `reply_buffer`: where a large reply may be written (kFlagReplyBuffer; length = capacity).
absl::StatusOr<size_t> EncodeGetRequest(uint64_t request_id, const rpc::GetRequest& req, absl::Span<uint8_t> out,
                                        const RemoteBuffer* reply_buffer = nullptr);
absl::StatusOr<size_t> EncodeMutateRequest(uint64_t request_id, const rpc::MutateRequest& req,
                                           absl::Span<uint8_t> out);

// A Get request read in place (the server side): the frame's fields, its strings views into the
// frame's bytes (valid while they are), so that the server calls the store without building a
// GetRequest on the way. The filter and snapshot, carried as protobuf, are parsed (into the
// view's own messages, reused). Reusable: decoding into it again keeps its vectors' capacity.
struct GetRequestView {
  struct Column {
    std::string_view family;
    std::vector<std::string_view> qualifiers;  // none: the whole family
  };
  std::string_view table, row;
  int64_t min_ts = 0;
  bool has_max_ts = false;
  int64_t max_ts = 0;  // 0 unless has_max_ts
  int32_t max_versions = 0;
  bool skip_block_cache = false;
  std::vector<Column> columns;  // none: every family
  bool has_filter = false;      // kFlagFilter
  rpc::Filter filter;
  bool has_transaction = false;  // kFlagTransaction
  rpc::TransactionSnapshot transaction;
  size_t frame_bytes = 0;  // the whole request frame's, header included
};
// The GetRequest the view was encoded from (EncodeGetRequest of it gives the frame's bytes
// again, with the same reply buffer): for a caller that needs the message itself.
void GetRequestFromView(const GetRequestView& view, rpc::GetRequest* req);

// A decoded request (the server side).
struct DecodedRequest {
  FrameHeader header;
  std::optional<RemoteBuffer> reply_buffer;  // a Get's, with kFlagReplyBuffer (length = capacity)
  GetRequestView get;                        // header.op == kGet: views into the frame decoded
  rpc::MutateRequest mutate;                 // header.op == kMutate
  // Set for a rendezvous descriptor (kFlagRendezvous): neither is then decoded; the server
  // reads the request from here and decodes it with DecodeRendezvousRequest.
  std::optional<RemoteBuffer> rendezvous;
};
// Decodes a whole request frame (header and body). InvalidArgument on anything malformed,
// including a reply op, a status or flags other than 0 (kFlagFilter and kFlagReplyBuffer on a
// Get, kFlagTransaction; kFlagRendezvous alone), a filter or snapshot that does not parse or is
// not as the encoder serializes it, or bytes after the body. A Get is read in place (`get`
// refers to `in`'s bytes); a Mutate is decoded into `mutate`, which always has `mutation` set,
// as the client sends it. What `out` held is reused (cleared, capacity kept).
absl::Status DecodeRequest(absl::Span<const uint8_t> in, DecodedRequest* out);
// Decodes the request a rendezvous descriptor `descriptor` pointed at (read into `in`): as
// DecodeRequest, and its op and id must be the descriptor's and it may not be a descriptor.
absl::Status DecodeRendezvousRequest(absl::Span<const uint8_t> in, const FrameHeader& descriptor,
                                     DecodedRequest* out);
// A rendezvous descriptor for a request frame of `op` and `request_id` at `where`; writes
// kRendezvousFrameSize bytes (`out` must hold them) and returns that.
size_t EncodeRendezvous(FrameOp op, uint64_t request_id, const RemoteBuffer& where, absl::Span<uint8_t> out);

// Replies. `status` not OK: an error reply carrying the code and message (the message is cut
// to fit, at a UTF-8 character boundary). A Get reply whose row does not fit `out` (or that the
// frame cannot carry: a family over 65535 bytes, a cell that is not a put) becomes a reply with
// kFlagTooLarge and status ResourceExhausted. `resp` null with an OK status: an empty row.
// Never fails: returns the frame length. `out` must hold at least kMinReplyBuffer bytes (with
// fewer than kFrameHeaderSize + 4 they write nothing and return 0).
inline constexpr size_t kMinReplyBuffer = 256;
size_t EncodeGetReply(uint64_t request_id, const absl::Status& status, const rpc::GetResponse* resp,
                      absl::Span<uint8_t> out);
// The small replies of a request with a reply buffer: the reply of `length` bytes was written to
// it; or the reply needs `needed` bytes, more than the buffer holds.
size_t EncodeReplyWritten(uint64_t request_id, uint32_t length, absl::Span<uint8_t> out);
size_t EncodeTooLargeNeeding(uint64_t request_id, uint64_t needed, absl::Span<uint8_t> out);
// What a Get reply to a request with a reply buffer says about it: neither (an ordinary reply,
// decoded with DecodeGetReply), written (the reply frame is in the buffer, `length` bytes), or
// too large (it needs `needed` bytes). Internal on a malformed one.
struct ReplyPlacement {
  bool written = false;
  uint32_t length = 0;
  bool too_large = false;
  uint64_t needed = 0;
};
absl::StatusOr<ReplyPlacement> ParseReplyPlacement(absl::Span<const uint8_t> in, uint64_t request_id);

// A Get reply's row as its holder has it (an rpc::Row, or the server's storage row), so that
// the reply is encoded from it without building protobuf messages first. The views stay valid
// while the encoder runs.
struct ReplyCell {
  std::string_view family, qualifier, value;
  int64_t timestamp = 0;
  bool put = true;  // reads return puts only; anything else is not representable
};
class ReplyRow {
 public:
  virtual ~ReplyRow() = default;
  virtual std::string_view row() const = 0;
  virtual size_t size() const = 0;
  virtual ReplyCell cell(size_t i) const = 0;
};
// EncodeGetReply from a ReplyRow (`row` null with an OK status: an empty row); the same bytes
// as EncodeGetReply of the same cells, the same too-large and error replies.
// `needed`, when given, is set to the frame's size when the row is too large only for `out`
// (0 otherwise).
size_t EncodeGetReplyRow(uint64_t request_id, const absl::Status& status, const ReplyRow* row,
                         absl::Span<uint8_t> out, uint64_t* needed = nullptr);
size_t EncodeMutateReply(uint64_t request_id, const absl::Status& status, absl::Span<uint8_t> out);

// Client side: decodes a reply frame of the expected op and request id. Returns the server's
// status (an error reply's code and message, prefixed with nothing); a malformed or mismatched
// frame is Internal ("verbs frame: ..."), as are unknown flags. A too-large reply sets
// *too_large (when given; otherwise it is set false) and returns ResourceExhausted. `resp`
// (not null) is cleared first; an OK reply always sets its row, with the key the server sent,
// as the gRPC Get does.
absl::Status DecodeGetReply(absl::Span<const uint8_t> in, uint64_t request_id, rpc::GetResponse* resp,
                            bool* too_large = nullptr);
// `too_large`: set for a kFlagTooLarge reply (the call goes over gRPC).
absl::Status DecodeMutateReply(absl::Span<const uint8_t> in, uint64_t request_id, bool* too_large = nullptr);
// "Take this call to gRPC" (kFlagTooLarge, ResourceExhausted, `why`): the server's answer to a
// rendezvous it cannot take now (its budget, memory, or a connection without RDMA READ).
size_t EncodeTooLargeReply(FrameOp reply_op, uint64_t request_id, std::string_view why, absl::Span<uint8_t> out);

}  // namespace basalt::verbs
