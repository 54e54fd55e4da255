// The direction of dependencies between folders, as docs/architecture.md's table writes it
// ("Folders and the direction of dependencies"), and the check of a tree's #include "..." lines
// against it. Pure: the test reads the files and hands them in, so the check itself is tested on
// small made-up trees too.
//
// Table notation: a row's folder is `X/` (the files directly in X/) or `X/**` (X/ and every folder
// below it that has no row of its own). Its allowed folders are `Y/` (Y/ itself), `Y/**` (Y/ and
// everything below it), `*` (any folder) or — (none). A folder may always include itself.
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tests/repo/markdown.h"
#include "tests/repo/source_tree.h"

namespace jobctl::repo {

struct IncludeRule {
  std::string folder;                // "daemon/jobs/" or "tests/**"
  std::vector<std::string> allowed;  // "base/", "train/**", "*"
};

struct IncludeTable {
  std::vector<IncludeRule> rules;
  std::vector<std::string> errors;  // rows that could not be read
};

inline constexpr std::string_view kIncludeTableSection = "Folders and the direction of dependencies";

inline IncludeTable parse_include_table(std::string_view markdown) {
  IncludeTable t;
  for (const auto& row : markdown_section_table(markdown, kIncludeTableSection)) {
    const auto folder = markdown_code_spans(row.empty() ? "" : row[0]);
    if (row.size() < 2 || folder.size() != 1 || (!folder[0].ends_with("/") && !folder[0].ends_with("/**"))) {
      t.errors.push_back("a row that is not `folder/` | `allowed/`, ...: | " + (row.empty() ? "" : row[0]) + " |");
      continue;
    }
    t.rules.push_back({folder[0], markdown_code_spans(row[1])});
  }
  return t;
}

// The rule for the files directly in `folder`: its own row, else the nearest `X/**` above it.
inline const IncludeRule* rule_for(const IncludeTable& t, const std::string& folder) {
  const IncludeRule* best = nullptr;
  size_t best_len = 0;
  for (const auto& r : t.rules) {
    if (r.folder == folder) return &r;
    if (r.folder.ends_with("/**")) {
      const std::string base = r.folder.substr(0, r.folder.size() - 2);
      if (folder.starts_with(base) && base.size() >= best_len) {
        best = &r;
        best_len = base.size();
      }
    }
  }
  return best;
}

inline bool allows(const IncludeRule& r, const std::string& from, const std::string& to) {
  if (from == to) return true;
  return std::any_of(r.allowed.begin(), r.allowed.end(), [&](const std::string& a) {
    if (a == "*") return true;
    if (a.ends_with("/**")) return to.starts_with(a.substr(0, a.size() - 2));
    return a == to;
  });
}

inline std::string describe(const IncludeRule& r) {
  std::string s = "`" + r.folder + "`: ";
  if (r.allowed.empty()) return s + "nothing";
  for (size_t i = 0; i < r.allowed.size(); ++i) s += (i ? ", " : "") + r.allowed[i];
  return s;
}

// The targets of the #include "..." lines of a source file, in order (<...> includes are not the
// repository's).
inline std::vector<std::string> quoted_includes(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    std::string_view l = line;
    while (!l.empty() && (l.front() == ' ' || l.front() == '\t')) l.remove_prefix(1);
    if (!l.starts_with("#")) continue;
    l.remove_prefix(1);
    while (!l.empty() && (l.front() == ' ' || l.front() == '\t')) l.remove_prefix(1);
    if (!l.starts_with("include")) continue;
    l.remove_prefix(7);
    while (!l.empty() && (l.front() == ' ' || l.front() == '\t')) l.remove_prefix(1);
    if (!l.starts_with("\"")) continue;
    const auto close = l.find('"', 1);
    if (close != std::string_view::npos) out.emplace_back(l.substr(1, close - 1));
  }
  return out;
}

struct SourceFile {
  std::string path;  // relative to the repository root
  std::string text;
};

// One folder-to-folder include, with an example of it.
struct FolderEdge {
  std::string file;
  std::string include;
};
using FolderGraph = std::map<std::string, std::map<std::string, FolderEdge>>;

struct IncludeCheck {
  std::vector<std::string> violations;  // one sentence each, naming the file and what to change
  FolderGraph graph;                    // folder -> folder it includes (itself left out)
};

// Resolves each quoted include as the compiler does here (the including file's folder first, then
// the repository root, which is every target's include path) and checks it against the table.
inline IncludeCheck check_includes(const IncludeTable& table, const std::vector<SourceFile>& files,
                                   const std::function<bool(const std::string&)>& exists) {
  IncludeCheck c;
  std::set<std::string> folders_without_rule;
  for (const auto& f : files) {
    const std::string from = folder_of(f.path);
    const IncludeRule* rule = rule_for(table, from);
    if (rule == nullptr && folders_without_rule.insert(from).second) {
      c.violations.push_back("folder " + (from.empty() ? std::string("(the root)") : from) + " (" + f.path +
                             ") has no row in docs/architecture.md's table \"" + std::string(kIncludeTableSection) +
                             "\": add one saying which folders it may include");
    }
    for (const auto& inc : quoted_includes(f.text)) {
      std::string target;
      const std::string beside = (std::filesystem::path(from) / inc).lexically_normal().generic_string();
      if (exists(beside)) {
        target = beside;
      } else if (exists(inc)) {
        target = inc;
      } else {
        c.violations.push_back(f.path + ": #include \"" + inc +
                               "\" is no file of the repository (include paths are relative to the root)");
        continue;
      }
      const std::string to = folder_of(target);
      if (to == from) continue;
      c.graph[from].emplace(to, FolderEdge{f.path, inc});
      if (rule != nullptr && !allows(*rule, from, to)) {
        c.violations.push_back(f.path + ": #include \"" + inc + "\" reaches into " + to +
                               ", which this folder may not use (docs/architecture.md, \"" +
                               std::string(kIncludeTableSection) + "\", row " + describe(*rule) +
                               "). Depend on something the row allows, or change the design: the "
                               "table (and docs/layout.md) first, never a cycle");
      }
    }
  }
  return c;
}

// A cycle of folders in `g` as "a/ -> b/ -> a/" with the include that makes each step, or "".
inline std::string find_cycle(const FolderGraph& g) {
  std::map<std::string, int> state;  // 0 unvisited, 1 on the path, 2 done
  std::vector<std::string> path;
  std::string found;
  std::function<bool(const std::string&)> visit = [&](const std::string& n) {
    state[n] = 1;
    path.push_back(n);
    if (auto it = g.find(n); it != g.end()) {
      for (const auto& [to, edge] : it->second) {
        if (state[to] == 1) {
          auto start = std::find(path.begin(), path.end(), to);
          for (auto p = start; p != path.end(); ++p) {
            const std::string& next = (p + 1 == path.end()) ? to : *(p + 1);
            const auto& e = g.at(*p).at(next);
            found += *p + " -> " + next + " (" + e.file + ": \"" + e.include + "\"); ";
          }
          return true;
        }
        if (state[to] == 0 && visit(to)) return true;
      }
    }
    path.pop_back();
    state[n] = 2;
    return false;
  };
  for (const auto& [n, edges] : g) {
    if (state[n] == 0 && visit(n)) break;
  }
  return found;
}

}  // namespace jobctl::repo
