// Submit: a form for the job spec (docs/job-spec.md). It does no validation of its own: the API
// validates (one parser for the API, the CLI and the trainer), and its error is shown as sent,
// with the offending field marked (aria-invalid) and focused. Empty fields are left out so the
// API's defaults apply; the spec about to be sent is shown, and may be edited as JSON. As the spec
// changes, the API quotes it (POST /v1/quote, debounced): where it would run, how long, the cost.
// Below it, a task file (YAML, docs/task-files.md) may be pasted or opened instead: jobctld
// resolves it as `jobctl launch` does (POST /v1/tasks/resolve, debounced), the page shows how
// many jobs it stands for and the quote of one, and launches it — one job, or one per case of its
// sweep (POST /v1/arrays). A task with a workdir names a folder the page cannot pack: it says to
// launch that one with `jobctl launch` or the Python client, which pack it.
import { api, ApiError } from '../api.js';
import { clear, duration, h, placementText, plural, usd, usdPerHour } from '../format.js';

// [field path, label, kind, options]; kind: text | int | number | select | list (comma-separated
// integers). `show`: when the field applies.
const FIELDS = [
  ['name', 'Name', 'text', { placeholder: 'default: <model>-<dataset>' }],
  ['model.kind', 'Model', 'select', { options: ['mlp', 'cnn'] }],
  ['model.hidden', 'Hidden layers', 'list', { placeholder: 'e.g. 256,128 (default)' }],
  ['model.channels', 'Conv channels', 'list', { placeholder: 'e.g. 32,64', show: (v) => v['model.kind'] === 'cnn' }],
  ['model.activation', 'Activation', 'select', { options: ['', 'relu', 'gelu'] }],
  ['data.dataset', 'Dataset', 'select', { options: ['fashion-mnist', 'synthetic'] }],
  ['data.samples', 'Samples', 'int', { show: (v) => v['data.dataset'] === 'synthetic', placeholder: '10000' }],
  ['data.test_samples', 'Test samples', 'int', { show: (v) => v['data.dataset'] === 'synthetic', placeholder: '2000' }],
  ['data.features', 'Features', 'int', { show: (v) => v['data.dataset'] === 'synthetic', placeholder: '64' }],
  ['data.classes', 'Classes', 'int', { show: (v) => v['data.dataset'] === 'synthetic', placeholder: '10' }],
  ['train.epochs', 'Epochs', 'int', { placeholder: '10' }],
  ['train.batch_size', 'Batch size', 'int', { placeholder: '128' }],
  ['train.optimizer', 'Optimizer', 'select', { options: ['', 'adamw', 'sgd'] }],
  ['train.lr', 'Learning rate', 'number', { placeholder: '0.001' }],
  ['train.seed', 'Seed', 'int', { placeholder: '42' }],
  ['checkpoint.every_steps', 'Checkpoint every (steps)', 'int', { placeholder: '500' }],
  ['resources.gpu', 'GPU', 'text', { placeholder: 'any, cpu or a model (A100)' }],
  ['resources.gpus', 'GPUs', 'int', { placeholder: '1' }],
  ['placement.mode', 'Placement', 'select', { options: ['', 'auto', 'local', 'cloud'] }],
  ['placement.spot', 'Spot', 'select', { options: ['', 'auto', 'always', 'never'] }],
  ['placement.max_usd_per_hour', 'Max USD per hour', 'number', { placeholder: 'no cap' }],
  ['placement.deadline_hours', 'Deadline (hours)', 'number', { placeholder: 'none' }],
  ['priority', 'Priority (0-100)', 'int', { placeholder: '50' }],
];

const idFor = (path) => `f-${path.replaceAll('.', '-')}`;

// The value to send for one input, or undefined to leave the field out. Numbers that do not parse
// are sent as typed (a string), so the API names the field and says what it needs.
function fieldValue(kind, raw) {
  const t = raw.trim();
  if (t === '') return undefined;
  if (kind === 'int' || kind === 'number') {
    const n = Number(t);
    return Number.isFinite(n) ? n : t;
  }
  if (kind === 'list') {
    return t.split(',').map((s) => s.trim()).filter((s) => s !== '').map((s) => {
      const n = Number(s);
      return Number.isFinite(n) ? n : s;
    });
  }
  return t;
}

export function buildSpec(values) {
  const spec = {};
  for (const [path, , kind, opt] of FIELDS) {
    if (opt.show && !opt.show(values)) continue;
    const v = fieldValue(kind, values[path] ?? '');
    if (v === undefined) continue;
    const keys = path.split('.');
    let o = spec;
    for (const k of keys.slice(0, -1)) o = (o[k] ??= {});
    o[keys[keys.length - 1]] = v;
  }
  return spec;
}

export function mountSubmit(main) {
  const inputs = new Map();
  const rows = [];
  for (const [path, label, kind, opt] of FIELDS) {
    let input;
    if (kind === 'select') {
      input = h('select', { id: idFor(path), name: path }, opt.options.map((o) => h('option', { value: o }, o || 'default')));
    } else {
      input = h('input', { id: idFor(path), name: path, type: 'text', placeholder: opt.placeholder,
                           inputmode: kind === 'int' ? 'numeric' : (kind === 'number' ? 'decimal' : undefined),
                           autocomplete: 'off', spellcheck: 'false' });
    }
    input.dataset.field = path;
    inputs.set(path, input);
    rows.push(h('div', { class: 'field', id: `${idFor(path)}-row` }, h('label', { for: idFor(path) }, label), input));
  }
  const specBox = h('textarea', { id: 'f-spec', name: 'spec', rows: '8', spellcheck: 'false', 'data-field': 'body' });
  const editRaw = h('input', { id: 'f-raw', type: 'checkbox' });
  const error = h('p', { id: 'submit-error', class: 'error', role: 'alert', hidden: true });
  const done = h('p', { id: 'submit-result', role: 'status', 'aria-live': 'polite' });
  const button = h('button', { type: 'submit', id: 'submit-button' }, 'Submit job');

  const quote = h('section', { id: 'quote', class: 'quote', 'aria-live': 'polite', 'aria-labelledby': 'quote-h' },
    h('h3', { id: 'quote-h' }, 'Quote'), h('p', { class: 'muted', id: 'quote-body' }, 'Quoting…'));
  let quoteTimer = null;
  let quoteSeq = 0;
  const requote = () => {
    clearTimeout(quoteTimer);
    quoteTimer = setTimeout(async () => {
      const seq = ++quoteSeq;
      const body = editRaw.checked ? specBox.value : JSON.stringify(buildSpec(values()));
      let doc = null;
      let err = null;
      try { doc = await api('POST', '/v1/quote', body); } catch (e) { err = e; }
      if (seq === quoteSeq) renderQuote(quote, doc, err);
    }, 350);
  };

  const values = () => Object.fromEntries([...inputs].map(([k, el]) => [k, el.value]));
  const sync = () => {
    const v = values();
    for (const [path, , , opt] of FIELDS) document.getElementById(`${idFor(path)}-row`).hidden = !!(opt.show && !opt.show(v));
    if (!editRaw.checked) specBox.value = JSON.stringify(buildSpec(v), null, 2);
    specBox.readOnly = !editRaw.checked;
    requote();
  };
  const clearErrors = () => {
    error.hidden = true;
    error.textContent = '';
    for (const el of main.querySelectorAll('[aria-invalid]')) { el.removeAttribute('aria-invalid'); el.removeAttribute('aria-describedby'); }
  };

  const form = h('form', { id: 'submit-form', novalidate: true, class: 'submit' },
    h('fieldset', {}, h('legend', {}, 'Job spec'), h('div', { class: 'grid' }, rows)),
    h('div', { class: 'field wide' },
      h('label', { for: 'f-spec' }, 'Spec to send (JSON)'), specBox,
      h('label', { class: 'inline' }, editRaw, ' edit the JSON directly')),
    quote, error, h('div', { class: 'actions' }, button), done);

  form.addEventListener('input', (e) => { if (e.target !== specBox) sync(); else requote(); });
  form.addEventListener('change', (e) => { if (e.target !== specBox) sync(); });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors();
    done.textContent = '';
    button.disabled = true;
    try {
      const body = editRaw.checked ? specBox.value : JSON.stringify(buildSpec(values()));
      const job = await api('POST', '/v1/jobs', body);
      done.replaceChildren(`Submitted job #${job.id} (${job.name}, ${job.state}). `,
        h('a', { href: `#/jobs/${job.id}`, id: 'submitted-link' }, 'Open it'), ' or ', h('a', { href: '#/jobs' }, 'see all jobs'), '.');
    } catch (err) {
      showApiError(err);
    } finally {
      button.disabled = false;
    }
  });

  const showApiError = (err) => {
    const field = err instanceof ApiError ? err.field : null;
    error.hidden = false;
    error.replaceChildren(h('span', { id: 'submit-error-message' }, err.message),
      field ? h('span', { class: 'muted' }, ` (field: `, h('code', { id: 'submit-error-field' }, field), ')') : null);
    // The input for the field, or the nearest parent path's ("model.hidden[1]" -> model.hidden),
    // or the JSON box when the whole body is at fault.
    let target = null;
    if (field) {
      const base = field.replace(/\[\d+\]$/, '');
      target = editRaw.checked ? null : (inputs.get(field) || inputs.get(base) || null);
    }
    if (!target) target = specBox;
    target.setAttribute('aria-invalid', 'true');
    target.setAttribute('aria-describedby', 'submit-error');
    const row = target.closest('.field');
    if (row && row.hidden) row.hidden = false;
    target.focus();
  };

  const task = mountTaskLauncher();
  clear(main, h('h2', {}, 'Submit a job'),
    h('p', { class: 'muted' }, 'Empty fields take the API\'s defaults (docs/job-spec.md). The daemon checks every value and its message is shown here as it is.'),
    form, task.section);
  sync();
  return () => { clearTimeout(quoteTimer); quoteSeq += 1; task.stop(); };
}

// The task-file launcher (see the top of this file).
function mountTaskLauncher() {
  const text = h('textarea', { id: 't-task', name: 'task', rows: '12', spellcheck: 'false',
    placeholder: 'name: lr-sweep\nrun: python3 train.py --lr $JOBCTL_PARAM_LR\nresources:\n  gpu: any\nsweep:\n  grid:\n    lr: [0.1, 0.01]' });
  const file = h('input', { id: 't-file', type: 'file', accept: '.yaml,.yml,text/yaml,application/yaml' });
  const status = h('p', { id: 'task-status', class: 'muted', 'aria-live': 'polite' }, 'Paste a task file or open one.');
  const quote = h('section', { id: 'task-quote', class: 'quote', 'aria-live': 'polite', 'aria-labelledby': 'task-quote-h', hidden: true },
    h('h3', { id: 'task-quote-h' }, 'Quote (one job)'), h('p', { class: 'muted', id: 'task-quote-body' }));
  const error = h('p', { id: 'task-error', class: 'error', role: 'alert', hidden: true });
  const button = h('button', { type: 'submit', id: 'task-button', disabled: true }, 'Launch task');
  const done = h('p', { id: 'task-result', role: 'status', 'aria-live': 'polite' });
  let name = 'task.yaml';
  let timer = null;
  let seq = 0;

  const resolve = () => api('POST', '/v1/tasks/resolve', { task: text.value, path: name });
  // What the task stands for, and the quote of one of its jobs; the launch button is enabled only
  // for a task this page can launch.
  const check = async () => {
    const mine = ++seq;
    if (!text.value.trim()) {
      status.textContent = 'Paste a task file or open one.';
      quote.hidden = true;
      button.disabled = true;
      return;
    }
    let task = null;
    let err = null;
    try { task = await resolve(); } catch (e) { err = e; }
    if (mine !== seq) return;
    if (err) {
      status.replaceChildren(`Not valid yet: ${err.message}`, err.field ? h('span', {}, ' (field ', h('code', {}, err.field), ')') : null);
      quote.hidden = true;
      button.disabled = true;
      return;
    }
    if (task.workdir) {
      status.replaceChildren(`Valid, ${plural(task.jobs, 'job')}, but it packs the folder `, h('code', {}, task.workdir),
        ' (its workdir), which a web page cannot read: launch it with ', h('code', {}, `jobctl launch ${name}`),
        ' or the Python client\'s ', h('code', {}, 'launch()'), '.');
      quote.hidden = true;
      button.disabled = true;
      return;
    }
    status.textContent = task.jobs > 1 ? `Valid: a sweep of ${plural(task.jobs, 'job')}, one per case.` : 'Valid: one job.';
    button.disabled = false;
    const one = { ...task.spec };
    delete one.sweep;
    let doc = null;
    let qerr = null;
    try { doc = await api('POST', '/v1/quote', one); } catch (e) { qerr = e; }
    if (mine !== seq) return;
    quote.hidden = false;
    renderQuote(quote, doc, qerr, 'task-quote');
  };
  const later = () => { clearTimeout(timer); timer = setTimeout(() => { check().catch(() => {}); }, 350); };

  text.addEventListener('input', later);
  file.addEventListener('change', async () => {
    const f = file.files?.[0];
    if (!f) return;
    name = f.name.replace(/[\\/]/g, '') || 'task.yaml';
    text.value = await f.text();
    later();
  });
  const form = h('form', { id: 'task-form', novalidate: true, class: 'submit' },
    h('fieldset', {}, h('legend', {}, 'Or launch a task file'),
      h('p', { class: 'muted' }, 'A task file (YAML, docs/task-files.md) as ', h('code', {}, 'jobctl launch'),
        ' takes it: a command job, or a sweep of them. The daemon checks it as the CLI does.'),
      h('div', { class: 'field wide' }, h('label', { for: 't-task' }, 'Task file (YAML)'), text),
      h('div', { class: 'field' }, h('label', { for: 't-file' }, 'Open a task file'), file)),
    status, quote, error, h('div', { class: 'actions' }, button), done);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.hidden = true;
    done.textContent = '';
    button.disabled = true;
    try {
      const task = await resolve();
      if (task.workdir) throw new Error(`this task packs the folder ${task.workdir}: launch it with jobctl launch`);
      if (task.spec.sweep) {
        const a = await api('POST', '/v1/arrays', task.spec);
        done.replaceChildren(`Launched sweep a${a.array_id} (${plural(a.jobs.length, 'job')}). `,
          h('a', { href: `#/arrays/${a.array_id}`, id: 'launched-link' }, 'See its cases side by side'), '.');
      } else {
        const job = await api('POST', '/v1/jobs', task.spec);
        done.replaceChildren(`Launched job #${job.id} (${job.name}, ${job.state}). `,
          h('a', { href: `#/jobs/${job.id}`, id: 'launched-link' }, 'Open it'), '.');
      }
    } catch (err) {
      error.hidden = false;
      error.textContent = err.field ? `${err.message} (field: ${err.field})` : err.message;
    } finally {
      button.disabled = false;
    }
  });
  return { section: form, stop: () => { clearTimeout(timer); seq += 1; } };
}

// The quote: the option placement would choose now, its price, time and cost, and why; or why
// the spec cannot be quoted yet (the API's message; the submit button shows it as an error).
function renderQuote(el, doc, err, prefix = 'quote') {
  const head = el.querySelector('h3');
  if (err) {
    clear(el, head, h('p', { class: 'muted', id: `${prefix}-body` },
      `No quote yet: ${err.message}${err.field ? ` (${err.field})` : ''}.`));
    return;
  }
  const c = doc?.chosen;
  if (!c) {
    clear(el, head, h('p', { class: 'muted', id: `${prefix}-body` }, doc?.reason ? `Nowhere to run it now: ${doc.reason}` : 'No option can run this job now.'));
    return;
  }
  clear(el, head,
    h('dl', { class: 'facts', id: `${prefix}-body` },
      h('dt', {}, 'Would run on'), h('dd', { id: `${prefix}-where` }, placementText(doc)),
      h('dt', {}, 'Price'), h('dd', {}, usdPerHour(c.usd_per_hour)),
      h('dt', {}, 'Estimated time'), h('dd', { id: `${prefix}-time` }, duration((c.estimated_hours ?? 0) * 3600)),
      h('dt', {}, 'Estimated cost'), h('dd', { id: `${prefix}-cost` }, usd(c.estimated_cost_usd)),
      doc.reason ? [h('dt', {}, 'Why'), h('dd', { class: 'prose' }, doc.reason)] : null));
}
