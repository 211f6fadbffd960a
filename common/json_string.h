// JSON string literals that carry arbitrary bytes: the shell's --json output, the benchmarks'
// reports and the servers' /status.json write their strings with these. Stateless; safe from any
// thread.
#pragma once

#include <string>
#include <string_view>

namespace basalt {

// Appends `bytes` to *out as a JSON string literal, quotes included. Well-formed UTF-8 is kept
// as it is; '"' and '\' are escaped, control characters become \n \t \r \b \f or \u00XX, and
// every byte that is not part of well-formed UTF-8 becomes \u00XX (its Latin-1 code point), so
// the result is always valid JSON.
void AppendJsonString(std::string_view bytes, std::string* out);
std::string JsonString(std::string_view bytes);

}  // namespace basalt
