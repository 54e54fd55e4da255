// The dashboard in a real browser (headless Chromium driven by playwright-core), against a real
// jobctld with a real jobctl-worker (tests/web/dashboard_browser_test.cpp starts them and runs this
// script). Steps, each failing loudly:
//   1. the page loads from the daemon with Chart.js (no CDN), and every form control is labelled;
//   2. a bad form value shows the API's own error message and field, marks the input, and
//      creates no job;
//   3. a small job submitted through the form reaches `succeeded` in the live list;
//   4. its detail page draws the loss chart with data points that are the API's progress points
//      (the chart's data is compared, not just the canvas), and the accuracy chart too;
//   4b. a command job the worker cannot run: its page shows its command, why it waits and its
//      place in the queue, no accuracy chart; the list shows its place and reason;
//   5. the workers and costs views render; screenshots at laptop and phone sizes are saved;
//   6. with --auth-url and --token (a jobctld with auth on): the token entry, Bearer requests,
//      localStorage, and cancel from the list.
// With --realistic 1 (jobctld on jobctl-cloudsim with an owned faked-V100 worker that runs
// command jobs): sets up jobs that finished, failed, moved from a cloud instance to the owned GPU,
// command jobs and one running, then screenshots every page (realistic-*.png) and checks that each
// reads as a product: human headers with units, no raw API names, placement and cost in the list,
// where each worker runs, sensible chart axes, empty states rather than errors, a live quote, a
// task file launched as a sweep and its cases side by side.
// With --first-run-job ID (the service scripts/start.sh started, and the first job it submitted)
// it checks that job's page only: once the job has succeeded, its loss chart's points are the
// API's, drawn inside the chart (step 4), screenshot first-run-job-detail.png.
//
// Usage: node dashboard_browser.mjs --url URL --artifacts DIR --chromium PATH --modules DIR
//                                   [--auth-url URL --token TOKEN | --first-run-job ID | --realistic 1]
import { createRequire } from 'node:module';
import { mkdirSync } from 'node:fs';
import path from 'node:path';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
for (const k of ['url', 'artifacts', 'chromium', 'modules']) {
  if (!args[k]) { console.error(`missing --${k}`); process.exit(2); }
}
const require = createRequire(path.join(args.modules, 'noop.js'));
const { chromium } = require('playwright-core');
mkdirSync(args.artifacts, { recursive: true });

const base = args.url.replace(/\/$/, '');
// Money as the dashboard writes it (format.js usd): $1,234 · $12.34 · $0.0018 · <$0.0001.
const MONEY = /^(−?\$[0-9,]+(\.[0-9]+)?|<\$0\.0001)$/;
const shots = [];
const pageErrors = [];
const log = (...m) => console.log('[browser-test]', ...m);
// --soft 1 (by hand, to look at every screenshot of a page under repair): failed checks are
// counted and the run goes on; it still exits non-zero.
let softFailures = 0;
function check(cond, what) {
  if (!cond && args.soft) { softFailures += 1; log(`FAILED (soft): ${what}`); return; }
  if (!cond) throw new Error(`check failed: ${what}`);
  log(`ok: ${what}`);
}
async function apiGet(p) {
  const r = await fetch(base + p);
  if (!r.ok) throw new Error(`GET ${p}: ${r.status} ${await r.text()}`);
  return r.json();
}
async function shot(page, name) {
  const file = path.join(args.artifacts, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  shots.push(file);
  log(`screenshot ${file}`);
}
function watch(page) {
  page.on('pageerror', (e) => pageErrors.push(`${e.message}`));
  // Chromium logs every 4xx answer as "Failed to load resource"; those are the API answering
  // (a refused spec, an endpoint this daemon lacks) and the page handles them. Anything else
  // logged as an error is a failure.
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) pageErrors.push(`console: ${m.text()}`);
  });
}

// Step 4: the detail page of job `id` (open in `page`, finished) draws its loss curve from the
// API's progress history and result, every point inside the chart area; its accuracy curve from
// the API's test accuracies; its event timeline; and where it ran (its segments).
async function checkJobDetail(page, id) {
  await page.waitForSelector('canvas[data-chart="loss"]');
  await page.waitForFunction(() => {
    const c = window.Chart.getChart(document.querySelector('canvas[data-chart="loss"]'));
    return c && c.data.datasets[0].data.length >= 2;
  }, null, { timeout: 15000 });
  const chart = await page.evaluate(() => {
    const c = window.Chart.getChart(document.querySelector('canvas[data-chart="loss"]'));
    const meta = c.getDatasetMeta(0);
    const a = window.Chart.getChart(document.querySelector('canvas[data-chart="accuracy"]'));
    return {
      data: c.data.datasets[0].data,
      drawn: meta.data.map((el) => ({ x: el.x, y: el.y })),
      area: c.chartArea,
      accuracy: a ? a.data.datasets[0].data : [],
    };
  });
  const hist = await apiGet(`/v1/jobs/${id}/progress`);
  const job = await apiGet(`/v1/jobs/${id}`);
  const apiPoints = new Set(hist.points.filter((p) => typeof p.progress.loss === 'number').map((p) => `${p.progress.step}:${p.progress.loss}`));
  apiPoints.add(`${job.result.steps}:${job.result.final_loss}`);
  check(chart.data.length >= 2, `the loss chart has ${chart.data.length} data points`);
  check(chart.data.every((p) => apiPoints.has(`${p.x}:${p.y}`)), 'every loss point is a (step, loss) the API reported');
  check(chart.drawn.length === chart.data.length && chart.drawn.every((p) => Number.isFinite(p.x) && Number.isFinite(p.y) &&
        p.x >= chart.area.left - 1 && p.x <= chart.area.right + 1 && p.y >= chart.area.top - 1 && p.y <= chart.area.bottom + 1),
        'every loss point is drawn inside the chart area');
  const apiAcc = new Set(hist.points.map((p) => p.progress.test_accuracy).filter((v) => typeof v === 'number'));
  check(chart.accuracy.length >= 1 && chart.accuracy.every((p) => apiAcc.has(p.y)), `the accuracy chart has ${chart.accuracy.length} points from the API`);
  const events = await page.$$eval('#timeline li strong', (els) => els.map((e) => e.textContent));
  check(events.includes('submitted') && events.includes('succeeded'), `the timeline lists the events (${events.join(', ')})`);
  // Its output: one line per line the API has, each with the time its worker read it.
  const apiLog = await apiGet(`/v1/jobs/${id}/log`);
  await page.waitForFunction((n) => document.querySelectorAll('#job-log .log-line').length >= n, apiLog.lines.length);
  const shownLog = await page.$$eval('#job-log .log-line', (els) => els.map((e) => ({
    n: Number(e.dataset.n), time: e.querySelector('time.log-time')?.getAttribute('datetime'), text: e.textContent })));
  check(shownLog.length === apiLog.lines.length && apiLog.lines.every((l, i) => shownLog[i].n === l.n &&
        shownLog[i].time === new Date(l.time_ms).toISOString() && shownLog[i].text.endsWith(` ${l.text}\n`)),
        `the output shows the API's ${apiLog.lines.length} log line(s), each with its time`);
  // The placement's candidate table: per option the GPUs the job takes, its memory per GPU, the
  // time and the cost, as the API's placement document gives them; and the workload line.
  check(job.placement && (job.placement.candidates || []).length > 0, 'the API gives the job a placement with candidates');
  {
    const heads = await page.$$eval('#candidates thead th[data-col]', (ths) => ths.map((t) => t.dataset.col));
    for (const col of ['job_gpus', 'memory_gib_per_gpu', 'estimated_hours', 'estimated_cost_usd'])
      check(heads.includes(col), `the candidate table has the ${col} column`);
    const rows = await page.$$eval('#candidates tbody tr', (trs) => trs.map((tr) => Object.fromEntries(
      [...tr.querySelectorAll('td[data-col]')].map((td) => [td.dataset.col, td.textContent]))));
    const cands = job.placement.candidates;
    check(rows.length === cands.length, `the candidate table has the API's ${cands.length} rows`);
    check(rows.every((r, i) => r.job_gpus === String(cands[i].job_gpus)), 'each row shows the GPUs the job takes there');
    check(rows.every((r, i) => r.memory_gib_per_gpu === (cands[i].memory_gib_per_gpu > 0 ? cands[i].memory_gib_per_gpu.toFixed(1) : '—')),
          `each row shows the memory per GPU (${rows[0].memory_gib_per_gpu} GiB on the first)`);
    // A priced option shows its time and cost; one with no price (no spot market there) "—".
    const pricedRow = (c) => c.option === 'local' || c.usd_per_hour > 0;
    check(rows.every((r, i) => (pricedRow(cands[i])
      ? /^<?[0-9.]+ (s|min|h)$/.test(r.estimated_hours) && MONEY.test(r.estimated_cost_usd)
      : r.estimated_hours === '—' && r.estimated_cost_usd === '—')),
          `each row shows the time and the cost (${rows[0].estimated_hours}, ${rows[0].estimated_cost_usd} on the first)`);
    const workload = await page.textContent('#placement-workload');
    check(workload.includes(job.placement.workload.model_kind) && workload.includes('parameters') && workload.includes('GiB per GPU'),
          `the workload line names the model, its parameters and its memory per GPU (${workload})`);
  }
  // Where it ran: one table row per segment the API reports.
  const segmentRows = await page.$$eval('#segments tbody tr', (rows) => rows.length);
  check(job.segments.length >= 1 && segmentRows === job.segments.length,
        `the cost section lists the job's ${job.segments.length} segment(s) (${segmentRows} rows)`);
}

// Steps 1 to 6 on the service the test started.
async function wholeDashboard(browser, laptop, page) {
  // 1. The page and its assets come from the daemon.
  const res = await page.goto(`${base}/`);
  check(res.status() === 200 && res.headers()['content-type'].startsWith('text/html'), 'GET / serves index.html');
  await page.waitForSelector('#jobs-table');
  check(await page.evaluate(() => typeof window.Chart === 'function'), 'Chart.js is loaded from the daemon (/vendor/chart.min.js)');
  const external = await page.evaluate(() => [...document.querySelectorAll('script[src],link[href]')]
    .map((e) => e.src || e.href).filter((u) => !u.startsWith(location.origin)));
  check(external.length === 0, `every asset is served by the daemon (external: ${JSON.stringify(external)})`);

  // 2. A bad value: the API's message and field, shown as sent.
  await page.click('a[data-nav="submit"]');
  await page.waitForSelector('#submit-form');
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('#submit-form input, #submit-form select, #submit-form textarea, #token-form input')]
    .filter((el) => el.labels.length === 0 && !el.getAttribute('aria-label')).map((el) => el.id || el.name));
  check(unlabelled.length === 0, `every form control has a label (unlabelled: ${JSON.stringify(unlabelled)})`);
  await page.selectOption('#f-model-kind', 'mlp');
  await page.selectOption('#f-data-dataset', 'synthetic');
  await page.fill('#f-train-epochs', '0');
  await page.click('#submit-button');
  await page.waitForSelector('#submit-error:not([hidden])');
  const shownMessage = await page.textContent('#submit-error-message');
  const shownField = await page.textContent('#submit-error-field');
  const sentSpec = JSON.parse(await page.inputValue('#f-spec'));
  // What the API itself says to the same spec.
  const direct = await fetch(`${base}/v1/jobs`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(sentSpec) });
  const directBody = await direct.json();
  check(direct.status === 400 && directBody.error.field === 'train.epochs', `the API refuses epochs 0 with field train.epochs (${JSON.stringify(directBody)})`);
  check(shownMessage === directBody.error.message, `the form shows the API's message verbatim ("${shownMessage}")`);
  check(shownField === 'train.epochs', 'the form shows the API\'s field');
  check(await page.getAttribute('#f-train-epochs', 'aria-invalid') === 'true', 'the epochs input is marked invalid');
  check(await page.evaluate(() => document.activeElement && document.activeElement.id) === 'f-train-epochs', 'the epochs input has the focus');
  // A nested field: a hidden layer that is not an integer.
  await page.fill('#f-train-epochs', '');
  await page.fill('#f-model-hidden', '64,abc');
  await page.click('#submit-button');
  await page.waitForFunction(() => document.querySelector('#submit-error-field')?.textContent === 'model.hidden[1]');
  check(await page.getAttribute('#f-model-hidden', 'aria-invalid') === 'true', 'model.hidden[1] marks the hidden-layers input');
  check((await apiGet('/v1/jobs')).jobs.length === 0, 'refused submissions created no job');
  await shot(page, 'laptop-submit-error');

  // 3. A good job through the form, watched in the live list.
  await page.fill('#f-name', 'browser-mlp');
  // Seconds of training on 2 idle cores (under a minute on a busy machine); every epoch's end
  // is a heartbeat, so the loss curve has at least one point per epoch plus the final loss.
  await page.fill('#f-model-hidden', '128');
  await page.fill('#f-data-samples', '40000');
  await page.fill('#f-data-features', '32');
  await page.fill('#f-data-classes', '4');
  await page.fill('#f-train-epochs', '3');
  await page.fill('#f-train-batch_size', '64');
  await page.click('#submit-button');
  await page.waitForSelector('#submitted-link');
  check(await page.evaluate(() => document.querySelector('#submit-error').hidden), 'the error is cleared after a good submit');
  const id = Number((await page.getAttribute('#submitted-link', 'href')).split('/').pop());
  check(id > 0, `the form submitted job #${id}`);
  await page.click('a[data-nav="jobs"]');
  await page.waitForSelector(`#jobs-body tr[data-key="${id}"]`);
  const seen = new Set();
  const t0 = Date.now();
  let apiSucceededAt = null;
  for (;;) {
    const state = await page.textContent(`#jobs-body tr[data-key="${id}"] [data-col="state"]`).catch(() => null);
    if (state) seen.add(state);
    if (!apiSucceededAt && (await apiGet(`/v1/jobs/${id}`)).state === 'succeeded') apiSucceededAt = Date.now();
    if (state === 'succeeded') break;
    if (['failed', 'cancelled'].includes(state)) throw new Error(`job ${id} ended ${state}: ${JSON.stringify(await apiGet(`/v1/jobs/${id}`))}`);
    if (Date.now() - t0 > 300000) throw new Error(`job ${id} did not reach succeeded in the list in 300 s (states seen: ${[...seen]})`);
    await page.waitForTimeout(200);
  }
  check(true, `job #${id} reached succeeded in the list (states seen: ${[...seen].join(' -> ')}; shown ${apiSucceededAt ? Date.now() - apiSucceededAt : 0} ms after the API had it)`);
  await shot(page, 'laptop-jobs');

  // 4. The detail page and its curves, checked against the API's data.
  await page.click(`#jobs-body tr[data-key="${id}"] a[href="#/jobs/${id}"]`);
  await checkJobDetail(page, id);
  await shot(page, 'laptop-job-detail');

  // 4b. A command job the worker cannot run (it was started without --allow-commands): its page
  // shows the command, why it waits and its place in the queue, and no accuracy chart; the list
  // shows its place and reason too. Cancelled afterwards.
  await commandJobWaits(page);
  // 4c. A command job in an image: its page shows the image and that no digest was reported yet.
  await imageJobShowsItsImage(page);

  // 5. Workers and costs.
  await page.click('a[data-nav="workers"]');
  await page.waitForFunction(() => document.querySelector('#workers-body')?.textContent.includes('browser-worker'));
  check(true, 'the workers view lists the worker');
  await shot(page, 'laptop-workers');
  await page.click('a[data-nav="costs"]');
  await page.waitForSelector('#spend-facts > *');
  await page.waitForSelector('#breakeven > *');
  // The fleet plan: no GPU job ran on this daemon (a CPU worker), so the page says there is
  // nothing to plan from yet, as an empty state rather than an error.
  await page.waitForSelector('#fleet-plan > *');
  check(await page.evaluate(() => document.querySelector('#plan-empty')?.textContent.includes('Nothing to plan from yet') &&
                                  document.querySelector('#plan-h').parentElement.querySelector('p.error').hidden),
    'the fleet plan says there is nothing to plan from yet, not an error');
  // Auth off: fair share is off, and the page says so and what orders the jobs instead.
  await page.waitForSelector('#fair-share > *');
  check(await page.evaluate(() => document.querySelector('#fair-share-off')?.textContent.includes('Fair share is off')),
    'the fair-share section says fair share is off');
  await shot(page, 'laptop-costs');

  // Phone size: the same views, no sideways scrolling of the page itself (tables scroll inside).
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  const mobile = await phone.newPage();
  watch(mobile);
  for (const [route, ready, name] of [['#/jobs', `#jobs-body tr[data-key="${id}"]`, 'phone-jobs'],
    [`#/jobs/${id}`, 'canvas[data-chart="loss"]', 'phone-job-detail'],
    ['#/submit', '#submit-form', 'phone-submit'], ['#/workers', '#workers-body tr', 'phone-workers']]) {
    await mobile.goto(`${base}/${route}`);
    await mobile.waitForSelector(ready);
    await mobile.waitForTimeout(300);
    const overflow = await mobile.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(overflow <= 1, `${name}: the page fits the phone's width (overflow ${overflow} px)`);
    await shot(mobile, name);
  }

  // Keyboard: Tab reaches the skip link first, then the views' links.
  const kb = await laptop.newPage();
  watch(kb);
  await kb.goto(`${base}/#/jobs`);
  await kb.waitForSelector('#jobs-table');
  await kb.keyboard.press('Tab');
  check(await kb.evaluate(() => document.activeElement.className) === 'skip', 'Tab focuses the skip link first');
  for (let i = 0; i < 5; i++) await kb.keyboard.press('Tab');
  check(await kb.evaluate(() => document.activeElement.dataset.nav) === 'submit', 'Tab walks the header links in order');
  await kb.keyboard.press('Enter');
  await kb.waitForSelector('#submit-form');
  check(true, 'Enter on a focused link opens the view');

  // 6. Auth (a second jobctld with --auth and a user token): the page asks for a token, works
  //    once one is entered, keeps it in localStorage, sends it as Bearer; cancel from the list.
  if (args['auth-url'] && args.token) {
    const authBase = args['auth-url'].replace(/\/$/, '');
    const ctx = await browser.newContext({ viewport: { width: 1366, height: 860 } });
    const ap = await ctx.newPage();
    watch(ap);
    ap.on('dialog', (d) => d.accept());
    await ap.goto(`${authBase}/#/jobs`);
    await ap.waitForSelector('#banner:not([hidden])');
    check((await ap.textContent('#banner')).includes('requires an API token'), 'without a token the page asks for one (401)');
    await ap.fill('#token-input', args.token);
    await ap.press('#token-input', 'Enter');
    await ap.waitForFunction(() => document.querySelector('#jobs-count')?.textContent.startsWith('0 of 0 jobs'));
    check(await ap.evaluate(() => document.querySelector('#banner').hidden), 'with the token the jobs list loads');
    check(await ap.evaluate(() => localStorage.getItem('jobctl.token')) === args.token, 'the token is kept in localStorage');
    await ap.goto(`${authBase}/#/submit`);
    await ap.reload();
    await ap.waitForSelector('#submit-form');
    check(await ap.inputValue('#token-input') === args.token, 'the token survives a reload');
    await ap.selectOption('#f-data-dataset', 'synthetic');
    await ap.fill('#f-name', 'queued-forever');
    await ap.click('#submit-button');
    await ap.waitForSelector('#submitted-link');
    const qid = Number((await ap.getAttribute('#submitted-link', 'href')).split('/').pop());
    // Auth on: fair share is on, and the costs view shows the user with an open job, no usage
    // yet, and factor 1.
    await ap.click('a[data-nav="costs"]');
    await ap.waitForSelector('#fair-share-table');
    const fairShare = await ap.$$eval('#fair-share-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    check(fairShare.length === 1 && fairShare[0][0] === 'browser' && fairShare[0][3] === '1',
      `the fair-share table shows the user's share, usage and factor (${JSON.stringify(fairShare)})`);
    await ap.click('a[data-nav="jobs"]');
    await ap.click(`#jobs-body tr[data-key="${qid}"] button.danger`);
    await ap.waitForFunction((i) => document.querySelector(`#jobs-body tr[data-key="${i}"] [data-col="state"]`)?.textContent === 'cancelled', qid);
    check(true, `a job submitted with the token (#${qid}) is cancelled from the list`);
    const r = await fetch(`${authBase}/v1/jobs/${qid}`, { headers: { Authorization: `Bearer ${args.token}` } });
    check((await r.json()).state === 'cancelled', 'the API has the job cancelled');
    await shot(ap, 'laptop-auth-jobs');
    await ap.click('#token-clear');
    await ap.waitForSelector('#banner:not([hidden])');
    check(await ap.evaluate(() => localStorage.getItem('jobctl.token')) === null, 'Clear forgets the token');
  }
}

async function commandJobWaits(page) {
  const r = await fetch(`${base}/v1/jobs`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ command: ['/bin/sh', '-c', 'echo hi; exit 0'], resources: { gpu: 'cpu' }, placement: { queue_if_unplaceable: true } }),
  });
  check(r.status === 201, `a command job is submitted (${r.status})`);
  const id = (await r.json()).id;
  let job = null;
  const t0 = Date.now();
  while (!(job && job.placement && job.waiting)) {
    if (Date.now() - t0 > 60000) throw new Error(`command job ${id} got no placement decision: ${JSON.stringify(job)}`);
    await page.waitForTimeout(200);
    job = await apiGet(`/v1/jobs/${id}`);
  }
  await page.goto(`${base}/#/jobs/${id}`);
  await page.waitForSelector('#waiting-reason');
  const shown = await page.evaluate(() => ({
    reason: document.querySelector('#waiting-reason')?.textContent,
    queue: document.querySelector('#waiting-queue')?.textContent,
    command: document.querySelector('#job-command')?.textContent,
    accuracyShown: !document.querySelector('canvas[data-chart="accuracy"]').closest('figure').hidden,
    facts: document.querySelector('dl.facts')?.textContent,
  }));
  check(shown.reason === job.waiting.reason && shown.reason.includes('no worker can run commands'),
    `the job page says why it waits (${shown.reason})`);
  check(shown.queue === `#1 of 1 waiting for ${job.waiting.queue}`, `the job page shows its place in the queue (${shown.queue})`);
  check(shown.command === '/bin/sh -c "echo hi; exit 0"', `the job page shows the command (${shown.command})`);
  check(!shown.accuracyShown, 'no accuracy chart for a program that reports none');
  check(!/Epochs|Test accuracy/.test(shown.facts), 'no epochs or accuracy rows for a command job');
  await shot(page, 'laptop-command-job-waiting');
  await page.goto(`${base}/#/jobs`);
  await page.waitForSelector(`#jobs-body tr[data-key="${id}"] [data-col="waiting"]`);
  const cellText = await page.textContent(`#jobs-body tr[data-key="${id}"] [data-col="waiting"]`);
  check(cellText.startsWith('#1/1: ') && cellText.includes('no worker can run commands'), `the list shows its place and reason (${cellText})`);
  const c = await fetch(`${base}/v1/jobs/${id}/cancel`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  check(c.ok, 'the waiting command job is cancelled');
}

async function imageJobShowsItsImage(page) {
  const image = '127.0.0.1:5000/team/train:1';
  const r = await fetch(`${base}/v1/jobs`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ command: ['python3', 'train.py'], image, image_pull: 'never',
      mounts: [{ source: '/data/sets', target: '/data' }], resources: { gpu: 'cpu' }, placement: { queue_if_unplaceable: true } }),
  });
  check(r.status === 201, `a job in an image is submitted (${r.status})`);
  const id = (await r.json()).id;
  await page.goto(`${base}/#/jobs/${id}`);
  await page.waitForSelector('#job-image');
  const shown = await page.evaluate(() => ({
    image: document.querySelector('#job-image')?.textContent,
    facts: document.querySelector('dl.facts')?.textContent,
  }));
  check(shown.image === `${image} (pull never)`, `the job page shows the image (${shown.image})`);
  check(/Image digestnot reported yet/.test(shown.facts), 'the job page says its digest is not reported yet');
  check(shown.facts.includes('/data/sets → /data (ro)'), 'the job page shows its mounts');
  const c = await fetch(`${base}/v1/jobs/${id}/cancel`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  check(c.ok, 'the job in an image is cancelled');
}

// The first job scripts/start.sh submitted (Fashion-MNIST, 2 epochs): once it has succeeded, its
// page shows the loss chart drawn from the API's data (step 4).
async function firstRunJob(page, id) {
  const t0 = Date.now();
  for (;;) {
    const job = await apiGet(`/v1/jobs/${id}`);
    if (job.state === 'succeeded') break;
    if (['failed', 'cancelled'].includes(job.state)) throw new Error(`the first job ended ${job.state}: ${JSON.stringify(job)}`);
    if (Date.now() - t0 > 420000) throw new Error(`the first job did not succeed in 420 s: ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  check(true, `the first job (#${id}) succeeded in ${Math.round((Date.now() - t0) / 1000)} s of watching`);
  const res = await page.goto(`${base}/#/jobs/${id}`);
  check(res.status() === 200, 'the daemon start.sh started serves the dashboard');
  check(await page.evaluate(() => typeof window.Chart === 'function'), 'Chart.js is loaded from the daemon (/vendor/chart.min.js)');
  await checkJobDetail(page, id);
  await shot(page, 'first-run-job-detail');
}

// ------------------------------------------------------------------ realistic state

async function apiPost(p, body) {
  const r = await fetch(base + p, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok) throw new Error(`POST ${p}: ${r.status} ${JSON.stringify(j)}`);
  return j;
}
async function waitJob(id, pred, what, ms = 180000) {
  const t0 = Date.now();
  for (;;) {
    const job = await apiGet(`/v1/jobs/${id}`);
    if (pred(job)) return job;
    if (Date.now() - t0 > ms) throw new Error(`job ${id}: ${what} not reached in ${ms / 1000} s: ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
const ended = (j) => ['succeeded', 'failed', 'cancelled'].includes(j.state);
// A synthetic MLP on the V100 of about 500 steps an epoch (a second or so on one core),
// checkpointed every 100 steps so that it can move.
const mlp = (name, epochs, placement) => ({
  name, model: { kind: 'mlp', hidden: [512, 512] },
  data: { dataset: 'synthetic', samples: 16384, features: 64, classes: 10, seed: 1 },
  train: { epochs, batch_size: 32, seed: 7 }, checkpoint: { every_steps: 100, keep: 3 },
  resources: { gpu: 'V100', gpus: 1 }, placement });
const command = (name, argv) => ({ name, command: argv, resources: { gpu: 'V100', gpus: 1 }, placement: { mode: 'local' } });

// Raw API names and unreadable figures a page must not show.
const RAW = [/usd[ _]per[ _]hour/, /estimated[ _]hours/, /billed_usd/, /ended_ms/, /_ms\b/, /power_and_maintenance/,
  /\$0\.0000/, /\b1 jobs\b/, /\b1 workers\b/, /\(field: from\)/, /\bundefined\b/, /\bNaN\b/, /\[object Object\]/];
async function readsAsProduct(page, name) {
  // The page's own words: the program's output (#job-log) is the program's...
  const text = await page.evaluate(() => {
    const m = document.querySelector('main').cloneNode(true);
    m.querySelector('#job-log')?.remove();
    // ...and so are the daemon's own sentences (placement reasons, the plan's assumptions).
    for (const el of m.querySelectorAll('.prose')) el.remove();
    for (const el of m.querySelectorAll('td, th, dd, dt, li, p')) el.append(' ');
    return m.textContent;
  });
  const bad = RAW.filter((re) => re.test(text)).map((re) => `${re} in "${text.match(re)[0]}"`);
  check(bad.length === 0, `${name}: no raw API names or unreadable figures (${JSON.stringify(bad)})`);
  const heads = await page.$$eval('main th', (ths) => ths.map((t) => t.textContent).filter((t) => t));
  const raw = heads.filter((t) => /_|^[a-z]/.test(t));
  check(raw.length === 0, `${name}: every table heading is words, capitalised (${JSON.stringify(raw)})`);
  const errors = await page.$$eval('main .error', (els) => els.filter((e) => !e.hidden && e.textContent.trim()).map((e) => e.textContent));
  check(errors.length === 0, `${name}: no error shown (${JSON.stringify(errors)})`);
}

async function realisticPages(browser, page) {
  const t0 = Date.now();
  // The owned V100 takes a first job; a second, whose deadline no option meets, starts on a cloud
  // on-demand instance at once and moves to the owned GPU once the first has finished.
  const first = await apiPost('/v1/jobs', mlp('owned-first', 3, { mode: 'local' }));
  await waitJob(first.id, (j) => j.state === 'running' && (j.progress?.step ?? 0) >= 1, 'running on the owned GPU', 90000);
  const moved = await apiPost('/v1/jobs', mlp('moved-to-owned', 10, { spot: 'never', deadline_hours: 1e-6 }));
  await waitJob(moved.id, (j) => ended(j) || (j.state === 'running' && j.placement?.chosen?.option === 'on_demand'), 'running on a cloud instance', 90000);
  const ok = await apiPost('/v1/jobs', command('hello-command', ['/bin/sh', '-c', 'echo hello from a command job; echo done']));
  const bad = await apiPost('/v1/jobs', command('failing-command',
    ['/bin/sh', '-c', 'echo loading /data/train.csv; echo "error: /data/train.csv: no such file" >&2; exit 3']));
  for (const [id, want] of [[first.id, 'succeeded'], [ok.id, 'succeeded'], [bad.id, 'failed'], [moved.id, 'succeeded']]) {
    const j = await waitJob(id, ended, 'an end');
    check(j.state === want, `job #${id} (${j.name}) ${j.state}`);
  }
  const movedJob = await apiGet(`/v1/jobs/${moved.id}`);
  check(movedJob.events.some((e) => e.type === 'moved') && movedJob.segments.length >= 2,
    `job #${moved.id} moved from its cloud instance to the owned GPU (${movedJob.segments.map((s) => s.option).join(' -> ')})`);
  // One still running while the pages are looked at, past its first epoch.
  const running = await apiPost('/v1/jobs', mlp('running-now', 60, { mode: 'local' }));
  await waitJob(running.id, (j) => ended(j) || (j.progress?.epochs_done ?? 0) >= 1, 'its first epoch', 90000);
  log(`state set up in ${Math.round((Date.now() - t0) / 1000)} s`);

  // Jobs: placement and cost so far on every job that ran.
  await page.goto(`${base}/#/jobs`);
  await page.waitForSelector(`#jobs-body tr[data-key="${running.id}"]`);
  await page.waitForTimeout(300);
  const heads = await page.$$eval('#jobs-table thead th', (ths) => ths.map((t) => t.textContent));
  check(heads.includes('Placement') && heads.includes('Cost so far'), `the jobs list has Placement and Cost so far (${heads.join(', ')})`);
  const rows = await page.$$eval('#jobs-body tr', (trs) => trs.map((tr) => ({ id: tr.dataset.key,
    placement: tr.querySelector('[data-col="placement"]').textContent, cost: tr.querySelector('[data-col="cost"]').textContent })));
  for (const id of [first.id, moved.id, ok.id, bad.id, running.id]) {
    const r = rows.find((x) => x.id === String(id));
    check(r && r.placement.startsWith('owned') && MONEY.test(r.cost), `job #${id}: placement "${r?.placement}", cost so far "${r?.cost}"`);
  }
  await readsAsProduct(page, 'jobs');
  await shot(page, 'realistic-jobs');

  // Each kind of job's page.
  for (const [id, name] of [[moved.id, 'moved'], [first.id, 'finished'], [running.id, 'running'], [bad.id, 'failed-command'], [ok.id, 'command']]) {
    await page.goto(`${base}/#/jobs/${id}`);
    await page.waitForSelector('dl.facts');
    await page.waitForFunction(() => document.querySelector('#job-log')?.textContent.trim() !== 'No output yet.' ||
                                     document.querySelector('.badge')?.textContent === 'running', null, { timeout: 15000 });
    await page.waitForTimeout(500);
    const job = await apiGet(`/v1/jobs/${id}`);
    const out = await page.textContent('#job-log');
    if (ended(job)) check(!out.includes('No output yet'), `${name}: a finished job's output is not "No output yet." (${out.slice(0, 60)})`);
    if (job.spec.model) {
      const axes = await page.evaluate(() => {
        const a = window.Chart.getChart(document.querySelector('canvas[data-chart="accuracy"]'));
        return a && { xMin: a.scales.x.min, xMax: a.scales.x.max, yMin: a.scales.y.min, yMax: a.scales.y.max, n: a.data.datasets[0].data.length };
      });
      check(axes && axes.n >= 1 && axes.xMin === 0 && axes.yMin === 0 && axes.yMax === 1,
        `${name}: the accuracy chart runs from step 0 and from 0 to 100% (${JSON.stringify(axes)})`);
      const epochs = await page.evaluate(() => [...document.querySelectorAll('dl.facts dt')].find((d) => d.textContent === 'Epochs')?.nextElementSibling.textContent);
      const perEpoch = job.progress?.steps_per_epoch;
      if (job.state === 'running' && perEpoch) {
        check(Number(epochs.split(' ')[0]) >= Math.floor(job.progress.step / perEpoch) - 1, `${name}: epochs "${epochs}" agree with step ${job.progress.step}`);
      }
    }
    if (name === 'moved') {
      const segs = await page.$$eval('#segments tbody tr', (trs) => trs.map((tr) => tr.textContent));
      check(segs.some((t) => t.includes('instance') && t.includes('on-demand')) && segs.some((t) => t.includes('owned worker')),
        `the moved job's page shows where it ran: ${JSON.stringify(segs)}`);
      const cand = await page.$$eval('#candidates tbody td[data-col="usd_per_hour"]', (tds) => tds.map((t) => t.textContent));
      check(cand.every((t) => t === '—' || /\/h$/.test(t)), `candidate prices are per hour or "—" (${[...new Set(cand)].join(', ')})`);
    }
    await readsAsProduct(page, `job ${name}`);
    await shot(page, `realistic-job-${name}`);
  }

  // Workers: where each runs. A worker in a Slurm batch job registers as one of provider "slurm"
  // (its batch job id, its partition as the instance type); this one is such a registration,
  // made over the API as jobctl-worker makes it, with no Slurm behind it and no GPU to take work.
  await apiPost('/v1/workers/register', { name: 'slurm-batch-4242',
    capabilities: { gpus: [], cpu_cores: 8, memory_mb: 32768, instance: { id: '4242', provider: 'slurm', instance_type: 'batch' } } });
  await page.goto(`${base}/#/workers`);
  await page.waitForSelector('#workers-body tr[data-kind="cloud"]');
  await page.waitForSelector('#instances-table');
  const kinds = await page.$$eval('#workers-body tr', (trs) => trs.map((tr) => ({ kind: tr.dataset.kind, where: tr.querySelector('[data-col="where"]').textContent })));
  check(kinds.some((k) => k.kind === 'owned' && k.where.startsWith('owned')), `an owned worker is labelled owned (${JSON.stringify(kinds)})`);
  check(kinds.some((k) => k.kind === 'cloud' && /^cloud on-demand \S+:\S+ · instance /.test(k.where)), 'a cloud-instance worker names its offer and instance');
  check(kinds.some((k) => k.kind === 'slurm' && k.where === 'Slurm batch job 4242 · partition batch'), 'a Slurm worker names its batch job and partition');
  const cloudCount = kinds.filter((k) => k.kind === 'cloud').length;
  const summary = await page.textContent('#workers-count');
  check(summary.includes(`${cloudCount} on cloud instances`) && !summary.includes(' 0 on cloud') && summary.includes('1 in Slurm batch jobs'),
    `the summary counts them (${summary})`);
  await readsAsProduct(page, 'workers');
  await shot(page, 'realistic-workers');

  // Costs: spend table, break-even, the fleet plan (figures or an empty state, never an error).
  await page.goto(`${base}/#/costs`);
  await page.waitForSelector('#spend-groups');
  await page.waitForSelector('#breakeven > *');
  await page.waitForSelector('#plan-facts, #plan-empty');
  await page.waitForTimeout(500);
  const spent = await page.$$eval('#spend-groups td[data-col="usd"]', (tds) => tds.map((t) => t.textContent));
  check(spent.length >= 1 && spent.every((t) => MONEY.test(t)), `the spend table shows money (${spent.join(', ')})`);
  await readsAsProduct(page, 'costs');
  await shot(page, 'realistic-costs');

  // Submit: the live quote follows the form.
  await page.goto(`${base}/#/submit`);
  await page.waitForSelector('#submit-form');
  await page.selectOption('#f-data-dataset', 'synthetic');
  await page.fill('#f-resources-gpu', 'V100');
  await page.waitForFunction(() => /owned/.test(document.querySelector('#quote-where')?.textContent || ''));
  const q1 = await page.textContent('#quote-cost');
  check(MONEY.test(q1), `the quote shows a cost (${q1}, on ${await page.textContent('#quote-where')})`);
  await page.fill('#f-train-epochs', '0');
  await page.waitForFunction(() => /No quote yet/.test(document.querySelector('#quote-body')?.textContent || ''));
  check(true, 'a spec the API refuses gets "No quote yet" with its reason, not a red error');
  await page.fill('#f-train-epochs', '30');
  await page.waitForSelector('#quote-cost');
  await readsAsProduct(page, 'submit');
  await shot(page, 'realistic-submit');

  const c = await apiPost(`/v1/jobs/${running.id}/cancel`, {});
  check(c.state === 'cancelled' || ended(c), 'the running job is cancelled');

  await taskFileSweep(page);
}

// A task file on the submit page: checked as `jobctl launch` checks it (errors at their line), a
// workdir pointed to the CLI, a sweep quoted and launched; then its cases side by side.
const SWEEP_TASK = `name: browser-sweep
run: |
  printf '{"event": "result", "loss": 0.%s5}\\n' "$JOBCTL_ARRAY_INDEX"
resources:
  gpu: V100
placement:
  mode: local
estimate:
  hours: 0.01
sweep:
  grid:
    lr: [0.1, 0.01, 0.001]
`;
async function taskFileSweep(page) {
  await page.goto(`${base}/#/submit`);
  await page.waitForSelector('#task-form');
  const status = () => page.textContent('#task-status');
  await page.fill('#t-task', 'run: python3 x.py\nresources:\n  gpus: 0\n');
  await page.waitForFunction(() => /^Not valid yet: task\.yaml:3:9: resources\.gpus/.test(document.querySelector('#task-status')?.textContent || ''));
  check(await page.isDisabled('#task-button'), `an invalid task file says where, and cannot be launched (${await status()})`);
  await page.fill('#t-task', 'workdir: code\nrun: ./train.sh\n');
  await page.waitForFunction(() => /packs the folder code/.test(document.querySelector('#task-status')?.textContent || ''));
  check(await page.isDisabled('#task-button'), `a task with a workdir points to jobctl launch (${await status()})`);
  await page.fill('#t-task', SWEEP_TASK);
  await page.waitForFunction(() => /a sweep of 3 jobs/.test(document.querySelector('#task-status')?.textContent || ''));
  await page.waitForSelector('#task-quote-cost');
  const q = await page.textContent('#task-quote-cost');
  check(MONEY.test(q) && /owned/.test(await page.textContent('#task-quote-where')), `the sweep is quoted (${q} a job, ${await page.textContent('#task-quote-where')})`);
  await readsAsProduct(page, 'submit a task file');
  await shot(page, 'realistic-submit-task');
  await page.click('#task-button');
  await page.waitForSelector('#launched-link');
  const arrayId = Number((await page.getAttribute('#launched-link', 'href')).split('/').pop());
  check(arrayId > 0, `the task launched sweep a${arrayId}`);
  await page.click('#launched-link');
  await page.waitForFunction(() => {
    const states = [...document.querySelectorAll('#array-body [data-col="state"]')].map((td) => td.textContent);
    return states.length === 3 && states.every((s) => ['succeeded', 'failed', 'cancelled'].includes(s)) &&
      document.querySelectorAll('#array-body [data-col="result-loss"]').length === 3;
  }, null, { timeout: 120000 });
  const rows = await page.$$eval('#array-body tr', (trs) => trs.map((tr) => [tr.querySelector('[data-col="index"]').textContent,
    tr.querySelector('[data-col="param-lr"]').textContent, tr.querySelector('[data-col="state"]').textContent,
    tr.querySelector('[data-col="result-loss"]').textContent]));
  check(JSON.stringify(rows) === JSON.stringify([['0', '0.1', 'succeeded', '0.05'], ['1', '0.01', 'succeeded', '0.15'],
    ['2', '0.001', 'succeeded', '0.25']]), `the sweep's cases side by side: case, lr, state, loss (${JSON.stringify(rows)})`);
  check(await page.isHidden('#array-cancel'), 'no cancel button once every case has ended');
  await readsAsProduct(page, 'sweep');
  await shot(page, 'realistic-sweep');
  await page.goto(`${base}/#/jobs`);
  await page.waitForSelector(`#jobs-body a[href="#/arrays/${arrayId}"]`);
  check((await page.$$(`#jobs-body a[href="#/arrays/${arrayId}"]`)).length === 3, 'each case in the jobs list links to its sweep');
}

const browser = await chromium.launch({ executablePath: args.chromium, args: ['--no-sandbox'] });
let failed = null;
try {
  const laptop = await browser.newContext({ viewport: { width: 1366, height: 860 } });
  const page = await laptop.newPage();
  watch(page);
  if (args['first-run-job']) {
    await firstRunJob(page, Number(args['first-run-job']));
  } else if (args.realistic) {
    await realisticPages(browser, page);
  } else {
    await wholeDashboard(browser, laptop, page);
  }
  check(pageErrors.length === 0, `no script errors on the pages (${JSON.stringify(pageErrors)})`);
} catch (e) {
  failed = e;
} finally {
  await browser.close();
}
log(`screenshots: ${shots.join(' ')}`);
if (!failed && softFailures) failed = new Error(`${softFailures} check(s) failed`);
if (failed) {
  console.error(`[browser-test] FAILED: ${failed.stack || failed}`);
  process.exit(1);
}
log('all browser checks passed');
