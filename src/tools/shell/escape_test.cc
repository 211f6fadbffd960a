#include "src/tools/shell/escape.h"

#include <gtest/gtest.h>

namespace basalt::shell {
namespace {

TEST(ToStringBinaryTest, MatchesHBase) {
  EXPECT_EQ(ToStringBinary("row-1_A:z"), "row-1_A:z");
  EXPECT_EQ(ToStringBinary(" `~!@#$%^&*()-_=+[]{}|;:'\",.<>/?"), " `~!@#$%^&*()-_=+[]{}|;:'\",.<>/?");
  EXPECT_EQ(ToStringBinary(std::string("\0\x01\x7f\x80\xff", 5)), "\\x00\\x01\\x7F\\x80\\xFF");
  EXPECT_EQ(ToStringBinary("a\\b"), "a\\x5Cb");  // HBase escapes the backslash too
  EXPECT_EQ(ToStringBinary("tab\there\n"), "tab\\x09here\\x0A");
  EXPECT_EQ(ToStringBinary(std::string("\x00\x00\x00\x00\x00\x00\x00\x05", 8)),
            "\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x05");
  EXPECT_EQ(ToStringBinary("\xc3\xa9"), "\\xC3\\xA9");
  EXPECT_EQ(ToStringBinary(""), "");
}

TEST(JsonStringTest, PlainAndEscaped) {
  EXPECT_EQ(JsonString("v"), "\"v\"");
  EXPECT_EQ(JsonString(""), "\"\"");
  EXPECT_EQ(JsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonString("l1\nl2\tx\r\b\f"), "\"l1\\nl2\\tx\\r\\b\\f\"");
  EXPECT_EQ(JsonString(std::string("\0\x01\x1f\x7f", 4)), "\"\\u0000\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(JsonString("/<>'"), "\"/<>'\"");
}

TEST(JsonStringTest, Utf8KeptBinaryEscaped) {
  EXPECT_EQ(JsonString("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  EXPECT_EQ(JsonString("\xff\xfe"), "\"\\u00ff\\u00fe\"");
  EXPECT_EQ(JsonString("\xc3"), "\"\\u00c3\"");                          // truncated sequence
  EXPECT_EQ(JsonString("\xc3x"), "\"\\u00c3x\"");                        // bad continuation
  EXPECT_EQ(JsonString("\xc0\xaf"), "\"\\u00c0\\u00af\"");               // overlong '/'
  EXPECT_EQ(JsonString("\xe0\x80\xaf"), "\"\\u00e0\\u0080\\u00af\"");    // overlong 3-byte
  EXPECT_EQ(JsonString("\xed\xa0\x80"), "\"\\u00ed\\u00a0\\u0080\"");    // UTF-16 surrogate
  EXPECT_EQ(JsonString("\xf4\x90\x80\x80"), "\"\\u00f4\\u0090\\u0080\\u0080\"");  // > U+10FFFF
  EXPECT_EQ(JsonString(std::string("\x00\x00\x00\x00\x00\x00\x00\x2a", 8)),
            "\"\\u0000\\u0000\\u0000\\u0000\\u0000\\u0000\\u0000*\"");
}

}  // namespace
}  // namespace basalt::shell
