// The include graph of every folder against the direction of dependencies written in
// docs/architecture.md ("Folders and the direction of dependencies"), and docs/layout.md's
// "depends on" column against the code. A new include that goes the wrong way, a new folder
// without a row, or a cycle fails here with the file and the include named.
#include <gtest/gtest.h>

#include <set>

#include "tests/repo/include_rules.h"

namespace jobctl::repo {
namespace {

std::string architecture() { return read_repo_file(repo_root(), "docs/architecture.md"); }

struct Tree {
  std::vector<SourceFile> sources;
  std::set<std::string> all;
};

Tree read_tree() {
  Tree t;
  const auto root = repo_root();
  for (auto& p : repo_files(root)) {
    if (is_source(p)) t.sources.push_back({p, read_repo_file(root, p)});
    t.all.insert(std::move(p));
  }
  return t;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += "  " + l + "\n";
  return s;
}

TEST(IncludeDirection, TheTableReads) {
  const auto table = parse_include_table(architecture());
  EXPECT_TRUE(table.errors.empty()) << joined(table.errors);
  // The rows the rest of the design leans on are there.
  for (const char* f : {"base/", "train/spec/", "cost/", "scheduler/", "net/", "cloud/sim/", "daemon/store/",
                        "daemon/jobs/", "daemon/http/", "worker/", "cli/", "tests/**"}) {
    EXPECT_NE(rule_for(table, f), nullptr) << f;
  }
  ASSERT_NE(rule_for(table, "base/"), nullptr);
  EXPECT_TRUE(rule_for(table, "base/")->allowed.empty()) << "base/ is at the bottom";
}

TEST(IncludeDirection, EveryIncludeGoesWhereTheDesignAllows) {
  const auto table = parse_include_table(architecture());
  const Tree tree = read_tree();
  ASSERT_GT(tree.sources.size(), 100u) << "the source tree was not found at " << repo_root();
  const auto check = check_includes(table, tree.sources, [&](const std::string& p) { return tree.all.count(p) > 0; });
  EXPECT_TRUE(check.violations.empty()) << check.violations.size() << " include(s) against the design:\n"
                                        << joined(check.violations);
  EXPECT_EQ(find_cycle(check.graph), "") << "the folders include each other in a cycle";
}

// train/ builds alone (cmake -S train) with nothing but base/ beside it; its tests also build
// process/, and its GPU benchmark compiles in cost/vram_estimate.cpp (standard library over
// train/spec/).
TEST(IncludeDirection, TrainBuildsAlone) {
  const Tree tree = read_tree();
  for (const auto& f : tree.sources) {
    if (!f.path.starts_with("train/")) continue;
    const bool test = f.path.starts_with("train/tests/");
    const bool bench = f.path.starts_with("train/bench/");
    for (const auto& inc : quoted_includes(f.text)) {
      const bool beside = tree.all.count(folder_of(f.path) + inc) > 0;
      const bool alone = beside || inc.starts_with("train/") || inc.starts_with("base/") ||
                         (test && inc.starts_with("process/")) || (bench && inc == "cost/vram_estimate.h");
      EXPECT_TRUE(alone) << f.path << ": #include \"" << inc << "\": train/ must build alone";
    }
  }
}

// docs/layout.md's "depends on" column says what each folder's code includes now: every folder it
// includes is listed, and everything listed is included.
TEST(IncludeDirection, LayoutSaysWhatEachFolderUses) {
  const auto root = repo_root();
  const std::string layout = read_repo_file(root, "docs/layout.md");
  const auto rows = markdown_section_table(layout, "Where things are");
  ASSERT_GT(rows.size(), 10u) << "docs/layout.md's table was not found";
  const Tree tree = read_tree();
  const auto table = parse_include_table(architecture());
  const auto check = check_includes(table, tree.sources, [&](const std::string& p) { return tree.all.count(p) > 0; });
  std::set<std::string> source_folders;
  for (const auto& f : tree.sources) source_folders.insert(folder_of(f.path));
  std::set<std::string> described;
  for (const auto& row : rows) {
    ASSERT_GE(row.size(), 3u) << "a docs/layout.md row without a \"depends on\" cell: " << row[0];
    IncludeRule listed{"", markdown_code_spans(row[2])};
    std::set<std::string> used;
    for (const auto& folder : markdown_code_spans(row[0])) {
      if (!folder.ends_with("/") || !source_folders.count(folder)) continue;
      described.insert(folder);
      listed.folder = folder;
      auto it = check.graph.find(folder);
      if (it == check.graph.end()) continue;
      for (const auto& [to, edge] : it->second) {
        EXPECT_TRUE(allows(listed, folder, to))
            << "docs/layout.md: " << folder << " includes " << to << " (" << edge.file << ": \"" << edge.include
            << "\") but its \"depends on\" cell does not say so: " << row[2];
        for (const auto& a : listed.allowed) {
          if (allows(IncludeRule{"", {a}}, folder, to)) used.insert(a);
        }
      }
    }
    for (const auto& a : listed.allowed) {
      if (!listed.folder.empty()) {
        EXPECT_TRUE(used.count(a)) << "docs/layout.md: the row of " << row[0] << " says it depends on " << a
                                   << ", which none of its code includes";
      }
    }
  }
  // Every folder with a row of its own in docs/architecture.md has one in docs/layout.md (the
  // `X/**` rows, tests and benchmarks, are described as a whole).
  for (const auto& folder : source_folders) {
    const IncludeRule* rule = rule_for(table, folder);
    if (rule != nullptr && rule->folder == folder) {
      EXPECT_TRUE(described.count(folder)) << "docs/layout.md has no row for " << folder;
    }
  }
}

// The check itself: on a small made-up tree it finds a forbidden include, a missing row and a cycle.
TEST(IncludeRules, RefuseWhatTheTableDoesNotAllow) {
  const auto table = parse_include_table(R"(
## Folders and the direction of dependencies
| folder | may include |
| --- | --- |
| `base/` | — |
| `lib/` | `base/` |
| `app/` | `base/`, `lib/**` |
| `tests/**` | `*` |
)");
  ASSERT_TRUE(table.errors.empty()) << joined(table.errors);
  ASSERT_EQ(table.rules.size(), 4u);
  const std::set<std::string> files = {"base/a.h", "lib/b.h", "lib/deep/c.h", "app/main.cpp", "app/main.h", "tests/x/t.cpp", "other/o.h"};
  auto exists = [&](const std::string& p) { return files.count(p) > 0; };

  auto good = check_includes(table,
                             {{"lib/b.h", "#include \"base/a.h\"\n"},
                              {"app/main.cpp", "  #  include \"lib/deep/c.h\"\n#include <vector>\n#include \"main.h\"\n"},
                              {"tests/x/t.cpp", "#include \"app/main.cpp\"\n"}},
                             exists);
  EXPECT_TRUE(good.violations.empty()) << joined(good.violations);

  auto upward = check_includes(table, {{"lib/b.h", "#include \"app/main.cpp\"\n"}}, exists);
  ASSERT_EQ(upward.violations.size(), 1u);
  EXPECT_NE(upward.violations[0].find("lib/b.h: #include \"app/main.cpp\" reaches into app/"), std::string::npos)
      << upward.violations[0];

  auto bottom = check_includes(table, {{"base/a.h", "#include \"lib/b.h\"\n"}}, exists);
  EXPECT_EQ(bottom.violations.size(), 1u);

  auto unknown = check_includes(table, {{"other/o.h", "#include \"base/a.h\"\n"}, {"lib/b.h", "#include \"nope.h\"\n"}}, exists);
  ASSERT_EQ(unknown.violations.size(), 2u);
  EXPECT_NE(unknown.violations[0].find("folder other/"), std::string::npos) << unknown.violations[0];
  EXPECT_NE(unknown.violations[1].find("no file of the repository"), std::string::npos) << unknown.violations[1];

  auto cyclic = check_includes(table, {{"lib/b.h", "#include \"app/main.cpp\"\n"}, {"app/main.cpp", "#include \"lib/b.h\"\n"}}, exists);
  EXPECT_NE(find_cycle(cyclic.graph).find("app/ -> lib/"), std::string::npos) << find_cycle(cyclic.graph);
}

}  // namespace
}  // namespace jobctl::repo
