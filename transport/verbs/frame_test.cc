#include "transport/verbs/frame.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace basalt::verbs {
namespace {

using google::protobuf::util::MessageDifferencer;
using Bytes = std::vector<uint8_t>;

constexpr int64_t kMinTs = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxTs = std::numeric_limits<int64_t>::max();
constexpr std::string_view kBinary("\x00\xff\x00k\xfe", 5);

absl::Span<const uint8_t> Whole(const Bytes& b) { return absl::Span<const uint8_t>(b.data(), b.size()); }

// A hand-written frame, for inputs the encoders never produce.
class FrameBuilder {
 public:
  FrameBuilder(uint8_t op, uint64_t request_id, uint16_t status = 0, uint16_t flags = 0) {
    U16(kFrameMagic).U8(kFrameVersion).U8(op).U32(0).U64(request_id).U16(status).U16(flags).U32(0);
  }
  FrameBuilder& U8(uint8_t v) { return Put(v, 1); }
  FrameBuilder& U16(uint16_t v) { return Put(v, 2); }
  FrameBuilder& U32(uint32_t v) { return Put(v, 4); }
  FrameBuilder& U64(uint64_t v) { return Put(v, 8); }
  FrameBuilder& Raw(std::string_view s) {
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  FrameBuilder& Bytes16(std::string_view s) { return U16(static_cast<uint16_t>(s.size())).Raw(s); }
  FrameBuilder& Bytes32(std::string_view s) { return U32(static_cast<uint32_t>(s.size())).Raw(s); }
  // The frame, with body length = the bytes after the header.
  Bytes Done() const {
    Bytes b = b_;
    const uint32_t body = static_cast<uint32_t>(b.size() - kFrameHeaderSize);
    for (int i = 0; i < 4; ++i) b[4 + i] = static_cast<uint8_t>(body >> (8 * i));
    return b;
  }

 private:
  FrameBuilder& Put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Bytes b_;
};

// Patches the body length field of a frame.
void SetBodyLen(Bytes* b, uint32_t n) {
  for (int i = 0; i < 4; ++i) (*b)[4 + i] = static_cast<uint8_t>(n >> (8 * i));
}

rpc::GetRequest FullGet() {
  rpc::GetRequest req;
  req.set_table("usertable");
  req.set_row(std::string(kBinary) + "row");
  rpc::ReadOptions* read = req.mutable_read();
  read->set_min_timestamp(-7);
  read->set_max_timestamp(kMaxTs);
  read->set_max_versions(3);
  read->set_skip_block_cache(true);
  rpc::ColumnSelection* c = read->add_columns();
  c->set_family(std::string("f\0\xff", 3));
  c->add_qualifiers("");
  c->add_qualifiers(std::string(kBinary));
  c->add_qualifiers(std::string(70000, 'q'));
  read->add_columns()->set_family("whole-family");
  return req;
}

rpc::MutateRequest FullMutate() {
  rpc::MutateRequest req;
  req.set_table("t");
  req.set_durability(rpc::DURABILITY_ASYNC_WAL);
  rpc::RowMutations* rm = req.mutable_mutation();
  rm->set_row(std::string(kBinary));
  for (int kind = 0; kind <= 4; ++kind) {
    rpc::Mutation* m = rm->add_mutations();
    m->set_kind(static_cast<rpc::Mutation::Kind>(kind));
    m->set_family(kind == 0 ? std::string(kBinary) : "cf");
    m->set_qualifier(kind == 0 ? std::string(kBinary) : absl::StrCat("q", kind));
    if (kind == 0) m->set_value(std::string(64 * 1024, '\xff'));
    if (kind == 1) m->set_timestamp(0);  // present and 0 is not absent
    if (kind == 2) m->set_timestamp(kMinTs);
    if (kind == 3) m->set_timestamp(kMaxTs);
  }
  return req;
}

rpc::GetResponse FullResponse() {
  rpc::GetResponse resp;
  rpc::Row* row = resp.mutable_row();
  row->set_row(std::string(kBinary));
  const int64_t ts[] = {kMaxTs, 1700000000000, 0, -1, kMinTs};
  for (int i = 0; i < 5; ++i) {
    rpc::Cell* c = row->add_cells();
    c->set_family(i < 2 ? "a" : std::string(kBinary));
    c->set_qualifier(i == 0 ? "" : std::string(kBinary) + std::to_string(i));
    c->set_timestamp(ts[i]);
    c->set_value(i == 3 ? std::string(64 * 1024, '\0') : std::string(kBinary));
  }
  return resp;
}

Bytes EncodeGet(uint64_t id, const rpc::GetRequest& req) {
  Bytes b(1 << 20);
  absl::StatusOr<size_t> n = EncodeGetRequest(id, req, absl::MakeSpan(b));
  EXPECT_TRUE(n.ok()) << n.status();
  b.resize(n.ok() ? *n : 0);
  return b;
}

Bytes EncodeMutate(uint64_t id, const rpc::MutateRequest& req) {
  Bytes b(1 << 20);
  absl::StatusOr<size_t> n = EncodeMutateRequest(id, req, absl::MakeSpan(b));
  EXPECT_TRUE(n.ok()) << n.status();
  b.resize(n.ok() ? *n : 0);
  return b;
}

Bytes EncodeGetReplyBytes(uint64_t id, const absl::Status& s, const rpc::GetResponse* resp, size_t cap = 1 << 20) {
  Bytes b(cap);
  b.resize(EncodeGetReply(id, s, resp, absl::MakeSpan(b)));
  return b;
}

Bytes EncodeMutateReplyBytes(uint64_t id, const absl::Status& s, size_t cap = 1 << 20) {
  Bytes b(cap);
  b.resize(EncodeMutateReply(id, s, absl::MakeSpan(b)));
  return b;
}

template <typename T>
T DecodeAs(const Bytes& frame, uint64_t want_id) {
  DecodedRequest d;
  absl::Status s = DecodeRequest(Whole(frame), &d);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(d.header.request_id, want_id);
  EXPECT_EQ(d.header.body_len, frame.size() - kFrameHeaderSize);
  T req;
  if constexpr (std::is_same_v<T, rpc::GetRequest>) {
    EXPECT_EQ(d.header.op, FrameOp::kGet);
    GetRequestFromView(d.get, &req);  // the view refers to `frame`, which outlives it
  } else {
    EXPECT_EQ(d.header.op, FrameOp::kMutate);
    req = d.mutate;
  }
  return req;
}

// ---------------------------------------------------------------------------------------------
// Header

TEST(VerbsFrameTest, HeaderLayoutIsLittleEndian) {
  rpc::MutateRequest req;
  req.mutable_mutation();
  const Bytes b = EncodeMutate(0x0102030405060708, req);
  ASSERT_EQ(b.size(), kFrameHeaderSize + 11);
  const Bytes want = {0x5A, 0xBA, 1, 2, 11, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0,
                      // table "", durability 0, row "", no mutations
                      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(b, want);

  absl::StatusOr<FrameHeader> h = ParseHeader(Whole(b));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->op, FrameOp::kMutate);
  EXPECT_EQ(h->body_len, 11u);
  EXPECT_EQ(h->request_id, 0x0102030405060708u);
  EXPECT_EQ(h->status, 0);
  EXPECT_EQ(h->flags, 0);
}

TEST(VerbsFrameTest, ParseHeaderAcceptsBytesAfterTheFrameAndRejectsBadFields) {
  Bytes b = FrameBuilder(0x82, 9, 5, 0).Bytes32("gone").Done();
  b.push_back(0xEE);  // a receive buffer may be longer than the frame
  absl::StatusOr<FrameHeader> h = ParseHeader(Whole(b));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->op, FrameOp::kMutateReply);
  EXPECT_EQ(h->body_len, 8u);
  EXPECT_EQ(h->status, 5);

  auto parse_err = [](Bytes f) { return ParseHeader(Whole(f)).status(); };
  EXPECT_EQ(parse_err(Bytes(23, 0)), absl::InvalidArgumentError("verbs frame: truncated header (23 of 24 bytes) at offset 0"));
  Bytes bad = b;
  bad[0] = 0x5B;
  EXPECT_EQ(parse_err(bad), absl::InvalidArgumentError("verbs frame: bad magic 0xba5b at offset 0"));
  bad = b;
  bad[2] = 2;
  EXPECT_EQ(parse_err(bad), absl::InvalidArgumentError("verbs frame: unknown version 2 at offset 2"));
  bad = b;
  bad[3] = 0x83;
  EXPECT_EQ(parse_err(bad), absl::InvalidArgumentError("verbs frame: unknown op 0x83 at offset 3"));
  bad = b;
  SetBodyLen(&bad, 10);
  EXPECT_EQ(parse_err(bad),
            absl::InvalidArgumentError("verbs frame: body of 10 bytes overruns the frame (9 bytes after the header) at offset 4"));
  bad = b;
  bad[16] = 17;
  EXPECT_EQ(parse_err(bad), absl::InvalidArgumentError("verbs frame: invalid status code 17 at offset 16"));
  bad = b;
  bad[23] = 1;
  EXPECT_EQ(parse_err(bad), absl::InvalidArgumentError("verbs frame: reserved field 0x1000000 is not 0 at offset 20"));
  SetBodyLen(&bad, 0xFFFFFFFF);
  EXPECT_EQ(parse_err(bad).code(), absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Requests

TEST(VerbsFrameTest, GetRequestRoundTripsEveryField) {
  const rpc::GetRequest req = FullGet();
  const Bytes b = EncodeGet(42, req);
  ASSERT_EQ(b.size(), kFrameHeaderSize + 2 + 9 + 4 + 8 + 8 + 1 + 8 + 4 + 1 + 2 + (2 + 3 + 4 + 4 + 4 + 5 + 4 + 70000) +
                          (2 + 12 + 4));
  const rpc::GetRequest got = DecodeAs<rpc::GetRequest>(b, 42);
  EXPECT_TRUE(MessageDifferencer::Equals(got, req)) << got.DebugString();
  EXPECT_TRUE(got.read().has_max_timestamp());
  EXPECT_EQ(got.read().max_timestamp(), kMaxTs);
  EXPECT_EQ(got.read().min_timestamp(), -7);
  EXPECT_EQ(got.read().columns(0).qualifiers(1), std::string(kBinary));
}

TEST(VerbsFrameTest, GetRequestCarriesAFilterUnderItsFlagAndRefusesOneNotCanonical) {
  rpc::GetRequest req = FullGet();
  rpc::Filter* f = req.mutable_read()->mutable_filter();
  f->set_kind(rpc::Filter::LIST);
  f->set_must_pass_all(true);
  rpc::Filter* v = f->add_filters();
  v->set_kind(rpc::Filter::VALUE);
  v->set_op(rpc::FILTER_NOT_EQUAL);
  v->mutable_comparator()->set_value(std::string(kBinary));
  f->add_filters()->set_kind(rpc::Filter::KEY_ONLY);
  Bytes b = EncodeGet(7, req);
  EXPECT_EQ(DecodeFixed16(reinterpret_cast<const char*>(b.data()) + 18), kFlagFilter);
  const rpc::GetRequest got = DecodeAs<rpc::GetRequest>(b, 7);
  EXPECT_TRUE(MessageDifferencer::Equals(got, req)) << got.DebugString();
  // An empty filter (a PREFIX filter of "") is carried as such, not dropped.
  rpc::GetRequest empty;
  empty.mutable_read()->mutable_filter();
  EXPECT_TRUE(DecodeAs<rpc::GetRequest>(EncodeGet(8, empty), 8).read().has_filter());
  // Bytes that parse but are not what the encoder writes (a field repeated), or do not parse.
  const size_t filter_len_at = b.size() - 4 - f->ByteSizeLong();
  Bytes dup = b;
  dup.insert(dup.end(), {0x08, 0x0d});  // kind = LIST again
  EncodeFixed32(reinterpret_cast<char*>(dup.data()) + filter_len_at, static_cast<uint32_t>(f->ByteSizeLong() + 2));
  EncodeFixed32(reinterpret_cast<char*>(dup.data()) + 4, static_cast<uint32_t>(dup.size() - kFrameHeaderSize));
  DecodedRequest d;
  absl::Status s = DecodeRequest(Whole(dup), &d);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("filter is not a canonically serialized"), std::string::npos) << s;
  Bytes bad = dup;
  bad.back() = 0xff;  // a truncated varint
  EXPECT_EQ(DecodeRequest(Whole(bad), &d).code(), absl::StatusCode::kInvalidArgument);
  // The flag on a Mutate is refused.
  Bytes m = EncodeMutate(9, FullMutate());
  EncodeFixed16(reinterpret_cast<char*>(m.data()) + 18, kFlagFilter);
  EXPECT_EQ(DecodeRequest(Whole(m), &d).code(), absl::StatusCode::kInvalidArgument);
}

TEST(VerbsFrameTest, TransactionsTravelUnderTheirFlagOnGetAndMutate) {
  // A Get with both a filter and a snapshot, and one with a snapshot alone.
  rpc::GetRequest req = FullGet();
  req.mutable_read()->mutable_filter()->set_kind(rpc::Filter::KEY_ONLY);
  rpc::TransactionSnapshot* t = req.mutable_read()->mutable_transaction();
  t->set_write_pointer(1700000000000000007);
  t->set_read_pointer(1700000000000000006);
  for (int64_t e : {1700000000000000001, 1700000000000000004}) t->add_excluded(e);
  Bytes b = EncodeGet(3, req);
  EXPECT_EQ(DecodeFixed16(reinterpret_cast<const char*>(b.data()) + 18), kFlagFilter | kFlagTransaction);
  EXPECT_TRUE(MessageDifferencer::Equals(DecodeAs<rpc::GetRequest>(b, 3), req));
  req.mutable_read()->clear_filter();
  b = EncodeGet(4, req);
  EXPECT_EQ(DecodeFixed16(reinterpret_cast<const char*>(b.data()) + 18), kFlagTransaction);
  EXPECT_TRUE(MessageDifferencer::Equals(DecodeAs<rpc::GetRequest>(b, 4), req));
  // A Mutate's write pointer and rollback flag.
  rpc::MutateRequest m = FullMutate();
  m.set_transaction(1700000000000000007);
  m.set_rollback(true);
  Bytes mb = EncodeMutate(5, m);
  EXPECT_EQ(DecodeFixed16(reinterpret_cast<const char*>(mb.data()) + 18), kFlagTransaction);
  EXPECT_TRUE(MessageDifferencer::Equals(DecodeAs<rpc::MutateRequest>(mb, 5), m));
  // Not canonical: the rollback byte 2, a write pointer of 0; unknown flags.
  DecodedRequest d;
  Bytes bad = mb;
  bad.back() = 2;
  EXPECT_EQ(DecodeRequest(Whole(bad), &d).code(), absl::StatusCode::kInvalidArgument);
  bad = mb;
  EncodeFixed64(reinterpret_cast<char*>(bad.data()) + bad.size() - 9, 0);
  EXPECT_EQ(DecodeRequest(Whole(bad), &d).code(), absl::StatusCode::kInvalidArgument);
  bad = mb;
  EncodeFixed16(reinterpret_cast<char*>(bad.data()) + 18, kFlagTransaction | 8);
  EXPECT_EQ(DecodeRequest(Whole(bad), &d).code(), absl::StatusCode::kInvalidArgument);
  // A rollback without a transaction cannot be encoded.
  m.set_transaction(0);
  Bytes out(4096);
  EXPECT_EQ(EncodeMutateRequest(6, m, absl::MakeSpan(out)).status().code(), absl::StatusCode::kInvalidArgument);
}

// A Mutate's nonce (docs/DESIGN.md §6: a Put applied once however often it is sent) travels after the
// transaction's fields, flagged; a nonce of 0 in a frame is not canonical.
TEST(Frame, AMutatesNonceTravelsFlaggedAndZeroIsRefused) {
  rpc::MutateRequest m = FullMutate();
  m.mutable_nonce()->set_group(0x1122334455667788);
  m.mutable_nonce()->set_nonce(42);
  Bytes b = EncodeMutate(7, m);
  EXPECT_EQ(DecodeFixed16(reinterpret_cast<const char*>(b.data()) + 18), kFlagNonce);
  EXPECT_TRUE(MessageDifferencer::Equals(DecodeAs<rpc::MutateRequest>(b, 7), m));
  m.set_transaction(1700000000000000007);
  b = EncodeMutate(8, m);
  EXPECT_EQ(DecodeFixed16(reinterpret_cast<const char*>(b.data()) + 18), kFlagTransaction | kFlagNonce);
  EXPECT_TRUE(MessageDifferencer::Equals(DecodeAs<rpc::MutateRequest>(b, 8), m));
  DecodedRequest d;
  Bytes bad = b;
  EncodeFixed64(reinterpret_cast<char*>(bad.data()) + bad.size() - 8, 0);
  EXPECT_EQ(DecodeRequest(Whole(bad), &d).code(), absl::StatusCode::kInvalidArgument);
  // No nonce (0): no flag, no bytes.
  m.clear_nonce();
  m.set_transaction(0);
  EXPECT_EQ(DecodeFixed16(reinterpret_cast<const char*>(EncodeMutate(9, m).data()) + 18), 0);
}

TEST(VerbsFrameTest, GetRequestRoundTripsUnsetFields) {
  rpc::GetRequest req;
  req.mutable_read();  // as the client sends it
  const rpc::GetRequest got = DecodeAs<rpc::GetRequest>(EncodeGet(0, req), 0);
  EXPECT_TRUE(MessageDifferencer::Equals(got, req)) << got.DebugString();
  EXPECT_FALSE(got.read().has_max_timestamp());
  EXPECT_TRUE(got.has_read());

  // No ReadOptions at all decodes as default ReadOptions.
  rpc::GetRequest bare;
  bare.set_table("t");
  const rpc::GetRequest got2 = DecodeAs<rpc::GetRequest>(EncodeGet(1, bare), 1);
  EXPECT_TRUE(got2.has_read());
  EXPECT_TRUE(MessageDifferencer::Equivalent(got2, bare));
}

TEST(VerbsFrameTest, GetRequestMaxTimestampPresentAtZeroAndNegative) {
  for (int64_t ts : {int64_t{0}, int64_t{-1}, kMinTs}) {
    rpc::GetRequest req;
    req.set_table("t");
    req.mutable_read()->set_max_timestamp(ts);
    req.mutable_read()->set_min_timestamp(ts);
    req.mutable_read()->set_max_versions(-2);
    const rpc::GetRequest got = DecodeAs<rpc::GetRequest>(EncodeGet(7, req), 7);
    EXPECT_TRUE(got.read().has_max_timestamp());
    EXPECT_EQ(got.read().max_timestamp(), ts);
    EXPECT_EQ(got.read().min_timestamp(), ts);
    EXPECT_EQ(got.read().max_versions(), -2);
    EXPECT_TRUE(MessageDifferencer::Equals(got, req));
  }
}

TEST(VerbsFrameTest, GetRequestManyColumnsAndQualifiers) {
  rpc::GetRequest req;
  req.set_table("t");
  req.set_row("r");
  for (int i = 0; i < 65535; ++i) {
    rpc::ColumnSelection* c = req.mutable_read()->add_columns();
    c->set_family(absl::StrCat("f", i));
    if (i % 1000 == 0) {
      for (int j = 0; j < 300; ++j) c->add_qualifiers(absl::StrCat("q", j));
    }
  }
  const rpc::GetRequest got = DecodeAs<rpc::GetRequest>(EncodeGet(3, req), 3);
  ASSERT_EQ(got.read().columns_size(), 65535);
  EXPECT_EQ(got.read().columns(65000).qualifiers_size(), 300);
  EXPECT_EQ(got.read().columns(65000).qualifiers(299), "q299");
  EXPECT_TRUE(MessageDifferencer::Equals(got, req));

  req.mutable_read()->add_columns();
  Bytes b(4 << 20);
  EXPECT_EQ(EncodeGetRequest(3, req, absl::MakeSpan(b)).status(),
            absl::InvalidArgumentError("verbs frame: 65536 column selections are over 65535"));
}

TEST(VerbsFrameTest, MutateRequestRoundTripsEveryField) {
  const rpc::MutateRequest req = FullMutate();
  const Bytes b = EncodeMutate(~uint64_t{0}, req);
  const rpc::MutateRequest got = DecodeAs<rpc::MutateRequest>(b, ~uint64_t{0});
  EXPECT_TRUE(MessageDifferencer::Equals(got, req)) << got.ShortDebugString().substr(0, 500);
  ASSERT_EQ(got.mutation().mutations_size(), 5);
  EXPECT_FALSE(got.mutation().mutations(0).has_timestamp());
  EXPECT_TRUE(got.mutation().mutations(1).has_timestamp());
  EXPECT_EQ(got.mutation().mutations(1).timestamp(), 0);
  EXPECT_EQ(got.mutation().mutations(2).timestamp(), kMinTs);
  EXPECT_EQ(got.mutation().mutations(4).kind(), rpc::Mutation::DELETE_ROW);
  EXPECT_EQ(got.mutation().mutations(0).value().size(), 65536u);
  EXPECT_EQ(got.durability(), rpc::DURABILITY_ASYNC_WAL);

  for (int d = 0; d <= 3; ++d) {
    rpc::MutateRequest r2 = req;
    r2.set_durability(static_cast<rpc::Durability>(d));
    EXPECT_EQ(DecodeAs<rpc::MutateRequest>(EncodeMutate(1, r2), 1).durability(), d);
  }
}

TEST(VerbsFrameTest, MutateRequestLayout) {
  rpc::MutateRequest req;
  req.set_table("t");
  req.set_durability(rpc::DURABILITY_SKIP_WAL);
  req.mutable_mutation()->set_row("r");
  rpc::Mutation* m = req.mutable_mutation()->add_mutations();
  m->set_kind(rpc::Mutation::DELETE);
  m->set_timestamp(-2);
  m->set_family("f");
  m->set_qualifier("q");
  m->set_value("v");
  const Bytes b = EncodeMutate(5, req);
  const Bytes body(b.begin() + kFrameHeaderSize, b.end());
  const Bytes want = {1, 0, 't', 3, 1, 0, 0, 0, 'r', 1, 0, 0, 0,                  // table, durability, row, n
                      1, 1, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,       // kind, has_ts, ts -2
                      1, 0, 'f', 1, 0, 0, 0, 'q', 1, 0, 0, 0, 'v'};
  EXPECT_EQ(body, want);
}

TEST(VerbsFrameTest, GetRequestLayout) {
  rpc::GetRequest req;
  req.set_table("t");
  req.set_row("r");
  req.mutable_read()->set_min_timestamp(1);
  req.mutable_read()->set_max_versions(2);
  req.mutable_read()->add_columns()->set_family("f");
  req.mutable_read()->mutable_columns(0)->add_qualifiers("q");
  const Bytes b = EncodeGet(5, req);
  const Bytes body(b.begin() + kFrameHeaderSize, b.end());
  const Bytes want = {1, 0, 't', 1, 0, 0, 0, 'r', 1, 0, 0, 0, 0, 0, 0, 0,  // table, row, min_ts
                      0, 0, 0, 0, 0, 0, 0, 0, 0,                         // no max_ts
                      2, 0, 0, 0, 0, 1, 0,                               // versions, cache, ncolumns
                      1, 0, 'f', 1, 0, 0, 0, 1, 0, 0, 0, 'q'};
  EXPECT_EQ(body, want);
  EXPECT_EQ(b[3], 1);  // op Get
}

TEST(VerbsFrameTest, ManyMutations) {
  rpc::MutateRequest req;
  req.set_table("t");
  req.mutable_mutation()->set_row("r");
  for (int i = 0; i < 20000; ++i) {
    rpc::Mutation* m = req.mutable_mutation()->add_mutations();
    m->set_family("f");
    m->set_qualifier(std::to_string(i));
    m->set_value(std::string(i % 7, static_cast<char>(i)));
    if (i % 2) m->set_timestamp(i);
  }
  const rpc::MutateRequest got = DecodeAs<rpc::MutateRequest>(EncodeMutate(11, req), 11);
  EXPECT_EQ(got.mutation().mutations_size(), 20000);
  EXPECT_TRUE(MessageDifferencer::Equals(got, req));
}

TEST(VerbsFrameTest, RequestExactFitAndOneByteShort) {
  const rpc::GetRequest get = FullGet();
  const Bytes g = EncodeGet(1, get);
  Bytes out(g.size());
  absl::StatusOr<size_t> n = EncodeGetRequest(1, get, absl::MakeSpan(out));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, g.size());
  EXPECT_EQ(out, g);
  out.resize(g.size() - 1);
  EXPECT_EQ(EncodeGetRequest(1, get, absl::MakeSpan(out)).status(),
            absl::ResourceExhaustedError(absl::StrCat("verbs frame: Get request of ", g.size(),
                                                      " bytes does not fit a verbs message of ", g.size() - 1,
                                                      " bytes")));
  EXPECT_EQ(EncodeGetRequest(1, get, absl::Span<uint8_t>()).status().code(), absl::StatusCode::kResourceExhausted);

  const rpc::MutateRequest mut = FullMutate();
  const Bytes m = EncodeMutate(1, mut);
  out.assign(m.size(), 0);
  n = EncodeMutateRequest(1, mut, absl::MakeSpan(out));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, m.size());
  EXPECT_EQ(out, m);
  out.resize(m.size() - 1);
  EXPECT_EQ(EncodeMutateRequest(1, mut, absl::MakeSpan(out)).status().code(), absl::StatusCode::kResourceExhausted);
  out.resize(10);
  EXPECT_EQ(EncodeMutateRequest(1, mut, absl::MakeSpan(out)).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(VerbsFrameTest, RequestFieldsTheFrameCannotCarry) {
  Bytes out(1 << 20);
  rpc::GetRequest get;
  get.set_table(std::string(65535, 't'));
  EXPECT_TRUE(EncodeGetRequest(1, get, absl::MakeSpan(out)).ok());
  get.set_table(std::string(65536, 't'));
  EXPECT_EQ(EncodeGetRequest(1, get, absl::MakeSpan(out)).status(),
            absl::InvalidArgumentError("verbs frame: table name of 65536 bytes is over 65535"));
  get.set_table("t");
  get.mutable_read()->add_columns()->set_family(std::string(65536, 'f'));
  EXPECT_EQ(EncodeGetRequest(1, get, absl::MakeSpan(out)).status(),
            absl::InvalidArgumentError("verbs frame: family of 65536 bytes is over 65535"));

  rpc::MutateRequest mut = FullMutate();
  mut.set_table(std::string(65536, 't'));
  EXPECT_EQ(EncodeMutateRequest(1, mut, absl::MakeSpan(out)).status().code(), absl::StatusCode::kInvalidArgument);
  mut = FullMutate();
  mut.mutable_mutation()->mutable_mutations(2)->set_family(std::string(65536, 'f'));
  EXPECT_EQ(EncodeMutateRequest(1, mut, absl::MakeSpan(out)).status(),
            absl::InvalidArgumentError("verbs frame: family of 65536 bytes is over 65535"));
  mut = FullMutate();
  mut.set_durability(static_cast<rpc::Durability>(4));
  EXPECT_EQ(EncodeMutateRequest(1, mut, absl::MakeSpan(out)).status(),
            absl::InvalidArgumentError("verbs frame: unknown durability 4"));
  mut = FullMutate();
  mut.mutable_mutation()->mutable_mutations(1)->set_kind(static_cast<rpc::Mutation::Kind>(5));
  EXPECT_EQ(EncodeMutateRequest(1, mut, absl::MakeSpan(out)).status(),
            absl::InvalidArgumentError("verbs frame: unknown mutation kind 5"));
  mut.mutable_mutation()->mutable_mutations(1)->set_kind(static_cast<rpc::Mutation::Kind>(-1));
  EXPECT_EQ(EncodeMutateRequest(1, mut, absl::MakeSpan(out)).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(VerbsFrameTest, DecodeRequestReusesWhatItHolds) {
  DecodedRequest d;
  const Bytes full = EncodeGet(1, FullGet());
  ASSERT_TRUE(DecodeRequest(Whole(full), &d).ok());
  EXPECT_EQ(d.get.frame_bytes, full.size());
  // A Get is read in place: its strings are views into the frame.
  EXPECT_GE(d.get.row.data(), reinterpret_cast<const char*>(full.data()));
  EXPECT_LT(d.get.row.data(), reinterpret_cast<const char*>(full.data() + full.size()));
  rpc::GetRequest small;
  small.set_table("x");
  small.mutable_read();
  const Bytes small_frame = EncodeGet(2, small);
  ASSERT_TRUE(DecodeRequest(Whole(small_frame), &d).ok());
  EXPECT_EQ(d.header.op, FrameOp::kGet);
  EXPECT_TRUE(d.get.columns.empty());  // nothing of the last Get stays
  EXPECT_FALSE(d.get.has_filter);
  EXPECT_FALSE(d.get.has_transaction);
  rpc::GetRequest got;
  GetRequestFromView(d.get, &got);
  EXPECT_TRUE(MessageDifferencer::Equals(got, small));
  ASSERT_TRUE(DecodeRequest(Whole(EncodeMutate(3, FullMutate())), &d).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(d.mutate, FullMutate()));
  EXPECT_EQ(d.header.op, FrameOp::kMutate);
  EXPECT_EQ(d.header.request_id, 3u);
  rpc::MutateRequest one;
  one.set_table("y");
  one.mutable_mutation()->set_row("r");
  ASSERT_TRUE(DecodeRequest(Whole(EncodeMutate(4, one)), &d).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(d.mutate, one));
}

// ---------------------------------------------------------------------------------------------
// Malformed requests

absl::Status DecodeReqStatus(absl::Span<const uint8_t> b) {
  DecodedRequest d;
  return DecodeRequest(b, &d);
}
absl::Status DecodeReqStatus(const Bytes& b) { return DecodeReqStatus(Whole(b)); }

TEST(VerbsFrameTest, EveryTruncationOfARequestIsRejected) {
  for (const Bytes& full : {EncodeGet(9, FullGet()), EncodeMutate(9, FullMutate())}) {
    ASSERT_TRUE(DecodeReqStatus(Whole(full)).ok());
    Bytes patched = full;
    for (size_t n = 0; n < full.size(); ++n) {
      // Cut frames, header unchanged.
      ASSERT_EQ(DecodeReqStatus(Whole(full).first(n)).code(), absl::StatusCode::kInvalidArgument) << n;
      // Cut bodies whose header says so: every field's own bound must catch it.
      if (n < kFrameHeaderSize) continue;
      SetBodyLen(&patched, static_cast<uint32_t>(n - kFrameHeaderSize));
      ASSERT_EQ(DecodeReqStatus(Whole(patched).first(n)).code(), absl::StatusCode::kInvalidArgument) << n;
    }
  }
}

TEST(VerbsFrameTest, TrailingBytesAreRejected) {
  Bytes b = EncodeGet(1, FullGet());
  const size_t n = b.size();
  b.push_back(0);
  EXPECT_EQ(DecodeReqStatus(b), absl::InvalidArgumentError(absl::StrCat("verbs frame: 1 trailing bytes at offset ", n)));
  SetBodyLen(&b, static_cast<uint32_t>(n + 1 - kFrameHeaderSize));
  EXPECT_EQ(DecodeReqStatus(b), absl::InvalidArgumentError(absl::StrCat("verbs frame: 1 trailing bytes at offset ", n)));

  Bytes m = EncodeMutate(1, FullMutate());
  m.insert(m.end(), {1, 2, 3});
  SetBodyLen(&m, static_cast<uint32_t>(m.size() - kFrameHeaderSize));
  EXPECT_EQ(DecodeReqStatus(m).code(), absl::StatusCode::kInvalidArgument);
}

TEST(VerbsFrameTest, CorruptRequestHeaderBytes) {
  for (const Bytes& full : {EncodeGet(9, FullGet()), EncodeMutate(9, FullMutate())}) {
    for (size_t i = 0; i < kFrameHeaderSize; ++i) {
      for (int v = 0; v < 256; ++v) {
        if (v == full[i]) continue;
        Bytes b = full;
        b[i] = static_cast<uint8_t>(v);
        DecodedRequest d;
        const absl::Status s = DecodeRequest(Whole(b), &d);
        if (i >= 8 && i < 16) {  // request id: any value
          ASSERT_TRUE(s.ok()) << i << " " << v << " " << s;
          EXPECT_NE(d.header.request_id, 9u);
        } else if (i == 3 && (v == 1 || v == 2)) {  // the other request op: its body may or may not parse
          if (s.ok()) {
            EXPECT_EQ(static_cast<int>(d.header.op), v);
          } else {
            EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
          }
        } else {
          ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << i << " " << v;
        }
      }
    }
  }
}

TEST(VerbsFrameTest, RequestHeaderFieldsARequestMustNotCarry) {
  Bytes b = EncodeGet(1, FullGet());
  b[16] = 2;
  EXPECT_EQ(DecodeReqStatus(b), absl::InvalidArgumentError("verbs frame: status 2 in a request at offset 16"));
  b = EncodeGet(1, FullGet());
  b[18] = 1;
  EXPECT_EQ(DecodeReqStatus(b), absl::InvalidArgumentError("verbs frame: flags 0x1 in a request at offset 18"));
  EXPECT_EQ(DecodeReqStatus(EncodeGetReplyBytes(1, absl::OkStatus(), nullptr)),
            absl::InvalidArgumentError("verbs frame: reply op 0x81 in a request at offset 3"));
  EXPECT_EQ(DecodeReqStatus(EncodeMutateReplyBytes(1, absl::OkStatus())).code(), absl::StatusCode::kInvalidArgument);
}

void ExpectSameBuffer(const RemoteBuffer& got, const RemoteBuffer& want) {
  EXPECT_EQ(got.addr, want.addr);
  EXPECT_EQ(got.rkey, want.rkey);
  EXPECT_EQ(got.length, want.length);
}

TEST(VerbsFrameTest, ARendezvousNamesWhereTheRequestIsAndTheRequestReadMustBeItsOwn) {
  Bytes desc(kRendezvousFrameSize);
  const RemoteBuffer where{0x1122334455667788ULL, 0xabcdef01u, 5000000};
  ASSERT_EQ(EncodeRendezvous(FrameOp::kMutate, 42, where, absl::MakeSpan(desc)), kRendezvousFrameSize);
  DecodedRequest d;
  ASSERT_TRUE(DecodeRequest(Whole(desc), &d).ok());
  ASSERT_TRUE(d.rendezvous.has_value());
  ExpectSameBuffer(*d.rendezvous, where);
  EXPECT_EQ(d.header.op, FrameOp::kMutate);
  EXPECT_EQ(d.header.request_id, 42u);
  EXPECT_EQ(d.header.flags, kFlagRendezvous);

  // What the server reads must be a whole request of the same op and id, and not a rendezvous.
  rpc::MutateRequest m;
  m.set_table("t");
  rpc::Mutation* put = m.mutable_mutation()->add_mutations();
  m.mutable_mutation()->set_row("r");
  put->set_family("f");
  put->set_value(std::string(100000, 'v'));
  Bytes big(200000);
  absl::StatusOr<size_t> n = EncodeMutateRequest(42, m, absl::MakeSpan(big));
  ASSERT_TRUE(n.ok()) << n.status();
  big.resize(*n);
  DecodedRequest read;
  ASSERT_TRUE(DecodeRendezvousRequest(Whole(big), d.header, &read).ok());
  EXPECT_EQ(read.mutate.mutation().mutations(0).value().size(), 100000u);
  EXPECT_FALSE(read.rendezvous.has_value());
  Bytes other(200000);
  n = EncodeMutateRequest(43, m, absl::MakeSpan(other));
  ASSERT_TRUE(n.ok());
  other.resize(*n);
  EXPECT_EQ(DecodeRendezvousRequest(Whole(other), d.header, &read).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeRendezvousRequest(Whole(desc), d.header, &read).code(), absl::StatusCode::kInvalidArgument);
  Bytes get = EncodeGet(42, FullGet());
  EXPECT_EQ(DecodeRendezvousRequest(Whole(get), d.header, &read).code(), absl::StatusCode::kInvalidArgument);

  // Malformed descriptors: with other flags, a body of another size, a length under a header.
  EXPECT_EQ(DecodeReqStatus(FrameBuilder(1, 7, 0, kFlagRendezvous | kFlagFilter).U64(1).U32(2).U32(100).Done()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeReqStatus(FrameBuilder(1, 7, 0, kFlagRendezvous).U64(1).U32(2).U32(100).U8(0).Done()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeReqStatus(FrameBuilder(1, 7, 0, kFlagRendezvous).U64(1).U32(2).Done()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeReqStatus(FrameBuilder(2, 7, 0, kFlagRendezvous).U64(1).U32(2).U32(10).Done()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(DecodeReqStatus(FrameBuilder(2, 7, 0, kFlagRendezvous).U64(1).U32(2).U32(24).Done()).ok());
  EXPECT_EQ(DecodeReqStatus(FrameBuilder(0x81, 7, 0, kFlagRendezvous).U64(1).U32(2).U32(100).Done()).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(VerbsFrameTest, AGetCarriesItsReplyBufferAndTheRepliesSayWhereTheReplyWent) {
  const RemoteBuffer buffer{0xfeedface12345678ULL, 77, 9 << 20};
  Bytes b(1 << 20);
  absl::StatusOr<size_t> n = EncodeGetRequest(5, FullGet(), absl::MakeSpan(b), &buffer);
  ASSERT_TRUE(n.ok()) << n.status();
  b.resize(*n);
  DecodedRequest d;
  ASSERT_TRUE(DecodeRequest(Whole(b), &d).ok());
  ASSERT_TRUE(d.reply_buffer.has_value());
  ExpectSameBuffer(*d.reply_buffer, buffer);
  rpc::GetRequest decoded;
  GetRequestFromView(d.get, &decoded);
  EXPECT_EQ(decoded.SerializeAsString(), FullGet().SerializeAsString());
  ASSERT_TRUE(DecodeRequest(Whole(EncodeGet(5, FullGet())), &d).ok());
  EXPECT_FALSE(d.reply_buffer.has_value());  // reset by the next decode
  EXPECT_EQ(DecodeReqStatus(Bytes(b.begin(), b.end() - 1)).code(), absl::StatusCode::kInvalidArgument);

  // The row's size when it is too large only for the buffer given.
  rpc::GetResponse resp;
  resp.mutable_row()->set_row("r");
  rpc::Cell* c = resp.mutable_row()->add_cells();
  c->set_family("f");
  c->set_value(std::string(5000, 'v'));
  Bytes whole(1 << 20);
  const size_t whole_n = EncodeGetReply(5, absl::OkStatus(), &resp, absl::MakeSpan(whole));
  Bytes small(1024);
  uint64_t needed = 0;
  struct OneRow final : ReplyRow {
    const rpc::Row& r;
    explicit OneRow(const rpc::Row& row) : r(row) {}
    std::string_view row() const override { return r.row(); }
    size_t size() const override { return static_cast<size_t>(r.cells_size()); }
    ReplyCell cell(size_t i) const override {
      const rpc::Cell& x = r.cells(static_cast<int>(i));
      return ReplyCell{x.family(), x.qualifier(), x.value(), x.timestamp(), true};
    }
  } row(resp.row());
  EncodeGetReplyRow(5, absl::OkStatus(), &row, absl::MakeSpan(small), &needed);
  EXPECT_EQ(needed, whole_n);
  EncodeGetReplyRow(5, absl::OkStatus(), &row, absl::MakeSpan(whole), &needed);
  EXPECT_EQ(needed, 0u);

  // Written, too large for the buffer, and an ordinary reply.
  Bytes w(256);
  w.resize(EncodeReplyWritten(5, static_cast<uint32_t>(whole_n), absl::MakeSpan(w)));
  absl::StatusOr<ReplyPlacement> p = ParseReplyPlacement(Whole(w), 5);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->written);
  EXPECT_EQ(p->length, whole_n);
  EXPECT_FALSE(ParseReplyPlacement(Whole(w), 6).ok());  // another call's
  Bytes t(256);
  t.resize(EncodeTooLargeNeeding(5, uint64_t{5} << 30, absl::MakeSpan(t)));
  p = ParseReplyPlacement(Whole(t), 5);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->too_large);
  EXPECT_EQ(p->needed, uint64_t{5} << 30);
  rpc::GetResponse got;
  bool too_large = false;
  EXPECT_EQ(DecodeGetReply(Whole(t), 5, &got, &too_large).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(too_large);
  whole.resize(whole_n);
  p = ParseReplyPlacement(Whole(whole), 5);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->written || p->too_large);
  ASSERT_TRUE(DecodeGetReply(Whole(whole), 5, &got, &too_large).ok());
  EXPECT_EQ(got.row().cells(0).value().size(), 5000u);
  // Malformed: a written reply with a status, with trailing bytes; truncated.
  EXPECT_FALSE(ParseReplyPlacement(Whole(FrameBuilder(0x81, 5, 3, kFlagReplyBuffer).U32(1).Done()), 5).ok());
  EXPECT_FALSE(ParseReplyPlacement(Whole(FrameBuilder(0x81, 5, 0, kFlagReplyBuffer).U32(1).U8(0).Done()), 5).ok());
  EXPECT_FALSE(ParseReplyPlacement(Whole(FrameBuilder(0x81, 5, 0, kFlagReplyBuffer).U16(1).Done()), 5).ok());
  for (size_t cut = 0; cut < t.size(); ++cut) {
    Bytes shorter(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(cut));
    if (cut >= kFrameHeaderSize) SetBodyLen(&shorter, static_cast<uint32_t>(cut - kFrameHeaderSize));
    EXPECT_FALSE(ParseReplyPlacement(Whole(shorter), 5).ok()) << cut;
  }
}

TEST(VerbsFrameTest, ARendezvousTheServerCannotTakeSendsTheCallToGrpc) {
  for (FrameOp op : {FrameOp::kGetReply, FrameOp::kMutateReply}) {
    Bytes b(256);
    b.resize(EncodeTooLargeReply(op, 8, "budget", absl::MakeSpan(b)));
    bool too_large = false;
    absl::Status s;
    if (op == FrameOp::kGetReply) {
      rpc::GetResponse resp;
      s = DecodeGetReply(Whole(b), 8, &resp, &too_large);
    } else {
      s = DecodeMutateReply(Whole(b), 8, &too_large);
    }
    EXPECT_EQ(s, absl::ResourceExhaustedError("budget"));
    EXPECT_TRUE(too_large);
  }
  bool too_large = true;
  EXPECT_TRUE(DecodeMutateReply(Whole(EncodeMutateReplyBytes(8, absl::OkStatus())), 8, &too_large).ok());
  EXPECT_FALSE(too_large);
  // The flag with another status is malformed.
  EXPECT_EQ(DecodeMutateReply(Whole(FrameBuilder(0x82, 8, 3, kFlagTooLarge).Bytes32("x").Done()), 8).code(),
            absl::StatusCode::kInternal);
}

TEST(VerbsFrameTest, BadEnumValuesAreRejected) {
  auto mutate = [](uint8_t durability, uint8_t kind, uint8_t has_ts, uint64_t ts) {
    return FrameBuilder(2, 1)
        .Bytes16("t")
        .U8(durability)
        .Bytes32("r")
        .U32(1)
        .U8(kind)
        .U8(has_ts)
        .U64(ts)
        .Bytes16("f")
        .Bytes32("q")
        .Bytes32("v")
        .Done();
  };
  EXPECT_TRUE(DecodeReqStatus(mutate(3, 4, 1, 5)).ok());
  EXPECT_TRUE(DecodeReqStatus(mutate(0, 0, 0, 0)).ok());
  EXPECT_EQ(DecodeReqStatus(mutate(4, 0, 0, 0)), absl::InvalidArgumentError("verbs frame: unknown durability 4 at offset 27"));
  EXPECT_EQ(DecodeReqStatus(mutate(0, 5, 0, 0)),
            absl::InvalidArgumentError("verbs frame: unknown mutation kind 5 at offset 37"));
  EXPECT_EQ(DecodeReqStatus(mutate(0, 0, 2, 0)),
            absl::InvalidArgumentError("verbs frame: unknown timestamp presence flag 2 at offset 38"));
  EXPECT_EQ(DecodeReqStatus(mutate(0, 0, 0, 1)),
            absl::InvalidArgumentError("verbs frame: absent mutation timestamp is 1, not 0 at offset 39"));
  EXPECT_EQ(DecodeReqStatus(mutate(255, 0, 0, 0)).code(), absl::StatusCode::kInvalidArgument);

  auto get = [](uint8_t has_max, uint64_t max_ts, uint8_t skip) {
    return FrameBuilder(1, 1).Bytes16("t").Bytes32("r").U64(0).U8(has_max).U64(max_ts).U32(0).U8(skip).U16(0).Done();
  };
  EXPECT_TRUE(DecodeReqStatus(get(1, 5, 1)).ok());
  EXPECT_EQ(DecodeReqStatus(get(2, 0, 0)),
            absl::InvalidArgumentError("verbs frame: unknown timestamp presence flag 2 at offset 40"));
  EXPECT_EQ(DecodeReqStatus(get(0, 5, 0)), absl::InvalidArgumentError("verbs frame: absent max_ts is 5, not 0 at offset 41"));
  EXPECT_EQ(DecodeReqStatus(get(0, 0, 2)), absl::InvalidArgumentError("verbs frame: unknown skip_block_cache 2 at offset 53"));
}

TEST(VerbsFrameTest, HugeCountsAndLengthsAreRejectedBeforeAllocating) {
  auto get_prefix = [] { return FrameBuilder(1, 1).Bytes16("t").Bytes32("r").U64(0).U8(0).U64(0).U32(0).U8(0); };
  EXPECT_EQ(DecodeReqStatus(get_prefix().U16(0xFFFF).Done()),
            absl::InvalidArgumentError("verbs frame: 65535 columns cannot fit the 0 bytes left at offset 54"));
  EXPECT_EQ(DecodeReqStatus(get_prefix().U16(1).Bytes16("f").U32(0xFFFFFFFF).U32(0).Done()),
            absl::InvalidArgumentError("verbs frame: 4294967295 qualifiers cannot fit the 4 bytes left at offset 59"));
  // Exactly enough bytes for the count passes the count check and fails later, or not at all.
  EXPECT_TRUE(DecodeReqStatus(get_prefix().U16(1).Bytes16("f").U32(1).U32(0).Done()).ok());
  EXPECT_EQ(DecodeReqStatus(FrameBuilder(1, 1).Bytes16("t").U32(0xFFFFFFFF).Done()),
            absl::InvalidArgumentError("verbs frame: row of 4294967295 bytes overruns the frame (0 bytes left) at offset 27"));
  EXPECT_EQ(DecodeReqStatus(FrameBuilder(1, 1).U16(0xFFFF).Raw("t").Done()),
            absl::InvalidArgumentError("verbs frame: table of 65535 bytes overruns the frame (1 bytes left) at offset 24"));
  EXPECT_EQ(DecodeReqStatus(FrameBuilder(2, 1).Bytes16("t").U8(0).Bytes32("r").U32(0xFFFFFFFF).Done()),
            absl::InvalidArgumentError("verbs frame: 4294967295 mutations cannot fit the 0 bytes left at offset 33"));
  EXPECT_EQ(DecodeReqStatus(FrameBuilder(2, 1).Bytes16("t").U8(0).Bytes32("r").U32(2).Raw(std::string(39, '\0')).Done())
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeReqStatus(FrameBuilder(2, 1).Bytes16("t").U8(0).Bytes32("r").U32(2).Raw(std::string(40, '\0')).Done())
                .code(),
            absl::StatusCode::kOk);

  rpc::GetResponse resp;
  EXPECT_EQ(DecodeGetReply(Whole(FrameBuilder(0x81, 4).Bytes32("").U32(0xFFFFFFFF).Done()), 4, &resp),
            absl::InternalError("verbs frame: 4294967295 cells cannot fit the 0 bytes left at offset 28"));
}

// ---------------------------------------------------------------------------------------------
// Replies

TEST(VerbsFrameTest, GetReplyRoundTrip) {
  const rpc::GetResponse resp = FullResponse();
  const Bytes b = EncodeGetReplyBytes(77, absl::OkStatus(), &resp);
  EXPECT_EQ(b.size(), kFrameHeaderSize + 4 + 5 + 4 + (2 + 1 + 4 + 0 + 8 + 4 + 5) + (2 + 1 + 4 + 6 + 8 + 4 + 5) +
                          (2 + 5 + 4 + 6 + 8 + 4 + 5) + (2 + 5 + 4 + 6 + 8 + 4 + 65536) + (2 + 5 + 4 + 6 + 8 + 4 + 5));
  rpc::GetResponse got;
  bool too_large = true;
  ASSERT_TRUE(DecodeGetReply(Whole(b), 77, &got, &too_large).ok());
  EXPECT_FALSE(too_large);
  EXPECT_TRUE(MessageDifferencer::Equals(got, resp)) << got.ShortDebugString().substr(0, 300);
  EXPECT_EQ(got.row().cells(4).timestamp(), kMinTs);
  EXPECT_EQ(got.row().cells(3).type(), rpc::CELL_TYPE_PUT);
}

TEST(VerbsFrameTest, GetReplyWithoutCells) {
  // What the gRPC service returns for a row with nothing visible: the row set, with the key.
  rpc::GetResponse resp;
  resp.mutable_row()->set_row("missing");
  rpc::GetResponse got;
  got.mutable_row()->add_cells()->set_value("stale");  // cleared by the decoder
  ASSERT_TRUE(DecodeGetReply(Whole(EncodeGetReplyBytes(1, absl::OkStatus(), &resp)), 1, &got).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(got, resp));

  // An empty row and no response at all: a present row with no cells.
  for (const rpc::GetResponse* in : {static_cast<const rpc::GetResponse*>(nullptr), &rpc::GetResponse::default_instance()}) {
    const Bytes b = EncodeGetReplyBytes(2, absl::OkStatus(), in);
    EXPECT_EQ(b.size(), kFrameHeaderSize + 8);
    rpc::GetResponse empty;
    ASSERT_TRUE(DecodeGetReply(Whole(b), 2, &empty).ok());
    EXPECT_TRUE(empty.has_row());
    EXPECT_EQ(empty.row().row(), "");
    EXPECT_EQ(empty.row().cells_size(), 0);
  }
}

TEST(VerbsFrameTest, GetReplyExactFitAndTooLarge) {
  const rpc::GetResponse resp = FullResponse();
  const Bytes full = EncodeGetReplyBytes(5, absl::OkStatus(), &resp);
  EXPECT_EQ(EncodeGetReplyBytes(5, absl::OkStatus(), &resp, full.size()), full);

  const Bytes big = EncodeGetReplyBytes(5, absl::OkStatus(), &resp, full.size() - 1);
  const std::string msg = "reply too large for a verbs message";
  ASSERT_EQ(big.size(), kFrameHeaderSize + 4 + msg.size());
  absl::StatusOr<FrameHeader> h = ParseHeader(Whole(big));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->flags, kFlagTooLarge);
  EXPECT_EQ(h->status, static_cast<uint16_t>(absl::StatusCode::kResourceExhausted));
  rpc::GetResponse got;
  bool too_large = false;
  EXPECT_EQ(DecodeGetReply(Whole(big), 5, &got, &too_large), absl::ResourceExhaustedError(msg));
  EXPECT_TRUE(too_large);
  EXPECT_EQ(DecodeGetReply(Whole(big), 5, &got), absl::ResourceExhaustedError(msg));

  // Cells a read never returns go over gRPC too.
  rpc::GetResponse del = resp;
  del.mutable_row()->mutable_cells(0)->set_type(rpc::CELL_TYPE_DELETE);
  too_large = false;
  EXPECT_EQ(DecodeGetReply(Whole(EncodeGetReplyBytes(6, absl::OkStatus(), &del)), 6, &got, &too_large).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(too_large);

  // A too-large flag with another status, or an unknown flag, is malformed.
  Bytes bad = big;
  bad[16] = static_cast<uint8_t>(absl::StatusCode::kInternal);
  EXPECT_EQ(DecodeGetReply(Whole(bad), 5, &got, &too_large),
            absl::InternalError("verbs frame: too-large flag with status 13 at offset 16"));
  EXPECT_FALSE(too_large);
  bad = big;
  bad[18] = 3;
  EXPECT_EQ(DecodeGetReply(Whole(bad), 5, &got), absl::InternalError("verbs frame: unknown flags 0x3 at offset 18"));
}

// A ReplyRow over plain vectors, as the server's row is not protobuf.
class VectorRow final : public ReplyRow {
 public:
  explicit VectorRow(const rpc::Row& from) : key_(from.row()) {
    for (const rpc::Cell& c : from.cells()) {
      cells_.push_back({c.family(), c.qualifier(), c.value(), c.timestamp(), c.type() == rpc::CELL_TYPE_PUT});
    }
  }
  std::string_view row() const override { return key_; }
  size_t size() const override { return cells_.size(); }
  ReplyCell cell(size_t i) const override {
    const Stored& c = cells_[i];
    return ReplyCell{c.family, c.qualifier, c.value, c.ts, c.put};
  }

 private:
  struct Stored {
    std::string family, qualifier, value;
    int64_t ts;
    bool put;
  };
  std::string key_;
  std::vector<Stored> cells_;
};

TEST(VerbsFrameTest, AReplyRowEncodesAsTheSameRowInProtobuf) {
  const rpc::GetResponse full = FullResponse();
  rpc::GetResponse del = full;
  del.mutable_row()->mutable_cells(0)->set_type(rpc::CELL_TYPE_DELETE);
  rpc::GetResponse wide = full;
  wide.mutable_row()->mutable_cells(1)->set_family(std::string(70000, 'f'));  // over a 16-bit length
  const std::vector<const rpc::GetResponse*> cases = {&full, &del, &wide, &rpc::GetResponse::default_instance()};
  for (const rpc::GetResponse* resp : cases) {
    const Bytes want = EncodeGetReplyBytes(9, absl::OkStatus(), resp);
    const VectorRow row(resp->row());
    for (size_t cap : {size_t{1} << 20, std::max<size_t>(want.size(), kMinReplyBuffer),
                       std::max<size_t>(want.size() - 1, kMinReplyBuffer)}) {
      Bytes got(cap);
      got.resize(EncodeGetReplyRow(9, absl::OkStatus(), &row, absl::MakeSpan(got)));
      EXPECT_EQ(got, EncodeGetReplyBytes(9, absl::OkStatus(), resp, cap)) << "cap " << cap;
    }
  }
  // No row, and an error, as EncodeGetReply's.
  Bytes none(kMinReplyBuffer);
  none.resize(EncodeGetReplyRow(3, absl::OkStatus(), nullptr, absl::MakeSpan(none)));
  EXPECT_EQ(none, EncodeGetReplyBytes(3, absl::OkStatus(), nullptr));
  const absl::Status err = absl::NotFoundError("table t1 does not exist");
  Bytes e(kMinReplyBuffer);
  e.resize(EncodeGetReplyRow(4, err, nullptr, absl::MakeSpan(e)));
  EXPECT_EQ(e, EncodeGetReplyBytes(4, err, nullptr));
}

TEST(VerbsFrameTest, ErrorRepliesRoundTripCodeAndMessage) {
  for (int code = 1; code <= 16; ++code) {
    const absl::Status s(static_cast<absl::StatusCode>(code), std::string("table '\0x' ", 11) + std::to_string(code));
    rpc::GetResponse got;
    bool too_large = true;
    EXPECT_EQ(DecodeGetReply(Whole(EncodeGetReplyBytes(code, s, nullptr)), code, &got, &too_large), s);
    EXPECT_FALSE(too_large);
    EXPECT_FALSE(got.has_row());
    EXPECT_EQ(DecodeMutateReply(Whole(EncodeMutateReplyBytes(code, s)), code), s);
  }
  // An error reply ignores the response.
  const rpc::GetResponse resp = FullResponse();
  const Bytes b = EncodeGetReplyBytes(1, absl::NotFoundError(""), &resp);
  EXPECT_EQ(b.size(), kFrameHeaderSize + 4);
  rpc::GetResponse got;
  EXPECT_EQ(DecodeGetReply(Whole(b), 1, &got), absl::NotFoundError(""));
}

TEST(VerbsFrameTest, ErrorMessageIsCutToFit) {
  const absl::Status s = absl::UnavailableError(std::string(1000, 'x'));
  const Bytes b = EncodeMutateReplyBytes(3, s, kMinReplyBuffer);
  EXPECT_EQ(b.size(), kMinReplyBuffer);
  EXPECT_EQ(DecodeMutateReply(Whole(b), 3), absl::UnavailableError(std::string(kMinReplyBuffer - 28, 'x')));
  rpc::GetResponse got;
  EXPECT_EQ(DecodeGetReply(Whole(EncodeGetReplyBytes(3, s, nullptr, 300)), 3, &got),
            absl::UnavailableError(std::string(300 - 28, 'x')));

  // Cut at a character boundary: 'a' then two-byte characters; 228 bytes would split one.
  std::string utf8 = "a";
  for (int i = 0; i < 200; ++i) utf8 += "\xc3\xa9";
  const Bytes u = EncodeMutateReplyBytes(4, absl::AbortedError(utf8), kMinReplyBuffer);
  EXPECT_EQ(u.size(), kMinReplyBuffer - 1);
  EXPECT_EQ(DecodeMutateReply(Whole(u), 4), absl::AbortedError(utf8.substr(0, 227)));
}

TEST(VerbsFrameTest, MutateReplyRoundTrip) {
  const Bytes ok = EncodeMutateReplyBytes(0xABCDEF, absl::OkStatus(), kMinReplyBuffer);
  EXPECT_EQ(ok.size(), kFrameHeaderSize);
  EXPECT_EQ(ok[3], 0x82);
  EXPECT_TRUE(DecodeMutateReply(Whole(ok), 0xABCDEF).ok());
  Bytes longer = ok;
  longer.push_back(0);
  EXPECT_EQ(DecodeMutateReply(Whole(longer), 0xABCDEF), absl::InternalError("verbs frame: 1 trailing bytes at offset 24"));
  SetBodyLen(&longer, 1);
  EXPECT_EQ(DecodeMutateReply(Whole(longer), 0xABCDEF), absl::InternalError("verbs frame: 1 trailing bytes at offset 24"));
}

TEST(VerbsFrameTest, MismatchedRepliesAreInternal) {
  const rpc::GetResponse resp = FullResponse();
  const Bytes get_reply = EncodeGetReplyBytes(10, absl::OkStatus(), &resp);
  const Bytes mutate_reply = EncodeMutateReplyBytes(10, absl::OkStatus());
  rpc::GetResponse got;
  EXPECT_EQ(DecodeGetReply(Whole(get_reply), 11, &got),
            absl::InternalError("verbs frame: reply to request 10 where 11 was expected at offset 8"));
  EXPECT_EQ(DecodeMutateReply(Whole(mutate_reply), 9),
            absl::InternalError("verbs frame: reply to request 10 where 9 was expected at offset 8"));
  EXPECT_EQ(DecodeGetReply(Whole(mutate_reply), 10, &got),
            absl::InternalError("verbs frame: op 0x82 where 0x81 was expected at offset 3"));
  EXPECT_EQ(DecodeMutateReply(Whole(get_reply), 10),
            absl::InternalError("verbs frame: op 0x81 where 0x82 was expected at offset 3"));
  EXPECT_EQ(DecodeMutateReply(Whole(EncodeMutate(10, FullMutate())), 10).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(DecodeGetReply(Whole(EncodeGet(10, FullGet())), 10, &got).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(DecodeGetReply(Whole(Bytes(10, 0)), 10, &got),
            absl::InternalError("verbs frame: truncated header (10 of 24 bytes) at offset 0"));
}

TEST(VerbsFrameTest, EveryTruncationOfAReplyIsRejected) {
  const rpc::GetResponse resp = FullResponse();
  const std::vector<Bytes> frames = {EncodeGetReplyBytes(8, absl::OkStatus(), &resp),
                                     EncodeGetReplyBytes(8, absl::NotFoundError("no table"), nullptr),
                                     EncodeGetReplyBytes(8, absl::OkStatus(), &resp, 100 + kMinReplyBuffer)};
  const absl::StatusCode whole_codes[] = {absl::StatusCode::kOk, absl::StatusCode::kNotFound,
                                          absl::StatusCode::kResourceExhausted};
  for (size_t f = 0; f < frames.size(); ++f) {
    const Bytes& full = frames[f];
    rpc::GetResponse got;
    ASSERT_EQ(DecodeGetReply(Whole(full), 8, &got).code(), whole_codes[f]);
    Bytes patched = full;
    for (size_t n = 0; n < full.size(); ++n) {
      ASSERT_EQ(DecodeGetReply(Whole(full).first(n), 8, &got).code(), absl::StatusCode::kInternal) << n;
      if (n < kFrameHeaderSize) continue;
      SetBodyLen(&patched, static_cast<uint32_t>(n - kFrameHeaderSize));
      ASSERT_EQ(DecodeGetReply(Whole(patched).first(n), 8, &got).code(), absl::StatusCode::kInternal) << n;
    }
  }
  const Bytes err = EncodeMutateReplyBytes(8, absl::AbortedError("conflict"));
  Bytes patched = err;
  for (size_t n = 0; n < err.size(); ++n) {
    ASSERT_EQ(DecodeMutateReply(Whole(err).first(n), 8).code(), absl::StatusCode::kInternal) << n;
    if (n < kFrameHeaderSize) continue;
    // Cut to the bare header, the Aborted status still asks for a message.
    SetBodyLen(&patched, static_cast<uint32_t>(n - kFrameHeaderSize));
    ASSERT_EQ(DecodeMutateReply(Whole(patched).first(n), 8).code(), absl::StatusCode::kInternal) << n;
  }
}

TEST(VerbsFrameTest, CorruptReplyHeaderBytes) {
  const rpc::GetResponse resp = FullResponse();
  const Bytes get_ok = EncodeGetReplyBytes(8, absl::OkStatus(), &resp);
  const Bytes get_err = EncodeGetReplyBytes(8, absl::NotFoundError("no table"), nullptr);
  const Bytes mut_ok = EncodeMutateReplyBytes(8, absl::OkStatus());
  const Bytes mut_err = EncodeMutateReplyBytes(8, absl::AbortedError("conflict"));
  for (size_t i = 0; i < kFrameHeaderSize; ++i) {
    for (int v = 0; v < 256; ++v) {
      auto corrupt = [&](const Bytes& f) {
        Bytes b = f;
        b[i] = static_cast<uint8_t>(v);
        return b;
      };
      rpc::GetResponse got;
      // OK replies: any change to the header is caught.
      if (v != get_ok[i]) {
        ASSERT_EQ(DecodeGetReply(Whole(corrupt(get_ok)), 8, &got).code(), absl::StatusCode::kInternal) << i << " " << v;
      }
      if (v != mut_ok[i]) {
        ASSERT_EQ(DecodeMutateReply(Whole(corrupt(mut_ok)), 8).code(), absl::StatusCode::kInternal) << i << " " << v;
      }
      // Error replies: another valid status code reads as that code, anything else is caught.
      const bool other_code = i == 16 && v >= 1 && v <= 16;
      if (v != get_err[i]) {
        const absl::Status s = DecodeGetReply(Whole(corrupt(get_err)), 8, &got);
        ASSERT_EQ(static_cast<int>(s.code()), other_code ? v : static_cast<int>(absl::StatusCode::kInternal))
            << i << " " << v;
      }
      if (v != mut_err[i]) {
        const absl::Status s = DecodeMutateReply(Whole(corrupt(mut_err)), 8);
        ASSERT_EQ(static_cast<int>(s.code()), other_code ? v : static_cast<int>(absl::StatusCode::kInternal))
            << i << " " << v;
      }
    }
  }
}

}  // namespace
}  // namespace basalt::verbs
