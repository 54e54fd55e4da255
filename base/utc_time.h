// Milliseconds since the Unix epoch as UTC calendar text (the CLI's tables, the cloud drivers'
// RFC 3339 times; format_utc: whole seconds, the milliseconds dropped, not rounded), the same with
// milliseconds (format_utc_ms: the jobs' log lines), and RFC 3339 text read back (parse_rfc3339).
//
// Thread safety: pure functions (gmtime_r, not gmtime).
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

namespace jobctl {

enum class UtcStyle {
  rfc3339,   // 2026-11-22T16:51:18Z
  readable,  // 2026-11-22 16:51:18
};

inline std::string format_utc(int64_t ms, UtcStyle style) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  const size_t n = std::strftime(buf, sizeof buf,
                                 style == UtcStyle::rfc3339 ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%d %H:%M:%S", &tm);
  return std::string(buf, n);
}

// 2026-11-22T16:51:18.042Z
inline std::string format_utc_ms(int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                              tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

// "YYYY-MM-DDTHH:MM:SS" with an optional fraction (milliseconds kept, finer digits dropped) and
// "Z" or "+HH:MM" / "-HH:MM" ('t', 'z' and a space for 'T' accepted); nullopt for anything else.
inline std::optional<int64_t> parse_rfc3339(std::string_view s) {
  auto digits = [&s](size_t at, size_t n, int& v) {
    if (at + n > s.size()) return false;
    auto r = std::from_chars(s.data() + at, s.data() + at + n, v);
    return r.ec == std::errc() && r.ptr == s.data() + at + n;
  };
  std::tm tm{};
  if (s.size() < 20 || !digits(0, 4, tm.tm_year) || s[4] != '-' || !digits(5, 2, tm.tm_mon) || s[7] != '-' ||
      !digits(8, 2, tm.tm_mday) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(11, 2, tm.tm_hour) ||
      s[13] != ':' || !digits(14, 2, tm.tm_min) || s[16] != ':' || !digits(17, 2, tm.tm_sec))
    return std::nullopt;
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60)
    return std::nullopt;
  size_t at = 19;
  int millis = 0;
  if (at < s.size() && s[at] == '.') {
    size_t n = 0;
    for (++at; at < s.size() && s[at] >= '0' && s[at] <= '9'; ++at, ++n)
      if (n < 3) millis = millis * 10 + (s[at] - '0');
    if (n == 0) return std::nullopt;
    for (; n < 3; ++n) millis *= 10;
  }
  int offset_min = 0;
  if (at + 1 == s.size() && (s[at] == 'Z' || s[at] == 'z')) {
  } else if (at + 6 == s.size() && (s[at] == '+' || s[at] == '-') && s[at + 3] == ':') {
    int h = 0, m = 0;
    if (!digits(at + 1, 2, h) || !digits(at + 4, 2, m) || h > 23 || m > 59) return std::nullopt;
    offset_min = (s[at] == '+' ? 1 : -1) * (h * 60 + m);
  } else {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return (static_cast<int64_t>(timegm(&tm)) - int64_t{offset_min} * 60) * 1000 + millis;
}

}  // namespace jobctl
