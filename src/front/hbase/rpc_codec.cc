#include "src/front/hbase/rpc_codec.h"

#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/status.h"

namespace basalt::hbase {
namespace {

uint32_t DecodeFixed32BE(const char* p) { return __builtin_bswap32(DecodeFixed32(p)); }
void PutFixed32BE(std::string* out, uint32_t v) { PutFixed32(out, __builtin_bswap32(v)); }

// A varint-delimited message's bytes from the front of *in.
absl::StatusOr<std::string_view> Delimited(std::string_view* in, std::string_view what) {
  uint32_t n = 0;
  const char* p = DecodeVarint32(in->data(), in->data() + in->size(), &n);
  if (p == nullptr || n > static_cast<size_t>(in->data() + in->size() - p)) {
    return absl::InvalidArgumentError(absl::StrCat("malformed call: the ", AV(what), "'s length runs past its frame"));
  }
  std::string_view body(p, n);
  in->remove_prefix(static_cast<size_t>(p - in->data()) + n);
  return body;
}

void AppendDelimited(std::string* out, const google::protobuf::MessageLite& m) {
  PutVarint32(out, static_cast<uint32_t>(m.ByteSizeLong()));
  m.AppendToString(out);
}

std::string Frame(const ResponseHeader& header, const google::protobuf::MessageLite* response,
                  std::string_view cell_block) {
  std::string body;
  AppendDelimited(&body, header);
  if (response != nullptr) AppendDelimited(&body, *response);
  body.append(cell_block);
  std::string out;
  out.reserve(4 + body.size());
  PutFixed32BE(&out, static_cast<uint32_t>(body.size()));
  out.append(body);
  return out;
}

}  // namespace

absl::StatusOr<std::optional<std::string_view>> ConnectionReader::NextFrame() {
  if (buffered() < 4) return std::nullopt;
  const uint32_t n = DecodeFixed32BE(buffer_.data() + consumed_);
  if (n > max_frame_bytes_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a frame of ", n, " bytes is over this server's limit of ", max_frame_bytes_));
  }
  if (buffered() - 4 < n) return std::nullopt;
  std::string_view body(buffer_.data() + consumed_ + 4, n);
  consumed_ += 4 + n;
  return body;
}

void ConnectionReader::Compact() {
  // Called between frames: what was consumed is dropped once it is most of the buffer.
  if (consumed_ > 0 && consumed_ * 2 >= buffer_.size()) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
}

absl::StatusOr<std::optional<Call>> ConnectionReader::Next() {
  if (!failed_.ok()) return failed_;
  auto fail = [this](absl::Status s) {
    failed_ = std::move(s);
    return failed_;
  };
  if (!preamble_read_) {
    if (buffered() < kPreambleBytes) return std::nullopt;
    const std::string_view p(buffer_.data() + consumed_, kPreambleBytes);
    if (p.substr(0, 4) != kPreambleMagic) {
      return fail(absl::InvalidArgumentError(
          absl::StrCat("Expected HEADER=HBas but received HEADER=", absl::CHexEscape(AV(p.substr(0, 4))))));
    }
    if (static_cast<uint8_t>(p[4]) != kRpcVersion) {
      return fail(absl::InvalidArgumentError(
          absl::StrCat("version ", static_cast<int>(static_cast<uint8_t>(p[4])), " of HBase's RPC is not served (0 is)")));
    }
    if (static_cast<uint8_t>(p[5]) != kAuthSimple) {
      return fail(absl::InvalidArgumentError(absl::StrCat(
          "authentication method ", static_cast<int>(static_cast<uint8_t>(p[5])), " is not served (SIMPLE, 80, is)")));
    }
    consumed_ += kPreambleBytes;
    preamble_read_ = true;
  }
  if (!header_.has_value()) {
    absl::StatusOr<std::optional<std::string_view>> frame = NextFrame();
    if (!frame.ok()) return fail(frame.status());
    if (!frame->has_value()) return std::nullopt;
    ConnectionHeader h;
    // Parsed partially, so that protobuf logs nothing; what is missing is said here instead.
    if (!h.ParsePartialFromArray((*frame)->data(), static_cast<int>((*frame)->size()))) {
      return fail(absl::InvalidArgumentError("malformed connection header"));
    }
    if (!h.IsInitialized()) {
      return fail(absl::InvalidArgumentError(
          absl::StrCat("malformed connection header: it lacks ", h.InitializationErrorString())));
    }
    header_ = std::move(h);
  }
  absl::StatusOr<std::optional<std::string_view>> frame = NextFrame();
  if (!frame.ok()) return fail(frame.status());
  if (!frame->has_value()) {
    Compact();
    return std::nullopt;
  }
  std::string_view body = **frame;
  Call call;
  absl::StatusOr<std::string_view> header = Delimited(&body, "request header");
  if (!header.ok()) return fail(header.status());
  if (!call.header.ParsePartialFromArray(header->data(), static_cast<int>(header->size())) ||
      !call.header.IsInitialized()) {
    return fail(absl::InvalidArgumentError("malformed call: its request header does not parse"));
  }
  // From here the frame is whole and the call known: what is wrong inside it is this call's
  // (answered with an exception, as HBase does), and the connection goes on with the next frame.
  // `body` points into buffer_: the buffer is compacted only once the call holds its own copies.
  if (call.header.request_param()) {
    absl::StatusOr<std::string_view> param = Delimited(&body, "request");
    if (param.ok()) {
      call.param = std::string(*param);
    } else {
      call.malformed = param.status();
    }
  }
  const uint32_t cells = call.header.has_cell_block_meta() ? call.header.cell_block_meta().length() : 0;
  if (call.malformed.ok() && body.size() != cells) {
    call.malformed = absl::InvalidArgumentError(absl::StrCat("malformed call ", call.header.call_id(), ": ", body.size(),
                                                             " bytes follow its request where its cell block has ", cells));
    call.param.clear();
  }
  if (call.malformed.ok()) call.cell_block = std::string(body);
  Compact();
  return call;
}

std::string EncodeResponse(uint32_t call_id, const google::protobuf::MessageLite& response, std::string_view cell_block) {
  ResponseHeader h;
  h.set_call_id(call_id);
  if (!cell_block.empty()) h.mutable_cell_block_meta()->set_length(static_cast<uint32_t>(cell_block.size()));
  return Frame(h, &response, cell_block);
}

std::string EncodeException(uint32_t call_id, std::string_view exception_class, std::string_view message,
                            bool do_not_retry, bool server_overloaded) {
  ResponseHeader h;
  h.set_call_id(call_id);
  ExceptionResponse* e = h.mutable_exception();
  e->set_exception_class_name(std::string(exception_class));
  e->set_stack_trace(std::string(message));
  if (do_not_retry) e->set_do_not_retry(true);
  if (server_overloaded) e->set_server_overloaded(true);
  return Frame(h, nullptr, {});
}

std::string ConnectionError(const absl::Status& why) {
  return EncodeException(kConnectionCallId, "org.apache.hadoop.hbase.ipc.FatalConnectionException",
                         std::string(why.message()), /*do_not_retry=*/true);
}

std::string EncodeHello(const ConnectionHeader& header) {
  std::string out(kPreambleMagic, 4);
  out.push_back(static_cast<char>(kRpcVersion));
  out.push_back(static_cast<char>(kAuthSimple));
  PutFixed32BE(&out, static_cast<uint32_t>(header.ByteSizeLong()));
  header.AppendToString(&out);
  return out;
}

std::string EncodeCall(const RequestHeader& header, std::string_view param, std::string_view cell_block) {
  std::string body;
  AppendDelimited(&body, header);
  if (header.request_param()) {
    PutVarint32(&body, static_cast<uint32_t>(param.size()));
    body.append(param);
  }
  body.append(cell_block);
  std::string out;
  PutFixed32BE(&out, static_cast<uint32_t>(body.size()));
  return out + body;
}

absl::StatusOr<Answer> DecodeAnswer(std::string_view body) {
  Answer a;
  absl::StatusOr<std::string_view> header = Delimited(&body, "response header");
  if (!header.ok()) return header.status();
  if (!a.header.ParsePartialFromArray(header->data(), static_cast<int>(header->size())) ||
      !a.header.IsInitialized()) {
    return absl::InvalidArgumentError("malformed answer: its response header does not parse");
  }
  if (!a.header.has_exception()) {
    absl::StatusOr<std::string_view> message = Delimited(&body, "response");
    if (!message.ok()) return message.status();
    a.message = std::string(*message);
  }
  a.cell_block = std::string(body);
  return a;
}

std::optional<size_t> WholeFrame(std::string_view bytes) {
  if (bytes.size() < 4) return std::nullopt;
  const size_t n = 4 + static_cast<size_t>(DecodeFixed32BE(bytes.data()));
  if (bytes.size() < n) return std::nullopt;
  return n;
}

}  // namespace basalt::hbase
