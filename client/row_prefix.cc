// Scan::SetRowPrefix and RowPrefixSuccessor (client/include/basalt/client.h). Apart from the rest
// of the client, so the shell library uses them without the gRPC client.
#include "basalt/client.h"

namespace basalt {

std::string RowPrefixSuccessor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty() && static_cast<unsigned char>(s.back()) == 0xFF) s.pop_back();
  if (!s.empty()) s.back() = static_cast<char>(static_cast<unsigned char>(s.back()) + 1);
  return s;
}

Scan& Scan::SetRowPrefix(std::string_view prefix) {
  if (!reversed || prefix.empty()) {
    start_row = prefix;
    stop_row = RowPrefixSuccessor(prefix);
    return *this;
  }
  // Below every row with the prefix: the prefix with its last byte decremented, or dropped if 0.
  start_row = RowPrefixSuccessor(prefix);
  stop_row = prefix.substr(0, prefix.size() - 1);
  if (prefix.back() != '\0') stop_row.push_back(static_cast<char>(prefix.back() - 1));
  Filter only_prefix = Filter::Prefix(std::string(prefix));
  filter = filter.has_value() ? Filter::List(Filter::kMustPassAll, {std::move(only_prefix), *std::move(filter)})
                              : std::move(only_prefix);
  return *this;
}

}  // namespace basalt
