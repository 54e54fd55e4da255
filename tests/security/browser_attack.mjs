// Web pages of another origin attack a real jobctld (auth off, as scripts/start.sh runs it) through
// a real browser: headless Chromium driven by playwright-core. tests/security/browser_attack_test.cpp
// starts jobctld, submits a queued job and runs this script. Each attack must be refused and change
// nothing (docs/security.md, "Browsers"):
//   a. a page served from another origin (this script's own HTTP server on another port)
//      auto-submits an HTML form that POSTs, with an empty body, to cancel the job;
//   b. that page POSTs a code bundle as text/plain, and a command job as text/plain (no-cors
//      fetches: "simple" requests a browser sends without asking the server first);
//   c. DNS rebinding: Chromium resolves attacker.test to 127.0.0.1 (--host-resolver-rules), and a
//      page loaded from http://attacker.test:<jobctld's port>/ is same-origin with jobctld as far
//      as the browser knows; it reads the job list and submits a command job with a proper JSON
//      request. Only the Host header (attacker.test) tells jobctld apart;
//   d. the other origin frames the dashboard (clickjacking its buttons): the frame stays empty.
// Then, checked over plain HTTP: the job is still queued, no bundle was stored, no job was added.
// Finally the control: the dashboard's own origin cancels the job with the same request (a), sent
// as the dashboard sends it, and that works.
//
// Usage: node browser_attack.mjs --url JOBCTLD_URL --job ID --chromium PATH --modules DIR
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import http from 'node:http';
import path from 'node:path';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
for (const k of ['url', 'job', 'chromium', 'modules']) {
  if (!args[k]) { console.error(`missing --${k}`); process.exit(2); }
}
const require = createRequire(path.join(args.modules, 'noop.js'));
const { chromium } = require('playwright-core');

const target = args.url.replace(/\/$/, '');  // http://127.0.0.1:PORT
const port = new URL(target).port;
const job = args.job;
const log = (...m) => console.log('[browser-attack]', ...m);
let failures = 0;
function check(cond, what) {
  if (cond) log(`ok: ${what}`);
  else { failures++; console.error(`[browser-attack] FAILED: ${what}`); }
}

// What jobctld holds, asked directly (Node's fetch sends jobctld's own Host, no Origin).
async function state() {
  const j = await (await fetch(`${target}/v1/jobs/${job}`)).json();
  const list = await (await fetch(`${target}/v1/jobs?limit=1000`)).json();
  return { jobState: j.state, jobs: list.jobs.length };
}

// A code bundle's bytes (the JCBUNDL1 magic is all jobctld checks first) and its SHA-256.
const bundle = 'JCBUNDL1' + 'x'.repeat(64);
const bundleSha = createHash('sha256').update(bundle).digest('hex');
const commandSpec = JSON.stringify({ name: 'implant', command: ['sh', '-c', 'touch /tmp/pwned-by-a-web-page'] });

// The attacker's pages, on another port of 127.0.0.1: another origin.
const pages = {
  '/form': `<!doctype html><body>
    <form id="f" method="POST" action="${target}/v1/jobs/${job}/cancel"></form>
    <script>document.getElementById('f').submit();</script></body>`,
  '/simple': `<!doctype html><body><script>
    window.done = Promise.all([
      fetch('${target}/v1/bundles', { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' },
                                      body: ${JSON.stringify(bundle)} }).catch(() => null),
      fetch('${target}/v1/jobs', { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' },
                                   body: ${JSON.stringify(commandSpec)} }).catch(() => null),
      fetch('${target}/v1/jobs/${job}/cancel', { method: 'POST', mode: 'no-cors' }).catch(() => null),
    ]).then(() => 'sent');
  </script></body>`,
  '/frame': `<!doctype html><body><iframe id="victim" src="${target}/" width="800" height="600"></iframe></body>`,
};
const attacker = http.createServer((req, res) => {
  const body = pages[req.url];
  res.writeHead(body ? 200 : 404, { 'Content-Type': 'text/html' });
  res.end(body || 'no such page');
});
await new Promise((r) => attacker.listen(0, '127.0.0.1', r));
const evil = `http://127.0.0.1:${attacker.address().port}`;
log(`jobctld ${target}, attacker's origin ${evil}, job ${job}`);

const browser = await chromium.launch({
  executablePath: args.chromium,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
         '--disable-extensions', '--no-first-run', '--host-resolver-rules=MAP attacker.test 127.0.0.1'],
});
try {
  const before = await state();
  check(before.jobState === 'queued', `the job starts queued (${before.jobState})`);
  const page = await (await browser.newContext()).newPage();
  // Every answer jobctld gives the page, opaque ones included (the browser's network layer sees them).
  const answers = [];
  page.on('response', (r) => {
    const u = r.url();
    if (u.startsWith(target) || u.startsWith(`http://attacker.test:${port}`))
      answers.push(`${r.request().method()} ${u.replace(/^http:\/\/[^/]+/, '')} ${r.status()}`);
  });

  // a. The form POST with an empty body.
  const formAnswer = page.waitForResponse((r) => r.url().endsWith(`/v1/jobs/${job}/cancel`));
  await page.goto(`${evil}/form`);
  const formStatus = (await formAnswer).status();
  check(formStatus >= 400 && formStatus < 500, `a. the cross-site form POST is refused (${formStatus})`);

  // b. The text/plain bundle and command job, and a bodiless cancel.
  await page.goto(`${evil}/simple`);
  await page.evaluate(() => window.done);
  await page.waitForTimeout(500);  // the last opaque answers reach the page's listener

  // c. DNS rebinding: the page's origin is attacker.test:<jobctld's port>.
  const landing = await page.goto(`http://attacker.test:${port}/`);
  check(landing.status() === 403, `c. jobctld refuses the rebound name in Host (${landing.status()})`);
  const rebound = await page.evaluate(async ({ spec, jobId }) => {
    const out = {};
    const list = await fetch('/v1/jobs');
    out.list = list.status;
    out.listBody = await list.text();
    const submit = await fetch('/v1/jobs', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: spec });
    out.submit = submit.status;
    const cancel = await fetch(`/v1/jobs/${jobId}/cancel`, { method: 'POST', headers: { 'Content-Type': 'application/json' } });
    out.cancel = cancel.status;
    return out;
  }, { spec: commandSpec, jobId: job });
  check(rebound.list === 403 && !rebound.listBody.includes('"jobs"'),
        `c. the rebound page cannot read the job list (${rebound.list})`);
  check(rebound.submit === 403, `c. the rebound page cannot submit a command job (${rebound.submit})`);
  check(rebound.cancel === 403, `c. the rebound page cannot cancel the job (${rebound.cancel})`);

  // d. Framing the dashboard.
  await page.goto(`${evil}/frame`);
  await page.waitForTimeout(1000);
  const framed = page.frames().find((f) => f !== page.mainFrame());
  let framedRendered = false;
  if (framed && framed.url().startsWith(target)) {
    try { framedRendered = (await framed.locator('[data-nav="jobs"]').count()) > 0; } catch { framedRendered = false; }
  }
  check(!framedRendered, `d. the dashboard does not render inside another origin's frame (${framed ? framed.url() : 'no frame'})`);

  log('answers jobctld gave the attacking pages:', JSON.stringify(answers));
  for (const a of answers.filter((x) => x.startsWith('POST')))
    check(/ 4\d\d$/.test(a), `refused: ${a}`);

  const after = await state();
  check(after.jobState === 'queued', `the job is still queued (${after.jobState})`);
  check(after.jobs === before.jobs, `no job was submitted (${before.jobs} -> ${after.jobs})`);
  const stored = await fetch(`${target}/v1/bundles/${bundleSha}`);
  check(stored.status === 404, `no bundle was stored (GET /v1/bundles/<sha> answered ${stored.status})`);

  // The control: the dashboard's own origin may act, with the requests it sends.
  const own = await (await browser.newContext()).newPage();
  const home = await own.goto(`${target}/`);
  const csp = home.headers()['content-security-policy'] || '';
  check(csp.includes("frame-ancestors 'none'"), `the dashboard sends a CSP with frame-ancestors 'none' (${csp})`);
  check(home.headers()['referrer-policy'] === 'no-referrer', 'the dashboard sends Referrer-Policy: no-referrer');
  const ownCancel = await own.evaluate(async (jobId) => {
    const { api } = await import('/js/api.js');
    return (await api('POST', `/v1/jobs/${jobId}/cancel`)).state;
  }, job);
  check(ownCancel === 'cancelled', `the dashboard itself still cancels the job (${ownCancel})`);
} finally {
  await browser.close();
  attacker.close();
}
if (failures) {
  console.error(`[browser-attack] ${failures} check(s) failed`);
  process.exit(1);
}
log('all attacks refused');
