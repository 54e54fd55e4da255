#include "base/terminal_text.h"

#include <gtest/gtest.h>

namespace jobctl {
namespace {

TEST(TerminalText, PlainTextAndUtf8PassUnchanged) {
  EXPECT_EQ(terminal_text("resnet-50 épocas 训练 🚀", false), "resnet-50 épocas 训练 🚀");
  EXPECT_EQ(terminal_text("", true), "");
  EXPECT_EQ(terminal_text("a\\b", false), "a\\b");
}

TEST(TerminalText, EscapeSequencesBecomeVisible) {
  // A title change, a screen clear and an OSC 52 clipboard write.
  EXPECT_EQ(terminal_text("\x1b]0;pwned\x07", false), "\\x1b]0;pwned\\x07");
  EXPECT_EQ(terminal_text("\x1b[2J\x1b[H", false), "\\x1b[2J\\x1b[H");
  EXPECT_EQ(terminal_text("\x1b]52;c;ZWNobyBoaQ==\x1b\\", true), "\\x1b]52;c;ZWNobyBoaQ==\\x1b\\");
}

TEST(TerminalText, LineBreaksKeptOnlyWhenAsked) {
  EXPECT_EQ(terminal_text("a\nb\tc\rd", true), "a\nb\tc\\x0dd");
  EXPECT_EQ(terminal_text("a\nb\tc", false), "a\\x0ab\\x09c");
  EXPECT_EQ(terminal_text(std::string_view("nul\0del\x7f", 8), true), "nul\\x00del\\x7f");
}

TEST(TerminalText, C1ControlsAndDirectionOverridesAreEscaped) {
  EXPECT_EQ(terminal_text("\xc2\x9b" "31m", false), "\\u{009b}31m");  // U+009B: 8-bit CSI
  EXPECT_EQ(terminal_text("\xc2\x9d" "0;x", false), "\\u{009d}0;x");  // U+009D: 8-bit OSC
  EXPECT_EQ(terminal_text("abc\xe2\x80\xae" "fdp.exe", false), "abc\\u{202e}fdp.exe");
  EXPECT_EQ(terminal_text("\xe2\x81\xa6x\xe2\x81\xa9", false), "\\u{2066}x\\u{2069}");
  EXPECT_EQ(terminal_text("\xc2\xa0", false), "\xc2\xa0");  // U+00A0 is a character, not a control
}

TEST(TerminalText, MalformedUtf8BytesAreEscapedOneByOne) {
  EXPECT_EQ(terminal_text("\x9b" "2J", false), "\\x9b2J");          // a raw 8-bit CSI byte
  EXPECT_EQ(terminal_text("\xc0\x9b", false), "\\xc0\\x9b");        // overlong
  EXPECT_EQ(terminal_text("\xe2\x80", false), "\\xe2\\x80");        // cut short
  EXPECT_EQ(terminal_text("\xed\xa0\x80", false), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(terminal_text("\xf4\x90\x80\x80", false), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
}

}  // namespace
}  // namespace jobctl
