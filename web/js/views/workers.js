// Workers: every registered worker (GET /v1/workers, every page), local or cloud (a worker whose registration
// carries an `instance` runs on a cloud instance, spot or on demand), its GPUs, current jobs and
// last heartbeat; and the cloud instances (GET /v1/instances) where this daemon provisions any.
// Polled every 2 s.
import { allWorkers, optional } from '../api.js';
import { ago, clear, h, objectTable, usd } from '../format.js';
import { poll, syncRows } from './poll.js';

export function mountWorkers(main) {
  const error = h('p', { class: 'error', role: 'alert', hidden: true });
  const tbody = h('tbody', { id: 'workers-body' });
  const count = h('p', { class: 'muted', 'aria-live': 'polite' });
  const instances = h('div', { id: 'instances' });
  clear(main,
    h('h2', {}, 'Workers'), count, error,
    h('div', { class: 'table-wrap' }, h('table', { id: 'workers-table' },
      h('caption', { class: 'sr-only' }, 'Registered workers; updates every 2 seconds'),
      h('thead', {}, h('tr', {}, ['ID', 'Name', 'State', 'Where', 'GPUs', 'CPU / memory', 'Current job', 'Last heartbeat']
        .map((c) => h('th', { scope: 'col' }, c)))),
      tbody)),
    h('section', { 'aria-labelledby': 'inst-h' }, h('h3', { id: 'inst-h' }, 'Cloud instances'), instances));

  const refresh = async () => {
    const [workers, inst] = await Promise.all([allWorkers(), optional('/v1/instances')]);
    const now = Date.now();
    count.textContent = `${workers.length} workers · ${workers.filter((w) => w.instance).length} on cloud instances`;
    syncRows(tbody, workers.map((w) => ({
      key: String(w.id),
      sig: JSON.stringify(w) + ago(w.last_seen_ms, now),
      build: () => workerRow(w, now),
    })));
    renderInstances(instances, inst);
  };
  return poll(refresh, 2000, (e) => { error.hidden = !e; if (e) error.textContent = `Could not load workers: ${e.message}`; });
}

function workerRow(w, now) {
  const caps = w.capabilities || {};
  const gpus = caps.gpus || [];
  const inst = w.instance;
  const where = inst
    ? `cloud ${inst.spot ? 'spot' : 'on-demand'}${inst.instance_type ? ` ${inst.instance_type}` : ''}${inst.provider ? ` (${inst.provider})` : ''}`
    : 'local';
  const jobs = w.jobs || [];
  return h('tr', {},
    h('td', {}, `#${w.id}`),
    h('td', {}, w.name),
    h('td', {}, h('span', { class: `badge worker-${w.state}` }, w.state)),
    h('td', {}, where),
    h('td', {}, gpus.length ? gpus.map((g) => `${g.model}${g.memory_mb ? ` (${Math.round(g.memory_mb / 1024)} GB)` : ''}`).join(', ') : 'none (CPU)'),
    h('td', {}, `${caps.cpu_cores ?? '—'} cores · ${caps.memory_mb ? `${Math.round(caps.memory_mb / 1024)} GB` : '—'}`),
    h('td', {}, jobs.length ? jobs.map((id, i) => [i ? ', ' : '', h('a', { href: `#/jobs/${id}` }, `#${id}`)]) : 'idle'),
    h('td', { title: w.last_seen_ms ? new Date(w.last_seen_ms).toLocaleString() : '' }, ago(w.last_seen_ms, now)));
}

function renderInstances(el, inst) {
  if (inst === null) {
    clear(el, h('p', { class: 'muted' }, 'This daemon does not provision cloud instances (no /v1/instances endpoint).'));
    return;
  }
  const rows = Array.isArray(inst) ? inst : (inst.instances || []);
  if (!rows.length) { clear(el, h('p', { class: 'muted' }, 'No cloud instances.')); return; }
  const shaped = rows.map((r) => ({ ...r, usd_per_hour: r.usd_per_hour !== undefined ? usd(r.usd_per_hour) : undefined,
    billed_usd: r.billed_usd !== undefined ? usd(r.billed_usd) : undefined,
    spot: r.spot === undefined ? undefined : (r.spot ? 'spot' : 'on-demand') }));
  clear(el, objectTable(shaped, { caption: `${rows.length} instances`,
    preferred: ['id', 'provider', 'instance_type', 'spot', 'state', 'region', 'usd_per_hour', 'billed_usd', 'job_id', 'worker_id', 'reason'] }));
}
