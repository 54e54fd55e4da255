// UTC times as text and back (base/utc_time.h).
#include "base/utc_time.h"

#include <gtest/gtest.h>

namespace jobctl {
namespace {

TEST(UtcTime, FormatsWithAndWithoutMilliseconds) {
  EXPECT_EQ(format_utc(1795000000123, UtcStyle::rfc3339), "2026-11-18T11:06:40Z");
  EXPECT_EQ(format_utc_ms(1795000000123), "2026-11-18T11:06:40.123Z");
  EXPECT_EQ(format_utc_ms(1795000000005), "2026-11-18T11:06:40.005Z");
  EXPECT_EQ(format_utc_ms(0), "1970-01-01T00:00:00.000Z");
}

TEST(UtcTime, ParsesRfc3339BackToTheSameMillisecond) {
  EXPECT_EQ(parse_rfc3339("2026-11-18T11:06:40.123Z"), 1795000000123);
  EXPECT_EQ(parse_rfc3339(format_utc_ms(1795000000999)), 1795000000999);
  EXPECT_EQ(parse_rfc3339("2026-11-18T11:06:40Z"), 1795000000000);
  EXPECT_EQ(parse_rfc3339("2026-11-18t11:06:40z"), 1795000000000);
  EXPECT_EQ(parse_rfc3339("2026-11-18T11:06:40.1Z"), 1795000000100);
  EXPECT_EQ(parse_rfc3339("2026-11-18T11:06:40.123456789Z"), 1795000000123);  // finer digits dropped
  EXPECT_EQ(parse_rfc3339("2026-11-18T12:06:40+01:00"), 1795000000000);
  EXPECT_EQ(parse_rfc3339("2026-11-18T10:36:40-00:30"), 1795000000000);
  for (const char* bad : {"", "yesterday", "2026-11-18", "2026-11-18T11:06:40", "2026-13-18T11:06:40Z",
                          "2026-11-18T24:00:00Z", "2026-11-18T11:06:40.Z", "2026-11-18T11:06:40+0100",
                          "2026-11-18T11:06:40Zjunk", "2026-11-18X11:06:40Z", "+026-11-18T11:06:40Z"})
    EXPECT_FALSE(parse_rfc3339(bad)) << bad;
}

}  // namespace
}  // namespace jobctl
