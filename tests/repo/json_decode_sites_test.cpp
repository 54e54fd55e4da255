// Where jobctld decodes JSON text: the store's row codecs (daemon/store/), the HTTP layer's wire
// mapping (daemon/http/) and the configuration loader (daemon/config.cpp, daemon/config/). Every
// other daemon folder works on the typed records those produce (daemon/store/records.h), so a
// `json::parse` anywhere else fails here with the file and line named; so does a job spec decoded
// anywhere but the store and the decoder of submitted specs.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "tests/repo/source_tree.h"

namespace jobctl::repo {
namespace {

bool may_decode_json(const std::string& path) {
  return path.starts_with("daemon/store/") || path.starts_with("daemon/http/") || path == "daemon/config.cpp" ||
         path == "daemon/config.h" || path.starts_with("daemon/config/");
}

// The lines of `text` that call `decoder` (json::parse unless named), as "path:line: text".
std::vector<std::string> parse_calls(const std::string& path, const std::string& text,
                                     const std::string& decoder = "json::parse") {
  std::vector<std::string> out;
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    const auto at = line.find(decoder);
    const auto comment = line.find("//");
    if (at != std::string::npos && (comment == std::string::npos || comment > at))
      out.push_back(path + ":" + std::to_string(n) + ": " + line);
  }
  return out;
}

TEST(JsonDecodeSites, OnlyTheStoreTheHttpLayerAndTheConfigLoaderParseJson) {
  const auto root = repo_root();
  size_t daemon_sources = 0;
  std::string misplaced;
  for (const auto& path : repo_files(root)) {
    if (!path.starts_with("daemon/") || !is_source(path)) continue;
    ++daemon_sources;
    const auto calls = parse_calls(path, read_repo_file(root, path));
    if (calls.empty() || may_decode_json(path)) continue;
    for (const auto& c : calls) misplaced += "  " + c + "\n";
  }
  ASSERT_GT(daemon_sources, 50u) << "the daemon's sources were not found at " << root;
  EXPECT_TRUE(misplaced.empty()) << "JSON decoded outside daemon/store/, daemon/http/ and the configuration loader "
                                    "(decode it in the store's row codecs and carry the typed value):\n"
                                 << misplaced;
}

// A job's spec is decoded once: the store's row codecs decode the stored text where a row is read
// (JobRow::spec), and the text a submit or a quote sends is decoded by jobs::decode_spec_text.
// Everything else in the daemon works on the typed train::JobSpec.
TEST(JsonDecodeSites, OnlyTheStoreAndTheSubmittedSpecsDecoderDecodeASpec) {
  const auto root = repo_root();
  std::string misplaced;
  size_t submitted = 0;
  for (const auto& path : repo_files(root)) {
    if (!path.starts_with("daemon/") || !is_source(path) || path.starts_with("daemon/store/")) continue;
    for (const auto& c : parse_calls(path, read_repo_file(root, path), "parse_job_spec(")) {
      if (path == "daemon/jobs/job_commands.cpp" && c.find("decode_spec_text") != std::string::npos) {
        ++submitted;
        continue;
      }
      misplaced += "  " + c + "\n";
    }
  }
  EXPECT_EQ(submitted, 1u) << "jobs::decode_spec_text in daemon/jobs/job_commands.cpp decodes a submitted spec";
  EXPECT_TRUE(misplaced.empty()) << "a job's spec decoded outside the store's row codecs and jobs::decode_spec_text "
                                    "(read JobRow::spec):\n"
                                 << misplaced;
}

// The check itself, on made-up text.
TEST(JsonDecodeSites, TheScanFindsCallsAndSkipsComments) {
  EXPECT_EQ(parse_calls("a.cpp", "x\n  auto j = nlohmann::json::parse(t);\n").size(), 1u);
  EXPECT_EQ(parse_calls("a.cpp", "auto j = json::parse(t, nullptr, false);").front(),
            "a.cpp:1: auto j = json::parse(t, nullptr, false);");
  EXPECT_TRUE(parse_calls("a.cpp", "// never json::parse here\nint x;\n").empty());
  EXPECT_EQ(parse_calls("a.cpp", "auto s = train::parse_job_spec(t);\n", "parse_job_spec(").size(), 1u);
  EXPECT_TRUE(may_decode_json("daemon/store/row_codecs.cpp"));
  EXPECT_TRUE(may_decode_json("daemon/http/api_routes.cpp"));
  EXPECT_TRUE(may_decode_json("daemon/config.cpp"));
  EXPECT_FALSE(may_decode_json("daemon/placement/placement_passes.cpp"));
  EXPECT_FALSE(may_decode_json("daemon/configure.cpp"));
}

}  // namespace
}  // namespace jobctl::repo
