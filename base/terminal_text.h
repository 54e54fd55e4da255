// Text from elsewhere (a worker's name, a job's log, a server's error) made safe to print on a
// terminal: every byte or character a terminal could act on instead of showing is written as a
// visible escape, so no title change, screen clear or clipboard write (OSC 52) reaches it.
//
// Escaped: C0 controls (ESC, CR, BEL, ...; newline and tab too unless `keep_line_breaks`), DEL,
// C1 controls (U+0080-U+009F, which some terminals take as 8-bit CSI/OSC), the Unicode
// direction overrides and isolates (U+202A-U+202E, U+2066-U+2069, which reorder what is shown),
// and bytes that are not well-formed UTF-8. A C0 byte or a stray byte becomes \xNN, a character
// \u{NNNN}. Everything else passes unchanged.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace jobctl {

inline std::string terminal_text(std::string_view s, bool keep_line_breaks) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  auto byte_escape = [&](unsigned char c) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  };
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if ((c < 0x20 && !(keep_line_breaks && (c == '\n' || c == '\t'))) || c == 0x7F) byte_escape(c);
      else out += static_cast<char>(c);
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, its continuation bytes checked, overlong
    // forms, surrogates and code points past U+10FFFF refused.
    size_t len = 0;
    uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (ok && len == 3) ok = cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF);
    if (ok && len == 4) ok = cp >= 0x10000 && cp <= 0x10FFFF;
    if (!ok) {
      byte_escape(c);
      ++i;
      continue;
    }
    const bool control = (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
    if (control) {
      out += "\\u{";
      for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(cp >> shift) & 0xF];
      out += '}';
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace jobctl
