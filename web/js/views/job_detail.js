// Job detail: summary (a command job's command, bundle, image with its digest and result fields; a waiting job's reason,
// queue place and expected start), loss and accuracy curves (GET /v1/jobs/{id}/progress; the
// accuracy chart only for a job that reports accuracy), the event timeline,
// the placement decision with its candidate table, checkpoints, cost, and the program's output
// as it runs, each line with the time its worker read it (GET /v1/jobs/{id}/log, followed from
// the last line read; the whole file from GET /v1/jobs/{id}/log/download). Polled every 2 s.
import { api, download, optional, ApiError } from '../api.js';
import { TERMINAL, clear, count, duration, fieldLabel, fieldText, gpuText, h, jobCost, num, objectTable, optionText, pct, placementText, plural, stateBadge, time, usd, usdPerHour, cell } from '../format.js';
import { chartFigure, lineChart } from '../charts.js';
import { poll } from './poll.js';

export function mountJobDetail(main, id) {
  const error = h('p', { class: 'error', role: 'alert', hidden: true });
  const title = h('h2', {}, `Job #${id}`);
  const summary = h('section', { 'aria-labelledby': 'sum-h' });
  const loss = chartFigure('loss', `Job ${id}: loss by step`);
  const acc = chartFigure('accuracy', `Job ${id}: test accuracy by step`);
  const timeline = h('ol', { class: 'timeline', id: 'timeline' });
  // A command job whose program reports no loss has no curves to show: the section is hidden.
  const curves = h('section', { 'aria-labelledby': 'curves-h', id: 'curves' }, h('h3', { id: 'curves-h' }, 'Training curves'),
    h('div', { class: 'charts' }, loss.figure, acc.figure));
  const placement = h('div', { id: 'placement' });
  const checkpoints = h('div', { id: 'checkpoints' });
  const outputs = h('div', { id: 'outputs' });
  const cost = h('div', { id: 'cost' });
  const output = h('pre', { class: 'job-log', id: 'job-log', 'aria-live': 'off' }, 'No output yet.');
  const logDownload = h('button', { type: 'button', id: 'log-download' }, 'Download the whole log');
  logDownload.addEventListener('click', () => download(`/v1/jobs/${id}/log/download`, `job-${id}.log`).catch(showError));
  let logNext = 0;
  let logLines = 0;

  clear(main,
    h('p', {}, h('a', { href: '#/jobs' }, '← all jobs')),
    title, error,
    summary,
    curves,
    h('div', { class: 'columns' },
      h('section', { 'aria-labelledby': 'events-h' }, h('h3', { id: 'events-h' }, 'Events'), timeline),
      h('section', { 'aria-labelledby': 'cost-h' }, h('h3', { id: 'cost-h' }, 'Cost'), cost)),
    h('section', { 'aria-labelledby': 'placement-h' }, h('h3', { id: 'placement-h' }, 'Placement'), placement),
    h('section', { 'aria-labelledby': 'ckpt-h' }, h('h3', { id: 'ckpt-h' }, 'Checkpoints'), checkpoints),
    h('section', { 'aria-labelledby': 'outputs-h' }, h('h3', { id: 'outputs-h' }, 'Outputs'), outputs),
    h('section', { 'aria-labelledby': 'log-h' }, h('h3', { id: 'log-h' }, 'Output'), output, logDownload));

  let lastSig = '';
  let done = false;
  const refresh = async () => {
    if (done) return;
    const job = await api('GET', `/v1/jobs/${id}`);
    // The output since the last poll, each line with its time; the page keeps the last 5000 lines.
    const log = await optional(`/v1/jobs/${id}/log?after=${logNext}`);
    if (log && log.lines && log.lines.length) {
      if (logLines === 0) output.replaceChildren();
      for (const l of log.lines) {
        if (l.n > logNext + 1 && logNext > 0) output.append(h('span', { class: 'log-gap' }, `[... ${l.n - logNext - 1} lines dropped ...]\n`));
        output.append(h('span', { class: 'log-line', 'data-n': String(l.n) },
          h('time', { class: 'log-time', datetime: new Date(l.time_ms).toISOString(), title: time(l.time_ms) }, logTime(l.time_ms)),
          ` ${l.text}\n`));
        logNext = l.n;
        logLines += 1;
      }
      while (logLines > 5000 && output.firstChild) {
        if (output.firstChild.classList.contains('log-line')) logLines -= 1;
        output.firstChild.remove();
      }
    }
    if (log) logNext = Math.max(logNext, log.next);
    if (logLines === 0) {
      output.textContent = TERMINAL.has(job.state) ? 'The job printed nothing.'
        : (job.state === 'running' ? 'No output yet.' : 'No output yet: the job has not started.');
    }
    const [hist, ckpts, outs] = await Promise.all([
      optional(`/v1/jobs/${id}/progress`),
      optional(`/v1/jobs/${id}/checkpoints`).catch((e) => ({ error: e })),
      optional(`/v1/jobs/${id}/outputs`).catch((e) => ({ error: e })),
    ]);
    const sig = JSON.stringify([job, hist, ckpts, outs]);
    if (sig === lastSig) return;
    lastSig = sig;
    title.replaceChildren(`Job #${job.id} · ${job.name} `, stateBadge(job.state));
    renderSummary(summary, job, async () => {
      if (!window.confirm(`Cancel job ${job.id}?`)) return;
      try { await api('POST', `/v1/jobs/${job.id}/cancel`, {}); lastSig = ''; await refresh(); } catch (e) { showError(e); }
    });
    // A command job's program reports accuracy or not: its chart is shown only when it does.
    acc.figure.hidden = !reportsAccuracy(job, hist);
    curves.hidden = !job.spec?.model && !reportsLoss(job, hist);
    renderCurves(job, hist, loss, acc);
    renderTimeline(timeline, job.events || []);
    renderPlacement(placement, job.placement);
    renderCheckpoints(checkpoints, ckpts);
    renderOutputs(outputs, id, outs);
    renderCost(cost, job);
    // A finished job changes no more: one last render, then polling stops.
    if (TERMINAL.has(job.state) && hist !== undefined) done = true;
  };
  const showError = (e) => {
    error.hidden = !e;
    if (!e) return;
    error.textContent = e instanceof ApiError && e.status === 404 ? `No job #${id}.` : `Could not load job ${id}: ${e.message}`;
  };
  return poll(refresh, 2000, showError);
}

// "10:00:01.250" (UTC): a log line's time; the full date is its title.
function logTime(ms) {
  return new Date(ms).toISOString().slice(11, 23);
}

function dl(pairs) {
  return h('dl', { class: 'facts' }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

// Whether the job has accuracy to chart: a built-in model always does (after its first epoch); a
// command job only when its program reported test_accuracy.
export function reportsAccuracy(job, hist) {
  if (job.spec?.model) return true;
  if (typeof job.result?.test_accuracy === 'number' || typeof job.progress?.test_accuracy === 'number') return true;
  return ((hist && hist.points) || []).some((pt) => typeof pt.progress?.test_accuracy === 'number');
}

// Whether the job has a loss to chart (a command job's program may report none).
function reportsLoss(job, hist) {
  if (typeof job.result?.final_loss === 'number' || typeof job.progress?.loss === 'number') return true;
  return ((hist && hist.points) || []).some((pt) => typeof pt.progress?.loss === 'number');
}

// A command as a shell would show it: arguments with spaces or quotes in JSON quotes.
function commandText(command) {
  return command.map((a) => (/^[^\s'"\\$`*?;&|<>()]+$/.test(a) ? a : JSON.stringify(a))).join(' ');
}

function bundleText(job) {
  if (!job.bundle) return job.spec?.command ? 'none: the program runs in the worker\'s job folder as it is' : undefined;
  const b = job.bundle;
  const size = typeof b.bytes === 'number' ? (b.bytes >= 1 << 20 ? `${(b.bytes / (1 << 20)).toFixed(2)} MiB` : `${(b.bytes / 1024).toFixed(1)} KiB`) : 'no longer stored';
  return h('span', { title: `sha256 ${b.sha256}` }, `${b.sha256.slice(0, 12)} (${size})`);
}

// A job's container image: the reference, and the digest its newest lease pulled (what ran).
function imageText(job) {
  const image = job.spec?.image;
  if (!image) return undefined;
  const pull = job.spec.image_pull && job.spec.image_pull !== 'if_missing' ? ` (pull ${job.spec.image_pull})` : '';
  return h('span', { id: 'job-image' }, h('code', {}, image), pull);
}

function imageDigestText(job) {
  if (!job.spec?.image) return undefined;
  return job.image_digest ? h('code', { id: 'job-image-digest' }, job.image_digest) : 'not reported yet';
}

function mountsText(job) {
  const mounts = job.spec?.mounts;
  if (!mounts?.length) return undefined;
  return mounts.map((m) => `${m.source} → ${m.target}${m.writable ? ' (rw)' : ' (ro)'}`).join(', ');
}

// Why a waiting job waits (GET /v1/jobs/{id}'s `waiting`): reason, place in its queue, expected start.
function waitingFacts(w) {
  if (!w) return [];
  return [
    ['Waiting', h('span', { id: 'waiting-reason' }, w.reason)],
    ['Queue', w.position ? h('span', { id: 'waiting-queue' }, `#${w.position} of ${w.queue_length} waiting for ${w.queue}`) : undefined],
    ['Expected start', h('span', { id: 'waiting-start' }, typeof w.expected_start_ms === 'number'
      ? `${time(w.expected_start_ms)} (${w.expected_start_basis})` : w.expected_start_basis)],
  ];
}

// What a command job's program printed on its result line, field by field.
function resultText(r) {
  return Object.entries(r).map(([k, v]) => `${k} ${typeof v === 'number' ? num(v) : cell(v)}`).join(' · ');
}

// The estimate against the actual runtime; an assumed hour is said to be one, with no error.
function runtimeText(rt) {
  if (!rt || typeof rt.estimated_hours !== 'number') return undefined;
  const actual = typeof rt.actual_hours === 'number' ? `, actual ${duration(rt.actual_hours * 3600)}` : '';
  if (rt.basis === 'assumed') return `assumed ${duration(rt.estimated_hours * 3600)} (no runtime estimate)${actual}`;
  const error = typeof rt.error_fraction === 'number' ? `, error ${pct(rt.error_fraction)}` : '';
  return `estimated ${duration(rt.estimated_hours * 3600)}${rt.basis === 'history' ? ' (from earlier runs)' : ''}${actual}${error}`;
}

// Whole epochs done: the result's on success; else the heartbeat's count, or what its step says
// when that is more (a resumed run's first heartbeats come before its first epoch ends).
export function epochsDone(job) {
  const p = job.progress || {};
  if (job.state === 'succeeded' && typeof job.result?.epochs === 'number') return job.result.epochs;
  const counted = typeof p.epochs_done === 'number' ? p.epochs_done : 0;
  const perEpoch = p.steps_per_epoch || (p.total_steps && job.spec?.train?.epochs ? p.total_steps / job.spec.train.epochs : 0);
  const fromStep = perEpoch && typeof p.step === 'number' ? Math.floor(p.step / perEpoch) : 0;
  return Math.max(counted, fromStep);
}

function renderSummary(el, job, cancel) {
  const p = job.progress || {};
  const r = job.result || {};
  const spec = job.spec || {};
  const command = Array.isArray(spec.command) ? spec.command : null;
  clear(el,
    h('h3', { id: 'sum-h', class: 'sr-only' }, 'Summary'),
    dl([
      ['State', stateBadge(job.state)],
      ...waitingFacts(job.waiting),
      ['Command', command ? h('code', { id: 'job-command' }, commandText(command)) : undefined],
      ['Bundle', bundleText(job)],
      ['Image', imageText(job)],
      ['Image digest', imageDigestText(job)],
      ['Mounts', mountsText(job)],
      ['Model', spec.model ? `${spec.model.kind} ${JSON.stringify(spec.model.hidden ?? [])}${spec.model.channels ? ` conv ${JSON.stringify(spec.model.channels)}` : ''}` : undefined],
      ['Data', spec.data ? spec.data.dataset : undefined],
      ['Epochs', spec.train ? `${epochsDone(job)} of ${spec.train.epochs}` : undefined],
      ['Step', p.total_steps ? `${job.state === 'succeeded' ? (r.steps ?? p.step) : (p.step ?? 0)} of ${p.total_steps}` : undefined],
      ['Resources', job.resources ? `${job.resources.gpu}${job.resources.gpus > 1 ? ` ×${job.resources.gpus}` : ''}${job.resources.nodes > 1 ? ` on each of ${job.resources.nodes} machines` : ''}${spec.resources?.gpus === 'auto' ? ' (gpus auto: the smallest count that fits where it is placed)' : ''}` : undefined],
      ['Device', p.device_name || p.device || r.device],
      ['Worker', job.worker_id ? h('a', { href: '#/workers' }, `#${job.worker_id}`) : undefined],
      // A job across machines while leased: where each of its nodes runs (rank 0 reports for it).
      ['Nodes', job.nodes?.length ? job.nodes.map((n) => (n.worker_id ? `rank ${n.rank}: worker #${n.worker_id} (${n.address})` : `rank ${n.rank}: lost, awaiting a replacement`)).join(', ') : undefined],
      ['Recoveries', String(job.recoveries ?? 0)],
      ['Priority', String(job.priority)],
      ['Submitted', time(job.created_ms)],
      ['Updated', time(job.updated_ms)],
      ['Final loss', r.final_loss !== undefined ? num(r.final_loss) : undefined],
      ['Test accuracy', r.test_accuracy !== undefined ? pct(r.test_accuracy) : (p.test_accuracy !== undefined ? `${pct(p.test_accuracy)} (last epoch)` : undefined)],
      ['Result', command && job.result && Object.keys(r).length ? h('span', { id: 'job-result' }, resultText(r)) : undefined],
      ['Runtime', runtimeText(job.runtime)],
      ['Elapsed', r.elapsed_s !== undefined ? duration(r.elapsed_s) : undefined],
      ['Throughput', p.samples_per_s !== undefined ? `${Math.round(p.samples_per_s).toLocaleString('en-US')} samples/s` : undefined],
      ['Error', job.error ? h('span', { class: 'prose pre' }, job.error) : undefined],
    ]),
    TERMINAL.has(job.state) ? null : h('button', { type: 'button', class: 'danger', onclick: cancel }, 'Cancel job'));
}

// The curves come from the progress history: one point per kept heartbeat (loss at that step),
// and the per-epoch train/test losses and test accuracy where an epoch ended. The final result's
// loss closes the curve at the last step when the history stops short of it.
export function curveSeries(job, hist) {
  const points = (hist && hist.points) || [];
  const stepLoss = [];
  const trainLoss = [];
  const testLoss = [];
  const accuracy = [];
  let lastEpochs = null;
  for (const pt of points) {
    const p = pt.progress || {};
    if (typeof p.step === 'number' && typeof p.loss === 'number') {
      if (stepLoss.length && stepLoss[stepLoss.length - 1].x === p.step) stepLoss.pop();
      stepLoss.push({ x: p.step, y: p.loss });
    }
    if (typeof p.epochs_done === 'number' && p.epochs_done !== lastEpochs) {
      lastEpochs = p.epochs_done;
      const x = p.steps_per_epoch ? p.epochs_done * p.steps_per_epoch : p.step;
      if (typeof x === 'number') {
        if (typeof p.train_loss === 'number') trainLoss.push({ x, y: p.train_loss });
        if (typeof p.test_loss === 'number') testLoss.push({ x, y: p.test_loss });
        if (typeof p.test_accuracy === 'number') accuracy.push({ x, y: p.test_accuracy });
      }
    }
  }
  const r = job.result || {};
  if (job.state === 'succeeded' && typeof r.final_loss === 'number' && typeof r.steps === 'number' &&
      (!stepLoss.length || stepLoss[stepLoss.length - 1].x < r.steps)) {
    stepLoss.push({ x: r.steps, y: r.final_loss });
  }
  stepLoss.sort((a, b) => a.x - b.x);
  return { stepLoss, trainLoss, testLoss, accuracy };
}

function renderCurves(job, hist, loss, acc) {
  if (hist === null) {
    loss.note.textContent = 'This daemon keeps no progress history (GET /v1/jobs/{id}/progress is missing).';
    return;
  }
  const s = curveSeries(job, hist);
  const empty = job.state === 'queued' || job.state === 'placed' ? 'No progress yet: the job has not started.' : 'No progress reported yet.';
  lineChart(loss.canvas, [
    { label: 'loss (step)', points: s.stepLoss },
    { label: 'train loss (epoch)', points: s.trainLoss, dashed: true },
    { label: 'test loss (epoch)', points: s.testLoss },
  ], { xLabel: 'step', yLabel: 'loss', xMin: 0, yMin: 0, note: loss.note, emptyText: empty });
  lineChart(acc.canvas, [{ label: 'test accuracy', points: s.accuracy }],
    { xLabel: 'step', yLabel: 'test accuracy', xMin: 0, yMin: 0, yMax: 1, yFormat: (v) => `${Math.round(v * 100)}%`,
      note: acc.note, emptyText: 'Test accuracy appears after the first epoch.' });
  loss.canvas.dataset.points = String(s.stepLoss.length);
  acc.canvas.dataset.points = String(s.accuracy.length);
}

function renderTimeline(el, events) {
  clear(el, events.map((e) => h('li', { class: `ev ev-${e.type}` },
    h('time', { datetime: new Date(e.time_ms).toISOString() }, time(e.time_ms)), ' ',
    h('strong', {}, e.type),
    e.from || e.to ? h('span', { class: 'muted' }, ` ${e.from ?? '∅'} → ${e.to ?? '∅'}`) : null,
    e.detail && Object.keys(e.detail).length ? h('div', { class: 'detail' }, detailText(e.detail)) : null)));
  if (!events.length) el.append(h('li', {}, 'No events.'));
}

// An event's detail, field by field, in words and units ("Estimated time: 2.1 s").
// The daemon's own sentences (reasons) are kept as written, marked class "prose".
function detailText(d) {
  // A time given both as text and in ms ("start", "start_ms") is shown once.
  return Object.entries(d).filter(([k]) => !(`${k}_ms` in d)).map(([k, v], i) => [i ? ' · ' : '', `${fieldLabel(k)}: `,
    k === 'reason' || k === 'error' ? h('span', { class: 'prose' }, String(v))
      : (k === 'option' || k === 'to' || k === 'from' ? optionText(v)
        : (k === 'gpus' && Array.isArray(v) ? (v.length ? v.map((i) => `#${i}`).join(', ') : 'none (CPU)')
          : (k === 'gpu' ? gpuText(v) : fieldText(k, v))))]);
}

function renderPlacement(el, p) {
  if (!p) {
    clear(el, h('p', { class: 'muted' }, 'No placement decision on this job (the daemon has not placed it, or does not run cost-based placement).'));
    return;
  }
  const cands = p.candidates || [];
  clear(el,
    h('p', {}, h('strong', {}, 'Chosen: '), placementText(p) || '—', p.chosen?.estimated_cost_usd !== undefined ? ` · estimated ${usd(p.chosen.estimated_cost_usd)}` : ''),
    p.reason ? h('p', { id: 'placement-reason' }, h('strong', {}, 'Reason: '), h('span', { class: 'prose' }, p.reason)) : null,
    p.workload ? h('p', { id: 'placement-workload' }, h('strong', {}, 'Workload: '), workloadText(p.workload)) : null,
    h('div', { class: 'table-wrap' }, h('table', { id: 'candidates' },
      h('caption', {}, `${plural(cands.length, 'option')} considered`),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, ''),
        CANDIDATE_COLUMNS.map(([key, label]) => h('th', { scope: 'col', 'data-col': key }, label)), h('th', { scope: 'col' }, 'Why not'))),
      h('tbody', {}, cands.map((c) => h('tr', { class: c.chosen ? 'chosen' : (c.rejected ? 'rejected' : '') },
        h('td', {}, c.chosen ? '✔ chosen' : ''),
        CANDIDATE_COLUMNS.map(([key, , show]) => h('td', { 'data-col': key }, show(c[key], c))),
        h('td', { class: 'wrap' }, c.rejected || '')))))));
}

// The candidate table's columns: [field of the placement document's row, heading, cell text].
// Per option: the machine's GPUs, the GPUs the job takes there and its memory on each, then the
// price, the time and the cost.
// A row with no price (an offer with no spot market, an option not priced) shows "—" for its
// figures rather than $0 and 0 s.
const priced = (c) => c.option === 'local' || (typeof c.usd_per_hour === 'number' && c.usd_per_hour > 0);
const orDash = (fmt) => (v, c) => (priced(c) && v !== null && v !== undefined ? fmt(v) : '—');
export const CANDIDATE_COLUMNS = [
  ['option', 'Option', (v) => optionText(v)],
  ['cloud', 'Cloud', (v, c) => (c.option === 'local' ? '—' : cell(v ?? c.provider))],
  ['region', 'Region', cell],
  ['instance_type', 'Instance type', cell],
  ['gpu', 'GPU', (v) => h('span', { title: v || '' }, gpuText(v))],
  ['machine_gpus', 'Machine GPUs', (v) => (v > 0 ? String(v) : '—')],
  ['job_gpus', 'Uses GPUs', (v) => (v > 0 ? String(v) : '—')],
  ['memory_gib_per_gpu', 'GiB per GPU', (v) => (typeof v === 'number' && v > 0 ? v.toFixed(1) : '—')],
  ['usd_per_hour', 'Price', orDash(usdPerHour)],
  ['estimated_hours', 'Estimated time', orDash((v) => duration(v * 3600))],
  ['estimated_cost_usd', 'Estimated cost', orDash(usd)],
  ['meets_deadline', 'Meets deadline', (v, c) => (priced(c) ? cell(v) : '—')],
];

// What the job is to the cost model (the placement document's workload), one line.
function workloadText(w) {
  const parts = [w.model_kind];
  if (typeof w.parameters === 'number') parts.push(`${count(w.parameters)} parameters`);
  if (typeof w.training_flops === 'number') parts.push(`${count(w.training_flops)} FLOPs`);
  if (typeof w.memory_gib_per_gpu === 'number') parts.push(`${w.memory_gib_per_gpu.toFixed(2)} GiB per GPU on ${w.gpus} GPU${w.gpus === 1 ? '' : 's'}`);
  return parts.join(', ') + (w.gpus_auto ? ' (gpus auto: each option at the smallest count that fits)' : '');
}


function renderCheckpoints(el, ck) {
  if (ck === null) { clear(el, h('p', { class: 'muted' }, 'This daemon does not store checkpoints (no checkpoints endpoint).')); return; }
  if (ck && ck.error) { clear(el, h('p', { class: 'error' }, `Could not load checkpoints: ${ck.error.message}`)); return; }
  const rows = Array.isArray(ck) ? ck : (ck.checkpoints || []);
  if (!rows.length) { clear(el, h('p', { class: 'muted' }, 'No checkpoints stored for this job.')); return; }
  const size = (b) => (b >= 1 << 20 ? `${(b / (1 << 20)).toFixed(2)} MiB` : `${(b / 1024).toFixed(1)} KiB`);
  const table = objectTable(rows, { caption: `${plural(rows.length, 'checkpoint')}, newest first`, columns: [
    ['step', 'Step', cell], ['bytes', 'Size', (v) => (typeof v === 'number' ? size(v) : '—')],
    ['created_ms', 'Saved', (v) => time(v)], ['worker_id', 'By worker', (v) => (v ? `#${v}` : '—')],
    ['crc32c', 'CRC32C', cell]] });
  // The download button of each (the API's own url, fetched with the token: api.js download).
  const trs = table.querySelectorAll('tbody tr');
  rows.forEach((r, i) => {
    if (typeof r.url !== 'string' || !r.url.startsWith('/v1/')) return;
    const name = `${r.url.replace(/^\/v1\/jobs\/(\d+)\/checkpoints\/(\d+).*$/, 'job-$1-step-$2')}.ckpt`;
    const failed = h('span', { class: 'error', role: 'status' });
    const save = async () => {
      failed.textContent = '';
      try { await download(r.url, name); } catch (e) { failed.textContent = e.message; }
    };
    trs[i].append(h('td', {}, h('button', { type: 'button', onclick: save }, 'download'), failed));
  });
  if (rows.some((r) => typeof r.url === 'string')) table.querySelector('thead tr').append(h('th', { scope: 'col' }, ''));
  clear(el, table);
}

// The files the program left in JOBCTL_OUTPUT_DIR, each with a download button (fetched with the
// token: api.js download).
function renderOutputs(el, id, outs) {
  if (outs === null) { clear(el, h('p', { class: 'muted' }, 'This daemon does not store outputs (no outputs endpoint).')); return; }
  if (outs && outs.error) { clear(el, h('p', { class: 'error' }, `Could not load outputs: ${outs.error.message}`)); return; }
  const rows = outs?.outputs || [];
  if (!rows.length) { clear(el, h('p', { class: 'muted' }, 'No outputs stored for this job (files its program leaves in JOBCTL_OUTPUT_DIR).')); return; }
  const size = (b) => (b >= 1 << 20 ? `${(b / (1 << 20)).toFixed(2)} MiB` : `${(b / 1024).toFixed(1)} KiB`);
  clear(el, h('div', { class: 'table-wrap' }, h('table', { id: 'outputs-table' },
    h('caption', {}, `${plural(rows.length, 'file')}, ${size(outs.bytes || 0)}`),
    h('thead', {}, h('tr', {}, ...['File', 'Size', 'Uploaded', ''].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, ...rows.map((r) => {
      const failed = h('span', { class: 'error', role: 'status' });
      const save = async () => {
        failed.textContent = '';
        const url = `/v1/jobs/${id}/outputs/file?path=${encodeURIComponent(r.path)}`;
        try { await download(url, r.path.split('/').pop()); } catch (e) { failed.textContent = e.message; }
      };
      return h('tr', {}, h('td', {}, r.path), h('td', {}, size(r.bytes)), h('td', {}, time(r.uploaded_ms)),
        h('td', {}, h('button', { type: 'button', onclick: save }, 'download'), failed));
    })))));
}

// "local:3" -> "owned worker #3", "instance:i-0abc" -> "instance i-0abc".
function segmentWhere(where) {
  const [kind, id] = String(where).split(/:(.*)/s);
  if (kind === 'local') return `owned worker #${id.split(':')[0]}`;
  if (kind === 'instance') return `instance ${id}`;
  return where;
}
// null: no on-demand offer has the job's GPU model, so there is nothing to compare with.
const NO_EQUIVALENT = 'no on-demand equivalent';

function renderCost(el, job) {
  const so = jobCost(job);
  const chosen = job.placement?.chosen;
  const ran = (job.segments || []).length > 0;
  clear(el, dl([
    ['Cost so far', so === undefined ? 'not reported by this daemon' : (ran ? usd(so) : 'nothing yet: it has not run')],
    ['Price', chosen?.usd_per_hour !== undefined ? `${usdPerHour(chosen.usd_per_hour)} (${optionText(chosen.option)})` : undefined],
    ['Estimated', chosen?.estimated_cost_usd !== undefined ? `${usd(chosen.estimated_cost_usd)} over ${duration((chosen.estimated_hours ?? 0) * 3600)}${job.runtime?.basis === 'assumed' ? ' (an assumed hour)' : ''}` : undefined],
    ['Meets deadline', chosen?.meets_deadline !== undefined ? (chosen.meets_deadline ? 'yes' : 'no') : undefined],
    ['All on-demand', !ran ? undefined : typeof job.cost?.on_demand_usd === 'number' ? usd(job.cost.on_demand_usd) : job.cost?.on_demand_usd === null ? NO_EQUIVALENT : undefined],
    ['Saved', !ran ? undefined : typeof job.cost?.saved_usd === 'number' ? usd(job.cost.saved_usd) : job.cost?.saved_usd === null ? NO_EQUIVALENT : undefined],
  ]));
  // Where it ran: one row per machine and stretch (a move or a recovery starts a new one).
  const segments = job.segments || [];
  if (segments.length) {
    el.append(h('div', { class: 'table-wrap' }, h('table', { class: 'segments', id: 'segments' },
      h('caption', {}, 'Where it ran'),
      h('thead', {}, h('tr', {}, ...['Machine', 'Pricing', 'Time billed', 'Cost', 'On-demand'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, ...segments.map((seg) => h('tr', {},
        h('td', {}, segmentWhere(seg.where)), h('td', {}, optionText(seg.option)),
        h('td', {}, duration(seg.billed_seconds) + (seg.open ? ' (running)' : '')),
        h('td', {}, usd(seg.usd)), h('td', {}, seg.on_demand_usd === null ? NO_EQUIVALENT : usd(seg.on_demand_usd))))))));
  }
}
