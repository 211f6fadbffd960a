// TlsStream with nothing between its two ends but this test: a server's and a client's stream,
// each one's output fed to the other by hand, so every way bytes can arrive (a record a byte at
// a time, records together, a reader with little room) is tried exactly.
#include "common/tls.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/util/test_certs.h"

namespace basalt {
namespace {

class TlsStreamTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { certs_ = new testing::TestCerts(BASALT_SOURCE_DIR, "alice"); }
  static void TearDownTestSuite() {
    delete certs_;
    certs_ = nullptr;
  }
  static std::string Cert(const std::string& name) { return (*certs_)(name); }

  // A server and a client stream, their handshake done.
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(NewPair());
    for (int flight = 0; flight < 8 && !(server_->handshake_done() && client_->handshake_done()); ++flight) {
      absl::StatusOr<bool> done = client_->Handshake();
      ASSERT_TRUE(done.ok()) << done.status();
      server_->Feed(Output(client_.get()));
      done = server_->Handshake();
      ASSERT_TRUE(done.ok()) << done.status();
      client_->Feed(Output(server_.get()));
    }
    ASSERT_TRUE(server_->handshake_done() && client_->handshake_done());
    ASSERT_EQ(server_->PeerCommonName(), "alice");
  }

  // A server stream and a client stream, nothing sent yet.
  void NewPair() {
    absl::StatusOr<std::shared_ptr<TlsContext>> s =
        TlsContext::Server(Cert("server.pem"), Cert("server.key"), Cert("ca.pem"));
    ASSERT_TRUE(s.ok()) << s.status();
    absl::StatusOr<std::shared_ptr<TlsContext>> c =
        TlsContext::Client(Cert("ca.pem"), Cert("alice.pem"), Cert("alice.key"));
    ASSERT_TRUE(c.ok()) << c.status();
    absl::StatusOr<std::unique_ptr<TlsStream>> server = TlsStream::New(*s);
    absl::StatusOr<std::unique_ptr<TlsStream>> client = TlsStream::New(*c, "127.0.0.1");
    ASSERT_TRUE(server.ok() && client.ok());
    server_ = std::move(*server);
    client_ = std::move(*client);
  }
  // What `from` has to send to its peer.
  static std::string Output(TlsStream* from) {
    std::string out;
    from->TakeOutput(&out);
    return out;
  }
  // `plain` sealed by the client: the bytes that go over the wire.
  std::string Sealed(const std::string& plain) {
    EXPECT_TRUE(client_->Write(plain).ok());
    std::string wire;
    client_->TakeOutput(&wire);
    return wire;
  }
  // All the server can read now, `room` bytes at a time.
  std::string ReadAll(size_t room) {
    std::string got;
    std::string buf(room, '\0');
    for (;;) {
      absl::StatusOr<size_t> n = server_->Read(absl::MakeSpan(buf));
      EXPECT_TRUE(n.ok()) << n.status();
      if (!n.ok() || *n == 0) return got;
      got.append(buf.data(), *n);
    }
  }

  static testing::TestCerts* certs_;
  std::unique_ptr<TlsStream> server_;
  std::unique_ptr<TlsStream> client_;
};

testing::TestCerts* TlsStreamTest::certs_ = nullptr;

TEST_F(TlsStreamTest, NothingIsReadUntilARecordIsWholeThenAllOfIt) {
  EXPECT_EQ(ReadAll(64), "");  // nothing fed
  const std::string wire = Sealed("a request of some forty bytes, sealed");
  ASSERT_GT(wire.size(), 40u);
  for (size_t i = 0; i + 1 < wire.size(); ++i) {
    server_->Feed(wire.substr(i, 1));
    ASSERT_EQ(ReadAll(64), "") << "after " << i + 1 << " of " << wire.size() << " bytes";
  }
  server_->Feed(wire.substr(wire.size() - 1));
  EXPECT_EQ(ReadAll(64), "a request of some forty bytes, sealed");
  EXPECT_EQ(ReadAll(64), "");
  EXPECT_FALSE(server_->closed());
}

TEST_F(TlsStreamTest, RecordsFedTogetherAreAllReadThoughTheReaderHasLittleRoom) {
  std::string wire;
  std::string want;
  for (int i = 0; i < 5; ++i) {
    const std::string plain = absl::StrCat("call ", i, ": ", std::string(static_cast<size_t>(100 * i), 'x'));
    wire += Sealed(plain);
    want += plain;
  }
  // With half a record more behind them: read once whole.
  const std::string next = Sealed("the next call");
  server_->Feed(wire + next.substr(0, next.size() / 2));
  EXPECT_EQ(ReadAll(7), want);  // what a record holds past 7 bytes is held for the next Read
  server_->Feed(next.substr(next.size() / 2));
  EXPECT_EQ(ReadAll(7), "the next call");
}

// The client's last handshake flight and its first call, arriving in one read: the server's
// handshake ends holding the call (read ahead), and Read gives it though nothing more is fed.
TEST_F(TlsStreamTest, ACallSentWithTheHandshakesLastFlightIsRead) {
  ASSERT_NO_FATAL_FAILURE(NewPair());
  auto done = [](TlsStream* s) {
    absl::StatusOr<bool> d = s->Handshake();
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() && *d;
  };
  ASSERT_FALSE(done(client_.get()));
  server_->Feed(Output(client_.get()));  // ClientHello
  ASSERT_FALSE(done(server_.get()));
  client_->Feed(Output(server_.get()));  // ServerHello ... Finished
  ASSERT_TRUE(done(client_.get()));      // done: its certificate and Finished to send
  std::string wire = Output(client_.get());
  ASSERT_TRUE(client_->Write("the first call").ok());
  client_->TakeOutput(&wire);
  server_->Feed(wire);
  ASSERT_TRUE(done(server_.get()));
  EXPECT_EQ(server_->PeerCommonName(), "alice");
  EXPECT_EQ(ReadAll(64), "the first call");
}

TEST_F(TlsStreamTest, ARecordAlteredOnTheWireIsDataLoss) {
  std::string wire = Sealed("an answer that must not be believed once altered");
  wire[wire.size() - 3] ^= 0x20;
  server_->Feed(wire);
  std::string buf(256, '\0');
  absl::StatusOr<size_t> n = server_->Read(absl::MakeSpan(buf));
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), absl::StatusCode::kDataLoss) << n.status();
}

}  // namespace
}  // namespace basalt
