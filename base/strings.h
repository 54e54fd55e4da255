// Small text helpers every folder may use (standard library only, header-only like all of base/).
// ASCII only: they serve identifiers, CSV fields and configuration values, not human text.
//
// Thread safety: pure functions.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace jobctl {

// `s` without leading and trailing white space.
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// `s` in ASCII lower case.
inline std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace jobctl
