// The verbs wire frame codec (layout in frame.h). Encoders size the frame in one pass over the
// message, so nothing is written unless it fits, then write it with unchecked little-endian
// stores straight into the caller's buffer: no allocation, no intermediate string. Decoders
// read in place through a cursor that checks every length against the bytes left before it
// reads. Stateless; every function is safe to call from any thread.
#include "transport/verbs/frame.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/status.h"

namespace basalt::verbs {
namespace {

// coding.h's fixed-width helpers store in host order; the frame is little-endian.
static_assert(std::endian::native == std::endian::little, "the verbs frame codec needs a little-endian host");

constexpr uint64_t kMax16 = 0xFFFF;
constexpr uint64_t kMax32 = 0xFFFFFFFF;
constexpr uint16_t kMaxStatusCode = static_cast<uint16_t>(absl::StatusCode::kUnauthenticated);  // 16
constexpr uint8_t kMaxDurability = rpc::DURABILITY_SKIP_WAL;
constexpr uint8_t kMaxMutationKind = rpc::Mutation::DELETE_ROW;

// Header field offsets (frame.h).
constexpr size_t kMagicAt = 0;
constexpr size_t kVersionAt = 2;
constexpr size_t kOpAt = 3;
constexpr size_t kBodyLenAt = 4;
constexpr size_t kRequestIdAt = 8;
constexpr size_t kStatusAt = 16;
constexpr size_t kFlagsAt = 18;
constexpr size_t kReservedAt = 20;
static_assert(kReservedAt + 4 == kFrameHeaderSize);

// Fixed parts of the bodies, and the smallest encoding of each repeated element: a count read
// from the wire is checked against bytes left / smallest element before anything is reserved.
constexpr size_t kGetFixed = 2 + 4 + 8 + 1 + 8 + 4 + 1 + 2;  // lengths, ts, flags, ncolumns
constexpr size_t kMutateFixed = 2 + 1 + 4 + 4;                 // lengths, durability, nmutations
constexpr size_t kMinColumn = 2 + 4;                           // bytes16 family, u32 nqualifiers
constexpr size_t kMinQualifier = 4;
constexpr size_t kMinMutation = 1 + 1 + 8 + 2 + 4 + 4;
constexpr size_t kMinCell = 2 + 4 + 8 + 4;
constexpr size_t kStatusReplyMin = kFrameHeaderSize + 4;  // header, empty message

constexpr std::string_view kTooLargeMessage = "reply too large for a verbs message";

std::string_view SV(absl::string_view s) { return std::string_view(s.data(), s.size()); }

// ---------------------------------------------------------------------------------------------
// Writing: the caller has sized the frame, so stores are unchecked.

class Writer {
 public:
  explicit Writer(uint8_t* p) : p_(p) {}
  void U8(uint8_t v) { *p_++ = v; }
  void U16(uint16_t v) {
    EncodeFixed16(reinterpret_cast<char*>(p_), v);
    p_ += 2;
  }
  void U32(uint32_t v) {
    EncodeFixed32(reinterpret_cast<char*>(p_), v);
    p_ += 4;
  }
  void U64(uint64_t v) {
    EncodeFixed64(reinterpret_cast<char*>(p_), v);
    p_ += 8;
  }
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void Raw(std::string_view s) {
    if (!s.empty()) std::memcpy(p_, s.data(), s.size());  // an empty view's data() may be null
    p_ += s.size();
  }
  void Bytes16(std::string_view s) {
    U16(static_cast<uint16_t>(s.size()));
    Raw(s);
  }
  void Bytes32(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    Raw(s);
  }
  // A message whose ByteSizeLong() was `size` (its sizes cached), as bytes32.
  void Message32(const google::protobuf::MessageLite& m, size_t size) {
    U32(static_cast<uint32_t>(size));
    p_ = m.SerializeWithCachedSizesToArray(p_);
  }
  uint8_t* pos() const { return p_; }

 private:
  uint8_t* p_;
};

void WriteHeader(uint8_t* p, FrameOp op, size_t body_len, uint64_t request_id, uint16_t status, uint16_t flags) {
  Writer w(p);
  w.U16(kFrameMagic);
  w.U8(kFrameVersion);
  w.U8(static_cast<uint8_t>(op));
  w.U32(static_cast<uint32_t>(body_len));
  w.U64(request_id);
  w.U16(status);
  w.U16(flags);
  w.U32(0);
}

// Request fields that the frame cannot carry.
absl::Status TooLong(std::string_view what, size_t n, uint64_t max) {
  return absl::InvalidArgumentError(absl::StrCat("verbs frame: ", AV(what), " of ", n, " bytes is over ", max));
}

// ResourceExhausted when a request body of `body` bytes does not fit `out`.
absl::Status CheckFits(std::string_view what, uint64_t body, size_t out) {
  if (body <= kMax32 && body <= out && out - body >= kFrameHeaderSize) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat("verbs frame: ", AV(what), " of ", kFrameHeaderSize + body,
                                                   " bytes does not fit a verbs message of ", out, " bytes"));
}

// A reply with a status and a message (cut to fit `out`, at a UTF-8 character boundary).
size_t EncodeStatusReply(FrameOp op, uint64_t request_id, absl::StatusCode code, uint16_t flags,
                         std::string_view message, absl::Span<uint8_t> out) {
  if (out.size() < kStatusReplyMin) return 0;  // broken kMinReplyBuffer contract (asserted by callers)
  size_t n = std::min<uint64_t>({message.size(), out.size() - kStatusReplyMin, kMax32});
  if (n < message.size()) {
    while (n > 0 && (static_cast<uint8_t>(message[n]) & 0xC0) == 0x80) --n;
  }
  message = message.substr(0, n);
  WriteHeader(out.data(), op, 4 + n, request_id, static_cast<uint16_t>(code), flags);
  Writer w(out.data() + kFrameHeaderSize);
  w.Bytes32(message);
  return kFrameHeaderSize + 4 + n;
}

// ---------------------------------------------------------------------------------------------
// Reading: every read is checked against the end of the frame; offsets in messages count from
// the frame's first byte.

absl::Status Malformed(std::string_view what, size_t at) {
  return absl::InvalidArgumentError(absl::StrCat("verbs frame: ", AV(what), " at offset ", at));
}

class Reader {
 public:
  Reader(const uint8_t* frame, size_t pos, size_t end) : p_(frame), pos_(pos), end_(end) {}
  size_t pos() const { return pos_; }
  size_t left() const { return end_ - pos_; }

  absl::Status U8(const char* what, uint8_t* v) {
    BASALT_RETURN_IF_ERROR(Need(what, 1));
    *v = p_[pos_++];
    return absl::OkStatus();
  }
  absl::Status U16(const char* what, uint16_t* v) {
    BASALT_RETURN_IF_ERROR(Need(what, 2));
    *v = DecodeFixed16(At());
    pos_ += 2;
    return absl::OkStatus();
  }
  absl::Status U32(const char* what, uint32_t* v) {
    BASALT_RETURN_IF_ERROR(Need(what, 4));
    *v = DecodeFixed32(At());
    pos_ += 4;
    return absl::OkStatus();
  }
  absl::Status I32(const char* what, int32_t* v) {
    uint32_t u = 0;
    BASALT_RETURN_IF_ERROR(U32(what, &u));
    *v = static_cast<int32_t>(u);
    return absl::OkStatus();
  }
  absl::Status U64(const char* what, uint64_t* v) {
    BASALT_RETURN_IF_ERROR(Need(what, 8));
    *v = DecodeFixed64(At());
    pos_ += 8;
    return absl::OkStatus();
  }
  absl::Status I64(const char* what, int64_t* v) {
    uint64_t u = 0;
    BASALT_RETURN_IF_ERROR(U64(what, &u));
    *v = static_cast<int64_t>(u);
    return absl::OkStatus();
  }
  // A u8 that must be at most `max` (enums, booleans).
  absl::Status Enum(const char* what, uint8_t max, uint8_t* v) {
    const size_t at = pos_;
    BASALT_RETURN_IF_ERROR(U8(what, v));
    if (*v > max) return Malformed(absl::StrCat("unknown ", what, " ", *v), at);
    return absl::OkStatus();
  }
  absl::Status Bytes16(const char* what, std::string_view* v) {
    const size_t at = pos_;
    uint16_t n = 0;
    BASALT_RETURN_IF_ERROR(U16(what, &n));
    return Take(what, at, n, v);
  }
  absl::Status Bytes32(const char* what, std::string_view* v) {
    const size_t at = pos_;
    uint32_t n = 0;
    BASALT_RETURN_IF_ERROR(U32(what, &n));
    return Take(what, at, n, v);
  }
  // A count just read at `at`: its elements, `min_each` bytes or more apiece, must fit what is left.
  absl::Status Count(const char* what, size_t at, uint64_t n, size_t min_each) const {
    if (n <= left() / min_each) return absl::OkStatus();
    return Malformed(absl::StrCat(n, " ", what, " cannot fit the ", left(), " bytes left"), at);
  }
  absl::Status Finish() const {
    if (pos_ == end_) return absl::OkStatus();
    return Malformed(absl::StrCat(left(), " trailing bytes"), pos_);
  }

 private:
  const char* At() const { return reinterpret_cast<const char*>(p_ + pos_); }
  absl::Status Need(const char* what, size_t n) const {
    if (n <= left()) return absl::OkStatus();
    return Malformed(absl::StrCat("truncated ", what, " (", n, " bytes, ", left(), " left)"), pos_);
  }
  absl::Status Take(const char* what, size_t at, size_t n, std::string_view* v) {
    if (n > left()) {
      return Malformed(absl::StrCat(what, " of ", n, " bytes overruns the frame (", left(), " bytes left)"), at);
    }
    *v = std::string_view(At(), n);
    pos_ += n;
    return absl::OkStatus();
  }

  const uint8_t* p_;
  size_t pos_;
  size_t end_;
};

// "u8 has | i64 value" of an optional timestamp: has is 0 or 1, and an absent value is 0 (one
// encoding per message, so re-encoding a decoded frame gives the same bytes).
absl::Status OptionalTimestamp(Reader& r, const char* what, bool* has, int64_t* ts) {
  uint8_t flag = 0;
  BASALT_RETURN_IF_ERROR(r.Enum("timestamp presence flag", 1, &flag));
  const size_t at = r.pos();
  BASALT_RETURN_IF_ERROR(r.I64(what, ts));
  *has = flag != 0;
  if (!*has && *ts != 0) return Malformed(absl::StrCat("absent ", what, " is ", *ts, ", not 0"), at);
  return absl::OkStatus();
}

// A protobuf message of the frame, refused unless canonical: the bytes the encoder writes for
// what they parse to.
absl::Status CanonicalMessage32(Reader& r, const char* what, google::protobuf::MessageLite* m) {
  const size_t at = r.pos();
  std::string_view s;
  BASALT_RETURN_IF_ERROR(r.Bytes32(what, &s));
  thread_local std::string canonical;  // reused: no allocation per request once warm
  if (!m->ParseFromArray(s.data(), static_cast<int>(s.size())) || !m->SerializeToString(&canonical) ||
      canonical != s) {
    return Malformed(absl::StrCat(what, " is not a canonically serialized ", m->GetTypeName()), at);
  }
  return absl::OkStatus();
}

absl::Status DecodeGetBody(Reader& r, bool with_filter, bool with_transaction, GetRequestView* v,
                           std::optional<RemoteBuffer>* reply_buffer) {
  BASALT_RETURN_IF_ERROR(r.Bytes16("table", &v->table));
  BASALT_RETURN_IF_ERROR(r.Bytes32("row", &v->row));
  BASALT_RETURN_IF_ERROR(r.I64("min_ts", &v->min_ts));
  BASALT_RETURN_IF_ERROR(OptionalTimestamp(r, "max_ts", &v->has_max_ts, &v->max_ts));
  BASALT_RETURN_IF_ERROR(r.I32("max_versions", &v->max_versions));
  uint8_t skip = 0;
  BASALT_RETURN_IF_ERROR(r.Enum("skip_block_cache", 1, &skip));
  v->skip_block_cache = skip != 0;
  size_t at = r.pos();
  uint16_t ncolumns = 0;
  BASALT_RETURN_IF_ERROR(r.U16("ncolumns", &ncolumns));
  BASALT_RETURN_IF_ERROR(r.Count("columns", at, ncolumns, kMinColumn));
  v->columns.resize(ncolumns);
  for (GetRequestView::Column& col : v->columns) {
    BASALT_RETURN_IF_ERROR(r.Bytes16("family", &col.family));
    at = r.pos();
    uint32_t nq = 0;
    BASALT_RETURN_IF_ERROR(r.U32("nqualifiers", &nq));
    BASALT_RETURN_IF_ERROR(r.Count("qualifiers", at, nq, kMinQualifier));
    col.qualifiers.resize(nq);
    for (std::string_view& q : col.qualifiers) BASALT_RETURN_IF_ERROR(r.Bytes32("qualifier", &q));
  }
  v->has_filter = with_filter;
  if (with_filter) BASALT_RETURN_IF_ERROR(CanonicalMessage32(r, "filter", &v->filter));
  v->has_transaction = with_transaction;
  if (with_transaction) BASALT_RETURN_IF_ERROR(CanonicalMessage32(r, "snapshot", &v->transaction));
  if (reply_buffer != nullptr) {
    RemoteBuffer b;
    BASALT_RETURN_IF_ERROR(r.U64("reply buffer addr", &b.addr));
    BASALT_RETURN_IF_ERROR(r.U32("reply buffer rkey", &b.rkey));
    BASALT_RETURN_IF_ERROR(r.U32("reply buffer capacity", &b.length));
    *reply_buffer = b;
  }
  return r.Finish();
}

absl::Status DecodeMutateBody(Reader& r, bool with_transaction, bool with_nonce, rpc::MutateRequest* req) {
  std::string_view s;
  BASALT_RETURN_IF_ERROR(r.Bytes16("table", &s));
  req->set_table(s.data(), s.size());
  uint8_t durability = 0;
  BASALT_RETURN_IF_ERROR(r.Enum("durability", kMaxDurability, &durability));
  req->set_durability(static_cast<rpc::Durability>(durability));
  rpc::RowMutations* rm = req->mutable_mutation();
  BASALT_RETURN_IF_ERROR(r.Bytes32("row", &s));
  rm->set_row(s.data(), s.size());
  const size_t at = r.pos();
  uint32_t n = 0;
  BASALT_RETURN_IF_ERROR(r.U32("nmutations", &n));
  BASALT_RETURN_IF_ERROR(r.Count("mutations", at, n, kMinMutation));
  rm->mutable_mutations()->Reserve(static_cast<int>(n));
  for (uint32_t i = 0; i < n; ++i) {
    rpc::Mutation* m = rm->add_mutations();
    uint8_t kind = 0;
    BASALT_RETURN_IF_ERROR(r.Enum("mutation kind", kMaxMutationKind, &kind));
    m->set_kind(static_cast<rpc::Mutation::Kind>(kind));
    bool has_ts = false;
    int64_t ts = 0;
    BASALT_RETURN_IF_ERROR(OptionalTimestamp(r, "mutation timestamp", &has_ts, &ts));
    if (has_ts) m->set_timestamp(ts);
    BASALT_RETURN_IF_ERROR(r.Bytes16("family", &s));
    m->set_family(s.data(), s.size());
    BASALT_RETURN_IF_ERROR(r.Bytes32("qualifier", &s));
    m->set_qualifier(s.data(), s.size());
    BASALT_RETURN_IF_ERROR(r.Bytes32("value", &s));
    m->set_value(s.data(), s.size());
  }
  if (with_transaction) {
    const size_t tx_at = r.pos();
    int64_t tx = 0;
    BASALT_RETURN_IF_ERROR(r.I64("transaction", &tx));
    if (tx <= 0) return Malformed(absl::StrCat("transaction ", tx, " is not a write pointer"), tx_at);
    req->set_transaction(tx);
    uint8_t rollback = 0;
    BASALT_RETURN_IF_ERROR(r.Enum("rollback", 1, &rollback));
    req->set_rollback(rollback != 0);
  }
  if (with_nonce) {
    uint64_t group = 0, nonce = 0;
    BASALT_RETURN_IF_ERROR(r.U64("nonce group", &group));
    const size_t nonce_at = r.pos();
    BASALT_RETURN_IF_ERROR(r.U64("nonce", &nonce));
    if (nonce == 0) return Malformed("nonce 0 with kFlagNonce", nonce_at);
    req->mutable_nonce()->set_group(group);
    req->mutable_nonce()->set_nonce(nonce);
  }
  return r.Finish();
}

// Client side: a malformed reply is the server's (or the wire's) fault, not the caller's.
absl::Status AsInternal(const absl::Status& s) {
  if (s.ok()) return s;
  return absl::InternalError(s.message());
}

// Checks a reply's header against the call it answers; Internal on any mismatch.
absl::Status CheckReplyHeader(absl::Span<const uint8_t> in, FrameOp want, uint64_t request_id, FrameHeader* h) {
  absl::StatusOr<FrameHeader> parsed = ParseHeader(in);
  if (!parsed.ok()) return AsInternal(parsed.status());
  *h = *parsed;
  if (h->op != want) {
    return absl::InternalError(absl::StrCat("verbs frame: op 0x", absl::Hex(static_cast<uint8_t>(h->op)),
                                            " where 0x", absl::Hex(static_cast<uint8_t>(want)),
                                            " was expected at offset ", kOpAt));
  }
  if (h->request_id != request_id) {
    return absl::InternalError(absl::StrCat("verbs frame: reply to request ", h->request_id, " where ", request_id,
                                            " was expected at offset ", kRequestIdAt));
  }
  if (kFrameHeaderSize + h->body_len != in.size()) {
    return absl::InternalError(absl::StrCat("verbs frame: ", in.size() - kFrameHeaderSize - h->body_len,
                                            " trailing bytes at offset ", kFrameHeaderSize + h->body_len));
  }
  return absl::OkStatus();
}

// The body of a reply with a status other than OK: the server's message.
absl::Status DecodeStatusBody(Reader& r, std::string_view* message) {
  BASALT_RETURN_IF_ERROR(r.Bytes32("message", message));
  return r.Finish();
}

}  // namespace

absl::StatusOr<uint64_t> FrameSize(absl::Span<const uint8_t> header) {
  if (header.size() < kFrameHeaderSize) {
    return Malformed(absl::StrCat("truncated header (", header.size(), " of ", kFrameHeaderSize, " bytes)"), 0);
  }
  const char* p = reinterpret_cast<const char*>(header.data());
  const uint16_t magic = DecodeFixed16(p + kMagicAt);
  if (magic != kFrameMagic) return Malformed(absl::StrCat("bad magic 0x", absl::Hex(magic)), kMagicAt);
  const uint8_t version = header[kVersionAt];
  if (version != kFrameVersion) return Malformed(absl::StrCat("unknown version ", version), kVersionAt);
  return kFrameHeaderSize + uint64_t{DecodeFixed32(p + kBodyLenAt)};
}

absl::StatusOr<FrameHeader> ParseHeader(absl::Span<const uint8_t> in) {
  BASALT_RETURN_IF_ERROR(FrameSize(in).status());
  const char* p = reinterpret_cast<const char*>(in.data());
  const uint8_t op = in[kOpAt];
  switch (static_cast<FrameOp>(op)) {
    case FrameOp::kGet:
    case FrameOp::kMutate:
    case FrameOp::kGetReply:
    case FrameOp::kMutateReply: break;
    default: return Malformed(absl::StrCat("unknown op 0x", absl::Hex(op)), kOpAt);
  }
  FrameHeader h;
  h.op = static_cast<FrameOp>(op);
  h.body_len = DecodeFixed32(p + kBodyLenAt);
  if (h.body_len > in.size() - kFrameHeaderSize) {
    return Malformed(absl::StrCat("body of ", h.body_len, " bytes overruns the frame (",
                                  in.size() - kFrameHeaderSize, " bytes after the header)"),
                     kBodyLenAt);
  }
  h.request_id = DecodeFixed64(p + kRequestIdAt);
  h.status = DecodeFixed16(p + kStatusAt);
  if (h.status > kMaxStatusCode) return Malformed(absl::StrCat("invalid status code ", h.status), kStatusAt);
  h.flags = DecodeFixed16(p + kFlagsAt);
  const uint32_t reserved = DecodeFixed32(p + kReservedAt);
  if (reserved != 0) return Malformed(absl::StrCat("reserved field 0x", absl::Hex(reserved), " is not 0"), kReservedAt);
  return h;
}

absl::StatusOr<size_t> EncodeGetRequest(uint64_t request_id, const rpc::GetRequest& req, absl::Span<uint8_t> out,
                                        const RemoteBuffer* reply_buffer) {
  const rpc::ReadOptions& read = req.read();
  if (req.table().size() > kMax16) return TooLong("table name", req.table().size(), kMax16);
  if (req.row().size() > kMax32) return TooLong("row", req.row().size(), kMax32);
  if (static_cast<uint64_t>(read.columns_size()) > kMax16) {
    return absl::InvalidArgumentError(
        absl::StrCat("verbs frame: ", read.columns_size(), " column selections are over ", kMax16));
  }
  uint64_t body = kGetFixed + req.table().size() + req.row().size();
  for (const rpc::ColumnSelection& col : read.columns()) {
    if (col.family().size() > kMax16) return TooLong("family", col.family().size(), kMax16);
    body += kMinColumn + col.family().size();
    for (const std::string& q : col.qualifiers()) {
      if (q.size() > kMax32) return TooLong("qualifier", q.size(), kMax32);
      body += kMinQualifier + q.size();
    }
  }
  const size_t filter_size = read.has_filter() ? read.filter().ByteSizeLong() : 0;
  if (read.has_filter()) body += 4 + filter_size;
  const size_t snapshot_size = read.has_transaction() ? read.transaction().ByteSizeLong() : 0;
  if (read.has_transaction()) body += 4 + snapshot_size;
  if (reply_buffer != nullptr) body += 16;
  BASALT_RETURN_IF_ERROR(CheckFits("Get request", body, out.size()));

  WriteHeader(out.data(), FrameOp::kGet, body, request_id, 0,
              (read.has_filter() ? kFlagFilter : 0) | (read.has_transaction() ? kFlagTransaction : 0) |
                  (reply_buffer != nullptr ? kFlagReplyBuffer : 0));
  Writer w(out.data() + kFrameHeaderSize);
  w.Bytes16(req.table());
  w.Bytes32(req.row());
  w.I64(read.min_timestamp());
  w.U8(read.has_max_timestamp() ? 1 : 0);
  w.I64(read.has_max_timestamp() ? read.max_timestamp() : 0);
  w.U32(static_cast<uint32_t>(read.max_versions()));
  w.U8(read.skip_block_cache() ? 1 : 0);
  w.U16(static_cast<uint16_t>(read.columns_size()));
  for (const rpc::ColumnSelection& col : read.columns()) {
    w.Bytes16(col.family());
    w.U32(static_cast<uint32_t>(col.qualifiers_size()));
    for (const std::string& q : col.qualifiers()) w.Bytes32(q);
  }
  if (read.has_filter()) w.Message32(read.filter(), filter_size);
  if (read.has_transaction()) w.Message32(read.transaction(), snapshot_size);
  if (reply_buffer != nullptr) {
    w.U64(reply_buffer->addr);
    w.U32(reply_buffer->rkey);
    w.U32(reply_buffer->length);
  }
  assert(static_cast<size_t>(w.pos() - out.data()) == kFrameHeaderSize + body);
  return kFrameHeaderSize + body;
}

absl::StatusOr<size_t> EncodeMutateRequest(uint64_t request_id, const rpc::MutateRequest& req,
                                           absl::Span<uint8_t> out) {
  const rpc::RowMutations& rm = req.mutation();
  if (req.table().size() > kMax16) return TooLong("table name", req.table().size(), kMax16);
  if (req.durability() < 0 || req.durability() > kMaxDurability) {
    return absl::InvalidArgumentError(absl::StrCat("verbs frame: unknown durability ", req.durability()));
  }
  if (rm.row().size() > kMax32) return TooLong("row", rm.row().size(), kMax32);
  uint64_t body = kMutateFixed + req.table().size() + rm.row().size();
  for (const rpc::Mutation& m : rm.mutations()) {
    if (m.kind() < 0 || m.kind() > kMaxMutationKind) {
      return absl::InvalidArgumentError(absl::StrCat("verbs frame: unknown mutation kind ", m.kind()));
    }
    if (m.family().size() > kMax16) return TooLong("family", m.family().size(), kMax16);
    if (m.qualifier().size() > kMax32) return TooLong("qualifier", m.qualifier().size(), kMax32);
    if (m.value().size() > kMax32) return TooLong("value", m.value().size(), kMax32);
    body += kMinMutation + m.family().size() + m.qualifier().size() + m.value().size();
  }
  if (req.transaction() < 0 || (req.rollback() && req.transaction() == 0)) {
    return absl::InvalidArgumentError("verbs frame: a rollback without a transaction, or a negative one");
  }
  const bool in_transaction = req.transaction() != 0;
  if (in_transaction) body += 8 + 1;
  const bool with_nonce = req.has_nonce() && req.nonce().nonce() != 0;
  if (with_nonce) body += 8 + 8;
  BASALT_RETURN_IF_ERROR(CheckFits("Mutate request", body, out.size()));

  WriteHeader(out.data(), FrameOp::kMutate, body, request_id, 0,
              (in_transaction ? kFlagTransaction : 0) | (with_nonce ? kFlagNonce : 0));
  Writer w(out.data() + kFrameHeaderSize);
  w.Bytes16(req.table());
  w.U8(static_cast<uint8_t>(req.durability()));
  w.Bytes32(rm.row());
  w.U32(static_cast<uint32_t>(rm.mutations_size()));
  for (const rpc::Mutation& m : rm.mutations()) {
    w.U8(static_cast<uint8_t>(m.kind()));
    w.U8(m.has_timestamp() ? 1 : 0);
    w.I64(m.has_timestamp() ? m.timestamp() : 0);
    w.Bytes16(m.family());
    w.Bytes32(m.qualifier());
    w.Bytes32(m.value());
  }
  if (in_transaction) {
    w.I64(req.transaction());
    w.U8(req.rollback() ? 1 : 0);
  }
  if (with_nonce) {
    w.U64(req.nonce().group());
    w.U64(req.nonce().nonce());
  }
  assert(static_cast<size_t>(w.pos() - out.data()) == kFrameHeaderSize + body);
  return kFrameHeaderSize + body;
}

absl::Status DecodeRequest(absl::Span<const uint8_t> in, DecodedRequest* out) {
  out->rendezvous.reset();
  out->reply_buffer.reset();
  BASALT_ASSIGN_OR_RETURN(const FrameHeader h, ParseHeader(in));
  if (h.op != FrameOp::kGet && h.op != FrameOp::kMutate) {
    return Malformed(absl::StrCat("reply op 0x", absl::Hex(static_cast<uint8_t>(h.op)), " in a request"), kOpAt);
  }
  if (h.status != 0) return Malformed(absl::StrCat("status ", h.status, " in a request"), kStatusAt);
  const size_t end = kFrameHeaderSize + h.body_len;
  if (h.flags == kFlagRendezvous) {
    if (end != in.size() || h.body_len != kRendezvousFrameSize - kFrameHeaderSize) {
      return Malformed(absl::StrCat("a rendezvous of ", h.body_len, " body bytes in a frame of ", in.size()),
                       kBodyLenAt);
    }
    Reader r(in.data(), kFrameHeaderSize, end);
    RemoteBuffer b;
    BASALT_RETURN_IF_ERROR(r.U64("addr", &b.addr));
    BASALT_RETURN_IF_ERROR(r.U32("rkey", &b.rkey));
    BASALT_RETURN_IF_ERROR(r.U32("length", &b.length));
    BASALT_RETURN_IF_ERROR(r.Finish());
    if (b.length < kFrameHeaderSize) {
      return Malformed(absl::StrCat("a rendezvous of ", b.length, " bytes (a frame is at least ", kFrameHeaderSize, ")"),
                       kFrameHeaderSize + 12);
    }
    out->header = h;
    out->rendezvous = b;
    return absl::OkStatus();
  }
  const uint16_t allowed =
      h.op == FrameOp::kGet ? (kFlagFilter | kFlagTransaction | kFlagReplyBuffer) : (kFlagTransaction | kFlagNonce);
  if ((h.flags & ~allowed) != 0) {
    return Malformed(absl::StrCat("flags 0x", absl::Hex(h.flags), " in a request"), kFlagsAt);
  }
  if (end != in.size()) return Malformed(absl::StrCat(in.size() - end, " trailing bytes"), end);
  out->header = h;
  Reader r(in.data(), kFrameHeaderSize, end);
  if (h.op == FrameOp::kGet) {
    out->get.frame_bytes = end;
    return DecodeGetBody(r, (h.flags & kFlagFilter) != 0, (h.flags & kFlagTransaction) != 0, &out->get,
                         (h.flags & kFlagReplyBuffer) != 0 ? &out->reply_buffer : nullptr);
  }
  out->mutate.Clear();  // keeps its strings' and fields' capacity
  return DecodeMutateBody(r, (h.flags & kFlagTransaction) != 0, (h.flags & kFlagNonce) != 0, &out->mutate);
}

void GetRequestFromView(const GetRequestView& v, rpc::GetRequest* req) {
  req->Clear();
  req->set_table(v.table.data(), v.table.size());
  req->set_row(v.row.data(), v.row.size());
  // Always present, as the client sends it (client/table.cc BuildGet).
  rpc::ReadOptions* read = req->mutable_read();
  read->set_min_timestamp(v.min_ts);
  if (v.has_max_ts) read->set_max_timestamp(v.max_ts);
  read->set_max_versions(v.max_versions);
  read->set_skip_block_cache(v.skip_block_cache);
  read->mutable_columns()->Reserve(static_cast<int>(v.columns.size()));
  for (const GetRequestView::Column& c : v.columns) {
    rpc::ColumnSelection* col = read->add_columns();
    col->set_family(c.family.data(), c.family.size());
    col->mutable_qualifiers()->Reserve(static_cast<int>(c.qualifiers.size()));
    for (std::string_view q : c.qualifiers) col->add_qualifiers(q.data(), q.size());
  }
  if (v.has_filter) *read->mutable_filter() = v.filter;
  if (v.has_transaction) *read->mutable_transaction() = v.transaction;
}

absl::Status DecodeRendezvousRequest(absl::Span<const uint8_t> in, const FrameHeader& descriptor,
                                     DecodedRequest* out) {
  BASALT_RETURN_IF_ERROR(DecodeRequest(in, out));
  if (out->rendezvous.has_value()) return Malformed("a rendezvous that reads another rendezvous", kFlagsAt);
  if (out->header.op != descriptor.op || out->header.request_id != descriptor.request_id) {
    return Malformed(absl::StrCat("the request read (op 0x", absl::Hex(static_cast<uint8_t>(out->header.op)), ", id ",
                                  out->header.request_id, ") is not the rendezvous's (op 0x",
                                  absl::Hex(static_cast<uint8_t>(descriptor.op)), ", id ", descriptor.request_id, ")"),
                     kOpAt);
  }
  return absl::OkStatus();
}

size_t EncodeRendezvous(FrameOp op, uint64_t request_id, const RemoteBuffer& where, absl::Span<uint8_t> out) {
  assert(out.size() >= kRendezvousFrameSize);
  WriteHeader(out.data(), op, kRendezvousFrameSize - kFrameHeaderSize, request_id, 0, kFlagRendezvous);
  Writer w(out.data() + kFrameHeaderSize);
  w.U64(where.addr);
  w.U32(where.rkey);
  w.U32(where.length);
  return kRendezvousFrameSize;
}

namespace {

// An rpc::Row as a ReplyRow.
class ProtoReplyRow final : public ReplyRow {
 public:
  explicit ProtoReplyRow(const rpc::Row& row) : row_(row) {}
  std::string_view row() const override { return SV(row_.row()); }
  size_t size() const override { return static_cast<size_t>(row_.cells_size()); }
  ReplyCell cell(size_t i) const override {
    const rpc::Cell& c = row_.cells(static_cast<int>(i));
    return ReplyCell{SV(c.family()), SV(c.qualifier()), SV(c.value()), c.timestamp(), c.type() == rpc::CELL_TYPE_PUT};
  }

 private:
  const rpc::Row& row_;
};

}  // namespace

size_t EncodeGetReply(uint64_t request_id, const absl::Status& status, const rpc::GetResponse* resp,
                      absl::Span<uint8_t> out) {
  const ProtoReplyRow row(resp != nullptr ? resp->row() : rpc::Row::default_instance());
  return EncodeGetReplyRow(request_id, status, &row, out);
}

size_t EncodeGetReplyRow(uint64_t request_id, const absl::Status& status, const ReplyRow* row,
                         absl::Span<uint8_t> out, uint64_t* needed) {
  assert(out.size() >= kMinReplyBuffer);
  if (needed != nullptr) *needed = 0;
  if (!status.ok()) return EncodeStatusReply(FrameOp::kGetReply, request_id, status.code(), 0, SV(status.message()), out);
  const std::string_view key = row != nullptr ? row->row() : std::string_view();
  const size_t cells = row != nullptr ? row->size() : 0;
  // A row the frame cannot carry (a family over 64 KiB, or a cell that is not a put, which a
  // read never returns) goes over gRPC like a row too large for the buffer.
  bool representable = key.size() <= kMax32 && cells <= kMax32;
  uint64_t body = 4 + key.size() + 4;
  for (size_t i = 0; i < cells; ++i) {
    const ReplyCell c = row->cell(i);
    representable = representable && c.family.size() <= kMax16 && c.qualifier.size() <= kMax32 &&
                    c.value.size() <= kMax32 && c.put;
    body += kMinCell + c.family.size() + c.qualifier.size() + c.value.size();
  }
  if (!representable || body > kMax32 || out.size() < kFrameHeaderSize || body > out.size() - kFrameHeaderSize) {
    if (needed != nullptr && representable && body <= kMax32) *needed = kFrameHeaderSize + body;
    return EncodeStatusReply(FrameOp::kGetReply, request_id, absl::StatusCode::kResourceExhausted, kFlagTooLarge,
                             kTooLargeMessage, out);
  }
  WriteHeader(out.data(), FrameOp::kGetReply, body, request_id, 0, 0);
  Writer w(out.data() + kFrameHeaderSize);
  w.Bytes32(key);
  w.U32(static_cast<uint32_t>(cells));
  for (size_t i = 0; i < cells; ++i) {
    const ReplyCell c = row->cell(i);
    w.Bytes16(c.family);
    w.Bytes32(c.qualifier);
    w.I64(c.timestamp);
    w.Bytes32(c.value);
  }
  assert(static_cast<size_t>(w.pos() - out.data()) == kFrameHeaderSize + body);
  return kFrameHeaderSize + body;
}

size_t EncodeMutateReply(uint64_t request_id, const absl::Status& status, absl::Span<uint8_t> out) {
  assert(out.size() >= kMinReplyBuffer);
  if (!status.ok()) {
    return EncodeStatusReply(FrameOp::kMutateReply, request_id, status.code(), 0, SV(status.message()), out);
  }
  if (out.size() < kFrameHeaderSize) return 0;  // broken kMinReplyBuffer contract
  WriteHeader(out.data(), FrameOp::kMutateReply, 0, request_id, 0, 0);
  return kFrameHeaderSize;
}

size_t EncodeTooLargeReply(FrameOp reply_op, uint64_t request_id, std::string_view why, absl::Span<uint8_t> out) {
  assert(out.size() >= kMinReplyBuffer);
  return EncodeStatusReply(reply_op, request_id, absl::StatusCode::kResourceExhausted, kFlagTooLarge, why, out);
}

size_t EncodeReplyWritten(uint64_t request_id, uint32_t length, absl::Span<uint8_t> out) {
  assert(out.size() >= kMinReplyBuffer);
  WriteHeader(out.data(), FrameOp::kGetReply, 4, request_id, 0, kFlagReplyBuffer);
  Writer w(out.data() + kFrameHeaderSize);
  w.U32(length);
  return kFrameHeaderSize + 4;
}

size_t EncodeTooLargeNeeding(uint64_t request_id, uint64_t needed, absl::Span<uint8_t> out) {
  assert(out.size() >= kMinReplyBuffer);
  WriteHeader(out.data(), FrameOp::kGetReply, 4 + kTooLargeMessage.size() + 8, request_id,
              static_cast<uint16_t>(absl::StatusCode::kResourceExhausted), kFlagTooLarge | kFlagReplyBuffer);
  Writer w(out.data() + kFrameHeaderSize);
  w.Bytes32(kTooLargeMessage);
  w.U64(needed);
  return kFrameHeaderSize + 4 + kTooLargeMessage.size() + 8;
}

absl::StatusOr<ReplyPlacement> ParseReplyPlacement(absl::Span<const uint8_t> in, uint64_t request_id) {
  FrameHeader h;
  BASALT_RETURN_IF_ERROR(CheckReplyHeader(in, FrameOp::kGetReply, request_id, &h));
  ReplyPlacement p;
  if ((h.flags & kFlagReplyBuffer) == 0) return p;
  Reader r(in.data(), kFrameHeaderSize, in.size());
  if (h.flags == kFlagReplyBuffer && h.status == 0) {
    BASALT_RETURN_IF_ERROR(AsInternal(r.U32("written length", &p.length)));
    BASALT_RETURN_IF_ERROR(AsInternal(r.Finish()));
    p.written = true;
    return p;
  }
  if (h.flags != (kFlagTooLarge | kFlagReplyBuffer) ||
      h.status != static_cast<uint16_t>(absl::StatusCode::kResourceExhausted)) {
    return AsInternal(Malformed(absl::StrCat("reply-buffer flags 0x", absl::Hex(h.flags), " with status ", h.status),
                                kFlagsAt));
  }
  std::string_view message;
  BASALT_RETURN_IF_ERROR(AsInternal(r.Bytes32("message", &message)));
  BASALT_RETURN_IF_ERROR(AsInternal(r.U64("needed", &p.needed)));
  BASALT_RETURN_IF_ERROR(AsInternal(r.Finish()));
  p.too_large = true;
  return p;
}

absl::Status DecodeGetReply(absl::Span<const uint8_t> in, uint64_t request_id, rpc::GetResponse* resp,
                            bool* too_large) {
  if (too_large != nullptr) *too_large = false;
  resp->Clear();
  FrameHeader h;
  BASALT_RETURN_IF_ERROR(CheckReplyHeader(in, FrameOp::kGetReply, request_id, &h));
  Reader r(in.data(), kFrameHeaderSize, in.size());
  if (h.flags == kFlagTooLarge || h.flags == (kFlagTooLarge | kFlagReplyBuffer)) {
    if (h.status != static_cast<uint16_t>(absl::StatusCode::kResourceExhausted)) {
      return AsInternal(Malformed(absl::StrCat("too-large flag with status ", h.status), kStatusAt));
    }
    std::string_view message;
    if (h.flags == kFlagTooLarge) {
      BASALT_RETURN_IF_ERROR(AsInternal(DecodeStatusBody(r, &message)));
    } else {
      uint64_t needed = 0;
      BASALT_RETURN_IF_ERROR(AsInternal(r.Bytes32("message", &message)));
      BASALT_RETURN_IF_ERROR(AsInternal(r.U64("needed", &needed)));
      BASALT_RETURN_IF_ERROR(AsInternal(r.Finish()));
    }
    if (too_large != nullptr) *too_large = true;
    return absl::ResourceExhaustedError(AV(message));
  }
  if (h.flags != 0) return AsInternal(Malformed(absl::StrCat("unknown flags 0x", absl::Hex(h.flags)), kFlagsAt));
  if (h.status != 0) {
    std::string_view message;
    BASALT_RETURN_IF_ERROR(AsInternal(DecodeStatusBody(r, &message)));
    return absl::Status(static_cast<absl::StatusCode>(h.status), AV(message));
  }

  // As the gRPC service (service.cc Get): the row is always set, with the key the server echoes.
  rpc::Row* row = resp->mutable_row();
  std::string_view s;
  BASALT_RETURN_IF_ERROR(AsInternal(r.Bytes32("row", &s)));
  row->set_row(s.data(), s.size());
  const size_t at = r.pos();
  uint32_t n = 0;
  BASALT_RETURN_IF_ERROR(AsInternal(r.U32("ncells", &n)));
  BASALT_RETURN_IF_ERROR(AsInternal(r.Count("cells", at, n, kMinCell)));
  row->mutable_cells()->Reserve(static_cast<int>(n));
  for (uint32_t i = 0; i < n; ++i) {
    rpc::Cell* c = row->add_cells();
    BASALT_RETURN_IF_ERROR(AsInternal(r.Bytes16("family", &s)));
    c->set_family(s.data(), s.size());
    BASALT_RETURN_IF_ERROR(AsInternal(r.Bytes32("qualifier", &s)));
    c->set_qualifier(s.data(), s.size());
    int64_t ts = 0;
    BASALT_RETURN_IF_ERROR(AsInternal(r.I64("timestamp", &ts)));
    c->set_timestamp(ts);
    BASALT_RETURN_IF_ERROR(AsInternal(r.Bytes32("value", &s)));
    c->set_value(s.data(), s.size());
  }
  return AsInternal(r.Finish());
}

absl::Status DecodeMutateReply(absl::Span<const uint8_t> in, uint64_t request_id, bool* too_large) {
  if (too_large != nullptr) *too_large = false;
  FrameHeader h;
  BASALT_RETURN_IF_ERROR(CheckReplyHeader(in, FrameOp::kMutateReply, request_id, &h));
  if (h.flags != 0 && h.flags != kFlagTooLarge) {
    return AsInternal(Malformed(absl::StrCat("unknown flags 0x", absl::Hex(h.flags)), kFlagsAt));
  }
  Reader r(in.data(), kFrameHeaderSize, in.size());
  if (h.flags == kFlagTooLarge) {
    if (h.status != static_cast<uint16_t>(absl::StatusCode::kResourceExhausted)) {
      return AsInternal(Malformed(absl::StrCat("too-large flag with status ", h.status), kStatusAt));
    }
    std::string_view message;
    BASALT_RETURN_IF_ERROR(AsInternal(DecodeStatusBody(r, &message)));
    if (too_large != nullptr) *too_large = true;
    return absl::ResourceExhaustedError(AV(message));
  }
  if (h.status == 0) return AsInternal(r.Finish());
  std::string_view message;
  BASALT_RETURN_IF_ERROR(AsInternal(DecodeStatusBody(r, &message)));
  return absl::Status(static_cast<absl::StatusCode>(h.status), AV(message));
}

}  // namespace basalt::verbs
