// Printing byte strings: HBase's Bytes.toStringBinary for human output, and JSON string
// literals that carry arbitrary bytes. Stateless; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "common/json_string.h"
#include "common/string_binary.h"

namespace basalt::shell {

// HBase's Bytes.toStringBinary (common/string_binary.h).
using basalt::ToStringBinary;

// JSON string literals of arbitrary bytes (common/json_string.h).
using basalt::AppendJsonString;
using basalt::JsonString;

}  // namespace basalt::shell
