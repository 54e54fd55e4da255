// A job array (a sweep, docs/task-files.md): its cases side by side, polled every 2 s — each
// case's parameters, its job's state, the fields of its result line and its cost so far — and
// one button that cancels every case that has not ended (POST /v1/arrays/{id}/cancel).
// Parameters come from each job's spec (GET /v1/jobs/{id}), read once per job: they never change.
import { api, arrayJobs } from '../api.js';
import { TERMINAL, cell, clear, fieldLabel, fieldText, h, jobCost, plural, stateBadge, usd } from '../format.js';
import { poll, syncRows } from './poll.js';

export function mountArray(main, arrayId) {
  const title = h('h2', {}, `Sweep a${arrayId}`);
  const error = h('p', { class: 'error', role: 'alert', hidden: true });
  const count = h('p', { class: 'muted', 'aria-live': 'polite', id: 'array-count' });
  const cancelButton = h('button', { type: 'button', class: 'danger', id: 'array-cancel', hidden: true }, 'Cancel the sweep');
  const head = h('thead', {});
  const tbody = h('tbody', { id: 'array-body' });
  const cases = new Map();  // job id -> {index, parameters}
  let columns = '';

  const refresh = async () => {
    const jobs = await arrayJobs(arrayId);
    if (!jobs.length) {
      clear(count, `No sweep a${arrayId}: no jobs (or none of yours).`);
      tbody.replaceChildren();
      cancelButton.hidden = true;
      return;
    }
    for (const j of jobs) {
      if (cases.has(j.id)) continue;
      const spec = (await api('GET', `/v1/jobs/${j.id}`)).spec || {};
      cases.set(j.id, { index: spec.array?.index, parameters: spec.array?.parameters || {} });
    }
    title.textContent = `Sweep a${arrayId}: ${jobs[0].name}`;
    const params = [...new Set(jobs.flatMap((j) => Object.keys(cases.get(j.id).parameters)))];
    const results = [...new Set(jobs.flatMap((j) => Object.keys(j.result || {})))].filter((k) => !params.includes(k));
    const sig = JSON.stringify([params, results]);
    if (sig !== columns) {  // a new result field: the head changes, every row is rebuilt
      columns = sig;
      head.replaceChildren(h('tr', {}, ['Case', 'Job', ...params.map(fieldLabel), 'State', ...results.map(fieldLabel), 'Cost so far']
        .map((c) => h('th', { scope: 'col' }, c))));
      tbody.replaceChildren();
    }
    const ended = jobs.filter((j) => TERMINAL.has(j.state));
    const ok = jobs.filter((j) => j.state === 'succeeded').length;
    count.textContent = `${plural(jobs.length, 'case')}: ${ended.length} ended (${ok} succeeded), ${jobs.length - ended.length} to go`;
    cancelButton.hidden = ended.length === jobs.length;
    syncRows(tbody, jobs.map((j) => ({ key: String(j.id), sig: columns + JSON.stringify(j),
      build: () => caseRow(j, cases.get(j.id), params, results) })));
  };
  const showError = (e) => {
    error.hidden = !e;
    error.textContent = e ? `Could not load the sweep: ${e.message}` : '';
  };
  cancelButton.addEventListener('click', async () => {
    if (!window.confirm(`Cancel every case of sweep a${arrayId} that has not ended?`)) return;
    try {
      await api('POST', `/v1/arrays/${arrayId}/cancel`, {});
      await refresh();
    } catch (e) {
      showError(e);
    }
  });

  clear(main, title,
    h('p', { class: 'muted' }, 'One job per case of the sweep; each result column is a field of the case\'s result line (docs/job-protocol.md).'),
    h('div', { class: 'actions' }, count, cancelButton), error,
    h('div', { class: 'table-wrap' },
      h('table', { class: 'jobs', id: 'array-table' },
        h('caption', { class: 'sr-only' }, 'The sweep\'s cases side by side; updates every 2 seconds'), head, tbody)));
  return poll(refresh, 2000, showError);
}

// A result field as its name's unit says (fieldText), or a plain number as the program wrote it
// (to 6 significant digits, no padding zeros: a loss of 0.05 reads 0.05).
function resultText(key, v) {
  if (typeof v === 'number' && fieldText(key, v) === cell(v)) return String(Number(v.toPrecision(6)));
  return fieldText(key, v);
}

function caseRow(j, c, params, results) {
  const cost = jobCost(j);
  return h('tr', { class: `row-${j.state}` },
    h('td', { 'data-col': 'index' }, c.index === undefined ? '—' : String(c.index)),
    h('td', {}, h('a', { href: `#/jobs/${j.id}` }, `#${j.id}`)),
    params.map((k) => h('td', { 'data-col': `param-${k}` }, cell(c.parameters[k]))),
    h('td', { 'data-col': 'state' }, stateBadge(j.state)),
    results.map((k) => h('td', { 'data-col': `result-${k}` }, resultText(k, j.result?.[k]))),
    h('td', { 'data-col': 'cost' }, j.placement || cost > 0 ? usd(cost) : '—'));
}
