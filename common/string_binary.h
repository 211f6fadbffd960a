// HBase's Bytes.toStringBinary: how a row key or other byte string is printed to a person (the
// shell's output, region names). Letters, digits and the printable punctuation
// ` ~!@#$%^&*()-_=+[]{}|;:'",.<>/?` stay as they are; every other byte (backslash, controls,
// bytes >= 0x7F) becomes \xNN with upper-case hex. Stateless.
#pragma once

#include <string>
#include <string_view>

namespace basalt {

inline bool PrintableInHBase(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) return true;
  for (const char* p = " `~!@#$%^&*()-_=+[]{}|;:'\",.<>/?"; *p; ++p) {
    if (static_cast<unsigned char>(*p) == c) return true;
  }
  return false;
}

inline std::string ToStringBinary(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(bytes.size());
  for (char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (PrintableInHBase(c)) {
      out.push_back(ch);
    } else {
      out.append("\\x");
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace basalt
