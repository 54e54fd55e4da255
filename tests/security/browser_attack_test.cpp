// Web pages attack jobctld through a real browser (docs/security.md, "Browsers"): with auth off
// (scripts/start.sh's default, with a worker that runs commands), a page could cancel jobs with a
// form POST, store bundles with text/plain fetches, and — after DNS rebinding made it
// same-origin — read the job list and submit command jobs. tests/security/browser_attack.mjs makes
// each attack from headless Chromium (playwright-core) against this real jobctld and checks over
// plain HTTP that nothing changed; see that script for the steps.
//
// Skips, saying why, only when Chromium, Node or web/node_modules (playwright-core) are missing
// (`scripts/setup.sh --browser` installs them); under CI=true that is a failure.
#include "tests/security/security_support.h"
#include "tests/support/browser_tools.h"
#include "tests/support/ci.h"

namespace jobctl::security {
namespace {

TEST(BrowserAttack, PagesOfAnotherOriginAndARebindingPageChangeNothing) {
  const jobctl::testing::BrowserTools tools;
  if (const auto why = tools.missing(); !why.empty()) JOBCTL_SKIP_UNLESS_CI(why);

  TempDir dir;
  Jobctld d(dir.file("data"));  // auth off: the default set-up
  ASSERT_TRUE(d.ok());
  // A job that stays queued (no worker): the one the pages try to cancel.
  const int64_t job = submit(d.url(), "", small_spec("victim"));
  ASSERT_GT(job, 0);
  const auto r = tools.run_script("tests/security/browser_attack.mjs", {"--url", d.url(), "--job", std::to_string(job)},
                                  std::chrono::minutes(2));
  std::cout << r.err;
  EXPECT_TRUE(r.success()) << "an attack got through (the script's output above says which)";
}

}  // namespace
}  // namespace jobctl::security
