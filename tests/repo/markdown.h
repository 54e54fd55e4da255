// Just enough Markdown for the repo tests: headings and their anchors as GitHub makes them, the
// links of a page, named paragraphs ("**Leases and fencing.** ..."), and the tables of a section.
// Fenced code blocks are not prose: nothing inside them is a heading or a link, and inline code
// spans hold no links.
//
// Thread safety: pure functions.
#pragma once

#include <cctype>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace jobctl::repo {

struct MarkdownHeading {
  int level = 0;
  std::string text;    // as written after the #s
  std::string anchor;  // the fragment GitHub gives it (a repeated heading gets -1, -2, ...)
  int line = 0;
};

struct MarkdownLink {
  std::string target;  // as written: "api.md#errors", "#the-job-spec", "https://..."
  int line = 0;
};

struct MarkdownLine {
  std::string text;
  int line = 0;
};

struct MarkdownPage {
  std::vector<MarkdownHeading> headings;
  std::vector<MarkdownLink> links;
  std::vector<std::string> named_paragraphs;  // the bold words a paragraph or list item opens with
  std::vector<MarkdownLine> prose;            // every line outside fenced code blocks
};

// GitHub's anchor for a heading: lower case; inline code marks, punctuation and anything but ASCII
// letters, digits, '-', '_' and spaces dropped; spaces become '-'.
inline std::string markdown_anchor(std::string_view heading) {
  std::string out;
  for (char c : heading) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out.push_back(static_cast<char>(std::tolower(u)));
    } else if (c == ' ') {
      out.push_back('-');
    } else if (c == '-' || c == '_') {
      out.push_back(c);
    }
  }
  return out;
}

namespace detail {

inline bool is_fence(std::string_view line) {
  const auto first = line.find_first_not_of(' ');
  if (first == std::string_view::npos || first > 3) return false;
  line.remove_prefix(first);
  return line.starts_with("```") || line.starts_with("~~~");
}

// The links on one line of prose, outside inline code spans.
inline void collect_links(std::string_view line, int line_no, std::vector<MarkdownLink>& out) {
  // Reference definitions: "[label]: target".
  const auto first = line.find_first_not_of(' ');
  if (first != std::string_view::npos && line[first] == '[') {
    const auto close = line.find("]:", first);
    if (close != std::string_view::npos && line.find(']', first) == close) {
      std::string_view rest = line.substr(close + 2);
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
      const auto end = rest.find(' ');
      out.push_back({std::string(rest.substr(0, end)), line_no});
      return;
    }
  }
  bool in_code = false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '`') {
      in_code = !in_code;
      continue;
    }
    if (in_code || line[i] != ']' || i + 1 >= line.size() || line[i + 1] != '(') continue;
    const auto close = line.find(')', i + 2);
    if (close == std::string_view::npos) continue;
    std::string_view target = line.substr(i + 2, close - i - 2);
    const auto space = target.find(' ');  // [text](target "title")
    if (space != std::string_view::npos) target = target.substr(0, space);
    if (target.size() >= 2 && target.front() == '<' && target.back() == '>') target = target.substr(1, target.size() - 2);
    out.push_back({std::string(target), line_no});
    i = close;
  }
}

}  // namespace detail

inline MarkdownPage parse_markdown(std::string_view text) {
  MarkdownPage page;
  std::istringstream in{std::string(text)};
  std::string line;
  bool fenced = false;
  int line_no = 0;
  std::vector<std::pair<std::string, int>> seen_anchors;
  while (std::getline(in, line)) {
    ++line_no;
    if (detail::is_fence(line)) {
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    page.prose.push_back({line, line_no});
    if (line.starts_with("#")) {
      const auto hashes = line.find_first_not_of('#');
      if (hashes != std::string::npos && hashes <= 6 && line[hashes] == ' ') {
        MarkdownHeading h;
        h.level = static_cast<int>(hashes);
        h.text = line.substr(hashes + 1);
        while (!h.text.empty() && (h.text.back() == ' ' || h.text.back() == '#')) h.text.pop_back();
        h.anchor = markdown_anchor(h.text);
        int repeats = 0;
        for (auto& [anchor, count] : seen_anchors) {
          if (anchor == h.anchor) repeats = ++count;
        }
        if (repeats == 0) {
          seen_anchors.emplace_back(h.anchor, 0);
        } else {
          h.anchor += "-" + std::to_string(repeats);
        }
        h.line = line_no;
        page.headings.push_back(std::move(h));
        continue;
      }
    }
    std::string_view rest = line;
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '-' || rest.front() == '*') &&
           !rest.starts_with("**")) {
      rest.remove_prefix(1);
    }
    if (rest.starts_with("**")) {
      const auto close = rest.find("**", 2);
      if (close != std::string_view::npos) page.named_paragraphs.emplace_back(rest.substr(2, close - 2));
    }
    detail::collect_links(line, line_no, page.links);
  }
  return page;
}

// The rows of the tables under the heading `section` (up to the next heading of the same or a
// higher level), each as its cells with the outer spaces trimmed; the header and separator rows
// are left out.
inline std::vector<std::vector<std::string>> markdown_section_table(std::string_view text, std::string_view section) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in{std::string(text)};
  std::string line;
  int level = 0;  // of the section, while inside it
  bool header_seen = false;
  bool fenced = false;
  while (std::getline(in, line)) {
    if (detail::is_fence(line)) fenced = !fenced;
    if (fenced) continue;
    if (line.starts_with("#")) {
      const auto hashes = static_cast<int>(line.find_first_not_of('#'));
      if (level > 0 && hashes <= level) break;
      if (level == 0 && std::string_view(line).substr(static_cast<size_t>(hashes) + 1) == section) level = hashes;
      continue;
    }
    if (level == 0 || !line.starts_with("|")) {
      header_seen = false;
      continue;
    }
    if (!header_seen) {  // the first row of a table is its header
      header_seen = true;
      continue;
    }
    if (line.find("---") != std::string::npos && line.find_first_not_of("|-: ") == std::string::npos) continue;
    std::vector<std::string> cells;
    std::string_view rest = std::string_view(line).substr(1);
    while (!rest.empty()) {
      const auto bar = rest.find('|');
      std::string_view cell = rest.substr(0, bar);
      while (!cell.empty() && cell.front() == ' ') cell.remove_prefix(1);
      while (!cell.empty() && cell.back() == ' ') cell.remove_suffix(1);
      cells.emplace_back(cell);
      if (bar == std::string_view::npos) break;
      rest.remove_prefix(bar + 1);
    }
    rows.push_back(std::move(cells));
  }
  return rows;
}

// The `code spans` of a piece of Markdown, in order.
inline std::vector<std::string> markdown_code_spans(std::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = text.find('`', pos)) != std::string_view::npos) {
    const auto close = text.find('`', pos + 1);
    if (close == std::string_view::npos) break;
    out.emplace_back(text.substr(pos + 1, close - pos - 1));
    pos = close + 1;
  }
  return out;
}

}  // namespace jobctl::repo
