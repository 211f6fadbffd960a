#include "src/security/auth.h"

#include <openssl/evp.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {
namespace {

constexpr char kBearer[] = "Bearer ";

// The token of a call, if it carries one.
std::string_view TokenOf(const grpc::ServerContext& ctx) {
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return {};
  std::string_view v(it->second.data(), it->second.size());
  if (!absl::StartsWith(AV(v), kBearer)) return {};
  return v.substr(sizeof(kBearer) - 1);
}

// The verified client certificate's common name, if the call's connection presented one.
std::string CertificateUser(const grpc::ServerContext& ctx) {
  std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return {};
  std::vector<grpc::string_ref> cn = auth->FindPropertyValues("x509_common_name");
  if (cn.empty()) return {};
  return std::string(cn[0].data(), cn[0].size());
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // Fetched once: OpenSSL 3 looks EVP_sha256() up again on every use otherwise (per call here).
  static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  EVP_Digest(data.data(), data.size(), digest, &len, sha256, nullptr);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerTlsCredentials(const std::string& cert,
                                                                             const std::string& key,
                                                                             const std::string& ca) {
  grpc::SslServerCredentialsOptions opts;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  BASALT_ASSIGN_OR_RETURN(pair.cert_chain, ReadPemFile("tls_cert", cert));
  BASALT_ASSIGN_OR_RETURN(pair.private_key, ReadPemFile("tls_key", key));
  opts.pem_key_cert_pairs.push_back(std::move(pair));
  if (!ca.empty()) {
    BASALT_ASSIGN_OR_RETURN(opts.pem_root_certs, ReadPemFile("tls_ca", ca));
    // Asked for and verified when presented; a client without one may still bring a token.
    opts.client_certificate_request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::SslServerCredentials(opts);
  if (creds == nullptr) return absl::InvalidArgumentError("tls_cert/tls_key: gRPC refused them");
  return creds;
}

absl::StatusOr<ChannelSecurity> OwnChannelSecurity(const ServerConfig& config) {
  if (config.tls_cert.empty()) return ChannelSecurity{};
  ClientSecurity own;
  own.tls_ca = config.tls_ca;
  own.tls_cert = config.tls_cert;
  own.tls_key = config.tls_key;
  return MakeChannelSecurity(own);
}

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::Open(const std::string& users_file,
                                                                   const AccessController* access) {
  std::unique_ptr<Authenticator> a(new Authenticator(access));
  if (users_file.empty()) return a;
  std::ifstream in(users_file);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("auth_users_file = ", users_file, ": cannot be read"));
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const std::string where = absl::StrCat(users_file, ":", n, ": ");
    const absl::string_view body = absl::StripAsciiWhitespace(line);
    if (body.empty() || body[0] == '#') continue;
    std::vector<std::string> fields = absl::StrSplit(body, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() < 2 || fields.size() > 3) {
      return absl::InvalidArgumentError(absl::StrCat(where, "expected 'USER TOKEN-SHA256|- [GROUP,...]'"));
    }
    User u;
    u.name = fields[0];
    if (u.name.find(',') != std::string::npos || u.name[0] == '@') {
      return absl::InvalidArgumentError(absl::StrCat(where, "user '", u.name, "' may not have ',' or start with '@'"));
    }
    if (fields[1] != "-") {
      u.token_sha256 = absl::AsciiStrToLower(fields[1]);
      if (u.token_sha256.size() != 64 ||
          u.token_sha256.find_first_not_of("0123456789abcdef") != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, "the token of '", u.name,
            "' must be the 64 hex digits of its SHA-256 (printf %s TOKEN | sha256sum), or - for none"));
      }
    }
    if (fields.size() == 3) {
      for (absl::string_view g : absl::StrSplit(fields[2], ',', absl::SkipEmpty())) u.groups.emplace_back(g);
    }
    if (a->users_.count(u.name)) return absl::InvalidArgumentError(absl::StrCat(where, "user '", u.name, "' again"));
    const std::string name = u.name;
    const User& stored = a->users_.emplace(name, std::move(u)).first->second;
    if (!stored.token_sha256.empty()) {
      if (!a->by_token_.emplace(stored.token_sha256, &stored).second) {
        return absl::InvalidArgumentError(absl::StrCat(where, "the token of '", name, "' is another user's too"));
      }
    }
  }
  return a;
}

Identity Authenticator::Make(const std::string& name, const std::vector<std::string>& groups) const {
  Identity id;
  id.user = name;
  id.groups = groups;
  if (access_ != nullptr) access_->Resolve(&id);
  return id;
}

absl::StatusOr<Identity> Authenticator::Authenticate(const grpc::ServerContext& ctx) const {
  return Authenticate(TokenOf(ctx), CertificateUser(ctx), ctx.peer(), "call");
}

absl::StatusOr<Identity> Authenticator::Authenticate(std::string_view token, std::string_view certificate_user,
                                                     std::string_view peer, std::string_view what) const {
  if (!token.empty()) {
    auto it = by_token_.find(Sha256Hex(token));
    if (it == by_token_.end()) {
      AccessController::AuditRefusal(absl::StrCat("unauthenticated ", AV(what), " from ", AV(peer), ": an unknown token"));
      return absl::UnauthenticatedError(
          absl::StrCat("the ", AV(what), "'s token is not one this server knows (auth_users_file)"));
    }
    return Make(it->second->name, it->second->groups);
  }
  if (!certificate_user.empty()) {
    // '@' marks a group in grants and superusers: a certificate may not name one.
    if (certificate_user.front() == '@') {
      AccessController::AuditRefusal(absl::StrCat("unauthenticated ", AV(what), " from ", AV(peer),
                                           ": a certificate whose common name names a group (",
                                           AV(certificate_user), ")"));
      return absl::UnauthenticatedError(absl::StrCat("a client certificate's common name may not start with '@' (",
                                                     AV(certificate_user), "): '@' marks a group"));
    }
    const std::string cn(certificate_user);
    auto it = users_.find(cn);
    return Make(cn, it != users_.end() ? it->second.groups : std::vector<std::string>{});
  }
  AccessController::AuditRefusal(absl::StrCat("unauthenticated ", AV(what), " from ", AV(peer), ": no certificate or token"));
  return absl::UnauthenticatedError(
      "this server requires authentication (auth=true): connect with a client certificate signed by its CA "
      "(tls_cert, tls_key) or a token (token)");
}

std::function<absl::Status(const HttpCaller&, const HttpFront::Route&)> HttpAuthorizer(
    const Authenticator* authn, const AccessController* access, std::vector<std::string> metrics_users) {
  return [authn, access, metrics_users = std::move(metrics_users)](const HttpCaller& caller,
                                                                  const HttpFront::Route& route) -> absl::Status {
    if (access == nullptr || !access->enabled() || route.access == HttpFront::Access::kOpen) return absl::OkStatus();
    if (authn == nullptr) return absl::UnauthenticatedError("this server authenticates no one (no auth_users_file or tls_ca)");
    BASALT_ASSIGN_OR_RETURN(Identity id, authn->Authenticate(caller.bearer_token, caller.certificate_user, caller.peer,
                                                             "HTTP request"));
    if (route.access == HttpFront::Access::kMetrics) {
      for (const std::string& m : metrics_users) {
        if (m == id.user) return absl::OkStatus();
        if (m.size() > 1 && m[0] == '@' &&
            std::find(id.groups.begin(), id.groups.end(), std::string_view(m).substr(1)) != id.groups.end()) {
          return absl::OkStatus();
        }
      }
    }
    return access->CheckGlobal(id, absl::StrCat("GET ", route.path), kPermAdmin);
  };
}

std::string_view Authenticator::Method(const grpc::ServerContext& ctx) {
  if (!TokenOf(ctx).empty()) return "token";
  if (!CertificateUser(ctx).empty()) return "certificate";
  return "none";
}

}  // namespace basalt::server
