// A clone of the repository reads complete: every relative link of every Markdown page (README.md,
// docs/, bench/RESULTS.md) resolves to a file inside the repository, and a link's #anchor to a
// heading of its page; every page named in prose exists; every page links to the design
// (docs/architecture.md); every pointer of the form docs/<page>.md "Section" in the code names a
// section that exists; and nothing points outside the repository (the first design document, private notes, a
// tracker's issue numbers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "tests/repo/markdown.h"
#include "tests/repo/source_tree.h"

namespace jobctl::repo {
namespace {

struct Repo {
  fs::path root = repo_root();
  std::vector<std::string> files = repo_files(root);
  std::set<std::string> file_set{files.begin(), files.end()};
  std::map<std::string, MarkdownPage> pages;  // every .md, parsed

  Repo() {
    for (const auto& f : files) {
      if (f.ends_with(".md")) pages.emplace(f, parse_markdown(read_repo_file(root, f)));
    }
  }

  // `path` (relative to the folder of `from`, or to the root when `from_root`) as a repository
  // path, or "" when it leaves the repository.
  static std::string resolve(const std::string& from, const std::string& path) {
    const auto p = (fs::path(folder_of(from)) / path).lexically_normal().generic_string();
    return p.starts_with("..") || p.starts_with("/") ? std::string() : p;
  }
  bool exists(const std::string& p) const {
    if (p.empty()) return false;
    std::string q = p;
    while (q.ends_with("/")) q.pop_back();
    return file_set.count(q) > 0 || (!q.empty() && fs::is_directory(root / q));
  }
  bool has_anchor(const std::string& page, const std::string& anchor) const {
    auto it = pages.find(page);
    if (it == pages.end()) return false;
    for (const auto& h : it->second.headings) {
      if (h.anchor == anchor) return true;
    }
    return false;
  }
};

const Repo& repo() {
  static const Repo r;
  return r;
}

bool external(const std::string& target) {
  return target.find("://") != std::string::npos || target.starts_with("mailto:");
}

TEST(DocLinks, FindsThePages) {
  const auto& r = repo();
  for (const char* p : {"README.md", "docs/architecture.md", "docs/layout.md", "docs/api.md", "docs/cost-model.md"}) {
    EXPECT_TRUE(r.pages.count(p)) << p << " not found under " << r.root;
  }
}

TEST(DocLinks, EveryRelativeLinkResolvesInsideTheRepository) {
  const auto& r = repo();
  for (const auto& [page, md] : r.pages) {
    for (const auto& link : md.links) {
      if (external(link.target)) continue;
      const auto hash = link.target.find('#');
      const std::string path = link.target.substr(0, hash);
      const std::string anchor = hash == std::string::npos ? "" : link.target.substr(hash + 1);
      const std::string where = page + ":" + std::to_string(link.line) + ": link (" + link.target + ")";
      const std::string resolved = path.empty() ? page : Repo::resolve(page, path);
      if (resolved.empty()) {
        ADD_FAILURE() << where << " leaves the repository";
        continue;
      }
      if (!r.exists(resolved)) {
        ADD_FAILURE() << where << ": no such file " << resolved;
        continue;
      }
      if (!anchor.empty() && resolved.ends_with(".md")) {
        EXPECT_TRUE(r.has_anchor(resolved, anchor)) << where << ": " << resolved << " has no heading #" << anchor;
      }
    }
  }
}

// Pages named in prose ("docs/recovery.md", "security.md") exist, inside the repository.
TEST(DocLinks, EveryPageNamedInProseExists) {
  const auto& r = repo();
  auto path_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/';
  };
  for (const auto& [page, md] : r.pages) {
    for (const auto& line : md.prose) {
      const std::string& t = line.text;
      for (size_t end = t.find(".md"); end != std::string::npos; end = t.find(".md", end + 1)) {
        if (end + 3 < t.size() && std::isalnum(static_cast<unsigned char>(t[end + 3]))) continue;
        size_t start = end;
        while (start > 0 && path_char(t[start - 1])) --start;
        const std::string name = t.substr(start, end + 3 - start);
        if (name == ".md") continue;
        const std::string from_root = Repo::resolve("", name);
        const std::string beside = Repo::resolve(page, name);
        EXPECT_TRUE(r.exists(from_root) || r.exists(beside))
            << page << ":" << line.line << ": names " << name << ", which is not a page of the repository";
      }
    }
  }
}

TEST(DocLinks, EveryPageLinksToTheDesign) {
  const auto& r = repo();
  for (const auto& [page, md] : r.pages) {
    if (page != "README.md" && !page.starts_with("docs/")) continue;
    if (page == "docs/architecture.md") continue;
    bool links = false;
    for (const auto& link : md.links) {
      const std::string path = link.target.substr(0, link.target.find('#'));
      if (!external(link.target) && Repo::resolve(page, path) == "docs/architecture.md") links = true;
    }
    EXPECT_TRUE(links) << page << " does not link to docs/architecture.md";
  }
}

// `s` without Markdown's emphasis and code marks and quotes, in lower case.
std::string plain(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '`' && c != '*' && c != '"') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

bool names_section(const MarkdownPage& md, const std::string& section) {
  const std::string want = plain(section);
  auto starts = [&](const std::string& text) {
    const std::string have = plain(text);
    return have.starts_with(want) &&
           (have.size() == want.size() || !std::isalnum(static_cast<unsigned char>(have[want.size()])));
  };
  for (const auto& h : md.headings) {
    if (starts(h.text)) return true;
  }
  for (const auto& p : md.named_paragraphs) {
    if (starts(p)) return true;
  }
  return false;
}

// Comments and pages point at sections as docs/<page>.md "Section" (or with a comma before the quote):
// the section must exist, as a heading or a named paragraph, and start with those words.
TEST(DocLinks, EverySectionTheCodeNamesExists) {
  const auto& r = repo();
  for (const auto& f : r.files) {
    if (!is_source(f) && !has_suffix(f, {".md", ".txt", ".cmake", ".sh", ".js", ".mjs", ".html"})) continue;
    const std::string text = read_repo_file(r.root, f);
    for (size_t at = text.find("docs/"); at != std::string::npos; at = text.find("docs/", at + 1)) {
      const auto md_end = text.find(".md", at);
      if (md_end == std::string::npos || md_end - at > 40) continue;
      const std::string page = text.substr(at, md_end + 3 - at);
      const bool page_name = std::all_of(page.begin() + 5, page.end() - 3, [](char c) {
        return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-';
      });
      if (!page_name) continue;
      size_t q = md_end + 3;
      size_t skipped = 0;
      while (q < text.size() && skipped < 3 && (text[q] == ' ' || text[q] == ',' || text[q] == '(')) {
        ++q;
        ++skipped;
      }
      if (q >= text.size() || text[q] != '"') continue;
      const auto close = text.find('"', q + 1);
      if (close == std::string::npos || close - q > 80 || text.find('\n', q) < close) continue;
      const std::string section = text.substr(q + 1, close - q - 1);
      if (section.empty() || !std::isalpha(static_cast<unsigned char>(section[0]))) continue;
      const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
      auto it = r.pages.find(page);
      if (it == r.pages.end()) {
        ADD_FAILURE() << f << ":" << line << ": points to " << page << ", which does not exist";
        continue;
      }
      EXPECT_TRUE(names_section(it->second, section))
          << f << ":" << line << ": points to " << page << " \"" << section << "\", which has no such section";
    }
  }
}

// Nothing refers to what a clone does not have: the first design document (kept beside the
// repository), private notes, or a tracker's issue numbers. The patterns are spelled in pieces so
// that this file does not match itself.
TEST(DocLinks, TheRepositoryIsSelfContained) {
  const auto& r = repo();
  const std::string first_design = std::string("shared/") + "DESIGN.md";
  const std::string notes = std::string(".") + "notes/";
  for (const auto& f : r.files) {
    const std::string text = read_repo_file(r.root, f);
    if (text.find('\0') != std::string::npos) continue;  // not text
    EXPECT_EQ(text.find(first_design), std::string::npos)
        << f << " refers to the first design document outside the repository; docs/architecture.md is the design";
    EXPECT_EQ(text.find(notes), std::string::npos) << f << " refers to private notes outside the repository";
    for (size_t at = 0; at + 6 < text.size(); ++at) {
      // "issue" as a word of its own (not "tissue"), then an optional 's', a space, '#' and digits.
      if (at > 0 && std::isalpha(static_cast<unsigned char>(text[at - 1]))) continue;
      if (plain(std::string_view(text).substr(at, 5)) != "issue") continue;
      size_t q = at + 5;
      if (q < text.size() && text[q] == 's') ++q;
      if (q >= text.size() || text[q] != ' ') continue;
      ++q;
      if (q < text.size() && text[q] == '#') ++q;
      if (q < text.size() && std::isdigit(static_cast<unsigned char>(text[q]))) {
        const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
        ADD_FAILURE() << f << ":" << line << ": \"" << text.substr(at, q + 1 - at) << "...\" names a tracker "
                      << "issue a reader of the repository cannot see; say what the code does and why";
      }
    }
  }
}

}  // namespace
}  // namespace jobctl::repo
