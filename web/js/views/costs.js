// Costs: spend over time and savings against all-on-demand (GET /v1/reports/spend, the cost
// ledger), and the break-even of each owned GPU against the cloud offers
// (GET /v1/reports/breakeven), with the utilisation adjustable on the page. Each part says so
// plainly when this daemon does not serve its report; nothing is made up. The fleet plan
// (GET /v1/reports/plan) replays the jobs of a recent period with more owned GPUs of a model.
// Fair share (GET /v1/fair-share): each user's share, decayed usage and factor, the figures the
// order of jobs waiting for owned machines is made of.
import { api, optional, ApiError } from '../api.js';
import { clear, duration, h, num, objectTable, optionText, pct, plural, usd, usdPerHour, usdTick } from '../format.js';
import { chartFigure, lineChart } from '../charts.js';
import { poll } from './poll.js';

let utilisation = 0.5;  // kept across navigations
// The owned GPU and the cloud offer to compare (GET /v1/reports/breakeven's parameters); the
// starting values are docs/architecture.md's worked example (a used V100 against p3.2xlarge), editable.
const owned = { gpu: 'V100', purchase_usd: '2000', offer: 'aws:p3.2xlarge', power_kw: '', electricity_usd_per_kwh: '' };
// The fleet plan's parameters (GET /v1/reports/plan), the same V100 to start with; the history is
// the last `days` days.
const planned = { gpu: 'V100', purchase_usd: '2000', lifetime_years: '', days: '30' };

export function mountCosts(main) {
  const spendErr = h('p', { class: 'error', role: 'alert', hidden: true });
  const spendFacts = h('div', { id: 'spend-facts' });
  const spendChart = chartFigure('spend', 'Spend over time (cumulative, USD)');
  const spendTable = h('div', { id: 'spend-table' });
  const beErr = h('p', { class: 'error', role: 'alert', hidden: true });
  const beBody = h('div', { id: 'breakeven' });
  const planErr = h('p', { class: 'error', role: 'alert', hidden: true });
  const planBody = h('div', { id: 'fleet-plan' });
  const fsErr = h('p', { class: 'error', role: 'alert', hidden: true });
  const fsBody = h('div', { id: 'fair-share' });
  const slider = h('input', { id: 'utilisation', type: 'range', min: '0.05', max: '1', step: '0.05', value: String(utilisation),
                              'aria-describedby': 'utilisation-value' });
  const sliderOut = h('output', { id: 'utilisation-value', for: 'utilisation' }, pct(utilisation));

  clear(main,
    h('h2', {}, 'Costs'),
    h('section', { 'aria-labelledby': 'spend-h' }, h('h3', { id: 'spend-h' }, 'Spend'),
      h('div', { class: 'filters' }, periodSelect(() => refreshSpend().catch(showSpendError))),
      spendErr, spendFacts, spendChart.figure, spendTable),
    h('section', { 'aria-labelledby': 'be-h' }, h('h3', { id: 'be-h' }, 'Owning against renting (break-even)'),
      h('form', { class: 'filters', id: 'breakeven-form', onsubmit: (e) => { e.preventDefault(); refreshBreakevenShown(); } },
        Object.entries({ gpu: 'Owned GPU model', purchase_usd: 'Purchase (USD)', offer: 'Cloud offer (cloud:instance)',
                         power_kw: 'Power (kW)', electricity_usd_per_kwh: 'Electricity (USD/kWh)' }).map(([k, label]) => [
          h('label', { for: `be-${k}` }, label),
          h('input', { id: `be-${k}`, type: 'text', value: owned[k], size: k === 'offer' ? 16 : 8, 'data-field': k,
                       oninput: (e) => { owned[k] = e.target.value; } })]),
        h('button', { type: 'submit' }, 'Compare')),
      h('div', { class: 'slider' }, h('label', { for: 'utilisation' }, 'Utilisation of owned GPUs'), slider, sliderOut),
      beErr, beBody),
    h('section', { 'aria-labelledby': 'plan-h' }, h('h3', { id: 'plan-h' }, 'How many GPUs to own (fleet plan)'),
      h('form', { class: 'filters', id: 'plan-form', onsubmit: (e) => { e.preventDefault(); refreshPlanShown(); } },
        Object.entries({ gpu: 'GPU model', purchase_usd: 'Purchase (USD)', lifetime_years: 'Lifetime (years)',
                         days: 'History (days)' }).map(([k, label]) => [
          h('label', { for: `plan-${k}` }, label),
          h('input', { id: `plan-${k}`, type: 'text', value: planned[k], size: 8, 'data-field': k,
                       oninput: (e) => { planned[k] = e.target.value; } })]),
        h('button', { type: 'submit' }, 'Plan')),
      planErr, planBody),
    h('section', { 'aria-labelledby': 'fs-h' }, h('h3', { id: 'fs-h' }, 'Fair share between users'), fsErr, fsBody));

  const showSpendError = (e) => { spendErr.hidden = !e; if (e) spendErr.textContent = `Spend report: ${e.message}`; };
  const refreshSpend = () => renderSpendView(spendFacts, spendChart, spendTable);
  let beSeq = 0;
  const refreshBreakeven = async () => {
    const seq = ++beSeq;
    let rep;
    let serverUtil = true;
    try {
      const q = new URLSearchParams({ utilisation: String(utilisation) });
      for (const [k, v] of Object.entries(owned)) if (v.trim()) q.set(k, v.trim());
      rep = await optional(`/v1/reports/breakeven?${q}`);
    } catch (e) {
      // A daemon whose report takes no utilisation: fetch it as is and mark the slider's point.
      if (!(e instanceof ApiError && e.status === 400 && e.field === 'utilisation')) throw e;
      rep = await optional('/v1/reports/breakeven');
      serverUtil = false;
    }
    if (seq !== beSeq) return;
    beErr.hidden = true;
    renderBreakeven(rep, beBody, serverUtil);
  };
  const refreshBreakevenShown = () => refreshBreakeven().catch((e) => {
    beErr.hidden = false;
    beErr.textContent = `Break-even report: ${e.message}${e.field ? ` (field: ${e.field})` : ''}`;
  });
  slider.addEventListener('input', () => {
    utilisation = Number(slider.value);
    sliderOut.textContent = pct(utilisation);
    refreshBreakevenShown();
  });
  refreshBreakevenShown();
  let planSeq = 0;
  const showNothingToPlan = () => {
    const which = planned.gpu.trim() ? `${planned.gpu.trim()} jobs` : 'GPU jobs';
    clear(planBody, h('p', { class: 'muted empty', id: 'plan-empty' },
      `Nothing to plan from yet: no ${which} ran in the last ${planned.days || 30} days. The plan replays past GPU jobs with more owned GPUs; it appears here once some have run.`));
  };
  const refreshPlanShown = async () => {
    const seq = ++planSeq;
    try {
      const days = Number(planned.days);
      const q = new URLSearchParams({ from: String(Date.now() - (Number.isFinite(days) ? days : 30) * 86400e3) });
      for (const k of ['gpu', 'purchase_usd', 'lifetime_years']) if (planned[k].trim()) q.set(k, planned[k].trim());
      const rep = await optional(`/v1/reports/plan?${q}`);
      if (seq !== planSeq) return;
      planErr.hidden = true;
      // A period with no job of the model is a plan of no jobs: nothing to show but that.
      if (rep && rep.jobs === 0) showNothingToPlan();
      else renderPlan(rep, planBody);
    } catch (e) {
      if (seq !== planSeq) return;
      // No history to replay is not an error: the plan needs GPU jobs that ran in the period.
      if (e instanceof ApiError && e.status === 400 && e.field === 'from') {
        planErr.hidden = true;
        showNothingToPlan();
        return;
      }
      // A bad field is said as the daemon says it.
      planErr.hidden = false;
      planErr.textContent = `Fleet plan: ${e.message}${e.field ? ` (field: ${e.field})` : ''}`;
      clear(planBody);
    }
  };
  refreshPlanShown();
  const refreshFairShare = async () => {
    renderFairShare(await optional('/v1/fair-share'), fsBody);
    fsErr.hidden = true;
  };
  const showFairShareError = (e) => { fsErr.hidden = !e; if (e) fsErr.textContent = `Fair share: ${e.message}`; };
  const stopFairShare = poll(refreshFairShare, 10000, showFairShareError);
  const stopSpend = poll(refreshSpend, 10000, showSpendError);
  return () => { stopFairShare(); stopSpend(); };
}

// ------------------------------------------------------------------ fair share

// GET /v1/fair-share: {enabled, half_life_days, weights, users: [{user, share, normalized_share,
// usage, normalized_usage, factor}]} (docs/cost-model.md, "Fair share"). Null: not served.
function renderFairShare(rep, body) {
  if (rep === null) {
    clear(body, h('p', { class: 'muted empty', id: 'fair-share-none' }, 'This daemon does not report fair share.'));
    return;
  }
  if (!rep.enabled) {
    clear(body, h('p', { class: 'muted empty', id: 'fair-share-off' },
      'Fair share is off: jobs waiting for owned machines are taken by priority, then age. It is on by default when auth is on (placement.fair_share.enabled).'));
    return;
  }
  const users = rep.users || [];
  clear(body,
    h('p', { class: 'muted', id: 'fair-share-facts' },
      `Usage is price-weighted GPU-hours, halved every ${num(rep.half_life_days, 3)} days; a user's factor is 2^(-usage share / share), 1 for one who used nothing, 1/2 for one who used exactly their share. Jobs waiting for owned machines are taken highest score first: priority, then this factor, then age.`),
    users.length === 0
      ? h('p', { class: 'muted empty' }, 'No user has jobs or usage yet.')
      : objectTable(users, {
        id: 'fair-share-table',
        caption: 'Each user\'s share, usage and fair-share factor',
        columns: [
          ['user', 'User', (v) => v || '—'],
          ['share', 'Share', (v, r) => `${num(v, 3)} (${pct(r.normalized_share)})`],
          ['usage', 'Usage (GPU-hours, decayed)', (v, r) => `${num(v, 4)} (${pct(r.normalized_usage)})`],
          ['factor', 'Factor', (v) => num(v, 3)],
        ],
      }));
}

// ------------------------------------------------------------------ spend

// The spend report (cost/spend_report.h): {from_ms, to_ms, group_by, groups: [{key, seconds, usd,
// on_demand_usd}], total: {...}}. Spend over time is the same report asked for consecutive
// periods (`from`/`to` in ms), summed up.
const PERIODS = {
  day: { label: 'last 24 hours', buckets: 24, ms: 3600e3 },
  week: { label: 'last 7 days', buckets: 7, ms: 86400e3 },
  month: { label: 'last 30 days', buckets: 30, ms: 86400e3 },
};
let period = 'day';

// A null on-demand figure: no on-demand offer has the GPU model, so there is nothing to compare.
const NO_EQUIVALENT = 'no on-demand equivalent';
const savingsOf = (g) => (g.on_demand_usd === null ? null
  : typeof g.savings_usd === 'number' ? g.savings_usd : (g.on_demand_usd ?? 0) - (g.usd ?? 0));
// The spend table's columns; the first is headed by what the report groups by. `seconds` are
// resource-seconds: each owned GPU and each cloud instance bills its own time.
function groupColumns(groupBy) {
  const key = { placement: ['Placement', (v) => optionText(v)], job: ['Job', (v) => (v ? `#${v}` : '—')], user: ['User', (v) => v || '—'] }[groupBy]
    || ['Group', (v) => v ?? '—'];
  return [
    ['key', ...key],
    ['seconds', 'GPU/instance time', (v) => duration(v)],
    ['usd', 'Spent', usd],
    ['on_demand_usd', 'All on-demand', (v) => (v === null ? NO_EQUIVALENT : usd(v))],
    ['savings_usd', 'Saved', (v, g) => (savingsOf(g) === null ? NO_EQUIVALENT : usd(savingsOf(g)))],
  ];
}

async function spendReport(params) {
  return optional(`/v1/reports/spend?${new URLSearchParams(params)}`);
}

async function renderSpendView(facts, chart, table) {
  const p = PERIODS[period];
  const now = Date.now();
  const from = now - p.buckets * p.ms;
  let rep;
  let ranged = true;
  try {
    rep = await spendReport({ group_by: 'placement', from: String(from), to: String(now) });
  } catch (e) {
    // A report that takes no period: the whole ledger, and no curve over time.
    if (!(e instanceof ApiError && e.status === 400)) throw e;
    rep = await optional('/v1/reports/spend');
    ranged = false;
  }
  if (rep === null) {
    clear(facts, h('p', { class: 'muted' }, 'This daemon has no spend report (GET /v1/reports/spend): the cost ledger is not part of this build.'));
    chart.figure.hidden = true;
    clear(table);
    return;
  }
  const t = rep.total || {};
  const savings = savingsOf(t);
  clear(facts, h('dl', { class: 'facts', id: 'spend-totals' },
    h('dt', {}, 'Period'), h('dd', {}, ranged ? p.label : `${new Date(rep.from_ms).toLocaleString()} – ${new Date(rep.to_ms).toLocaleString()}`),
    h('dt', {}, 'Spent'), h('dd', {}, usd(t.usd)),
    h('dt', {}, 'All on-demand would have cost'), h('dd', {}, t.on_demand_usd === null ? NO_EQUIVALENT : usd(t.on_demand_usd)),
    h('dt', {}, 'Saved'), h('dd', {}, t.on_demand_usd === null ? NO_EQUIVALENT : `${usd(savings)}${t.on_demand_usd > 0 ? ` (${pct(savings / t.on_demand_usd)})` : ''}`)));
  const groups = rep.groups || [];
  clear(table, groups.length ? objectTable(groups, { caption: `By ${rep.group_by || 'group'}`, columns: groupColumns(rep.group_by), id: 'spend-groups' })
                             : h('p', { class: 'muted' }, 'Nothing spent in this period.'));
  chart.figure.hidden = false;
  if (!ranged) {
    chart.note.textContent = 'This daemon\'s report takes no period, so there is no curve over time.';
    return;
  }
  const bounds = Array.from({ length: p.buckets }, (_, i) => [from + i * p.ms, from + (i + 1) * p.ms]);
  const parts = await Promise.all(bounds.map(([f, to]) => spendReport({ group_by: 'placement', from: String(f), to: String(Math.min(to, now)) })));
  let cum = 0;
  let cumOd = 0;
  const spent = [{ x: from, y: 0 }];
  const od = [{ x: from, y: 0 }];
  parts.forEach((r, i) => {
    cum += r?.total?.usd ?? 0;
    cumOd += r?.total?.on_demand_usd ?? 0;
    spent.push({ x: bounds[i][1], y: cum });
    od.push({ x: bounds[i][1], y: cumOd });
  });
  const fmt = p.ms < 86400e3 ? (v) => new Date(v).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
                             : (v) => new Date(v).toLocaleDateString();
  lineChart(chart.canvas, [
    { label: 'spent (cumulative)', points: spent },
    { label: 'all on-demand (cumulative)', points: od, dashed: true },
  ], { xLabel: 'time', yLabel: 'USD', yMin: 0, yFormat: usdTick, note: chart.note, xFormat: fmt });
}

export function periodSelect(onChange) {
  const sel = h('select', { id: 'spend-period' }, Object.entries(PERIODS).map(([k, v]) => h('option', { value: k }, v.label)));
  sel.value = period;
  sel.addEventListener('change', () => { period = sel.value; onChange(); });
  return [h('label', { for: 'spend-period' }, 'Period'), sel];
}

// ------------------------------------------------------------------ break-even

function renderBreakeven(rep, el, serverUtil) {
  if (rep === null) {
    clear(el, h('p', { class: 'muted' }, 'This daemon has no break-even report (GET /v1/reports/breakeven). `jobctl report breakeven` computes one from the command line.'));
    return;
  }
  const reports = Array.isArray(rep) ? rep : (rep.reports || rep.comparisons || (rep.curve ? [rep] : []));
  if (!reports.length) {
    clear(el, h('p', { class: 'muted' }, 'No owned GPUs to compare (configure them for the cost model, docs/cost-model.md).'));
    return;
  }
  // The old charts go with their canvases (Chart.js keeps a registry of live charts).
  if (window.Chart) for (const c of el.querySelectorAll('canvas')) window.Chart.getChart(c)?.destroy();
  const parts = [];
  reports.forEach((r, i) => {
    const fig = chartFigure(`breakeven-${i}`, `${r.gpu || r.local?.gpu_model || 'owned GPU'} against ${r.offer || 'cloud'}: USD per hour of use by utilisation`);
    const curve = r.curve || [];
    const line = (key) => curve.filter((p) => typeof p[key] === 'number').map((p) => ({ x: p.utilisation * 100, y: p[key] }));
    const marker = [{ x: utilisation * 100, y: 0 }, { x: utilisation * 100, y: Math.max(0, ...curve.map((p) => Math.max(p.local_amortised_usd_per_hour || 0, p.cloud_on_demand_usd_per_hour || 0))) }];
    parts.push(h('article', { class: 'breakeven' },
      h('h4', {}, `${r.gpu || r.local?.gpu_model || 'owned GPU'}${r.local?.count > 1 ? ` ×${r.local.count}` : ''} vs ${r.offer || 'cloud offer'}`),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Break-even hours of use'), h('dd', {}, r.breakeven_hours != null ? `${num(r.breakeven_hours, 4)} h` : 'never'),
        h('dt', {}, 'Break-even utilisation'), h('dd', {}, r.utilisation_threshold != null ? pct(r.utilisation_threshold) : 'never'),
        h('dt', {}, 'Hours per month to break even'), h('dd', {}, r.breakeven_hours_per_month != null ? `${num(r.breakeven_hours_per_month, 4)} h` : 'never'),
        h('dt', {}, serverUtil ? `Payback at ${pct(utilisation)}` : `Payback (at ${pct(r.local?.utilisation)})`),
        h('dd', {}, r.payback_months != null ? `${num(r.payback_months, 3)} months` : 'never'),
        h('dt', {}, 'Owned, amortised'), h('dd', {}, usdPerHour(r.local_amortised_usd_per_hour)),
        h('dt', {}, 'Cloud on-demand / spot'), h('dd', {}, `${usdPerHour(r.cloud_on_demand_usd_per_hour)} · ${r.cloud_spot_usd_per_hour ? usdPerHour(r.cloud_spot_usd_per_hour) : 'no spot market'}`)),
      fig.figure));
    requestAnimationFrame(() => lineChart(fig.canvas, [
      { label: 'owned, amortised', points: line('local_amortised_usd_per_hour') },
      { label: 'owned, marginal (power only)', points: line('local_marginal_usd_per_hour'), dashed: true },
      { label: 'cloud on-demand', points: line('cloud_on_demand_usd_per_hour') },
      { label: 'cloud spot', points: line('cloud_spot_usd_per_hour') },
      { label: `your utilisation (${pct(utilisation)})`, points: marker, color: '#111827', dashed: true },
    ], { xLabel: 'utilisation (%)', yLabel: 'USD per hour of use', yMin: 0, yFormat: usdTick, note: fig.note }));
  });
  clear(el, parts);
}


// ------------------------------------------------------------------ fleet plan

// The fleet plan (cost/fleet_plan.h): total cost of the period's jobs against N GPUs bought, today's
// fleet (N = 0) and the cheapest N marked, the assumptions beside them, and every row.
function renderPlan(rep, el) {
  if (window.Chart) for (const c of el.querySelectorAll('canvas')) window.Chart.getChart(c)?.destroy();
  if (rep === null) {
    clear(el, h('p', { class: 'muted' }, 'This daemon has no fleet plan (GET /v1/reports/plan).'));
    return;
  }
  const rows = rep.rows || [];
  const best = rows.find((r) => r.extra_gpus === rep.cheapest_extra_gpus) || {};
  const today = rows[0] || {};
  const fig = chartFigure('fleet-plan', `${rep.gpu}: total cost of the period by GPUs bought`);
  clear(el,
    h('dl', { class: 'facts', id: 'plan-facts' },
      h('dt', {}, 'History'), h('dd', {}, `${plural(rep.jobs, 'job')}, ${num(rep.demand_gpu_hours, 3)} GPU-hours in ${num(rep.period_hours / 24, 3)} days; at most ${plural(rep.peak_concurrent_gpus, 'GPU')} at once`),
      h('dt', {}, 'Today'), h('dd', {}, `${rep.assumptions?.owned_gpus_today ?? 0} owned: ${usd(today.total_usd)} replayed, ${usd(rep.ledger_usd)} in the ledger`),
      h('dt', {}, 'Cheapest'), h('dd', { id: 'plan-cheapest' }, rep.cheapest_extra_gpus > 0
        ? `buy ${rep.cheapest_extra_gpus}: ${usd(best.total_usd)}, saving ${usd(rep.saving_usd)} (${usd(rep.saving_usd_per_month)}/month)`
        : 'buy none: today\'s fleet is the cheapest'),
      h('dt', {}, 'Payback'), h('dd', {}, rep.payback_months != null ? `${num(rep.payback_months, 3)} months` : '—'),
      h('dt', {}, 'Assumptions'), h('dd', { class: 'prose' }, rep.assumptions?.text || '')),
    fig.figure,
    objectTable(rows, { caption: 'Replay by GPUs bought', id: 'plan-table', columns: [
      ['extra_gpus', 'GPUs bought', String], ['owned_gpus', 'Owned then', String], ['total_usd', 'Total cost', usd],
      ['purchase_usd', 'Purchase', usd], ['power_usd', 'Power and maintenance', (v, r) => usd((r.power_usd || 0) + (r.maintenance_usd || 0))],
      ['cloud_usd', 'Cloud', usd], ['utilisation', 'Owned GPU use', pct], ['jobs_owned', 'Jobs on owned GPUs', String],
      ['jobs_cloud', 'Jobs on cloud', String], ['jobs_waited', 'Jobs that waited', String], ['deadlines_missed', 'Deadlines missed', String]] }));
  const top = Math.max(0, ...rows.map((r) => r.total_usd || 0));
  requestAnimationFrame(() => lineChart(fig.canvas, [
    { label: 'total cost', points: rows.map((r) => ({ x: r.extra_gpus, y: r.total_usd })) },
    { label: 'cloud', points: rows.map((r) => ({ x: r.extra_gpus, y: r.cloud_usd })), dashed: true },
    { label: 'today\'s fleet', points: [{ x: 0, y: 0 }, { x: 0, y: top }], color: '#111827', dashed: true },
    { label: `cheapest (${rep.cheapest_extra_gpus})`, points: [{ x: rep.cheapest_extra_gpus, y: 0 }, { x: rep.cheapest_extra_gpus, y: top }], color: '#16a34a', dashed: true },
  ], { xLabel: 'GPUs bought', yLabel: 'USD over the period', yMin: 0, yFormat: usdTick, note: fig.note,
       xFormat: (v) => (Number.isInteger(v) ? String(v) : '') }));
}
