// Job detail: summary (a command job's command, bundle and result fields; a waiting job's reason,
// queue place and expected start), loss and accuracy curves (GET /v1/jobs/{id}/progress; the
// accuracy chart only for a job that reports accuracy), the event timeline,
// the placement decision with its candidate table, checkpoints, cost, and the program's output
// as it runs, each line with the time its worker read it (GET /v1/jobs/{id}/log, followed from
// the last line read; the whole file from GET /v1/jobs/{id}/log/download). Polled every 2 s.
import { api, download, optional, ApiError } from '../api.js';
import { TERMINAL, clear, count, duration, h, jobCost, num, objectTable, pct, placementText, stateBadge, time, usd, cell } from '../format.js';
import { chartFigure, lineChart } from '../charts.js';
import { poll } from './poll.js';

export function mountJobDetail(main, id) {
  const error = h('p', { class: 'error', role: 'alert', hidden: true });
  const title = h('h2', {}, `Job #${id}`);
  const summary = h('section', { 'aria-labelledby': 'sum-h' });
  const loss = chartFigure('loss', `Job ${id}: loss by step`);
  const acc = chartFigure('accuracy', `Job ${id}: test accuracy by step`);
  const timeline = h('ol', { class: 'timeline', id: 'timeline' });
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
    h('section', { 'aria-labelledby': 'curves-h' }, h('h3', { id: 'curves-h' }, 'Training curves'),
      h('div', { class: 'charts' }, loss.figure, acc.figure)),
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
      ['Model', spec.model ? `${spec.model.kind} ${JSON.stringify(spec.model.hidden ?? [])}${spec.model.channels ? ` conv ${JSON.stringify(spec.model.channels)}` : ''}` : undefined],
      ['Data', spec.data ? spec.data.dataset : undefined],
      ['Epochs', spec.train ? `${p.epochs_done ?? (job.state === 'succeeded' ? r.epochs : 0) ?? 0} of ${spec.train.epochs}` : undefined],
      ['Step', p.total_steps ? `${job.state === 'succeeded' ? (r.steps ?? p.step) : (p.step ?? 0)} of ${p.total_steps}` : undefined],
      ['Resources', job.resources ? `${job.resources.gpu}${job.resources.gpus > 1 ? ` ×${job.resources.gpus}` : ''}${spec.resources?.gpus === 'auto' ? ' (gpus auto: the smallest count that fits where it is placed)' : ''}` : undefined],
      ['Device', p.device_name || p.device || r.device],
      ['Worker', job.worker_id ? `#${job.worker_id} (lease epoch ${job.lease_epoch})` : undefined],
      ['Recoveries', String(job.recoveries ?? 0)],
      ['Priority', String(job.priority)],
      ['Submitted', time(job.created_ms)],
      ['Updated', time(job.updated_ms)],
      ['Final loss', r.final_loss !== undefined ? num(r.final_loss) : undefined],
      ['Test accuracy', r.test_accuracy !== undefined ? pct(r.test_accuracy) : (p.test_accuracy !== undefined ? `${pct(p.test_accuracy)} (last epoch)` : undefined)],
      ['Result', command && job.result ? h('span', { id: 'job-result' }, resultText(r)) : undefined],
      ['Runtime', runtimeText(job.runtime)],
      ['Elapsed', r.elapsed_s !== undefined ? duration(r.elapsed_s) : undefined],
      ['Samples/s', p.samples_per_s !== undefined ? num(p.samples_per_s, 5) : undefined],
      ['Error', job.error || undefined],
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
  ], { xLabel: 'step', yLabel: 'loss', note: loss.note, emptyText: empty });
  lineChart(acc.canvas, [{ label: 'test accuracy', points: s.accuracy }],
    { xLabel: 'step', yLabel: 'accuracy', note: acc.note, emptyText: 'Test accuracy appears after the first epoch.' });
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

function detailText(d) {
  return Object.entries(d).map(([k, v]) => `${k}: ${cell(v)}`).join(' · ');
}

function renderPlacement(el, p) {
  if (!p) {
    clear(el, h('p', { class: 'muted' }, 'No placement decision on this job (the daemon has not placed it, or does not run cost-based placement).'));
    return;
  }
  const cands = p.candidates || [];
  clear(el,
    h('p', {}, h('strong', {}, 'Chosen: '), placementText(p) || '—', p.chosen?.estimated_cost_usd !== undefined ? ` · est. ${usd(p.chosen.estimated_cost_usd)}` : ''),
    p.reason ? h('p', { id: 'placement-reason' }, h('strong', {}, 'Reason: '), p.reason) : null,
    p.workload ? h('p', { id: 'placement-workload' }, h('strong', {}, 'Workload: '), workloadText(p.workload)) : null,
    h('div', { class: 'table-wrap' }, h('table', { id: 'candidates' },
      h('caption', {}, `${cands.length} candidates`),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, ''),
        CANDIDATE_COLUMNS.map(([key, label]) => h('th', { scope: 'col', 'data-col': key }, label)), h('th', { scope: 'col' }, 'why not'))),
      h('tbody', {}, cands.map((c) => h('tr', { class: c.chosen ? 'chosen' : (c.rejected ? 'rejected' : '') },
        h('td', {}, c.chosen ? '✔ chosen' : ''),
        CANDIDATE_COLUMNS.map(([key, , show]) => h('td', { 'data-col': key }, show(c[key], c))),
        h('td', {}, c.rejected || '')))))));
}

// The candidate table's columns: [field of the placement document's row, heading, cell text].
// Per option: the machine's GPUs, the GPUs the job takes there and its memory on each, then the
// price, the time and the cost.
export const CANDIDATE_COLUMNS = [
  ['option', 'option', cell],
  ['provider', 'provider', cell],
  ['cloud', 'cloud', cell],
  ['region', 'region', cell],
  ['instance_type', 'instance type', cell],
  ['gpu', 'gpu', cell],
  ['machine_gpus', 'machine GPUs', cell],
  ['job_gpus', 'uses GPUs', cell],
  ['memory_gib_per_gpu', 'GiB per GPU', (v) => (typeof v === 'number' && v > 0 ? v.toFixed(1) : '—')],
  ['usd_per_hour', 'usd per hour', usd],
  ['estimated_hours', 'est. time', (v) => (typeof v === 'number' ? duration(v * 3600) : '—')],
  ['estimated_cost_usd', 'est. cost', usd],
  ['meets_deadline', 'meets deadline', cell],
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
  const shaped = rows.map((r) => {
    const out = { ...r };
    if (typeof r.bytes === 'number') out.bytes = r.bytes >= 1 << 20 ? `${(r.bytes / (1 << 20)).toFixed(2)} MiB` : `${(r.bytes / 1024).toFixed(1)} KiB`;
    if (typeof r.created_ms === 'number') { delete out.created_ms; out.created = time(r.created_ms); }
    if (typeof r.epoch === 'number') { delete out.epoch; out.lease_epoch = r.epoch; }
    delete out.url;
    return out;
  });
  const table = objectTable(shaped, { caption: `${rows.length} checkpoints, newest first`, preferred: ['step', 'bytes', 'crc32c', 'created', 'lease_epoch', 'worker_id'] });
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
    h('caption', {}, `${rows.length} files, ${size(outs.bytes || 0)}`),
    h('thead', {}, h('tr', {}, ...['path', 'bytes', 'uploaded', ''].map((c) => h('th', { scope: 'col' }, c)))),
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

const NO_EQUIVALENT = 'no on-demand equivalent';

function renderCost(el, job) {
  const so = jobCost(job);
  const chosen = job.placement?.chosen;
  clear(el, dl([
    ['Cost so far', so !== undefined ? usd(so) : 'not reported by this daemon'],
    ['Price', chosen?.usd_per_hour !== undefined ? `${usd(chosen.usd_per_hour)}/h (${chosen.option})` : undefined],
    ['Estimated', chosen?.estimated_cost_usd !== undefined ? `${usd(chosen.estimated_cost_usd)} over ${duration((chosen.estimated_hours ?? 0) * 3600)}${job.runtime?.basis === 'assumed' ? ' (an assumed hour)' : ''}` : undefined],
    ['Meets deadline', chosen?.meets_deadline !== undefined ? (chosen.meets_deadline ? 'yes' : 'no') : undefined],
    // null: no on-demand offer has the job's GPU model, so there is nothing to compare with.
    ['All on-demand', typeof job.cost?.on_demand_usd === 'number' ? usd(job.cost.on_demand_usd) : job.cost?.on_demand_usd === null ? NO_EQUIVALENT : undefined],
    ['Saved', typeof job.cost?.saved_usd === 'number' ? usd(job.cost.saved_usd) : job.cost?.saved_usd === null ? NO_EQUIVALENT : undefined],
  ]));
  // Where it ran: one row per machine and stretch (a move or a recovery starts a new one).
  const segments = job.segments || [];
  if (segments.length) {
    el.append(h('table', { class: 'segments', id: 'segments' },
      h('caption', {}, 'Where it ran'),
      h('thead', {}, h('tr', {}, ...['where', 'option', 'billed', 'cost', 'at on-demand'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, ...segments.map((seg) => h('tr', {},
        h('td', {}, seg.where), h('td', {}, seg.option),
        h('td', {}, duration(seg.billed_seconds) + (seg.open ? ' (running)' : '')),
        h('td', {}, usd(seg.usd)), h('td', {}, seg.on_demand_usd === null ? NO_EQUIVALENT : usd(seg.on_demand_usd)))))));
  }
}
