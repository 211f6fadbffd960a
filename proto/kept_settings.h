// Kept settings (rpc::KeptSetting: a table's or family's attributes and configuration the server
// keeps for a client, src/schema/catalog_file.h's KeptSettings) as key/value pairs and back. For
// the server's descriptors (src/services/proto_convert.h) and the client's (client/wire.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "proto/basalt.pb.h"

namespace basalt::rpc {

using KeptPairs = std::vector<std::pair<std::string, std::string>>;

inline KeptPairs KeptFromProto(const google::protobuf::RepeatedPtrField<KeptSetting>& in) {
  KeptPairs out;
  out.reserve(in.size());
  for (const KeptSetting& k : in) out.emplace_back(k.key(), k.value());
  return out;
}

inline void KeptToProto(const KeptPairs& in, google::protobuf::RepeatedPtrField<KeptSetting>* out) {
  for (const auto& [k, v] : in) {
    KeptSetting* s = out->Add();
    s->set_key(k);
    s->set_value(v);
  }
}

}  // namespace basalt::rpc
