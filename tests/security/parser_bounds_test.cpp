// What a request makes jobctld build from a few bytes, bounded in bytes (docs/security.md, "Bad
// input"): a task file whose aliases repeat a long key over thousands of values, a sweep whose
// cases each repeat a large spec into the database, a JSON body of values that each take far more
// memory than their text. Each is sent over real HTTP to a real jobctld; what it grew by (peak
// RSS from /proc, the database's files on disk) is measured and held to a bound the unbounded
// parsers passed many times over.
#include <filesystem>
#include <iostream>

#include "tests/security/security_support.h"

namespace jobctl::security {
namespace {

struct AuthWorld {
  AuthWorld() : data(dir.file("data")), ann(create_token(data, "ann", "user")), d(data, {"--auth"}) {}
  TempDir dir;
  std::string data, ann;
  Jobctld d;
};

// 17 KB of YAML: a 200-value list, and a 16 KiB key (an explicit one: `? KEY`, as an implicit key
// is at most 1024 characters) over 200 aliases of it. Written out, each of the 40,000 values
// carries the key in its dotted name: 650 MB of field names.
std::string amplifying_task() {
  std::string text = "run: x\nl: &l [";
  for (int i = 0; i < 200; ++i) text += i ? ",v" : "v";
  text += "]\n? " + std::string(16 * 1024, 'k') + "\n: [";
  for (int i = 0; i < 200; ++i) text += i ? ",*l" : "*l";
  text += "]\n";
  return text;
}

TEST(TaskAmplification, ALongKeyOverAliasedValuesIsRefusedBeforeItIsWrittenOut) {
  AuthWorld world;
  ASSERT_TRUE(world.d.ok());
  const std::string task = amplifying_task();
  ASSERT_LT(task.size(), 18'000u);
  const int64_t before_kb = proc_status_kb(world.d.pid(), "VmHWM");
  auto r = http_as(world.d.url(), world.ann).request("POST", "/v1/tasks/resolve", json{{"task", task}}.dump(), 60'000);
  ASSERT_TRUE(r) << r.error().message;
  const int64_t grew_kb = proc_status_kb(world.d.pid(), "VmHWM") - before_kb;
  std::cerr << "a " << task.size() << "-byte task grew jobctld's peak RSS by " << grew_kb / 1024 << " MB; answer "
            << r->status << " " << r->body.substr(0, 300) << "\n";
  EXPECT_EQ(r->status, 400) << r->body.substr(0, 500);
  EXPECT_EQ(error_field(*r), "task") << r->body.substr(0, 500);
  EXPECT_NE(r->body.find("bytes once its aliases are written out"), std::string::npos) << r->body.substr(0, 500);
  // The limit is 4 MiB of written-out values; the unbounded conversion took over 600 MB.
  EXPECT_LT(grew_kb, 48 * 1024) << "the task's aliases were written out";

  // YAML itself: 250 KB of "[a,a,a,...]" is 128,000 values, some 60 MB as yaml-cpp's tree.
  std::string flat = "run: x\nl: [";
  for (int i = 0; i < 128'000; ++i) flat += i ? ",a" : "a";
  flat += "]\n";
  const int64_t flat_before_kb = proc_status_kb(world.d.pid(), "VmHWM");
  auto f = http_as(world.d.url(), world.ann).request("POST", "/v1/tasks/resolve", json{{"task", flat}}.dump(), 60'000);
  ASSERT_TRUE(f) << f.error().message;
  const int64_t flat_grew_kb = proc_status_kb(world.d.pid(), "VmHWM") - flat_before_kb;
  std::cerr << "a " << flat.size() << "-byte flat list grew jobctld's peak RSS by " << flat_grew_kb / 1024
            << " MB; answer " << f->status << " " << f->body.substr(0, 300) << "\n";
  EXPECT_EQ(f->status, 400) << f->body.substr(0, 500);
  EXPECT_NE(f->body.find("YAML values"), std::string::npos) << f->body.substr(0, 500);
  EXPECT_LT(flat_grew_kb, 24 * 1024) << "the YAML tree was built";

  // A task as people write them still resolves.
  auto ok = http_as(world.d.url(), world.ann)
                .request("POST", "/v1/tasks/resolve",
                         json{{"task", "run: python3 train.py\nenv: &e {A: \"1\"}\nsweep:\n  grid: {lr: [0.1, 0.2]}\n"}}.dump());
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

int64_t database_bytes(const std::string& data_dir) {
  int64_t total = 0;
  for (const char* name : {"jobctl.db", "jobctl.db-wal"}) {
    std::error_code ec;
    const auto n = std::filesystem::file_size(std::filesystem::path(data_dir) / name, ec);
    if (!ec) total += static_cast<int64_t>(n);
  }
  return total;
}

// A command job's spec of `pad_bytes` (in env values of 8000 bytes, the most one may have) swept
// over `cases` values.
std::string padded_sweep(int cases, size_t pad_bytes) {
  json env = json::object();
  for (size_t i = 0; i * 8000 < pad_bytes; ++i) env["PAD" + std::to_string(i)] = std::string(8000, 'p');
  json values = json::array();
  for (int i = 0; i < cases; ++i) values.push_back(i);
  return json{{"name", "sweep-flood"},
              {"command", {"/bin/true"}},
              {"env", env},
              {"placement", {{"mode", "local"}}},
              {"sweep", {{"grid", {{"i", values}}}}}}
      .dump();
}

TEST(SweepGrowth, OneArrayRequestAddsABoundedNumberOfBytesToTheDatabase) {
  TempDir dir;
  const std::string data = dir.file("data");
  Jobctld d(data);  // without auth: anyone may submit command jobs
  ASSERT_TRUE(d.ok());
  auto http = http_as(d.url());
  // 92 KB of spec in 1,000 cases: 92 MB of job specs once expanded.
  const std::string flood = padded_sweep(1000, 88'000);
  ASSERT_LT(flood.size(), 100'000u);
  const int64_t before = database_bytes(data);
  auto r = http.request("POST", "/v1/arrays", flood, 120'000);
  ASSERT_TRUE(r) << r.error().message;
  const int64_t grew = database_bytes(data) - before;
  std::cerr << "a " << flood.size() << "-byte sweep request grew the database by " << grew / (1024 * 1024)
            << " MB; answer " << r->status << " " << r->body.substr(0, 300) << "\n";
  EXPECT_EQ(r->status, 413) << r->body.substr(0, 500);
  EXPECT_EQ(error_field(*r), "sweep") << r->body.substr(0, 500);
  EXPECT_LT(grew, 16 << 20) << "the sweep's cases were stored";

  // The largest sweep accepted adds at most its limit (8 MiB of specs) and the rows around them.
  const std::string large = padded_sweep(1000, 7'000);
  const int64_t large_before = database_bytes(data);
  auto ok = http.request("POST", "/v1/arrays", large, 120'000);
  ASSERT_TRUE(ok) << ok.error().message;
  const int64_t large_grew = database_bytes(data) - large_before;
  std::cerr << "a " << large.size() << "-byte sweep request of 1000 cases was answered " << ok->status
            << " and grew the database by " << large_grew / (1024 * 1024) << " MB\n";
  EXPECT_EQ(ok->status, 201) << ok->body.substr(0, 500);
  EXPECT_LT(large_grew, 32 << 20);  // a WAL checkpoint during the request may count its pages twice
}

TEST(JsonBodyBytes, ABodyOfManySmallValuesIsRefusedNamingBody) {
  AuthWorld world;
  ASSERT_TRUE(world.d.ok());
  // 1 MB of "{}," is 330,000 objects: over 20 MB once parsed.
  std::string body = "{\"task\":\"run: x\",\"pad\":[";
  for (int i = 0; i < 330'000; ++i) body += i ? ",{}" : "{}";
  body += "]}";
  ASSERT_LT(body.size(), size_t{1} << 20);
  auto r = http_as(world.d.url(), world.ann).request("POST", "/v1/tasks/resolve", body, 60'000);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 413) << r->body.substr(0, 500);
  EXPECT_EQ(error_field(*r), "body") << r->body.substr(0, 500);
}

}  // namespace
}  // namespace jobctl::security
