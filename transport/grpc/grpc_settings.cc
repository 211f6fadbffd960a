#include "transport/grpc/grpc_settings.h"

#include <fstream>
#include <sstream>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "proto/basalt.pb.h"

namespace basalt {

void ApplyServerSettings(grpc::ServerBuilder* builder, int max_message_bytes) {
  // Not GRPC_ARG_MINIMAL_STACK on the server: the minimal stack leaves out gRPC's message-size
  // filter, so the receive cap below would not be enforced and one client could make the
  // server allocate any amount (seen: a 65 MiB request accepted under a 64 MiB cap).
  builder->AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  // Connections that are dead (a peer that vanished without a FIN) or idle do not hold file
  // descriptors and memory for ever: a ping after 60 s of silence, answered within 20 s or the
  // connection is closed; a connection without calls for 10 minutes is told to go away (clients
  // reconnect when they next call).
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60 * 1000);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20 * 1000);
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 10 * 60 * 1000);
  builder->SetMaxReceiveMessageSize(max_message_bytes);
  builder->SetMaxSendMessageSize(max_message_bytes);
}

grpc::ChannelArguments ClientChannelArguments(int tag, int max_message_bytes) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetMaxReceiveMessageSize(max_message_bytes);
  args.SetMaxSendMessageSize(max_message_bytes);
  // Reconnect quickly after a server restart (defaults back off up to 120 s).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt("basalt.channel_tag", tag);
  return args;
}

absl::StatusOr<std::string> ReadPemFile(std::string_view setting, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  if (in) text << in.rdbuf();
  if (!in) return absl::InvalidArgumentError(absl::StrCat(std::string(setting), " ", path, ": cannot be read"));
  if (text.str().find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(setting), " ", path, ": holds no PEM block (-----BEGIN ...)"));
  }
  return text.str();
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  std::string token;
  if (!in || !std::getline(in, token)) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot be read"));
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  return token;
}

absl::StatusOr<ChannelSecurity> MakeChannelSecurity(const ClientSecurity& security) {
  ChannelSecurity out;
  if (security.tls_ca.empty()) {
    if (!security.token.empty() || !security.tls_cert.empty()) {
      return absl::InvalidArgumentError(
          "a token or client certificate is sent only over TLS: give the CA of the server's certificate (tls_ca)");
    }
    return out;
  }
  if (security.tls_cert.empty() != security.tls_key.empty()) {
    return absl::InvalidArgumentError("a client certificate (tls_cert) and its key (tls_key) go together");
  }
  grpc::SslCredentialsOptions opts;
  absl::StatusOr<std::string> ca = ReadPemFile("tls_ca", security.tls_ca);
  if (!ca.ok()) return ca.status();
  opts.pem_root_certs = *std::move(ca);
  if (!security.tls_cert.empty()) {
    absl::StatusOr<std::string> cert = ReadPemFile("tls_cert", security.tls_cert);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPemFile("tls_key", security.tls_key);
    if (!key.ok()) return key.status();
    opts.pem_cert_chain = *std::move(cert);
    opts.pem_private_key = *std::move(key);
  }
  out.credentials = grpc::SslCredentials(opts);
  if (!security.token.empty()) {
    // "authorization: Bearer TOKEN" on every call (src/security/auth.h).
    out.credentials =
        grpc::CompositeChannelCredentials(out.credentials, grpc::AccessTokenCredentials(security.token));
  }
  out.server_name = security.tls_server_name;
  return out;
}

std::shared_ptr<grpc::Channel> CreateBasaltChannel(const std::string& target, const ChannelSecurity& security,
                                                   int tag) {
  grpc::ChannelArguments args = ClientChannelArguments(tag);
  if (security.credentials == nullptr) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  }
  if (!security.server_name.empty()) args.SetSslTargetNameOverride(security.server_name);
  return grpc::CreateCustomChannel(target, security.credentials, args);
}

namespace {
constexpr char kNotServingPayload[] = "type.basalt/basalt.rpc.NotServingRegion";
constexpr char kWrongServerPayload[] = "type.basalt/basalt.rpc.WrongServer";
}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  auto region = s.GetPayload(kNotServingPayload);
  auto wrong = s.GetPayload(kWrongServerPayload);
  if (!region.has_value() && !wrong.has_value()) {
    return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
  }
  // google.rpc.Status's layout (basalt.proto, "Regions").
  rpc::StatusDetails details;
  details.set_code(static_cast<int>(s.code()));
  details.set_message(std::string(s.message()));
  if (region.has_value()) {
    rpc::NotServingRegion not_serving;
    not_serving.set_region(std::string(*region));
    details.add_details()->PackFrom(not_serving);
  }
  if (wrong.has_value()) {
    rpc::WrongServer answered;
    if (answered.ParseFromString(std::string(*wrong))) details.add_details()->PackFrom(answered);
  }
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()), details.SerializeAsString());
}

absl::Status FromGrpcStatus(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  absl::Status out(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  rpc::StatusDetails details;
  if ((out.code() != absl::StatusCode::kUnavailable && out.code() != absl::StatusCode::kFailedPrecondition) ||
      s.error_details().empty() || !details.ParseFromString(s.error_details())) {
    return out;
  }
  for (const google::protobuf::Any& any : details.details()) {
    rpc::NotServingRegion not_serving;
    rpc::WrongServer wrong;
    if (out.code() == absl::StatusCode::kUnavailable && any.Is<rpc::NotServingRegion>() &&
        any.UnpackTo(&not_serving) && !not_serving.region().empty()) {
      out.SetPayload(kNotServingPayload, absl::Cord(not_serving.region()));
    } else if (out.code() == absl::StatusCode::kFailedPrecondition && any.Is<rpc::WrongServer>() &&
               any.UnpackTo(&wrong)) {
      out.SetPayload(kWrongServerPayload, absl::Cord(wrong.SerializeAsString()));
    }
  }
  return out;
}

absl::Status NotServingRegionError(std::string_view region, std::string_view message) {
  absl::Status s = absl::UnavailableError(absl::string_view(message.data(), message.size()));
  s.SetPayload(kNotServingPayload, absl::Cord(absl::string_view(region.data(), region.size())));
  return s;
}

bool IsNotServingRegion(const absl::Status& s) {
  return !s.ok() && s.code() == absl::StatusCode::kUnavailable && s.GetPayload(kNotServingPayload).has_value();
}

std::optional<std::string> NotServingRegionOf(const absl::Status& s) {
  if (s.ok() || s.code() != absl::StatusCode::kUnavailable) return std::nullopt;
  auto region = s.GetPayload(kNotServingPayload);
  if (!region.has_value()) return std::nullopt;
  return std::string(*region);
}

absl::Status WrongServerError(std::string_view server, int64_t start_code, std::string_view message) {
  absl::Status s = absl::FailedPreconditionError(absl::string_view(message.data(), message.size()));
  rpc::WrongServer answered;
  answered.set_server(std::string(server));
  answered.set_start_code(start_code);
  s.SetPayload(kWrongServerPayload, absl::Cord(answered.SerializeAsString()));
  return s;
}

std::optional<int64_t> WrongServerOf(const absl::Status& s) {
  if (s.ok() || s.code() != absl::StatusCode::kFailedPrecondition) return std::nullopt;
  auto payload = s.GetPayload(kWrongServerPayload);
  rpc::WrongServer answered;
  if (!payload.has_value() || !answered.ParseFromString(std::string(*payload))) return std::nullopt;
  return answered.start_code();
}

void DisableMutexDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace basalt
