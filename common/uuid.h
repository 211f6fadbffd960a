// A UUID as Java's java.util.UUID holds and writes it: two 64-bit halves, in text 8-4-4-4-12
// lowercase hex digits (UUID.toString). Basalt's cluster id is one (src/schema/cluster_id.h), and
// HBase's replication names clusters by them (proto/hbase/hbase_replication.proto).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace basalt {

struct Uuid {
  uint64_t hi = 0;  // Java's most significant bits
  uint64_t lo = 0;  // and least
  bool operator==(const Uuid&) const = default;
};

std::string UuidText(Uuid u);
// The UUID `s` writes; none unless it is 8-4-4-4-12 lowercase hex digits.
std::optional<Uuid> ParseUuid(std::string_view s);

}  // namespace basalt
