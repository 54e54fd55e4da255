// Figures for people: percentages, durations and money in the units a reader expects, so that a
// ten-second job does not read "0.00 h for $0.00" and an error does not read "-5e+01%".
//
//   percent(-0.5034)        "-50.3%"      (a fraction; one decimal)
//   duration_hours(0.0025)  "9 s"         (< 1 min: whole seconds, two decimals below 1 s; < 1 h:
//                                          minutes with one decimal
//   duration_hours(0.25)    "15.0 min"     below 10, else whole; < 48 h: hours with two decimals;
//   duration_hours(30)      "30.00 h"      else days with one decimal)
//   usd(0.0042)             "$0.0042"     (>= $1: cents; below: two significant digits, at most
//   usd(1234.5)             "$1234.50"     6 decimals; "$0" for zero)
//   usd_per_hour(0.42)      "$0.420/h"    (three significant decimals below $10, else cents)
//   count(1, "job")         "1 job"       (the noun in the plural for any other number: "2 jobs",
//   count(0, "job")         "0 jobs"       "s" added unless the plural is given)
//   magnitude(101770)       "101.8K"      (a count of things: parameters, FLOPs; whole below
//   magnitude(6.74e9)       "6.74B"        1,000, then K, M, B, T with two decimals below 10 and
//   magnitude(4.03e19)      "4.03e+19"     one above; from 1e15 in scientific notation)
//
// Thread safety: pure functions. Header-only, standard library only (as all of base/); the digits
// come from the one fixed-decimal formatter (fixed_decimal.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "base/fixed_decimal.h"

namespace jobctl::readable {

inline std::string percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  std::string s = fixed_decimal(fraction * 100.0, 1);
  if (s == "-0.0") s = "0.0";
  return s + "%";
}

inline std::string duration_hours(double hours) {
  if (!std::isfinite(hours) || hours < 0) return "-";
  const double seconds = hours * 3600.0;
  if (seconds < 59.5) return fixed_decimal(seconds, seconds < 0.995 ? 2 : 0) + " s";
  const double minutes = seconds / 60.0;
  if (minutes < 59.95) return fixed_decimal(minutes, minutes < 9.95 ? 1 : 0) + " min";
  if (hours < 48) return fixed_decimal(hours, 2) + " h";
  return fixed_decimal(hours / 24.0, 1) + " d";
}

inline std::string usd(double v) {
  if (!std::isfinite(v)) return "-";
  const double a = std::fabs(v);
  if (a == 0) return "$0";
  if (a >= 1) return (v < 0 ? "-$" : "$") + fixed_decimal(a, 2);
  // Two significant digits, at most 6 decimals.
  int decimals = 2;
  while (decimals < 6 && a < std::pow(10.0, 1 - decimals)) ++decimals;
  return (v < 0 ? "-$" : "$") + fixed_decimal(a, decimals);
}

inline std::string usd_per_hour(double v) {
  if (!std::isfinite(v)) return "-";
  return "$" + fixed_decimal(v, std::fabs(v) < 10 ? 3 : 2) + "/h";
}

inline std::string count(int64_t n, std::string_view one, std::string_view many = {}) {
  std::string s = std::to_string(n) + " ";
  if (n == 1) return s.append(one);
  if (!many.empty()) return s.append(many);
  return s.append(one).append("s");
}

inline std::string magnitude(double n) {
  if (!std::isfinite(n)) return "-";
  const double a = std::fabs(n);
  if (a < 999.5) return fixed_decimal(n, 0);
  if (a >= 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2e", n);
    return buf;
  }
  static constexpr const char* kUnits[] = {"K", "M", "B", "T"};
  int unit = 0;
  double scaled = n / 1e3;
  while (unit < 3 && std::fabs(scaled) >= 999.95) {
    scaled /= 1e3;
    ++unit;
  }
  const double s = std::fabs(scaled);
  return fixed_decimal(scaled, s < 9.995 ? 2 : 1) + kUnits[unit];
}

}  // namespace jobctl::readable
