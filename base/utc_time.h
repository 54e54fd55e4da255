// Milliseconds since the Unix epoch as UTC calendar text (the CLI's tables, the cloud drivers'
// RFC 3339 times). Whole seconds: the milliseconds are dropped, not rounded.
//
// Thread safety: pure function (gmtime_r, not gmtime).
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

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

}  // namespace jobctl
