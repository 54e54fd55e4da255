// The dashboard shell: hash routes (#/jobs, #/jobs/12, #/arrays/12, #/workers, #/costs, #/submit), the token
// entry, the daemon's health line. Each view is mount(main, params) -> unmount function; the
// shell unmounts the previous view (stopping its polling) before mounting the next.
import { api, getToken, onStatus, setToken } from './api.js';
import { plural } from './format.js';
import { mountJobs } from './views/jobs.js';
import { mountJobDetail } from './views/job_detail.js';
import { mountArray } from './views/array.js';
import { mountWorkers } from './views/workers.js';
import { mountCosts } from './views/costs.js';
import { mountSubmit } from './views/submit.js';

const routes = [
  [/^#\/jobs\/(\d+)$/, 'jobs', (m, p) => mountJobDetail(m, Number(p[1]))],
  [/^#\/jobs$/, 'jobs', (m) => mountJobs(m)],
  [/^#\/arrays\/(\d+)$/, 'jobs', (m, p) => mountArray(m, Number(p[1]))],
  [/^#\/workers$/, 'workers', (m) => mountWorkers(m)],
  [/^#\/costs$/, 'costs', (m) => mountCosts(m)],
  [/^#\/submit$/, 'submit', (m) => mountSubmit(m)],
];

let unmount = null;

function route() {
  const main = document.getElementById('main');
  const hash = location.hash || '#/jobs';
  if (unmount) { unmount(); unmount = null; }
  main.replaceChildren();
  for (const [re, nav, mount] of routes) {
    const m = hash.match(re);
    if (!m) continue;
    for (const a of document.querySelectorAll('[data-nav]')) {
      if (a.dataset.nav === nav) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
    unmount = mount(main, m) || null;
    return;
  }
  location.replace('#/jobs');
}

function setupToken() {
  const form = document.getElementById('token-form');
  const input = document.getElementById('token-input');
  const status = document.getElementById('token-status');
  const show = () => { status.textContent = getToken() ? 'token set' : 'no token'; };
  input.value = getToken();
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    show();
    route();  // reload the view with the new token
  });
  document.getElementById('token-clear').addEventListener('click', () => {
    input.value = '';
    setToken('');
    show();
    route();
  });
  show();
  const banner = document.getElementById('banner');
  onStatus((code) => {
    if (code === 401) {
      banner.textContent = getToken()
        ? 'The daemon refused this token (401). Enter a valid API token above.'
        : 'This daemon requires an API token: enter it above (jobctl token create, docs/security.md).';
      banner.hidden = false;
    } else if (code === 0) {
      banner.textContent = 'Cannot reach jobctld; retrying.';
      banner.hidden = false;
    } else if (code > 0 && code !== 401) {
      banner.hidden = true;
    }
  });
}

async function health() {
  const el = document.getElementById('health');
  try {
    const hz = await api('GET', '/healthz');
    el.textContent = `jobctld ${hz.version} · ${hz.queued} queued · ${plural(hz.waiting_workers, 'worker')} waiting for work`;
  } catch (e) {
    el.textContent = `jobctld: ${e.message}`;
  }
}

setupToken();
window.addEventListener('hashchange', route);
route();
health();
setInterval(health, 5000);
