// A small RFC 4180 CSV reader for price catalogs: quoted fields with "" escapes and embedded commas
// or line breaks, LF or CRLF line ends, an optional UTF-8 byte-order mark. Lines that start with
// '#' outside a quoted field are comments (jobctl's own seed catalog uses them; SkyPilot's files
// have none). Blank lines are skipped.
//
// Thread safety: pure function.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"

namespace jobctl::cost {

struct CsvRow {
  int line = 0;                     // 1-based line number where the row starts
  std::vector<std::string> fields;
};

// Every row, the header included. Errors: "malformed_csv" for an unterminated quoted field or
// text after a closing quote.
[[nodiscard]] Expected<std::vector<CsvRow>> parse_csv(std::string_view text);

}  // namespace jobctl::cost
