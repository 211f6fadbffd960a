// Printing byte strings: HBase's Bytes.toStringBinary for human output, and JSON string
// literals that carry arbitrary bytes. Stateless; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "common/string_binary.h"

namespace basalt::shell {

// HBase's Bytes.toStringBinary (common/string_binary.h).
using basalt::ToStringBinary;

// Appends `bytes` to *out as a JSON string literal, quotes included. Well-formed UTF-8 is kept
// as it is; '"' and '\' are escaped, control characters become \n \t \r \b \f or \u00XX, and
// every byte that is not part of well-formed UTF-8 becomes \u00XX (its Latin-1 code point).
void AppendJsonString(std::string_view bytes, std::string* out);
std::string JsonString(std::string_view bytes);

}  // namespace basalt::shell
