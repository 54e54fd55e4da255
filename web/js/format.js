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

// Money, one way everywhere: whole dollars from $100, cents from $0.01, two significant digits
// below a cent ("$0.0018"), "<$0.0001" below that; "—" when there is no figure.
export function usd(v) {
  if (v === undefined || v === null || v === '' || Number.isNaN(Number(v))) return '—';
  const n = Number(v);
  const a = Math.abs(n);
  const sign = n < 0 ? '−' : '';
  if (a === 0) return '$0.00';
  if (a >= 100) return `${sign}$${Math.round(a).toLocaleString('en-US')}`;
  if (a >= 0.01) return `${sign}$${a.toFixed(2)}`;
  if (a >= 0.0001) return `${sign}$${a.toPrecision(2)}`;
  return `${sign}<$0.0001`;
}

// A chart axis's dollars, however small: "$0", "$0.000035", "$1.5", "$2,000".
export function usdTick(v) {
  const n = Number(v);
  return `${n < 0 ? '−' : ''}$${Math.abs(n).toLocaleString('en-US', { maximumSignificantDigits: 3 })}`;
}

// A price: "$3.06/h".
export function usdPerHour(v) {
  const s = usd(v);
  return s === '—' ? s : `${s}/h`;
}

export function num(v, digits = 4) {
  if (v === undefined || v === null || Number.isNaN(Number(v))) return '—';
  const n = Number(v);
  return Number.isInteger(n) ? String(n) : n.toPrecision(digits);
}

export function pct(v) {
  if (v === undefined || v === null || Number.isNaN(Number(v))) return '—';
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
  if (seconds === undefined || seconds === null || Number.isNaN(Number(seconds))) return '—';
  const s = Number(seconds);
  if (s > 0 && s < 0.05) return '<0.1 s';
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${(s / 60).toFixed(1)} min`;
  if (s < 100 * 3600) return `${(s / 3600).toFixed(1)} h`;
  return `${Math.round(s / 3600)} h`;
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

// "1 job", "3 jobs".
export function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);
export const STATES = ['queued', 'held', 'placed', 'running', 'preempted', 'succeeded', 'failed', 'cancelled'];

export function stateBadge(state) {
  return h('span', { class: `badge state-${state}` }, state);
}

// Where a placement option runs, in words: an owned GPU, a cloud on-demand or spot instance, a
// Slurm partition.
export function optionText(option) {
  return { local: 'owned', on_demand: 'on-demand', spot: 'spot', slurm: 'Slurm' }[option] || option || '—';
}

// A placement option's GPU in words: a model as named ("V100-16GB"), a CPU option
// ("cpu/<model>/<cores>") as "CPU, 2 cores".
export function gpuText(gpu) {
  if (typeof gpu !== 'string' || !gpu) return '—';
  if (gpu === 'cpu') return 'CPU';
  const cpu = gpu.match(/^cpu\/(.*)\/(\d+)$/);
  return cpu ? `CPU, ${plural(Number(cpu[2]), 'core')}` : gpu;
}

// A short text for a job's placement decision (the `placement` JSON, docs/api.md; the list's
// summaries carry its chosen row only), or null: "owned · V100", "spot aws:p3.2xlarge · V100".
export function placementText(p) {
  if (!p || !p.chosen) return null;
  const c = p.chosen;
  const offer = c.option === 'slurm' ? c.partition : [c.cloud || c.provider, c.instance_type].filter(Boolean).join(':');
  const where = c.option === 'local' ? 'owned' : `${optionText(c.option)}${offer ? ` ${offer}` : ''}`;
  const gpu = c.gpu ? ` · ${c.job_gpus > 1 ? `${c.job_gpus}× ` : ''}${gpuText(c.gpu)}` : '';
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

// A table of objects. `columns`: [[key, heading, format(value, row)], ...] in order; without it,
// one column per key of the first rows, headed and formatted by fieldLabel/fieldText (so no raw
// API names or bare numbers reach the page).
export function objectTable(rows, { caption, columns, id } = {}) {
  let cols = columns;
  if (!cols) {
    const keys = [];
    for (const r of rows.slice(0, 20)) for (const k of Object.keys(r || {})) if (!keys.includes(k)) keys.push(k);
    cols = keys.map((k) => [k, fieldLabel(k), (v) => fieldText(k, v)]);
  }
  return h('div', { class: 'table-wrap' },
    h('table', { id },
      caption ? h('caption', {}, caption) : null,
      h('thead', {}, h('tr', {}, cols.map(([k, label]) => h('th', { scope: 'col', 'data-col': k }, label)))),
      h('tbody', {}, rows.map((r) => h('tr', {}, cols.map(([k, , fmt]) => h('td', { 'data-col': k }, (fmt || cell)(r?.[k], r))))))));
}

export function cell(v) {
  if (v === undefined || v === null || v === '') return '—';
  if (typeof v === 'number') return num(v, 4);
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// The unit an API field name ends in, and the words before it: "estimated_hours" -> a duration
// headed "Estimated time", "billed_usd" -> money headed "Billed", "ended_ms" -> a time "Ended".
const UNITS = [
  [/^usd_per_hour$/, 'Price', usdPerHour],
  [/_usd_per_hour$/, ' (per hour)', usdPerHour],
  [/^usd$/, 'Cost', usd],
  [/_usd$/, '', usd],
  [/^estimated_hours$/, 'Estimated time', (v) => duration(v * 3600)],
  [/_hours$/, ' (time)', (v) => duration(v * 3600)],
  [/_seconds$|_s$/, ' (time)', duration],
  [/_ms$/, '', (v) => time(v)],
  [/_fraction$/, '', pct],
  [/_gib$/, ' (GiB)', (v) => num(v, 3)],
];

export function fieldLabel(key) {
  if (/_id$/.test(key)) return sentence(words(key.replace(/_id$/, '')));
  for (const [re, suffix] of UNITS) {
    if (!re.test(key)) continue;
    if (re.source.startsWith('^')) return suffix;
    return sentence(words(key.replace(re, '')) + (suffix === ' (time)' ? '' : suffix));
  }
  return sentence(words(key));
}

export function fieldText(key, v) {
  if (v === undefined || v === null || v === '') return '—';
  if (/^(worker|job)_id$/.test(key)) return `#${v}`;
  if (Array.isArray(v)) return v.length ? v.map((x) => cell(x)).join(', ') : 'none';
  if (typeof v === 'number') for (const [re, , fmt] of UNITS) if (re.test(key)) return fmt(v);
  return cell(v);
}

// "gpus_per_job" -> "GPUs per job": the acronyms a heading spells in capitals.
const ACRONYMS = { gpu: 'GPU', gpus: 'GPUs', cpu: 'CPU', usd: 'USD', id: 'ID', ms: 'ms', gib: 'GiB' };
function words(key) {
  return key.split('_').map((w) => ACRONYMS[w] || w).join(' ');
}

function sentence(words) {
  return words ? words[0].toUpperCase() + words.slice(1) : words;
}
