#include "src/front/hbase/rpc_codec.h"

#include <fstream>
#include <iterator>

#include "common/coding.h"
#include "gtest/gtest.h"

namespace basalt::hbase {
namespace {

std::string ReadTestData(const std::string& name) {
  std::ifstream in(std::string(BASALT_SOURCE_DIR) + "/tests/hbase/testdata/" + name, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}


// A frame read back the way the Java client reads an answer.
Answer ReadAnswer(std::string_view frame) {
  EXPECT_EQ(WholeFrame(frame), frame.size());
  absl::StatusOr<Answer> a = DecodeAnswer(frame.substr(4));
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *a : Answer{};
}

std::string Preamble() { return std::string("HBas\x00\x50", 6); }

// What the unmodified hbase-shaded-client 2.6.0 jar sent when it opened a connection to ask for
// the cluster id (tests/hbase/testdata/README.md says how it was captured), fed in small pieces.
TEST(HBaseRpc, ReadsWhatTheJavaClientSends) {
  const std::string bytes = ReadTestData("client-2.6.0-getclusterid.bin");
  ASSERT_EQ(bytes.size(), 404u);
  for (size_t piece : {size_t{1}, size_t{7}, bytes.size()}) {
    ConnectionReader reader(1 << 20);
    std::vector<Call> calls;
    for (size_t at = 0; at < bytes.size(); at += piece) {
      reader.Feed(std::string_view(bytes).substr(at, piece));
      for (;;) {
        absl::StatusOr<std::optional<Call>> next = reader.Next();
        ASSERT_TRUE(next.ok()) << next.status();
        if (!next->has_value()) break;
        calls.push_back(**next);
      }
    }
    ASSERT_TRUE(reader.header().has_value());
    const ConnectionHeader& h = *reader.header();
    EXPECT_EQ(h.service_name(), "ClientMetaService");
    EXPECT_EQ(h.cell_block_codec_class(), "org.apache.hadoop.hbase.codec.KeyValueCodec");
    EXPECT_EQ(h.user_info().effective_user(), "root");
    EXPECT_EQ(h.version_info().version(), "2.6.0");
    EXPECT_EQ(h.version_info().version_major(), 2u);
    EXPECT_EQ(h.version_info().version_minor(), 6u);
    ASSERT_EQ(calls.size(), 1u) << piece;
    EXPECT_EQ(calls[0].header.call_id(), 0u);
    EXPECT_EQ(calls[0].header.method_name(), "GetClusterId");
    EXPECT_TRUE(calls[0].header.request_param());
    EXPECT_EQ(calls[0].header.timeout(), 2000u);
    EXPECT_EQ(calls[0].param, "");  // GetClusterIdRequest has no fields
    EXPECT_EQ(calls[0].cell_block, "");
    EXPECT_EQ(reader.buffered(), 0u);
  }
}

// 2.6's client first tries a connection-registry preamble; a server that does not serve it
// answers HBase's FatalConnectionException, and the client goes on with "HBas".
TEST(HBaseRpc, RefusesAnotherPreambleWithAFatalConnectionError) {
  ConnectionReader reader(1 << 20);
  reader.Feed(ReadTestData("client-2.6.0-registry-preamble.bin"));
  absl::StatusOr<std::optional<Call>> next = reader.Next();
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().message(), "Expected HEADER=HBas but received HEADER=Regi");
  // Refused for good: more bytes change nothing.
  reader.Feed(Preamble());
  EXPECT_FALSE(reader.Next().ok());
  const Answer a = ReadAnswer(ConnectionError(next.status()));
  EXPECT_EQ(a.header.call_id(), kConnectionCallId);
  EXPECT_EQ(a.header.exception().exception_class_name(), "org.apache.hadoop.hbase.ipc.FatalConnectionException");
  EXPECT_EQ(a.header.exception().stack_trace(), "Expected HEADER=HBas but received HEADER=Regi");
  EXPECT_TRUE(a.header.exception().do_not_retry());

  for (const auto& [preamble, message] :
       std::vector<std::pair<std::string, std::string>>{{std::string("HBas\x01\x50", 6), "version 1 of HBase's RPC is not served (0 is)"},
                                                        {std::string("HBas\x00\x51", 6), "authentication method 81 is not served (SIMPLE, 80, is)"}}) {
    ConnectionReader r(1 << 20);
    r.Feed(preamble);
    EXPECT_EQ(r.Next().status().message(), message);
  }
}

TEST(HBaseRpc, CallsWithCellBlocksPipelined) {
  ConnectionHeader h;
  h.set_service_name("ClientService");
  std::string bytes = EncodeHello(h);
  for (uint32_t id = 1; id <= 3; ++id) {
    RequestHeader rh;
    rh.set_call_id(id);
    rh.set_method_name("Multi");
    rh.set_request_param(true);
    const std::string cells(id * 10, 'c');
    rh.mutable_cell_block_meta()->set_length(static_cast<uint32_t>(cells.size()));
    bytes += EncodeCall(rh, std::string(id, 'p'), cells);
  }
  ConnectionReader reader(1 << 20);
  reader.Feed(bytes);
  for (uint32_t id = 1; id <= 3; ++id) {
    absl::StatusOr<std::optional<Call>> next = reader.Next();
    ASSERT_TRUE(next.ok() && next->has_value()) << next.status();
    EXPECT_EQ((*next)->header.call_id(), id);
    EXPECT_EQ((*next)->param, std::string(id, 'p'));
    EXPECT_EQ((*next)->cell_block, std::string(id * 10, 'c'));
  }
  EXPECT_FALSE(reader.Next()->has_value());
}

// Calls of the same size pipelined in one read: each keeps its own bytes when the reader
// compacts its buffer between them (it once compacted before copying a call's request out, so
// a call read from the start of its buffer took the next call's bytes).
TEST(HBaseRpc, EqualSizedPipelinedCallsKeepTheirOwnBytes) {
  ConnectionHeader h;
  h.set_service_name("ClientService");
  auto call = [](uint32_t id) {
    RequestHeader rh;
    rh.set_call_id(id);
    rh.set_method_name("Get");
    rh.set_request_param(true);
    rh.mutable_cell_block_meta()->set_length(4);
    return EncodeCall(rh, std::string(8, static_cast<char>('a' + id)), std::string(4, static_cast<char>('A' + id)));
  };
  ConnectionReader reader(1 << 20);
  reader.Feed(EncodeHello(h) + call(1));
  uint32_t want = 1;
  auto drain = [&] {
    for (;;) {
      absl::StatusOr<std::optional<Call>> next = reader.Next();
      ASSERT_TRUE(next.ok()) << next.status();
      if (!next->has_value()) return;
      EXPECT_EQ((*next)->header.call_id(), want);
      EXPECT_EQ((*next)->param, std::string(8, static_cast<char>('a' + want)));
      EXPECT_EQ((*next)->cell_block, std::string(4, static_cast<char>('A' + want)));
      ++want;
    }
  };
  drain();  // the buffer is now empty: the next read starts at its front
  reader.Feed(call(2) + call(3));
  drain();
  reader.Feed(call(4) + call(5) + call(6));
  drain();
  EXPECT_EQ(want, 7u);
}

TEST(HBaseRpc, MalformedAndOversizedFramesAreRefused) {
  ConnectionHeader h;
  h.set_service_name("ClientService");
  const std::string start = EncodeHello(h);
  RequestHeader rh;
  rh.set_call_id(7);
  rh.set_method_name("Get");
  rh.set_request_param(true);
  rh.mutable_cell_block_meta()->set_length(5);
  struct Case {
    std::string frame;
    std::string message;
  };
  std::string lying_param;  // a request whose delimited length runs past the frame
  {
    RequestHeader g = rh;
    g.clear_cell_block_meta();
    std::string body;
    PutVarint32(&body, static_cast<uint32_t>(g.ByteSizeLong()));
    g.AppendToString(&body);
    PutVarint32(&body, 100);
    body += "xy";
    PutFixed32(&lying_param, __builtin_bswap32(static_cast<uint32_t>(body.size())));
    lying_param += body;
  }
  // Inside a whole frame whose call is known, a bad request or cell block is that call's: it
  // comes out marked malformed (answered with an exception) and the next frame is read.
  const Case calls[] = {
      {EncodeCall(rh, "param", "abc"), "malformed call 7: 3 bytes follow its request where its cell block has 5"},
      {lying_param, "malformed call: the request's length runs past its frame"},
  };
  RequestHeader good = rh;
  good.clear_cell_block_meta();
  good.set_call_id(8);
  for (const Case& c : calls) {
    ConnectionReader reader(1 << 20);
    reader.Feed(start + c.frame + EncodeCall(good, "ok"));
    absl::StatusOr<std::optional<Call>> next = reader.Next();
    ASSERT_TRUE(next.ok() && next->has_value()) << next.status();
    EXPECT_EQ((*next)->header.call_id(), 7u);
    EXPECT_EQ((*next)->malformed.message(), c.message);
    next = reader.Next();
    ASSERT_TRUE(next.ok() && next->has_value()) << next.status();
    EXPECT_EQ((*next)->header.call_id(), 8u);
    EXPECT_TRUE((*next)->malformed.ok());
    EXPECT_EQ((*next)->param, "ok");
  }
  // Without a call to blame, or past the size limit, the connection is refused.
  const Case cases[] = {
      {std::string("\x00\x00\x00\x02\x05\xff", 6), "malformed call: the request header's length runs past its frame"},
      {std::string("\x00\x10\x00\x01", 4), "a frame of 1048577 bytes is over this server's limit of 1048576"},
  };
  for (const Case& c : cases) {
    ConnectionReader reader(1 << 20);
    reader.Feed(start + c.frame);
    absl::StatusOr<std::optional<Call>> next = reader.Next();
    ASSERT_FALSE(next.ok()) << c.message;
    EXPECT_EQ(next.status().message(), c.message);
  }
  ConnectionReader reader(1 << 20);
  reader.Feed(Preamble() + std::string("\x00\x00\x00\x02\x0a\x05", 6));  // a header cut short
  EXPECT_EQ(reader.Next().status().message(), "malformed connection header");
  ConnectionReader no_user(1 << 20);
  no_user.Feed(Preamble() + std::string("\x00\x00\x00\x02\x0a\x00", 6));  // user_info without its required user
  EXPECT_EQ(no_user.Next().status().message(), "malformed connection header: it lacks user_info.effective_user");
}

// No cut and no flipped bit of the real client's bytes makes the reader crash or read past what
// it was given (ASan watches): each is a call, more bytes awaited, or a refusal.
TEST(HBaseRpc, DamagedClientBytesNeverCrash) {
  const std::string bytes = ReadTestData("client-2.6.0-getclusterid.bin");
  auto drain = [](std::string_view b) {
    ConnectionReader reader(1 << 16);
    reader.Feed(b);
    for (int i = 0; i < 4; ++i) {
      absl::StatusOr<std::optional<Call>> next = reader.Next();
      if (!next.ok() || !next->has_value()) return;
    }
  };
  for (size_t n = 0; n <= bytes.size(); ++n) drain(std::string_view(bytes).substr(0, n));
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string b = bytes;
      b[i] = static_cast<char>(b[i] ^ (1 << bit));
      drain(b);
    }
  }
}

TEST(HBaseRpc, AnswersAndExceptionsAsTheClientReadsThem) {
  ResponseHeader inner;  // any message serves as a response here
  inner.set_call_id(99);
  const Answer ok = ReadAnswer(EncodeResponse(5, inner, "cells"));
  EXPECT_EQ(ok.header.call_id(), 5u);
  EXPECT_FALSE(ok.header.has_exception());
  EXPECT_EQ(ok.header.cell_block_meta().length(), 5u);
  EXPECT_EQ(ok.message, inner.SerializeAsString());
  EXPECT_EQ(ok.cell_block, "cells");
  const Answer plain = ReadAnswer(EncodeResponse(6, inner));
  EXPECT_FALSE(plain.header.has_cell_block_meta());

  const Answer failed = ReadAnswer(EncodeException(8, "org.apache.hadoop.hbase.RegionTooBusyException", "busy",
                                                   /*do_not_retry=*/false, /*server_overloaded=*/true));
  EXPECT_EQ(failed.header.call_id(), 8u);
  EXPECT_EQ(failed.header.exception().exception_class_name(), "org.apache.hadoop.hbase.RegionTooBusyException");
  EXPECT_EQ(failed.header.exception().stack_trace(), "busy");
  EXPECT_FALSE(failed.header.exception().has_do_not_retry());
  EXPECT_TRUE(failed.header.exception().server_overloaded());
  EXPECT_EQ(failed.message, "");
}

}  // namespace
}  // namespace basalt::hbase
