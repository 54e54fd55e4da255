// Small helpers shared by the views: a DOM builder (text is always set as text, never parsed as
// HTML, so job names and error messages cannot inject markup), number and time formats.

// h('a', {href: '#/jobs/1', class: 'x'}, 'text', childNode, [more]) -> Element.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function usd(v) {
  if (v === undefined || v === null || Number.isNaN(v)) return '—';
  const n = Number(v);
  if (Math.abs(n) >= 100) return `$${n.toFixed(0)}`;
  if (Math.abs(n) >= 1) return `$${n.toFixed(2)}`;
  return `$${n.toFixed(4)}`;
}

export function num(v, digits = 4) {
  if (v === undefined || v === null || Number.isNaN(Number(v))) return '—';
  const n = Number(v);
  return Number.isInteger(n) ? String(n) : n.toPrecision(digits);
}

export function pct(v) {
  if (v === undefined || v === null) return '—';
  return `${(Number(v) * 100).toFixed(1)}%`;
}

export function time(ms) {
  if (!ms) return '—';
  return new Date(ms).toLocaleString();
}

// "3 s ago", "5 min ago".
export function ago(ms, now = Date.now()) {
  if (!ms) return '—';
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${(s / 3600).toFixed(1)} h ago`;
  return `${(s / 86400).toFixed(1)} d ago`;
}

export function duration(seconds) {
  if (seconds === undefined || seconds === null) return '—';
  const s = Number(seconds);
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${(s / 60).toFixed(1)} min`;
  return `${(s / 3600).toFixed(2)} h`;
}

// A count of things (parameters, FLOPs) in its unit, as the CLI prints it: 101.8K, 6.74B, 4.03e+19.
export function count(n) {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '—';
  if (Math.abs(n) >= 1e15) return n.toExponential(2);
  for (const [d, u] of [[1e12, 'T'], [1e9, 'B'], [1e6, 'M'], [1e3, 'K']]) {
    if (Math.abs(n) >= d * 0.99995) return `${(n / d).toFixed(Math.abs(n / d) < 9.995 ? 2 : 1)}${u}`;
  }
  return String(Math.round(n));
}

export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);
export const STATES = ['queued', 'held', 'placed', 'running', 'preempted', 'succeeded', 'failed', 'cancelled'];

export function stateBadge(state) {
  return h('span', { class: `badge state-${state}` }, state);
}

// A short text for a job's placement decision (the `placement` JSON, docs/api.md), or null.
export function placementText(p) {
  if (!p || !p.chosen) return null;
  const c = p.chosen;
  const where = c.option === 'local' ? 'local' : `${c.option === 'spot' ? 'spot' : 'on-demand'} ${c.instance_type || ''}`.trim();
  const gpu = c.gpu ? ` · ${c.gpus && c.gpus > 1 ? `${c.gpus}×` : ''}${c.gpu}` : '';
  return `${where}${gpu}`;
}

// The cost so far of a job, from whichever field this daemon reports it in (the cost ledger), or undefined when it reports none.
export function jobCost(job) {
  if (!job) return undefined;
  for (const k of ['cost_usd', 'spent_usd', 'cost_so_far_usd']) if (typeof job[k] === 'number') return job[k];
  const c = job.cost;
  if (typeof c === 'number') return c;
  if (c && typeof c === 'object') {
    for (const k of ['usd', 'total_usd', 'spent_usd', 'so_far_usd']) if (typeof c[k] === 'number') return c[k];
  }
  return undefined;
}

// A generic table of objects (for API answers whose shape the dashboard does not special-case):
// one column per key of the first rows, nested objects shown as compact JSON.
export function objectTable(rows, { caption, preferred = [] } = {}) {
  const keys = [];
  for (const k of preferred) if (rows.some((r) => r && k in r)) keys.push(k);
  for (const r of rows.slice(0, 20)) for (const k of Object.keys(r || {})) if (!keys.includes(k)) keys.push(k);
  return h('div', { class: 'table-wrap' },
    h('table', {},
      caption ? h('caption', {}, caption) : null,
      h('thead', {}, h('tr', {}, keys.map((k) => h('th', { scope: 'col' }, k)))),
      h('tbody', {}, rows.map((r) => h('tr', {}, keys.map((k) => h('td', {}, cell(r?.[k]))))))));
}

export function cell(v) {
  if (v === undefined || v === null) return '—';
  if (typeof v === 'number') return num(v, 5);
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}
