// Charts with Chart.js (Debian's libjs-chart.js, copied to /vendor/chart.min.js at build time;
// loaded as a classic script by index.html, so it is window.Chart). Without it the views still
// show their tables and say why the chart is missing.
import { h } from './format.js';

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#4b5563'];

export function chartsAvailable() {
  return typeof window.Chart === 'function';
}

// A figure with a canvas for a chart; `label` names it for screen readers and tests
// (data-chart="<id>").
export function chartFigure(id, label) {
  const canvas = h('canvas', { id: `chart-${id}`, role: 'img', 'aria-label': label, 'data-chart': id });
  const note = h('p', { class: 'chart-note', id: `chart-${id}-note` });
  return { figure: h('figure', { class: 'chart' }, h('figcaption', {}, label), h('div', { class: 'chart-box' }, canvas), note), canvas, note };
}

// Draws or updates a line chart on `canvas`. series: [{label, points: [{x, y}], dashed?, stepped?}].
// Returns the Chart, or null when Chart.js is not installed.
// xMin/yMin/yMax pin an axis end (a step axis starts at 0, accuracy runs 0..1), so that a curve
// of one point is drawn against a sensible range rather than one Chart.js invents around it.
export function lineChart(canvas, series, { xLabel, yLabel, xType = 'linear', xMin, yMin, yMax, note, emptyText, xFormat, yFormat } = {}) {
  if (note) note.textContent = '';
  if (!chartsAvailable()) {
    if (note) note.textContent = 'Charts need Chart.js: install Debian\'s libjs-chart.js (scripts/setup.sh) and rebuild.';
    return null;
  }
  const datasets = series.map((s, i) => ({
    label: s.label,
    data: s.points,
    borderColor: s.color || COLORS[i % COLORS.length],
    backgroundColor: s.color || COLORS[i % COLORS.length],
    borderDash: s.dashed ? [6, 4] : undefined,
    stepped: s.stepped || false,
    pointRadius: s.points.length > 60 ? 0 : 3,
    borderWidth: 2,
    tension: 0,
    parsing: false,
  }));
  if (note && emptyText && series.every((s) => s.points.length === 0)) note.textContent = emptyText;
  let chart = window.Chart.getChart(canvas);
  if (chart) {
    chart.data.datasets = datasets;
    chart.update('none');
    return chart;
  }
  chart = new window.Chart(canvas, {
    type: 'line',
    data: { datasets },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: 'nearest', intersect: false },
      scales: {
        x: { type: xType, title: { display: !!xLabel, text: xLabel }, min: xMin,
             ticks: xFormat ? { callback: (v) => xFormat(v) } : {} },
        y: { title: { display: !!yLabel, text: yLabel }, min: yMin, max: yMax,
             ticks: yFormat ? { callback: (v) => yFormat(v) } : {} },
      },
      plugins: { legend: { position: 'bottom' } },
    },
  });
  return chart;
}
