// The dashboard's only way to the daemon: the public REST API (docs/api.md), same origin.
// Every request carries `Authorization: Bearer <token>` when a token is stored (auth is opt-in
// on the daemon; docs/security.md). Errors come back as ApiError with the API's own code,
// message and field, so views show exactly what the API said.

const TOKEN_KEY = 'jobctl.token';

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field ?? null;
  }
}

export function getToken() {
  try { return localStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}

export function setToken(token) {
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token); else localStorage.removeItem(TOKEN_KEY);
  } catch { /* storage disabled: the token lives for this page only */ }
  window.dispatchEvent(new CustomEvent('jobctl-token'));
}

// Listeners told of every answer's status (the header shows "token needed" on a 401).
const statusListeners = new Set();
export function onStatus(fn) { statusListeners.add(fn); return () => statusListeners.delete(fn); }

export async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, cache: 'no-store' };
  // jobctld refuses a POST without a JSON type, bodiless or not (docs/security.md, "Browsers").
  if (body !== undefined || method !== 'GET') headers['Content-Type'] = 'application/json';
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    statusListeners.forEach((fn) => fn(0));
    throw new ApiError(0, 'network', `cannot reach the daemon: ${e.message}`, null);
  }
  statusListeners.forEach((fn) => fn(res.status));
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!res.ok) {
    const err = data && data.error ? data.error : {};
    throw new ApiError(res.status, err.code || `http_${res.status}`,
                       err.message || `${method} ${path} answered ${res.status}`, err.field);
  }
  return data;
}

// Downloads `path` (a checkpoint) as the file `filename`: fetched with the token, like every
// other call (a plain link would carry none), then saved from a blob: URL.
export async function download(path, filename) {
  const headers = {};
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  let res;
  try {
    res = await fetch(path, { headers, cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, 'network', `cannot reach the daemon: ${e.message}`, null);
  }
  statusListeners.forEach((fn) => fn(res.status));
  if (!res.ok) {
    let err = {};
    try { err = (await res.json()).error || {}; } catch { /* not JSON */ }
    throw new ApiError(res.status, err.code || `http_${res.status}`, err.message || `GET ${path} answered ${res.status}`, err.field);
  }
  const url = URL.createObjectURL(await res.blob());
  try {
    const a = document.createElement('a');
    a.href = url;
    a.download = filename;
    document.body.append(a);
    a.click();
    a.remove();
  } finally {
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  }
}

// GET that answers null for a 404 "no such endpoint" (a feature this daemon does not have yet)
// and rethrows every other error. A 404 for a missing object (e.g. no such job) is rethrown.
export async function optional(path) {
  try {
    return await api('GET', path);
  } catch (e) {
    if (e instanceof ApiError && (e.status === 404 || e.status === 405) &&
        /no such endpoint|not allowed/.test(e.message)) return null;
    throw e;
  }
}

// Every item of a keyset-paged list (`key` of each page, `next` chaining them; docs/api.md),
// oldest first, at most maxPages pages of `limit`.
async function allPages(path, key, params = {}, limit = '1000', maxPages = 20) {
  const items = [];
  let after = null;
  for (let page = 0; page < maxPages; page++) {
    const q = new URLSearchParams({ limit, ...params });
    if (after) q.set('after', after);
    const r = await api('GET', `${path}?${q}`);
    items.push(...(r[key] || []));
    if (!r.next) break;
    after = r.next;
  }
  return items;
}

// Every job, following the keyset pages, oldest first.
export function allJobs(state, maxPages = 20) {
  return allPages('/v1/jobs', 'jobs', state ? { state } : {}, '1000', maxPages);
}

// Every job of a job array (a sweep), following the keyset pages, oldest (case 0) first.
export function arrayJobs(arrayId, maxPages = 20) {
  return allPages('/v1/jobs', 'jobs', { array: String(arrayId) }, '1000', maxPages);
}

// Every registered worker, following the keyset pages, in id order.
export function allWorkers(maxPages = 20) {
  return allPages('/v1/workers', 'workers', {}, '1000', maxPages);
}
