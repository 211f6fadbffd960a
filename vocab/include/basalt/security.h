// How a client proves who it is and checks whom it talks to (README "Security"): part of the
// public vocabulary (client.h ConnectionOptions::security; the shell's --tls_ca, --tls_cert,
// --tls_key, --token). Depends on nothing.
#pragma once

#include <string>

namespace basalt {

struct ClientSecurity {
  // PEM file of the CA that signed the servers' certificates: set, every call goes over TLS and
  // the server's certificate is checked (its name against the address's host, or
  // tls_server_name); empty: plain text.
  std::string tls_ca = "";
  // The client's own certificate and key (PEM files), for mutual TLS: the certificate's common
  // name is the user. Both or neither.
  std::string tls_cert = "";
  std::string tls_key = "";
  // A bearer token (the server's auth_users_file lists its SHA-256); sent only over TLS.
  std::string token = "";
  // The name the server's certificate must carry, when it is not the address's host.
  std::string tls_server_name = "";
};

}  // namespace basalt
