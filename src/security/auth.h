// Who a gRPC call comes from (docs/DESIGN.md §12), and the server's TLS credentials.
//
// Two ways to authenticate, both over TLS only (a certificate or token is never taken over plain
// text), checked by Authenticate for every call before anything else runs:
//   - a bearer token in the call's metadata ("authorization: Bearer TOKEN"): the users file
//     (auth_users_file) lists "USER TOKEN-SHA256 [GROUP,...]", the hex SHA-256 of each user's
//     token, so the file holds no secret a reader could replay;
//   - a client certificate signed by tls_ca (mutual TLS): its subject's common name is the user,
//     and the users file may list them with '-' for a token, to give them groups.
// A call carrying a token is that token's user (a service with a certificate may act for a user
// that way). Anything else, with auth on, is UNAUTHENTICATED, with the reason.
//
// Thread-safety: Authenticate may be called from any thread; the users file is read once.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_context.h"
#include "src/security/access_control.h"
#include "src/base/config.h"
#include "src/base/http_front.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {

// The lowercase hex SHA-256 of `data` (what the users file keeps of a token).
std::string Sha256Hex(std::string_view data);

// The gRPC server credentials for tls_cert/tls_key, asking for (and verifying, when presented)
// client certificates signed by tls_ca when it is set.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerTlsCredentials(const std::string& cert,
                                                                             const std::string& key,
                                                                             const std::string& ca);

// How this process's own calls to the cluster's others are secured: the CA of tls_ca, and its
// own certificate as the client's (its identity there). Plain text without tls_cert.
absl::StatusOr<ChannelSecurity> OwnChannelSecurity(const ServerConfig& config);

class Authenticator;

// Who may read the HTTP port's routes (src/base/http_front.h) when `access` is enabled
// (auth=true): an open route (the liveness path) anyone; /metrics a user or @group of
// `metrics_users`, or one with global A; every other page global A, as the gRPC calls that
// show the same (Status, ListRegions, the grants). Callers authenticate as on gRPC: a bearer
// token or a client certificate. With access off: every route to everyone.
std::function<absl::Status(const HttpCaller&, const HttpFront::Route&)> HttpAuthorizer(
    const Authenticator* authn, const AccessController* access, std::vector<std::string> metrics_users);

class Authenticator {
 public:
  // Reads the users file (none: certificates only). InvalidArgument naming the file and line
  // for a malformed line or a user listed twice.
  static absl::StatusOr<std::unique_ptr<Authenticator>> Open(const std::string& users_file,
                                                             const AccessController* access);

  // The caller of a call, or Unauthenticated saying why (and an audit line).
  absl::StatusOr<Identity> Authenticate(const grpc::ServerContext& ctx) const;
  // The same from what a connection proved: a bearer token ("" none) and a verified client
  // certificate's common name ("" none); `peer` and `what` ("call", "HTTP request") for the
  // audit line. A common name starting with '@' (a group's mark) is refused.
  absl::StatusOr<Identity> Authenticate(std::string_view token, std::string_view certificate_user,
                                        std::string_view peer, std::string_view what) const;

  // How the last identity was proven: for WhoAmI ("token" or "certificate").
  static std::string_view Method(const grpc::ServerContext& ctx);

 private:
  struct User {
    std::string name;
    std::string token_sha256;  // empty: certificate only
    std::vector<std::string> groups;
  };
  explicit Authenticator(const AccessController* access) : access_(access) {}
  Identity Make(const std::string& name, const std::vector<std::string>& groups) const;

  const AccessController* access_;
  std::map<std::string, const User*> by_token_;  // token SHA-256 -> user
  std::map<std::string, User> users_;           // by name
};

}  // namespace basalt::server
