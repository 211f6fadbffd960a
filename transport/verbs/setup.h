// Setting up the verbs transport (docs/DESIGN.md, §4), apart from its datapath
// (transport/verbs/datapath.h), as eRPC keeps ib_transport.cc apart from
// ib_transport_datapath.cc:
//   - the device check ("no RDMA device"), rdma_cm event channels and addresses,
//   - CmId, the owner of an rdma_cm id (and of its queue pair, once made),
//   - the RC queue pair every endpoint uses,
//   - the session a server hands a client over gRPC, and the connect request's private data
//     (ConnectData, drawn below).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/sockaddr.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace basalt::verbs {

// The names of the RDMA devices on this host; FailedPrecondition "no RDMA device ..." when there
// is none (no HCA driver or rdma_rxe loaded, or no /sys/class/infiniband at all).
absl::StatusOr<std::vector<std::string>> RdmaDevices();

// "<what>: <strerror(err)>" with `code`.
absl::Status ErrnoError(absl::StatusCode code, std::string_view what, int err);

// Makes a channel's fd (completion or rdma_cm event channel) non-blocking, so a poll() that
// woke spuriously never leaves a reader stuck in ibv_get_cq_event / rdma_get_cm_event.
absl::Status SetNonBlocking(int fd, std::string_view what);

// An rdma_cm event channel with a non-blocking fd, read by a thread that polls it.
absl::StatusOr<rdma_event_channel*> CreateEventChannel();

// A numeric IPv4/IPv6 address and port as a sockaddr (no name lookup: the RDMA address of a
// server is an address). InvalidArgument otherwise.
absl::Status ParseSockaddr(const std::string& host, int port, sockaddr_storage* out);
// (SockaddrString, its text, is common/sockaddr.h's.)

// The message settings both sides agree on: every endpoint's slice is a receive half and a
// send half of message_bytes each.
inline constexpr size_t kDefaultMessageBytes = 72 * 1024;  // a 64 KiB value plus its framing
inline constexpr size_t kMinMessageBytes = 1024;
inline constexpr size_t kMaxMessageBytes = 16 << 20;

// Owns an rdma_cm id: destroys its queue pair, if it has one, then the id.
struct CmIdDeleter {
  void operator()(rdma_cm_id* id) const;
};
using CmId = std::unique_ptr<rdma_cm_id, CmIdDeleter>;

// rdma_disconnect(id) from a thread that does not own the id (a CM event thread acting on a
// DISCONNECTED event while the endpoint may be being destroyed): librdmacm moves id->qp to error
// reading id->qp unlocked, so this and CmIdDeleter's destruction of the queue pair take one lock,
// and a queue pair is never modified after it is freed.
void DisconnectUnowned(rdma_cm_id* id);

// The queue-pair settings of an endpoint with one request or reply in flight each way (one
// with credits has room for that many more each way).
inline constexpr uint32_t kSendDepth = 8;
inline constexpr uint32_t kSignalEvery = 4;  // one signalled send in four frees the send queue
inline constexpr uint32_t kRecvDepth = 2;
inline constexpr uint32_t kRecvBatch = kRecvDepth;  // receives posted per ibv_post_recv
inline constexpr uint32_t kWantedInline = 256;

// Creates the RC queue pair of `id` on `pd`, both queues on `cq`, receiving from `srq` when
// given (then it has no receive queue of its own), with room for `send_depth` sends and
// `recv_depth` receives. Returns the inline size the device granted (0 when it has none).
absl::StatusOr<uint32_t> CreateQueuePair(rdma_cm_id* id, ibv_pd* pd, ibv_cq* cq, ibv_srq* srq = nullptr,
                                         uint32_t send_depth = kSendDepth, uint32_t recv_depth = kRecvDepth);


// What a server hands a client over gRPC before it connects endpoints (OpenVerbsSession).
struct VerbsSession {
  std::string address;  // numeric IP the server's rdma_cm listens on
  int port = 0;
  std::string token;    // ConnectData::kTokenBytes random bytes: names the session
  // ConnectData::kKeyBytes random bytes: the key of every connect's MAC. It travels only in the
  // gRPC reply (over TLS when the server has it), never over verbs, so a token read off the
  // fabric, or another user's, connects nothing.
  std::string key;
  absl::Time expires = absl::InfinitePast();  // endpoints must connect before this
  size_t message_bytes = kDefaultMessageBytes;  // the server's receive half
  size_t rendezvous_bytes = 0;  // the largest request it reads by rendezvous (0: none)
  // Requests an endpoint may have in flight at once (1: one, then its reply; a server that
  // predates credits says nothing, which is 1).
  uint32_t credits = 1;
};

// The most requests an endpoint may have in flight: a client names a request's credit in the
// low byte of its id.
inline constexpr int kMaxCredits = 255;

// The connect request's private data (rdma_cm gives an RC connect 56 bytes): the session token,
// the client's receive half, a nonce of this connect and a MAC over them with the session's
// key. Fixed32 fields are little-endian (common/coding.h); rdma_cm may pad the data with zeros.
//
//   offset  0  magic      u32  0x4B545642 ("BVTK")
//   offset  4  token      16 bytes (VerbsSession::token)
//   offset 20  max_reply  u32  the client's receive half: replies must fit it
//   offset 24  version    u32  2
//   offset 28  nonce      8 bytes, random per connect: the server refuses one it has seen
//   offset 36  mac        16 bytes: HMAC-SHA256(VerbsSession::key, bytes 0..35), truncated
struct ConnectData {
  static constexpr uint32_t kMagic = 0x4B545642;  // "BVTK"
  static constexpr uint32_t kVersion = 2;
  static constexpr size_t kTokenBytes = 16;
  static constexpr size_t kKeyBytes = 32;
  static constexpr size_t kNonceBytes = 8;
  static constexpr size_t kMacBytes = 16;
  static constexpr size_t kSignedBytes = 36;
  static constexpr size_t kSize = kSignedBytes + kMacBytes;  // 52
  uint8_t token[kTokenBytes] = {};
  uint32_t max_reply = 0;  // the client's receive half: replies must fit it
  uint8_t nonce[kNonceBytes] = {};
  uint8_t mac[kMacBytes] = {};

  // Encodes, with the MAC computed over the rest with `key`.
  void Encode(std::string_view key, uint8_t out[kSize]) const;
  // InvalidArgument unless `len` bytes at `p` are a ConnectData of this version (rdma_cm may pad
  // private data with zeros, so longer is fine). The MAC is not checked: Verify does, once the
  // token has named the session and so the key.
  static absl::StatusOr<ConnectData> Decode(const void* p, size_t len);
  // Whether the MAC is right for `key` (compared in constant time).
  bool Verify(std::string_view key) const;

 private:
  void EncodeSigned(uint8_t out[kSignedBytes]) const;
};

// `n` bytes from getrandom(2); Internal on failure.
absl::StatusOr<std::string> RandomBytes(size_t n);

}  // namespace basalt::verbs
