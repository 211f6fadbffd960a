// HBase's RPC framing on a TCP connection, both ways, without I/O (the front end feeds bytes in
// and writes what comes out):
//
//   client → server   "HBas" 0x00 0x50                    preamble: magic, version 0, SIMPLE auth
//                     u32 BE length, ConnectionHeader     (the message whole, not varint-delimited)
//                     then calls, any number, pipelined:
//                     u32 BE length | varint-delimited RequestHeader | varint-delimited request
//                                   | cell block (RequestHeader.cell_block_meta.length bytes)
//   server → client   answers, in any order (call_id says which):
//                     u32 BE length | varint-delimited ResponseHeader | varint-delimited response
//                                   | cell block
//
// A ResponseHeader with an ExceptionResponse and no message is a failed call; one with call_id
// -1 (0xffffffff) ends the connection (a bad preamble or header). Integers are big-endian.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message_lite.h"
#include "proto/hbase/hbase_rpc.pb.h"

namespace basalt::hbase {

inline constexpr char kPreambleMagic[] = "HBas";
inline constexpr uint8_t kRpcVersion = 0;
inline constexpr uint8_t kAuthSimple = 0x50;  // HBase's AuthMethod.SIMPLE
inline constexpr size_t kPreambleBytes = 6;
// The call id of an answer that is about the connection, not a call.
inline constexpr uint32_t kConnectionCallId = 0xffffffffu;

// One call as it came off the wire: its header, its request message's bytes (parsed by the
// service that knows its type from the method name), and its cell block's bytes.
struct Call {
  RequestHeader header;
  std::string param;
  std::string cell_block;
  // Not OK when the call's frame was whole but its request or cell block were not (a length
  // that runs past the frame): the call is answered with this error, and the connection goes on.
  absl::Status malformed;
};

// Reads a connection's bytes as they arrive, in any pieces. Not thread-safe: one per connection.
class ConnectionReader {
 public:
  // A frame (the connection header or a call) longer than max_frame_bytes is refused before it
  // is read, so a client cannot make the server hold more than that for one call.
  explicit ConnectionReader(uint32_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

  // Appends bytes read from the socket.
  void Feed(std::string_view bytes) { buffer_.append(bytes); }

  // The next whole call, once the preamble and the connection header are in; nullopt while more
  // bytes are needed. An error (a bad preamble, a malformed or oversized frame) is for good: the
  // connection is answered with ConnectionError's frame and closed; its message says what was
  // wrong (the Java client shows it).
  absl::StatusOr<std::optional<Call>> Next();

  // Set once the connection header has been read.
  const std::optional<ConnectionHeader>& header() const { return header_; }
  // Bytes received and not yet consumed (for the front end's bounds).
  size_t buffered() const { return buffer_.size() - consumed_; }

 private:
  // The next length-prefixed frame's body, or nullopt while it is incomplete.
  absl::StatusOr<std::optional<std::string_view>> NextFrame();
  void Compact();

  const uint32_t max_frame_bytes_;
  std::string buffer_;
  size_t consumed_ = 0;
  bool preamble_read_ = false;
  std::optional<ConnectionHeader> header_;
  absl::Status failed_;
};

// An answer's frame: the ResponseHeader for `call_id` (with cell_block_meta when `cell_block`
// is not empty), the response message, then the cell block.
std::string EncodeResponse(uint32_t call_id, const google::protobuf::MessageLite& response,
                           std::string_view cell_block = {});

// A failed call's frame: an ExceptionResponse naming the Java class the client rebuilds, with
// `message` as its text. `do_not_retry` and `server_overloaded` steer the client's retries.
std::string EncodeException(uint32_t call_id, std::string_view exception_class, std::string_view message,
                            bool do_not_retry = false, bool server_overloaded = false);

// The frame that ends a connection the reader refused: HBase's FatalConnectionException with
// the reader's message, call id -1.
std::string ConnectionError(const absl::Status& why);

// The client's side of the same framing, for the tests and tools that speak to the port as an
// HBase client does.
//
// The preamble and the ConnectionHeader a client opens a connection with.
std::string EncodeHello(const ConnectionHeader& header);
// A call's frame: the RequestHeader, the request's bytes (when header.request_param()), then
// the cell block (the header's cell_block_meta must give its length).
std::string EncodeCall(const RequestHeader& header, std::string_view param, std::string_view cell_block = {});
// One answer as the client reads it from a frame's body (after the 4-byte length).
struct Answer {
  ResponseHeader header;
  std::string message;     // empty when header.has_exception()
  std::string cell_block;
};
absl::StatusOr<Answer> DecodeAnswer(std::string_view body);
// The length of the frame that starts `bytes` (4-byte length + body) once it is whole in them;
// nullopt while it is not.
std::optional<size_t> WholeFrame(std::string_view bytes);

}  // namespace basalt::hbase
