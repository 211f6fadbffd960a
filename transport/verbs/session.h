// The session of the fast paths (docs/DESIGN.md §4): what a server hands a client over gRPC
// before it opens verbs endpoints or TCP connections, the proof each endpoint or connection
// carries (ConnectData: the session's token, a fresh nonce and a MAC with the session's key),
// and the server's table of the sessions it issued (SessionTable). The verbs transport carries
// ConnectData in rdma_cm's private data; the TCP path as the first bytes of its stream.
//
// No RDMA here: the TCP path links this without rdma-core.
//
// Thread-safety: SessionTable is safe to use from many threads; the rest are values.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/basalt.pb.h"

namespace basalt {
class GrpcPath;  // transport/grpc/path.h
}  // namespace basalt

namespace basalt::verbs {

// The message settings both sides agree on: every endpoint's slice is a receive half and a
// send half of message_bytes each.
inline constexpr size_t kDefaultMessageBytes = 72 * 1024;  // a 64 KiB value plus its framing
inline constexpr size_t kMinMessageBytes = 1024;
inline constexpr size_t kMaxMessageBytes = 16 << 20;

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


// The session as OpenVerbsSession carries it (the server's side and the client's).
rpc::VerbsSessionResponse SessionToProto(const VerbsSession& s);
VerbsSession SessionFromProto(const rpc::VerbsSessionResponse& r);

// The client's side: asks the server behind `grpc` for a session of `path` (OpenVerbsSession).
// FailedPrecondition when the server answers with another frame version, or a session of
// another path (a server that predates the TCP path); the server's errors as they are.
absl::StatusOr<VerbsSession> FetchSession(GrpcPath* grpc, absl::Duration timeout, rpc::FastPath path);

// The sessions a server issued, by token: who each was issued to, its key, its expiry and the
// nonces of the connects it has taken (a replay is refused).
class SessionTable {
 public:
  // `what` names the transport in errors ("verbs", "tcp"), `cap_setting` the setting of the
  // sessions per owner ("rdma_max_sessions_per_user").
  SessionTable(std::string what, std::string cap_setting)
      : what_(std::move(what)), cap_setting_(std::move(cap_setting)) {}

  // A new token and key for `principal` (kept with the session and handed back by Admit),
  // counted against `owner` (a user; "" has no cap): fills s->token, s->key and s->expires
  // (now + ttl). ResourceExhausted past `max_per_owner` unexpired sessions of the owner (0: no
  // cap) or 100,000 in all.
  absl::Status Issue(std::shared_ptr<const void> principal, const std::string& owner, absl::Duration ttl,
                     int max_per_owner, VerbsSession* s);

  struct Admitted {
    std::shared_ptr<const void> principal;
    std::string owner;
  };
  // Whom a connect's session was issued to, or PermissionDenied saying why not: a token never
  // issued, expired, a MAC not made with the session's key, a nonce seen before, or a session
  // that has taken kMaxConnects connects.
  absl::StatusOr<Admitted> Admit(const ConnectData& cd);

  // Forgets every session (the transport was disabled).
  void DropAll();
  uint64_t issued() const { return issued_.load(std::memory_order_relaxed); }

  static constexpr size_t kMaxConnects = 4096;

 private:
  struct Session {
    absl::Time expires;
    std::string key;
    std::shared_ptr<const void> principal;
    std::string owner;
    absl::flat_hash_set<std::string> nonces;  // of the connects it has taken
  };
  // Removes the sessions past their expiry (all of them: `everything`).
  void DropLocked(bool everything) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int SessionsOfLocked(const std::string& owner) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string what_;
  const std::string cap_setting_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Session> tokens_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> owner_sessions_ ABSL_GUARDED_BY(mu_);  // in tokens_
  std::atomic<uint64_t> issued_{0};
};

}  // namespace basalt::verbs
