#include "base/strings.h"

#include <gtest/gtest.h>

namespace jobctl {
namespace {

TEST(Strings, TrimAndLowerCase) {
  EXPECT_EQ(trim("  a b\t\n"), "a b");
  EXPECT_EQ(trim(" \t "), "");
  EXPECT_EQ(to_lower("Tesla V100"), "tesla v100");
}

TEST(Strings, CsvFieldQuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(csv_field("alice"), "alice");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field("cr\rlf"), "\"cr\rlf\"");
}

TEST(Strings, XmlEscapeCoversTheFiveSpecialCharacters) {
  EXPECT_EQ(xml_escape("plain"), "plain");
  EXPECT_EQ(xml_escape("<a href=\"x\">R&D's</a>"), "&lt;a href=&quot;x&quot;&gt;R&amp;D&apos;s&lt;/a&gt;");
}

}  // namespace
}  // namespace jobctl
