#include "transport/verbs/session.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "transport/grpc/grpc_settings.h"
#include "transport/grpc/path.h"
#include "transport/verbs/frame.h"

namespace basalt::verbs {

// ---------------------------------------------------------------------------------------------
// Connect data

void ConnectData::EncodeSigned(uint8_t out[kSignedBytes]) const {
  EncodeFixed32(reinterpret_cast<char*>(out), kMagic);
  std::memcpy(out + 4, token, kTokenBytes);
  EncodeFixed32(reinterpret_cast<char*>(out + 4 + kTokenBytes), max_reply);
  EncodeFixed32(reinterpret_cast<char*>(out + 8 + kTokenBytes), kVersion);
  std::memcpy(out + 12 + kTokenBytes, nonce, kNonceBytes);
}

namespace {
// HMAC-SHA256 of `data` with `key`, its first ConnectData::kMacBytes bytes.
void Mac(std::string_view key, const uint8_t* data, size_t len, uint8_t out[ConnectData::kMacBytes]) {
  unsigned char full[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), data, len, full, &n);
  std::memcpy(out, full, ConnectData::kMacBytes);
}
}  // namespace

void ConnectData::Encode(std::string_view key, uint8_t out[kSize]) const {
  EncodeSigned(out);
  Mac(key, out, kSignedBytes, out + kSignedBytes);
}

bool ConnectData::Verify(std::string_view key) const {
  uint8_t signed_part[kSignedBytes];
  EncodeSigned(signed_part);
  uint8_t want[kMacBytes];
  Mac(key, signed_part, kSignedBytes, want);
  return CRYPTO_memcmp(want, mac, kMacBytes) == 0;
}

absl::StatusOr<ConnectData> ConnectData::Decode(const void* p, size_t len) {
  if (p == nullptr || len < kSize) return absl::InvalidArgumentError("connect data: too short");
  const char* b = static_cast<const char*>(p);
  if (DecodeFixed32(b) != kMagic) return absl::InvalidArgumentError("connect data: bad magic");
  if (DecodeFixed32(b + 8 + kTokenBytes) != kVersion) {
    return absl::InvalidArgumentError("connect data: unknown version");
  }
  ConnectData d;
  std::memcpy(d.token, b + 4, kTokenBytes);
  d.max_reply = DecodeFixed32(b + 4 + kTokenBytes);
  std::memcpy(d.nonce, b + 12 + kTokenBytes, kNonceBytes);
  std::memcpy(d.mac, b + kSignedBytes, kMacBytes);
  return d;
}

absl::StatusOr<std::string> RandomBytes(size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(out.data() + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(absl::StrCat("getrandom: ", std::strerror(errno)));
    }
    got += static_cast<size_t>(r);
  }
  return out;
}

rpc::VerbsSessionResponse SessionToProto(const VerbsSession& s) {
  rpc::VerbsSessionResponse r;
  r.set_address(s.address);
  r.set_port(static_cast<uint32_t>(s.port));
  r.set_token(s.token);
  r.set_key(s.key);
  r.set_ttl_ms(std::max<int64_t>(0, absl::ToInt64Milliseconds(s.expires - absl::Now())));
  r.set_message_bytes(static_cast<uint32_t>(s.message_bytes));
  r.set_rendezvous_bytes(static_cast<uint32_t>(s.rendezvous_bytes));
  r.set_credits(s.credits);
  r.set_frame_version(kFrameVersion);
  return r;
}

VerbsSession SessionFromProto(const rpc::VerbsSessionResponse& r) {
  VerbsSession s;
  s.address = r.address();
  s.port = static_cast<int>(r.port());
  s.token = r.token();
  s.key = r.key();
  s.expires = absl::Now() + absl::Milliseconds(r.ttl_ms());
  s.message_bytes = r.message_bytes();
  s.rendezvous_bytes = r.rendezvous_bytes();
  s.credits = std::max<uint32_t>(1, r.credits());
  return s;
}

absl::StatusOr<VerbsSession> FetchSession(GrpcPath* grpc, absl::Duration timeout, rpc::FastPath path) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx, absl::Now() + timeout);
  rpc::VerbsSessionRequest req;
  req.set_frame_version(kFrameVersion);
  req.set_path(path);
  rpc::VerbsSessionResponse resp;
  absl::Status st = FromGrpcStatus(grpc->data_stub()->OpenVerbsSession(&ctx, req, &resp));
  if (!st.ok()) return absl::Status(st.code(), absl::StrCat("OpenVerbsSession: ", st.message()));
  if (resp.frame_version() != kFrameVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("server speaks verbs frame version ", resp.frame_version(), ", this client ", kFrameVersion));
  }
  if (resp.path() != path) {
    return absl::FailedPreconditionError("the server predates the TCP path (it answered with a verbs session)");
  }
  return SessionFromProto(resp);
}

// ---------------------------------------------------------------------------------------------
// Sessions

void SessionTable::DropLocked(bool everything) {
  const absl::Time now = absl::Now();
  for (auto it = tokens_.begin(); it != tokens_.end();) {
    if (!everything && it->second.expires > now) {
      ++it;
      continue;
    }
    if (auto o = owner_sessions_.find(it->second.owner); o != owner_sessions_.end() && --o->second <= 0) {
      owner_sessions_.erase(o);
    }
    tokens_.erase(it++);
  }
}

int SessionTable::SessionsOfLocked(const std::string& owner) const {
  auto o = owner_sessions_.find(owner);
  return o == owner_sessions_.end() ? 0 : o->second;
}

absl::Status SessionTable::Issue(std::shared_ptr<const void> principal, const std::string& owner, absl::Duration ttl,
                                 int max_per_owner, VerbsSession* s) {
  absl::StatusOr<std::string> token = RandomBytes(ConnectData::kTokenBytes);
  if (!token.ok()) return token.status();
  absl::StatusOr<std::string> key = RandomBytes(ConnectData::kKeyBytes);
  if (!key.ok()) return key.status();
  s->token = *std::move(token);
  s->key = *std::move(key);
  s->expires = absl::Now() + ttl;
  absl::MutexLock l(&mu_);
  if (tokens_.size() >= 1024) {
    DropLocked(false);
    if (tokens_.size() >= 100000) return absl::ResourceExhaustedError(absl::StrCat(what_, ": too many open sessions"));
  }
  if (max_per_owner > 0 && !owner.empty()) {
    if (SessionsOfLocked(owner) >= max_per_owner) DropLocked(false);
    if (const int has = SessionsOfLocked(owner); has >= max_per_owner) {
      return absl::ResourceExhaustedError(absl::StrCat(what_, ": ", owner, " holds ", has,
                                                       " unexpired sessions (", cap_setting_, " ",
                                                       max_per_owner, ")"));
    }
  }
  tokens_[s->token] = Session{s->expires, s->key, std::move(principal), owner, {}};
  ++owner_sessions_[owner];
  issued_.fetch_add(1, std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::StatusOr<SessionTable::Admitted> SessionTable::Admit(const ConnectData& cd) {
  std::string key(reinterpret_cast<const char*>(cd.token), ConnectData::kTokenBytes);
  absl::MutexLock l(&mu_);
  auto it = tokens_.find(key);
  if (it == tokens_.end()) return absl::PermissionDeniedError("bad token");
  Session& s = it->second;
  if (s.expires <= absl::Now()) return absl::PermissionDeniedError("expired token");
  if (!cd.Verify(s.key)) return absl::PermissionDeniedError("bad signature");
  if (s.nonces.size() >= kMaxConnects) return absl::PermissionDeniedError("session used up");
  if (!s.nonces.emplace(reinterpret_cast<const char*>(cd.nonce), ConnectData::kNonceBytes).second) {
    return absl::PermissionDeniedError("replayed connect");
  }
  return Admitted{s.principal, s.owner};
}

void SessionTable::DropAll() {
  absl::MutexLock l(&mu_);
  DropLocked(true);
}

}  // namespace basalt::verbs
