#include "base/text.h"

#include "gtest/gtest.h"

namespace dlio {
namespace {

TEST(Text, Utf8ValidityAndEscapes) {
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("t\xff"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));          // cut short
  EXPECT_EQ(EscapeText("a\nb\tc\x01\xff"), "a\\nb\\tc\\x01\\xff");
  EXPECT_EQ(EscapeText(std::string(300, 'x'), 10), "xxxxxxxxxx... (300 bytes)");
  EXPECT_TRUE(CheckText("agent-1", "Hello.name", 255).ok());
  EXPECT_EQ(CheckText("a\nINFO forged", "Hello.name", 255).message(),
            "Hello.name: must be text without control characters (newline, tab, NUL, ...), got 'a\\nINFO forged'");
  EXPECT_FALSE(CheckText(std::string(256, 'a'), "x", 255).ok());
  EXPECT_FALSE(CheckText("\xc2\x85", "x", 255).ok()) << "C1 control (NEL)";
}

}  // namespace
}  // namespace dlio
