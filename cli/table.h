// Plain-text tables for the CLI: a header row, then rows, columns padded to their widest cell
// (UTF-8 aware for width), two spaces apart. A cell is one line: its line breaks and runs of
// white space print as one space (a failed job's error is many lines), and past max_width it is
// cut with "…". Every cell is printed through terminal_text() (base/terminal_text.h): control
// characters show as escapes. print_csv() writes the same rows as CSV (RFC 4180), cells whole.
//
// Thread safety: plain value.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace jobctl::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> headers, size_t max_width = 60)
      : headers_(std::move(headers)), max_width_(max_width) {}
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }
  void print(std::ostream& out) const;
  void print_csv(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
  size_t max_width_;
};

// Display width of a UTF-8 string (code points; no wide-character tables).
size_t display_width(const std::string& s);

// "12s", "5m", "3h", "2d": how long ago `then_ms` was, from `now_ms`.
std::string age(int64_t then_ms, int64_t now_ms);

// A UTC timestamp "2026-11-22 10:31:07".
std::string utc_time(int64_t ms);

}  // namespace jobctl::cli
