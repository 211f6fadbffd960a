// Conversions between the client API's types and basalt.proto's messages, the family-setting
// names, address validation, and the "Op table/row: " context of error messages. Pure code:
// no I/O, thread-compatible.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "basalt/client.h"
#include "proto/basalt.pb.h"

namespace basalt::client_internal {

// InvalidArgument unless `address` is "host:port", "[ipv6]:port" (port 1..65535) or
// "unix:/path" / "unix-abstract:name".
absl::Status ValidateAddress(std::string_view address);

// A row key for a message: C-escaped, shortened past 64 bytes.
std::string PrintableRow(std::string_view row);
// `s` with "<what>: " before its message, same code. OK stays OK.
absl::Status WithContext(const absl::Status& s, std::string_view what);
template <typename T>
absl::StatusOr<T> WithContextOr(absl::StatusOr<T> s, std::string_view what) {
  if (!s.ok()) return WithContext(s.status(), what);
  return s;
}

rpc::Durability ToProto(Durability d);
void ToProto(const Get& get, rpc::ReadOptions* read);
void ToProto(const Scan& scan, rpc::ReadOptions* read);
void ToProto(const Filter& f, rpc::Filter* out);
// InvalidArgument for an empty mutation list unless m deletes its row when empty.
absl::Status ToProto(const RowMutationsBase& m, rpc::RowMutations* out);
rpc::CompareOp ToProto(CompareOp op);
Result FromProto(const rpc::Row& row);
Result FromProto(rpc::Row&& row);

// Family settings: names are matched case-insensitively; InvalidArgument names the setting and
// the valid values. Printed names are upper case (compression ZLIB, also for "GZ").
absl::Status ToProto(const FamilySettings& f, rpc::FamilyDescriptor* out);
FamilySettings FromProto(const rpc::FamilyDescriptor& f);
absl::StatusOr<rpc::DataBlockEncoding> ParseEncoding(std::string_view name);
absl::StatusOr<rpc::Compression> ParseCompression(std::string_view name);
absl::StatusOr<rpc::BloomType> ParseBloom(std::string_view name);
absl::StatusOr<rpc::ChecksumType> ParseChecksum(std::string_view name);
const char* EncodingName(rpc::DataBlockEncoding e);
const char* CompressionName(rpc::Compression c);
const char* BloomName(rpc::BloomType b);
const char* ChecksumName(rpc::ChecksumType c);

// Approximate bytes a mutation adds to a request (the BufferedMutator's buffer accounting).
size_t MutationBytes(const RowMutationsBase& m);

}  // namespace basalt::client_internal
