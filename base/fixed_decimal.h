// Numbers with a fixed count of decimals, "3.10" or "0.0250": prices, hours and percentages in
// the CLI's tables and CSV, the cost reports, the placement reasons, the cloud command templates.
// One formatter so that a price reads the same everywhere it is shown.
//
// std::to_chars: exact (correctly rounded, like printf), and independent of the C locale, so a
// program that calls setlocale() never prints "3,10". Non-finite values print as "inf", "-inf",
// "nan".
//
// Thread safety: a pure function.
#pragma once

#include <algorithm>
#include <charconv>
#include <string>

namespace jobctl {

// `v` with `decimals` digits after the point (0 to 30; 0: no point).
inline std::string fixed_decimal(double v, int decimals) {
  // The longest: a sign, 309 integer digits (DBL_MAX), the point and 30 decimals.
  char buf[400];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, std::clamp(decimals, 0, 30));
  return std::string(buf, r.ptr);
}

}  // namespace jobctl
