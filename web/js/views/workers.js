// Workers: every registered worker (GET /v1/workers, every page) and where it runs — an owned
// machine, a cloud instance (its registration's capabilities.instance: provider, instance type,
// spot or on demand; region and price from GET /v1/instances) or a Slurm batch job (provider
// "slurm", the partition as its instance type) — its GPUs, current jobs and last heartbeat; and
// the cloud instances this daemon provisions. Polled every 2 s.
import { allWorkers, optional } from '../api.js';
import { ago, clear, h, objectTable, plural, time, usd, usdPerHour } from '../format.js';
import { poll, syncRows } from './poll.js';

export function mountWorkers(main) {
  const error = h('p', { class: 'error', role: 'alert', hidden: true });
  const tbody = h('tbody', { id: 'workers-body' });
  const count = h('p', { class: 'muted', 'aria-live': 'polite', id: 'workers-count' });
  const instances = h('div', { id: 'instances' });
  clear(main,
    h('h2', {}, 'Workers'), count, error,
    h('div', { class: 'table-wrap' }, h('table', { id: 'workers-table' },
      h('caption', { class: 'sr-only' }, 'Registered workers; updates every 2 seconds'),
      h('thead', {}, h('tr', {}, ['ID', 'Name', 'State', 'Runs on', 'GPUs', 'CPU / memory', 'Current job', 'Last heartbeat']
        .map((c) => h('th', { scope: 'col' }, c)))),
      tbody)),
    h('section', { 'aria-labelledby': 'inst-h' }, h('h3', { id: 'inst-h' }, 'Cloud instances'), instances));

  const refresh = async () => {
    const [workers, inst] = await Promise.all([allWorkers(), optional('/v1/instances')]);
    const instRows = inst === null ? [] : (Array.isArray(inst) ? inst : (inst.instances || []));
    const byId = new Map(instRows.map((i) => [i.id, i]));
    const now = Date.now();
    const kinds = { owned: 0, cloud: 0, slurm: 0 };
    for (const w of workers) kinds[workerKind(w)] += 1;
    count.textContent = `${plural(workers.length, 'worker')}: ${kinds.owned} owned, ${kinds.cloud} on cloud instances, ${kinds.slurm} in Slurm batch jobs`;
    syncRows(tbody, workers.map((w) => ({
      key: String(w.id),
      sig: JSON.stringify(w) + ago(w.last_seen_ms, now) + JSON.stringify(byId.get(w.capabilities?.instance?.id) || null),
      build: () => workerRow(w, byId.get(w.capabilities?.instance?.id), now),
    })));
    renderInstances(instances, inst);
  };
  return poll(refresh, 2000, (e) => { error.hidden = !e; if (e) error.textContent = `Could not load workers: ${e.message}`; });
}

// owned | cloud | slurm: a registration without an instance is an owned machine; a Slurm batch job
// registers as an instance of provider "slurm".
export function workerKind(w) {
  const inst = w.capabilities?.instance;
  if (!inst) return 'owned';
  return inst.provider === 'slurm' ? 'slurm' : 'cloud';
}

function whereCell(w, row) {
  const inst = w.capabilities?.instance;
  const kind = workerKind(w);
  if (kind === 'owned') {
    return [h('span', { class: 'badge where-owned' }, 'owned'), ' machine', w.simulated ? h('span', { class: 'muted' }, ' (GPUs simulated)') : null];
  }
  if (kind === 'slurm') {
    return [h('span', { class: 'badge where-slurm' }, 'Slurm'), ` batch job ${inst.id}`,
      inst.instance_type ? h('span', { class: 'muted' }, ` · partition ${inst.instance_type}`) : null];
  }
  const offer = [inst.provider || row?.provider, inst.instance_type].filter(Boolean).join(':');
  const facts = [row?.region, row?.usd_per_hour ? usdPerHour(row.usd_per_hour) : null].filter(Boolean);
  return [h('span', { class: 'badge where-cloud' }, inst.spot ? 'cloud spot' : 'cloud on-demand'), ` ${offer}`,
    h('span', { class: 'muted' }, ' · instance ', h('span', { class: 'nowrap' }, inst.id), facts.map((f) => ` · ${f}`))];
}

function workerRow(w, instRow, now) {
  const caps = w.capabilities || {};
  const gpus = caps.gpus || [];
  const jobs = w.jobs || [];
  return h('tr', { 'data-kind': workerKind(w) },
    h('td', {}, `#${w.id}`),
    h('td', {}, w.name),
    // A worker whose instance has ended is gone, whatever its last heartbeat said.
    h('td', {}, instRow?.state === 'terminated'
      ? h('span', { class: 'badge worker-gone', title: 'its cloud instance has been terminated' }, 'stopped')
      : h('span', { class: `badge worker-${w.state}` }, w.state)),
    h('td', { 'data-col': 'where', class: 'wrap' }, whereCell(w, instRow)),
    h('td', {}, gpus.length
      ? gpus.map((g, i) => `${(w.gpus && w.gpus[i]) || g.model}${g.memory_mb ? ` (${Math.round(g.memory_mb / 1024)} GB)` : ''}`).join(', ')
      : 'none (CPU only)'),
    h('td', {}, `${caps.cpu_cores ? plural(caps.cpu_cores, 'core') : '—'} · ${caps.memory_mb ? `${Math.round(caps.memory_mb / 1024)} GB` : '—'}`),
    h('td', {}, jobs.length ? jobs.map((id, i) => [i ? ', ' : '', h('a', { href: `#/jobs/${id}` }, `#${id}`)]) : 'idle'),
    h('td', { title: w.last_seen_ms ? new Date(w.last_seen_ms).toLocaleString() : '' }, ago(w.last_seen_ms, now)));
}

// "2:49:15 PM – 2:49:37 PM" (the date too when not today), or "since ..." for a live one.
function ranText(r) {
  if (!r.launched_ms) return '—';
  const at = (ms) => (new Date(ms).toDateString() === new Date().toDateString() ? new Date(ms).toLocaleTimeString() : time(ms));
  return r.ended_ms ? `${at(r.launched_ms)} – ${at(r.ended_ms)}` : `since ${at(r.launched_ms)}`;
}

const INSTANCE_COLUMNS = [
  ['id', 'Instance', (v) => v ?? '—'],
  ['instance_type', 'Offer', (v, r) => [r.provider, r.instance_type].filter(Boolean).join(':') || '—'],
  ['spot', 'Pricing', (v) => (v ? 'spot' : 'on-demand')],
  ['region', 'Region', (v, r) => (v ? h('span', { title: r.zone ? `zone ${r.zone}` : '' }, v) : '—')],
  ['state', 'State', (v) => v ?? '—'],
  ['usd_per_hour', 'Price', usdPerHour],
  ['billed_usd', 'Billed so far', usd],
  ['launched_ms', 'Ran', (v, r) => ranText(r)],
  ['launched_for_job_id', 'Launched for', (v) => (v ? h('a', { href: `#/jobs/${v}` }, `job #${v}`) : '—')],
  ['reason', 'Why', (v) => (v ? h('span', { class: 'prose' }, v) : '—')],
];

function renderInstances(el, inst) {
  if (inst === null) {
    clear(el, h('p', { class: 'muted' }, 'This daemon does not provision cloud instances (no /v1/instances endpoint).'));
    return;
  }
  const rows = Array.isArray(inst) ? inst : (inst.instances || []);
  if (!rows.length) { clear(el, h('p', { class: 'muted' }, 'No cloud instances: none has been launched.')); return; }
  clear(el, objectTable(rows, { caption: plural(rows.length, 'instance'), columns: INSTANCE_COLUMNS, id: 'instances-table' }));
}
