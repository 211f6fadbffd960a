// The gRPC settings Basalt's server and client share, and the mapping between absl::Status and
// grpc::Status (one to one: Abseil's canonical codes are gRPC's, docs/STYLE.md "Errors").
//
// Settings measured on the 2-vCPU loopback machine (BENCHMARKS.md §6): no client retries inside gRPC
// (the client library retries itself, with a deadline), no BDP probing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "basalt/security.h"
#include "grpcpp/grpcpp.h"

namespace basalt {

// Largest gRPC message either side accepts: room for the engine's largest write batch
// (256 MiB) would invite memory blow-ups, so requests are capped here and the server's own
// limits (server_config) refuse more precise cases with a clear message.
inline constexpr int kMaxGrpcMessageBytes = 64 << 20;

// Applies the shared server settings (message size caps, no BDP probe).
void ApplyServerSettings(grpc::ServerBuilder* builder, int max_message_bytes = kMaxGrpcMessageBytes);

// Channel arguments for a client channel. `tag` distinguishes channels so that several do
// not share one TCP connection (gRPC pools subchannels with equal arguments). The full channel
// stack, not the minimal one: the minimal stack has no client-side deadline filter, so a call to
// a process that is stopped (SIGSTOP, a frozen VM) would end only when the connection does
// (BENCHMARKS.md §6 shows what the filter costs a Get).
grpc::ChannelArguments ClientChannelArguments(int tag = 0, int max_message_bytes = kMaxGrpcMessageBytes);

// How a client's channels are secured: made once from the files ClientSecurity names.
struct ChannelSecurity {
  std::shared_ptr<grpc::ChannelCredentials> credentials;  // null: plain text
  std::string server_name;  // the name the server's certificate must carry; empty: the target's host
};
// Reads the PEM files (InvalidArgument naming the one that cannot be read) and makes TLS
// credentials, with the client certificate and the token when given. InvalidArgument for a
// token or client certificate without tls_ca (they are never sent in plain text), or a
// certificate without its key.
absl::StatusOr<ChannelSecurity> MakeChannelSecurity(const ClientSecurity& security);
// A PEM file's text; InvalidArgument naming the setting and the file when it cannot be read or
// holds no PEM block. (The server reads its tls_cert, tls_key and tls_ca with it too.)
absl::StatusOr<std::string> ReadPemFile(std::string_view setting, const std::string& path);
// A bearer token kept in a file (its first line, without trailing spaces or CR): the shell's
// --token-file and basalt-bench's --token_file. InvalidArgument naming the file.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);
// A channel to `target` with ClientChannelArguments(tag), secured as `security` says.
std::shared_ptr<grpc::Channel> CreateBasaltChannel(const std::string& target, const ChannelSecurity& security,
                                                   int tag = 0);

// A NotServingRegionError's region and a WrongServerError's run travel in the status details
// (rpc::NotServingRegion, rpc::WrongServer; basalt.proto "Regions"); every other status is code
// and message.
grpc::Status ToGrpcStatus(const absl::Status& s);
absl::Status FromGrpcStatus(const grpc::Status& s);

// Unavailable "<message>", naming `region` (an encoded region name) as the region that no longer
// serves the call's row (HBase's NotServingRegionException). Nothing of the call was applied.
absl::Status NotServingRegionError(std::string_view region, std::string_view message);
// The region a NotServingRegionError names; nullopt for any other status.
std::optional<std::string> NotServingRegionOf(const absl::Status& s);
// Whether `s` is a NotServingRegionError (NotServingRegionOf without copying the name).
bool IsNotServingRegion(const absl::Status& s);

// FailedPrecondition "<message>": a region server's refusal of a call meant for another run of
// the server at its address (basalt.proto WrongServer). `start_code` is the run that answers.
absl::Status WrongServerError(std::string_view server, int64_t start_code, std::string_view message);
// The answering run's start code of a WrongServerError; nullopt for any other status.
std::optional<int64_t> WrongServerOf(const absl::Status& s);

// Abseil builds without NDEBUG (Debian) run a deadlock detector on every mutex acquisition;
// it costs microseconds per call. Binaries call this once at start-up.
void DisableMutexDeadlockDetection();

}  // namespace basalt
