// What of the verbs transport runs without an RDMA device: the shared chunk's slot accounting,
// the connect request's private data, address parsing, the device check, and the argument
// checks of VerbsServer::Start and VerbsClient::Open (with the "no RDMA device" answer on a host
// without one). Everything that needs a device runs in the soft-RoCE guest (tests/rxe).
#include "transport/verbs/datapath.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "transport/verbs/client.h"
#include "transport/verbs/frame.h"
#include "transport/verbs/server.h"

namespace basalt::verbs {
namespace {

bool HostHasRdmaDevice() { return RdmaDevices().ok(); }

// The message as a std::string (Debian's Abseil has its own string_view).
std::string Msg(const absl::Status& s) { return std::string(s.message()); }

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// ---------------------------------------------------------------------------------------------
// SharedChunk

TEST(SharedChunk, CreateRejectsBadSizes) {
  struct Case {
    size_t slots, slot_bytes;
    const char* message;
  };
  const Case cases[] = {
      {0, 64, "shared chunk: bad size 0 x 64"},
      {1, 0, "shared chunk: bad size 1 x 0"},
      {(1u << 20) + 1, 64, "shared chunk: bad size 1048577 x 64"},
      {1, 2 * kMaxMessageBytes + 1, "shared chunk: bad size 1 x 33554433"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::unique_ptr<SharedChunk>> chunk = SharedChunk::Create(c.slots, c.slot_bytes);
    ASSERT_FALSE(chunk.ok()) << c.slots << " x " << c.slot_bytes;
    EXPECT_EQ(chunk.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(Msg(chunk.status()), c.message);
  }
  // The largest slot is accepted (memory is only reserved until Bind registers it).
  absl::StatusOr<std::unique_ptr<SharedChunk>> big = SharedChunk::Create(1, 2 * kMaxMessageBytes);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ((*big)->slot_bytes(), 2 * kMaxMessageBytes);
}

TEST(SharedChunk, SlotsRoundUpTo64BytesAndAreNotRegisteredUntilBind) {
  absl::StatusOr<std::unique_ptr<SharedChunk>> chunk = SharedChunk::Create(3, 100);
  ASSERT_TRUE(chunk.ok()) << chunk.status();
  EXPECT_EQ((*chunk)->slots(), 3u);
  EXPECT_EQ((*chunk)->slot_bytes(), 128u);
  EXPECT_FALSE((*chunk)->bound());
  EXPECT_EQ((*chunk)->pd(), nullptr);
  EXPECT_EQ((*chunk)->in_use(), 0u);

  absl::StatusOr<std::unique_ptr<SharedChunk>> exact = SharedChunk::Create(2, 2 * kDefaultMessageBytes);
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_EQ((*exact)->slot_bytes(), 2 * kDefaultMessageBytes);  // 144 KiB: already a multiple of 64
}

TEST(SharedChunk, AcquireUntilExhaustedThenReleaseGivesASlotBack) {
  constexpr size_t kSlots = 8;
  absl::StatusOr<std::unique_ptr<SharedChunk>> made = SharedChunk::Create(kSlots, 1000);
  ASSERT_TRUE(made.ok()) << made.status();
  SharedChunk& chunk = **made;
  const size_t slot = chunk.slot_bytes();
  ASSERT_EQ(slot, 1024u);

  std::vector<SharedChunk::Slice> slices;
  for (size_t i = 0; i < kSlots; ++i) {
    std::optional<SharedChunk::Slice> s = chunk.Acquire();
    ASSERT_TRUE(s.has_value()) << i;
    slices.push_back(*s);
    EXPECT_EQ(chunk.in_use(), i + 1);
  }
  EXPECT_EQ(slices.front().index, 0u);  // slot 0 first
  EXPECT_FALSE(chunk.Acquire().has_value());
  EXPECT_FALSE(chunk.Acquire().has_value());
  EXPECT_EQ(chunk.in_use(), kSlots);

  // Every slot once; each slice is its slot, 64-byte aligned, and no two overlap.
  std::vector<SharedChunk::Slice> by_offset = slices;
  std::sort(by_offset.begin(), by_offset.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
  for (size_t i = 0; i < kSlots; ++i) {
    const SharedChunk::Slice& s = by_offset[i];
    EXPECT_EQ(s.index, i);
    EXPECT_EQ(s.offset, i * slot);
    EXPECT_EQ(s.size, slot);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s.data) % 64, 0u) << i;
    EXPECT_EQ(s.data, by_offset[0].data + s.offset);
    if (i > 0) {
      EXPECT_LE(by_offset[i - 1].offset + by_offset[i - 1].size, s.offset);
    }
  }
  // The memory is usable and private to each slice.
  for (const SharedChunk::Slice& s : slices) std::memset(s.data, static_cast<int>(s.index + 1), s.size);
  for (const SharedChunk::Slice& s : slices) {
    EXPECT_EQ(std::count(s.data, s.data + s.size, static_cast<uint8_t>(s.index + 1)), static_cast<ptrdiff_t>(s.size))
        << s.index;
  }

  // A released slot comes back (a moving slice: the next endpoint takes it).
  const SharedChunk::Slice given_back = slices[5];
  chunk.Release(given_back);
  EXPECT_EQ(chunk.in_use(), kSlots - 1);
  std::optional<SharedChunk::Slice> again = chunk.Acquire();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->index, given_back.index);
  EXPECT_EQ(again->offset, given_back.offset);
  EXPECT_EQ(again->data, given_back.data);
  EXPECT_EQ(chunk.in_use(), kSlots);
  EXPECT_FALSE(chunk.Acquire().has_value());

  for (const SharedChunk::Slice& s : slices) chunk.Release(s);
  EXPECT_EQ(chunk.in_use(), 0u);
  for (size_t i = 0; i < kSlots; ++i) EXPECT_TRUE(chunk.Acquire().has_value()) << i;
  EXPECT_FALSE(chunk.Acquire().has_value());
}

// ---------------------------------------------------------------------------------------------
// ConnectData: [magic "BVTK" | token (16) | max_reply | version | nonce (8) | mac (16)],
// little-endian fixed32s, the MAC an HMAC-SHA256 with the session's key.

const std::string kKey(ConnectData::kKeyBytes, 'k');

ConnectData SampleConnectData() {
  ConnectData d;
  for (size_t i = 0; i < ConnectData::kTokenBytes; ++i) d.token[i] = static_cast<uint8_t>(0xA0 + i);
  for (size_t i = 0; i < ConnectData::kNonceBytes; ++i) d.nonce[i] = static_cast<uint8_t>(0x10 + i);
  d.max_reply = 72 * 1024;
  return d;
}

TEST(ConnectData, EncodeDecodeRoundTrip) {
  const ConnectData d = SampleConnectData();
  uint8_t buf[ConnectData::kSize];
  d.Encode(kKey, buf);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(buf), 4), "BVTK");
  EXPECT_EQ(std::memcmp(buf + 4, d.token, ConnectData::kTokenBytes), 0);
  EXPECT_EQ(buf[20] | (buf[21] << 8) | (buf[22] << 16) | (buf[23] << 24), 72 * 1024);
  EXPECT_EQ(buf[24], 2);  // version
  EXPECT_EQ(buf[25] | buf[26] | buf[27], 0);
  EXPECT_EQ(std::memcmp(buf + 28, d.nonce, ConnectData::kNonceBytes), 0);

  absl::StatusOr<ConnectData> back = ConnectData::Decode(buf, sizeof(buf));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::memcmp(back->token, d.token, ConnectData::kTokenBytes), 0);
  EXPECT_EQ(std::memcmp(back->nonce, d.nonce, ConnectData::kNonceBytes), 0);
  EXPECT_EQ(back->max_reply, d.max_reply);
  EXPECT_TRUE(back->Verify(kKey));

  // rdma_cm pads private data with zeros: a longer buffer is fine.
  uint8_t padded[56] = {};
  std::memcpy(padded, buf, sizeof(buf));
  back = ConnectData::Decode(padded, sizeof(padded));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->max_reply, d.max_reply);
}

// The MAC binds every field to the session's key: another key, or any byte changed, fails it.
TEST(ConnectData, TheMacNeedsTheSessionsKeyAndCoversEveryField) {
  uint8_t buf[ConnectData::kSize];
  SampleConnectData().Encode(kKey, buf);
  EXPECT_FALSE(ConnectData::Decode(buf, sizeof(buf))->Verify(std::string(ConnectData::kKeyBytes, 'K')));
  EXPECT_FALSE(ConnectData::Decode(buf, sizeof(buf))->Verify(""));
  for (size_t i : {size_t{4}, size_t{19}, size_t{20}, size_t{28}, size_t{35}, size_t{36}, size_t{51}}) {
    uint8_t flipped[ConnectData::kSize];
    std::memcpy(flipped, buf, sizeof(buf));
    flipped[i] ^= 0x40;
    absl::StatusOr<ConnectData> d = ConnectData::Decode(flipped, sizeof(flipped));
    ASSERT_TRUE(d.ok()) << i;
    EXPECT_FALSE(d->Verify(kKey)) << "byte " << i;
  }
}

TEST(ConnectData, DecodeRejectsShortBadMagicAndUnknownVersion) {
  uint8_t buf[ConnectData::kSize];
  SampleConnectData().Encode(kKey, buf);
  auto expect_invalid = [](absl::StatusOr<ConnectData> d, std::string_view message) {
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(Msg(d.status()), message);
  };
  expect_invalid(ConnectData::Decode(buf, ConnectData::kSize - 1), "connect data: too short");
  expect_invalid(ConnectData::Decode(buf, 0), "connect data: too short");
  expect_invalid(ConnectData::Decode(nullptr, ConnectData::kSize), "connect data: too short");

  uint8_t bad[ConnectData::kSize];
  std::memcpy(bad, buf, sizeof(bad));
  bad[0] ^= 1;
  expect_invalid(ConnectData::Decode(bad, sizeof(bad)), "connect data: bad magic");
  std::memcpy(bad, buf, sizeof(bad));
  bad[24] = 1;  // the version before the MAC
  expect_invalid(ConnectData::Decode(bad, sizeof(bad)), "connect data: unknown version");
  std::memcpy(bad, buf, sizeof(bad));
  bad[24] = 0;
  expect_invalid(ConnectData::Decode(bad, sizeof(bad)), "connect data: unknown version");
  const uint8_t zeros[ConnectData::kSize] = {};
  expect_invalid(ConnectData::Decode(zeros, sizeof(zeros)), "connect data: bad magic");
}

// ---------------------------------------------------------------------------------------------
// Addresses

TEST(Sockaddr, ParsesIpv4AndIpv6) {
  sockaddr_storage ss;
  ASSERT_TRUE(ParseSockaddr("10.0.2.15", 4791, &ss).ok());
  ASSERT_EQ(ss.ss_family, AF_INET);
  const auto* v4 = reinterpret_cast<const sockaddr_in*>(&ss);
  EXPECT_EQ(ntohs(v4->sin_port), 4791);
  EXPECT_EQ(ntohl(v4->sin_addr.s_addr), 0x0A00020Fu);
  EXPECT_EQ(SockaddrString(reinterpret_cast<const sockaddr*>(&ss)), "10.0.2.15:4791");

  ASSERT_TRUE(ParseSockaddr("[::1]", 80, &ss).ok());
  ASSERT_EQ(ss.ss_family, AF_INET6);
  EXPECT_EQ(ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port), 80);
  EXPECT_EQ(SockaddrString(reinterpret_cast<const sockaddr*>(&ss)), "[::1]:80");
  ASSERT_TRUE(ParseSockaddr("fe80::a:b", 0, &ss).ok());  // brackets are optional
  EXPECT_EQ(SockaddrString(reinterpret_cast<const sockaddr*>(&ss)), "[fe80::a:b]:0");

  // The port range, both ends included.
  ASSERT_TRUE(ParseSockaddr("192.168.1.1", 0, &ss).ok());
  EXPECT_EQ(SockaddrString(reinterpret_cast<const sockaddr*>(&ss)), "192.168.1.1:0");
  ASSERT_TRUE(ParseSockaddr("192.168.1.1", 65535, &ss).ok());
  EXPECT_EQ(SockaddrString(reinterpret_cast<const sockaddr*>(&ss)), "192.168.1.1:65535");
  ASSERT_TRUE(ParseSockaddr("0.0.0.0", 1, &ss).ok());  // a wildcard parses; VerbsServer refuses it
}

TEST(Sockaddr, RejectsNamesBadAddressesAndPorts) {
  sockaddr_storage ss;
  struct Case {
    const char* host;
    int port;
    const char* message;
  };
  const Case cases[] = {
      {"localhost", 1, "not a numeric IP address: 'localhost'"},  // no name lookup
      {"", 1, "not a numeric IP address: ''"},
      {"10.0.0.256", 1, "not a numeric IP address: '10.0.0.256'"},
      {"10.0.0.1:4791", 1, "not a numeric IP address: '10.0.0.1:4791'"},
      {"[10.0.0.1", 1, "not a numeric IP address: '[10.0.0.1'"},
      {"[]", 1, "not a numeric IP address: '[]'"},
      {"fe80::1%eth0", 1, "not a numeric IP address: 'fe80::1%eth0'"},
      {"10.0.0.1", -1, "port out of range: -1"},
      {"10.0.0.1", 65536, "port out of range: 65536"},
  };
  for (const Case& c : cases) {
    absl::Status s = ParseSockaddr(c.host, c.port, &ss);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.host << " " << c.port;
    EXPECT_EQ(Msg(s), c.message);
  }
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  EXPECT_EQ(SockaddrString(reinterpret_cast<const sockaddr*>(&un)), "(unknown address family)");
}

TEST(ErrnoError, NamesWhatAndTheError) {
  absl::Status s = ErrnoError(absl::StatusCode::kUnavailable, "rdma_bind_addr 10.0.0.1:0", ENODEV);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Msg(s), std::string("rdma_bind_addr 10.0.0.1:0: ") + std::strerror(ENODEV));
}

// ---------------------------------------------------------------------------------------------
// The device check

TEST(RdmaDevices, NamesDevicesOrSaysNoRdmaDevice) {
  absl::StatusOr<std::vector<std::string>> devices = RdmaDevices();
  if (devices.ok()) {
    EXPECT_FALSE(devices->empty());
    for (const std::string& d : *devices) EXPECT_FALSE(d.empty());
    return;
  }
  EXPECT_EQ(devices.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Msg(devices.status()).starts_with("no RDMA device (")) << devices.status();
  EXPECT_TRUE(Contains(Msg(devices.status()), "rdma link add rxe0 type rxe netdev <nic>")) << devices.status();
  EXPECT_TRUE(Contains(Msg(devices.status()), "see deploy/RDMA.md")) << devices.status();
}

// ---------------------------------------------------------------------------------------------
// VerbsServer::Start: arguments are checked before the device.

VerbsHandlers Handlers() {
  VerbsHandlers h;
  h.get = [](const void*, uint64_t id, const GetRequestView&, absl::Span<uint8_t> out, uint64_t*) {
    return EncodeGetReply(id, absl::OkStatus(), nullptr, out);
  };
  h.mutate = [](const void*, const rpc::MutateRequest&) { return absl::OkStatus(); };
  return h;
}

VerbsServerOptions ServerOptions(std::string address) {
  VerbsServerOptions o;
  o.address = std::move(address);
  return o;
}

void ExpectStartFails(const VerbsServerOptions& o, VerbsHandlers h, absl::StatusCode code, std::string_view message) {
  absl::StatusOr<std::unique_ptr<VerbsServer>> s = VerbsServer::Start(o, std::move(h));
  ASSERT_FALSE(s.ok()) << o.address;
  EXPECT_EQ(s.status().code(), code) << s.status();
  EXPECT_EQ(Msg(s.status()), message);
}

TEST(VerbsServerStart, RefusesWildcardAddresses) {
  ExpectStartFails(ServerOptions("0.0.0.0"), Handlers(), absl::StatusCode::kInvalidArgument,
                   "verbs listen address '0.0.0.0' is a wildcard: give the address of the RDMA interface");
  ExpectStartFails(ServerOptions("::"), Handlers(), absl::StatusCode::kInvalidArgument,
                   "verbs listen address '::' is a wildcard: give the address of the RDMA interface");
  ExpectStartFails(ServerOptions("[::]"), Handlers(), absl::StatusCode::kInvalidArgument,
                   "verbs listen address '[::]' is a wildcard: give the address of the RDMA interface");
}

TEST(VerbsServerStart, RefusesBadOptions) {
  VerbsServerOptions o = ServerOptions("10.0.2.15");
  o.helper_threads = 0;
  ExpectStartFails(o, Handlers(), absl::StatusCode::kInvalidArgument, "verbs: helper_threads must be 1..64, not 0");
  o.helper_threads = 65;
  ExpectStartFails(o, Handlers(), absl::StatusCode::kInvalidArgument, "verbs: helper_threads must be 1..64, not 65");
  o = ServerOptions("10.0.2.15");
  o.max_endpoints = 0;
  ExpectStartFails(o, Handlers(), absl::StatusCode::kInvalidArgument, "verbs: max_endpoints must be 1..65536, not 0");
  o = ServerOptions("10.0.2.15");
  o.srq_depth = -1;
  ExpectStartFails(o, Handlers(), absl::StatusCode::kInvalidArgument, "verbs: srq_depth must be 0..65536, not -1");
  o.srq_depth = 65537;
  ExpectStartFails(o, Handlers(), absl::StatusCode::kInvalidArgument, "verbs: srq_depth must be 0..65536, not 65537");
  o.srq_depth = 65536;
  o.helper_threads = 17;
  ExpectStartFails(o, Handlers(), absl::StatusCode::kInvalidArgument,
                   "verbs: srq_depth x helper_threads is 1114112 buffers, more than 1048576");
  o = ServerOptions("10.0.2.15");
  o.credits = 0;
  ExpectStartFails(o, Handlers(), absl::StatusCode::kInvalidArgument, "verbs: credits must be 1..255, not 0");
  o.credits = 256;
  ExpectStartFails(o, Handlers(), absl::StatusCode::kInvalidArgument, "verbs: credits must be 1..255, not 256");
  o = ServerOptions("10.0.2.15");
  o.message_bytes = 10;
  ExpectStartFails(o, Handlers(), absl::StatusCode::kInvalidArgument,
                   "verbs: message_bytes must be 1024..16777216, not 10");
  ExpectStartFails(ServerOptions("10.0.2.15"), VerbsHandlers{}, absl::StatusCode::kInvalidArgument,
                   "verbs: handlers missing");
  ExpectStartFails(ServerOptions("rdma-host.example"), Handlers(), absl::StatusCode::kInvalidArgument,
                   "verbs listen address: not a numeric IP address: 'rdma-host.example'");
  o = ServerOptions("10.0.2.15");
  o.port = 70000;
  ExpectStartFails(o, Handlers(), absl::StatusCode::kInvalidArgument, "verbs listen address: port out of range: 70000");
}

TEST(VerbsServerStart, NoRdmaDeviceOnThisHost) {
  if (HostHasRdmaDevice()) GTEST_SKIP() << "this host has an RDMA device";
  for (const char* address : {"127.0.0.1", "10.0.2.15", "[::1]"}) {
    absl::StatusOr<std::unique_ptr<VerbsServer>> s = VerbsServer::Start(ServerOptions(address), Handlers());
    ASSERT_FALSE(s.ok()) << address;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
    EXPECT_TRUE(Msg(s.status()).starts_with("no RDMA device (")) << s.status();
  }
}

// ---------------------------------------------------------------------------------------------
// VerbsClient::Open: arguments, then the device, then (only then) the session.

TEST(VerbsClientOpen, RefusesBadOptionsWithoutFetchingASession) {
  int sessions = 0;
  auto source = [&]() -> absl::StatusOr<VerbsSession> {
    ++sessions;
    return absl::UnavailableError("not reached");
  };
  VerbsClientOptions o;
  o.max_endpoints = 0;
  absl::StatusOr<std::unique_ptr<VerbsClient>> c = VerbsClient::Open(source, o);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Msg(c.status()), "verbs: max_endpoints must be 1..4096, not 0");
  o.max_endpoints = 4097;
  EXPECT_EQ(VerbsClient::Open(source, o).status().code(), absl::StatusCode::kInvalidArgument);
  o = VerbsClientOptions{};
  o.message_bytes = kMaxMessageBytes + 1;
  c = VerbsClient::Open(source, o);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Msg(c.status()), "verbs: message_bytes out of range: 16777217");
  EXPECT_EQ(sessions, 0);
}

TEST(VerbsClientOpen, NoRdmaDeviceOnThisHostBeforeAnySession) {
  if (HostHasRdmaDevice()) GTEST_SKIP() << "this host has an RDMA device";
  int sessions = 0;
  auto source = [&]() -> absl::StatusOr<VerbsSession> {
    ++sessions;
    VerbsSession s;
    s.address = "10.0.2.15";
    s.port = 4791;
    s.token = std::string(ConnectData::kTokenBytes, 't');
    s.key = std::string(ConnectData::kKeyBytes, 'k');
    s.expires = absl::Now() + absl::Minutes(1);
    return s;
  };
  absl::StatusOr<std::unique_ptr<VerbsClient>> c = VerbsClient::Open(source, VerbsClientOptions{});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition) << c.status();
  EXPECT_TRUE(Msg(c.status()).starts_with("no RDMA device (")) << c.status();
  EXPECT_EQ(sessions, 0);  // the device check comes first: no gRPC round trip for nothing
}

}  // namespace
}  // namespace basalt::verbs
