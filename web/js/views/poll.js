// Polling without overlap: runs `fn` now and then every `ms` after each run finishes; stops on
// the returned function. Errors are handed to `onError` (the view shows them) and polling goes on.
export function poll(fn, ms, onError) {
  let stopped = false;
  let timer = null;
  const tick = async () => {
    try {
      await fn();
      if (onError) onError(null);
    } catch (e) {
      if (onError) onError(e); else console.error(e);
    }
    if (!stopped) timer = setTimeout(tick, ms);
  };
  tick();
  return () => { stopped = true; clearTimeout(timer); };
}

// Replaces the rows of `tbody` by `rows` ([{key, sig, build()}]), rebuilding only rows whose
// signature changed, so a live table keeps keyboard focus and scroll position between updates.
export function syncRows(tbody, rows) {
  const existing = new Map();
  for (const tr of tbody.children) existing.set(tr.dataset.key, tr);
  const active = document.activeElement;
  const activeKey = active && tbody.contains(active) ? active.dataset.focusKey : null;
  let prev = null;
  for (const r of rows) {
    let tr = existing.get(r.key);
    if (!tr || tr.dataset.sig !== r.sig) {
      const fresh = r.build();
      fresh.dataset.key = r.key;
      fresh.dataset.sig = r.sig;
      if (tr) tr.replaceWith(fresh);
      tr = fresh;
    }
    existing.delete(r.key);
    const want = prev ? prev.nextSibling : tbody.firstChild;
    if (want !== tr) tbody.insertBefore(tr, want);
    prev = tr;
  }
  for (const tr of existing.values()) tr.remove();
  if (activeKey && !tbody.contains(active)) {
    const again = tbody.querySelector(`[data-focus-key="${CSS.escape(activeKey)}"]`);
    if (again) again.focus();
  }
}
