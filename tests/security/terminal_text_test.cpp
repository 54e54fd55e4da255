// Text that a worker, a job or another user wrote reaches the terminal of whoever runs `jobctl`
// (docs/security.md, T1): a worker's name, a job's log, its progress and its error carrying a
// title change, a screen clear and an OSC 52 clipboard write, and an error quoting the caller's
// input, are printed by the real CLI as visible escapes (base/terminal_text.h).
#include "tests/security/security_support.h"

namespace jobctl::security {
namespace {

// A control character a terminal would act on (newline and tab are layout).
bool has_control(const std::string& s) {
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return true;
  return s.find("\xc2\x9b") != std::string::npos;  // U+009B, 8-bit CSI
}

TEST(TerminalEscapes, WhatWorkersAndJobsWroteIsPrintedAsVisibleText) {
  TempDir dir;
  Jobctld d(dir.file("data"));
  const std::string hostile = "x\x1b]0;pwned\x07\x1b[2J\x1b]52;c;ZWNobyBoaQ==\x07\xc2\x9b" "31m";
  const Worker w = register_worker(d.url(), "", "w" + hostile);
  const int64_t id = submit(d.url(), "", small_spec("plain"));
  const json l = lease(d.url(), "", w);
  ASSERT_TRUE(l.is_object() && l["job_id"] == id) << l.dump();
  const int64_t epoch = l["epoch"];
  auto as_worker = http_as(d.url(), "", w.secret);
  const std::string job_path = "/v1/jobs/" + std::to_string(id);
  auto hb = as_worker.request("POST", job_path + "/heartbeat",
                              json{{"worker_id", w.id}, {"epoch", epoch}, {"progress", {{"step", 3}}},
                                   {"log", "log line " + hostile + "\nnext\tline\n"}}.dump());
  ASSERT_TRUE(hb && hb->status == 200) << (hb ? hb->body : hb.error().message);
  auto failed = as_worker.request("POST", job_path + "/fail",
                                  json{{"worker_id", w.id}, {"epoch", epoch}, {"error", "failed: " + hostile}}.dump());
  ASSERT_TRUE(failed && failed->status == 200) << (failed ? failed->body : failed.error().message);

  const std::string jobctl = env_or_fail("JOBCTL_CLI");
  for (const std::string command : {"workers", "ls", "show", "logs"}) {
    std::vector<std::string> argv = {jobctl, "--server", d.url(), command};
    if (command == "show" || command == "logs") argv.push_back(std::to_string(id));
    const CommandResult r = run_command(argv, {"JOBCTL_TOKEN="});
    EXPECT_TRUE(r.status.success()) << command << ": " << r.err;
    EXPECT_FALSE(has_control(r.out)) << "`jobctl " << command << "` printed a control character:\n" << r.out;
    if (command != "ls") {  // ls shows neither the worker's name nor the error
      EXPECT_NE(r.out.find("\\x1b]0;pwned\\x07\\x1b[2J\\x1b]52;c;"), std::string::npos) << command << ":\n" << r.out;
    }
  }
  // The log keeps its line breaks and tabs.
  const CommandResult logs = run_command({jobctl, "--server", d.url(), "logs", std::to_string(id)}, {"JOBCTL_TOKEN="});
  EXPECT_NE(logs.out.find("\\u{009b}31m\nnext\tline\n"), std::string::npos) << logs.out;
  // An error quoting the caller's input (a state that is none).
  const CommandResult bad =
      run_command({jobctl, "--server", d.url(), "ls", "--state", "\x1b]52;c;ZWNobyBoaQ==\x07"}, {"JOBCTL_TOKEN="});
  EXPECT_FALSE(bad.status.success());
  EXPECT_FALSE(has_control(bad.err)) << bad.err;
  EXPECT_NE(bad.err.find("\\x1b]52;c;"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace jobctl::security
