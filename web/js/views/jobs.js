// Jobs: the live list (GET /v1/jobs, every page), polled every 1.5 s, with filters and cancel.
import { allJobs, api } from '../api.js';
import { TERMINAL, STATES, clear, h, jobCost, num, placementText, plural, stateBadge, usd, ago } from '../format.js';
import { poll, syncRows } from './poll.js';

const filters = { state: '', text: '', where: '' };  // kept across navigations

export function mountJobs(main) {
  const error = h('p', { class: 'error', role: 'alert', hidden: true });
  const count = h('p', { class: 'muted', 'aria-live': 'polite', id: 'jobs-count' });
  const tbody = h('tbody', { id: 'jobs-body' });

  const stateSel = h('select', { id: 'filter-state', name: 'state' },
    h('option', { value: '' }, 'all states'), STATES.map((s) => h('option', { value: s }, s)));
  stateSel.value = filters.state;
  const textIn = h('input', { id: 'filter-text', type: 'search', placeholder: 'name or id', value: filters.text });
  const whereSel = h('select', { id: 'filter-where' },
    h('option', { value: '' }, 'anywhere'), h('option', { value: 'local' }, 'owned GPU/CPU'),
    h('option', { value: 'on_demand' }, 'cloud on-demand'), h('option', { value: 'spot' }, 'cloud spot'),
    h('option', { value: 'slurm' }, 'Slurm'), h('option', { value: 'none' }, 'not placed'));
  whereSel.value = filters.where;

  let jobs = [];
  const render = () => {
    const text = filters.text.toLowerCase();
    const shown = jobs.filter((j) => {
      if (text && !String(j.id).includes(text) && !(j.name || '').toLowerCase().includes(text)) return false;
      const opt = j.placement?.chosen?.option;
      if (filters.where === 'none' && opt) return false;
      if (filters.where && filters.where !== 'none' && opt !== filters.where) return false;
      return true;
    }).sort((a, b) => b.id - a.id);
    count.textContent = `${shown.length} of ${plural(jobs.length, 'job')}${filters.state ? ` in state ${filters.state}` : ''}`;
    syncRows(tbody, shown.map((j) => ({ key: String(j.id), sig: JSON.stringify(j), build: () => jobRow(j, cancel) })));
  };
  const refresh = async () => {
    jobs = await allJobs(filters.state || undefined);
    render();
  };
  const cancel = async (job) => {
    if (!window.confirm(`Cancel job ${job.id} (${job.name})?`)) return;
    try {
      await api('POST', `/v1/jobs/${job.id}/cancel`, {});
      await refresh();
    } catch (e) {
      showError(e);
    }
  };
  const showError = (e) => {
    error.hidden = !e;
    error.textContent = e ? `Could not load jobs: ${e.message}` : '';
  };

  stateSel.addEventListener('change', () => { filters.state = stateSel.value; refresh().catch(showError); });
  textIn.addEventListener('input', () => { filters.text = textIn.value; render(); });
  whereSel.addEventListener('change', () => { filters.where = whereSel.value; render(); });

  clear(main,
    h('h2', {}, 'Jobs'),
    h('form', { class: 'filters', role: 'search', onsubmit: (e) => e.preventDefault() },
      h('label', { for: 'filter-state' }, 'State'), stateSel,
      h('label', { for: 'filter-where' }, 'Placement'), whereSel,
      h('label', { for: 'filter-text' }, 'Search'), textIn),
    count, error,
    h('div', { class: 'table-wrap' },
      h('table', { class: 'jobs', id: 'jobs-table' },
        h('caption', { class: 'sr-only' }, 'Jobs, newest first; updates every 1.5 seconds'),
        h('thead', {}, h('tr', {}, ['ID', 'Name', 'State', 'Placement', 'GPU', 'Progress', 'Cost so far', 'Recoveries', 'Updated', '']
          .map((c) => h('th', { scope: 'col' }, c)))),
        tbody)));
  return poll(refresh, 1500, showError);
}

// A failure on one line: its first line, and its last when that says more ("exit code 3 — error:
// no such file" for a program's error and the tail of its log).
function errorLine(error) {
  const lines = error.split('\n').map((l) => l.trim()).filter(Boolean);
  const first = lines[0].replace(/[;:,]?\s*log tail:?$/, '');
  return lines.length > 1 ? `${first} — ${lines[lines.length - 1]}` : first;
}

function jobRow(j, cancel) {
  const p = j.progress || {};
  const total = p.total_steps || j.result?.steps;
  const step = j.state === 'succeeded' && total ? total : p.step;
  const res = j.resources || {};
  const device = p.device || j.result?.device;  // "cpu" / "cuda"; the full name is in the title
  const placement = placementText(j.placement);
  return h('tr', { class: `row-${j.state}` },
    h('td', {}, h('a', { href: `#/jobs/${j.id}`, 'data-focus-key': `open-${j.id}` }, `#${j.id}`)),
    h('td', { class: 'name' }, j.name, j.array_id ? [' ', h('a', { href: `#/arrays/${j.array_id}`, class: 'muted', title: 'the sweep this job is a case of: its cases side by side' }, `sweep a${j.array_id}`)] : null),
    h('td', { 'data-col': 'state' }, stateBadge(j.state)),
    h('td', { 'data-col': 'placement' }, placement || '—'),
    h('td', { title: p.device_name || '' }, `${res.gpu ?? '—'}${res.gpus > 1 ? ` ×${res.gpus}` : ''}`, device ? h('span', { class: 'muted' }, ` · ${device}`) : null),
    h('td', { class: 'progress-cell' },
      j.waiting ? h('span', { class: 'waiting', 'data-col': 'waiting', title: `${j.waiting.reason} — expected start: ${j.waiting.expected_start_basis}` },
        `${j.waiting.position ? `#${j.waiting.position}/${j.waiting.queue_length}: ` : ''}${j.waiting.reason}`) : null,
      total ? h('progress', { max: total, value: step || 0, 'aria-label': `job ${j.id} progress` }) : null,
      total ? ` ${step ?? 0}/${total}` : (j.waiting || (j.state === 'failed' && j.error) ? null : '—'),
      j.state === 'failed' && j.error ? h('span', { class: 'muted error-line', title: j.error }, errorLine(j.error)) : null,
      p.loss !== undefined || j.result?.final_loss !== undefined
        ? h('span', { class: 'muted' }, ` loss ${num(j.result?.final_loss ?? p.loss)}`) : null),
    h('td', { 'data-col': 'cost' }, j.placement || jobCost(j) > 0 ? usd(jobCost(j)) : '—'),
    h('td', {}, String(j.recoveries ?? 0)),
    h('td', { title: new Date(j.updated_ms).toLocaleString() }, ago(j.updated_ms)),
    h('td', {}, TERMINAL.has(j.state) ? null
      : h('button', { type: 'button', class: 'danger', 'data-focus-key': `cancel-${j.id}`, onclick: () => cancel(j),
                      'aria-label': `Cancel job ${j.id}` }, 'Cancel')));
}
