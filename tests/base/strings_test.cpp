#include "base/edit_distance.h"
#include "base/readable.h"
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

TEST(Strings, EditDistanceCountsSingleByteEdits) {
  EXPECT_EQ(edit_distance("submit", "submit"), 0u);
  EXPECT_EQ(edit_distance("sumbit", "submit"), 2u);  // a swap is two substitutions
  EXPECT_EQ(edit_distance("epoch", "epochs"), 1u);
  EXPECT_EQ(edit_distance("", "ls"), 2u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(Readable, CountsTakeTheirPlural) {
  EXPECT_EQ(readable::count(1, "job"), "1 job");
  EXPECT_EQ(readable::count(2, "job"), "2 jobs");
  EXPECT_EQ(readable::count(0, "worker"), "0 workers");
  EXPECT_EQ(readable::count(1, "GPU"), "1 GPU");
  EXPECT_EQ(readable::count(3, "entry", "entries"), "3 entries");
}

}  // namespace
}  // namespace jobctl
