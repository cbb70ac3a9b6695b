// Templates and their builds (docs/console.md): the list, a Build button for the built-ins
// and presets not built yet (template.write), and a build's log, live: the build's event
// stream (GET /v1/templates/builds/{op}/events), resumed after the last line seen when it
// breaks (Last-Event-ID).
import { api, answer, ApiError } from './api.js';
import { el, may, age, say, table } from './pages.js';
import { readEvents } from './sse.js';

export function renderTemplates(root, me) {
  const box = el('div', { class: 'scroll' });
  root.append(el('div', { class: 'bar' }, el('h1', { text: 'Templates' })), box);
  let stopped = false;
  let timer = null;
  async function refresh() {
    timer = null;
    try {
      const r = await api('GET', '/v1/templates?limit=1000');
      // a template being built names its build only once it is done: the running builds do
      const building = new Map();
      if (may(me, 'operation.read'))
        for (const st of ['pending', 'running'])
          for (const op of (await api('GET', '/v1/operations?limit=1000&state=' + st)).operations)
            if (op.kind === 'template.build') building.set(op.target, op.id);
      if (stopped) return;
      box.replaceChildren(
        table('Templates', [
          ['Template', (t) => t.name],
          ['State', (t) => t.state],
          ['Driver', (t) => (t.environment && t.environment.driver) || ''],
          ['Digest', (t) => ((t.environment && t.environment.digest) || '').slice(0, 19)],
          ['Created', (t) => (t.environment && t.environment.created_at ? age(t.environment.created_at) + ' ago' : '')],
          ['Build', (t) => {
            const op = (t.state === 'building' && building.get(t.name)) || (t.environment && t.environment.build_operation);
            if (op) return el('a', { href: '#/builds/' + op, text: 'log', 'aria-label': 'Build log of ' + t.name });
            if (may(me, 'template.write') && (t.state === 'not_built' || t.state === 'failed'))
              return el('button', {
                type: 'button',
                text: 'Build',
                'aria-label': 'Build ' + t.name,
                onclick: async () => {
                  try {
                    const b = await api('POST', `/v1/templates/${encodeURIComponent(t.name)}/build`, {});
                    location.hash = '#/builds/' + b.operation.id;
                  } catch (e) {
                    say('Build: ' + e.message);
                  }
                },
              });
            return '';
          }],
        ], r.templates, (t) => ({ 'data-template': t.name })),
      );
    } catch (e) {
      if (e.status === 401) throw e;
      say('Templates: ' + e.message);
    }
    if (!stopped) timer = setTimeout(refresh, 3000);
  }
  refresh();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}

export function renderBuild(root, me, op) {
  const log = el('pre', { class: 'build-log', 'aria-label': 'Build log', tabindex: '0' });
  const state = el('p', { class: 'build-state', 'aria-live': 'polite', text: 'building…' });
  const cancel = may(me, 'operation.write')
    ? el('button', {
        type: 'button',
        class: 'danger',
        text: 'Cancel the build',
        onclick: () => api('POST', `/v1/operations/${op}/cancel`, {}).then(() => say('Cancel: asked'), (e) => say('Cancel: ' + e.message)),
      })
    : null;
  root.append(el('div', { class: 'bar' }, el('a', { href: '#/templates', text: '← Templates' }), el('h1', { text: 'Build ' + op }), cancel), state, log);
  const ac = new AbortController();
  let last = null;
  let over = false;
  (async () => {
    while (!over && !ac.signal.aborted) {
      try {
        const r = await fetch(`/v1/templates/builds/${op}/events`, {
          credentials: 'same-origin',
          headers: last ? { 'Last-Event-ID': last } : {},
          signal: ac.signal,
        });
        if (!r.ok) await answer(r);
        await readEvents(r, (ev) => {
          const d = JSON.parse(ev.data);
          if (ev.event === 'line') {
            last = ev.id;
            log.append(d.text + '\n');
          } else if (ev.event === 'end') {
            over = true;
            state.textContent = 'build ' + d.state + (d.error ? `: ${d.error.code}: ${d.error.message}` : '');
            if (cancel) cancel.hidden = true;
          }
          return over;
        });
      } catch (e) {
        if (ac.signal.aborted) return;
        if (e instanceof ApiError && (e.status === 401 || e.status === 404)) {
          state.textContent = e.message;
          if (e.status === 401) throw e;
          return;
        }
        say('Build log: ' + e.message);
      }
      if (!over) await new Promise((res) => setTimeout(res, 1000));
    }
  })();
  return () => ac.abort();
}
