#include "cli/table.h"

#include <algorithm>
#include <ostream>

#include "base/strings.h"
#include "base/terminal_text.h"
#include "base/utc_time.h"

namespace jobctl::cli {

size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

namespace {

std::string cut(const std::string& s, size_t width) {
  if (display_width(s) <= width) return s;
  std::string out;
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80) {
      if (n + 1 >= width) break;
      ++n;
    }
    out.push_back(s[i]);
  }
  return out + "…";
}

// `s` on one line: each run of white space (line breaks included) as one space, none at the ends.
std::string one_line(const std::string& s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

void Table::print_csv(std::ostream& out) const {
  auto line = [&](const std::vector<std::string>& r) {
    for (size_t i = 0; i < r.size(); ++i) out << (i ? "," : "") << csv_field(r[i]);
    out << "\n";
  };
  line(headers_);
  for (const auto& r : rows_) line(r);
}

void Table::print(std::ostream& out) const {
  // Cells come from workers, jobs and other users: nothing in one may act on the terminal.
  std::vector<std::vector<std::string>> rows;
  rows.reserve(rows_.size() + 1);
  for (const auto* r : {&headers_}) rows.push_back(*r);
  for (const auto& r : rows_) rows.push_back(r);
  for (auto& r : rows)
    for (auto& cell : r) cell = terminal_text(one_line(cell), false);
  std::vector<size_t> widths(headers_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i)
      widths[i] = std::max(widths[i], std::min(max_width_, display_width(row[i])));
  };
  for (const auto& r : rows) measure(r);
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < widths.size(); ++i) {
      const std::string cell = i < row.size() ? cut(row[i], max_width_) : std::string();
      line += cell;
      if (i + 1 < widths.size()) line += std::string(widths[i] - display_width(cell) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  };
  for (const auto& r : rows) print_row(r);
}

std::string age(int64_t then_ms, int64_t now_ms) {
  const int64_t s = std::max<int64_t>(0, (now_ms - then_ms) / 1000);
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m";
  if (s < 86400) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

std::string utc_time(int64_t ms) { return format_utc(ms, UtcStyle::readable); }

}  // namespace jobctl::cli
