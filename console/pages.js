// The sign-in page and the sandboxes list.
import { api } from './api.js';

export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

export function may(me, permission) {
  return me.permissions.includes(permission);
}

export function age(iso) {
  if (!iso) return '';
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm';
  if (s < 86400) return Math.floor(s / 3600) + 'h';
  return Math.floor(s / 86400) + 'd';
}

// The key is read from the field, sent once, and the field cleared: it is never stored.
export function renderSignIn(root, done) {
  const key = el('input', { id: 'api-key', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  const error = el('p', { class: 'error', role: 'alert' });
  const form = el(
    'form',
    { class: 'card sign-in', 'aria-labelledby': 'sign-in-title' },
    el('h1', { id: 'sign-in-title', text: 'Sign in' }),
    el('label', { for: 'api-key', text: 'API key' }),
    key,
    el('button', { type: 'submit', text: 'Sign in' }),
    error,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    error.textContent = '';
    const secret = key.value;
    key.value = '';
    try {
      done(await api('POST', '/v1/console/session', { api_key: secret }));
    } catch (e) {
      error.textContent = e.message;
    }
  });
  root.append(form);
  key.focus();
}

const STATES = ['', 'creating', 'running', 'paused', 'stopped', 'failed', 'destroyed'];

// The list is polled (every second while the page is shown): there is no event stream of
// sandbox changes yet (docs/console.md).
export function renderSandboxList(root, me) {
  const stateFilter = el('select', { id: 'state-filter' }, ...STATES.map((s) => el('option', { value: s, text: s || 'any' })));
  const body = el('tbody');
  const table = el(
    'table',
    { class: 'sandboxes', 'aria-label': 'Sandboxes' },
    el('thead', {}, el('tr', {}, ...['Sandbox', 'State', 'Template', 'Project', 'Age'].map((h) => el('th', { scope: 'col', text: h })))),
    body,
  );
  const create = may(me, 'sandbox.write')
    ? el('button', {
        type: 'button',
        text: 'New sandbox',
        onclick: async () => {
          try {
            const r = await api('POST', '/v1/sandboxes', {});
            location.hash = '#/sandboxes/' + r.sandbox.id;
          } catch (e) {
            document.getElementById('status').textContent = 'Create: ' + e.message;
          }
        },
      })
    : null;
  root.append(
    el('div', { class: 'bar' }, el('h1', { text: 'Sandboxes' }), el('label', { for: 'state-filter', text: 'State' }), stateFilter, create),
    el('div', { class: 'scroll' }, table),
  );
  let stopped = false;
  let timer = null;
  async function refresh() {
    timer = null;
    try {
      const q = stateFilter.value ? '?state=' + encodeURIComponent(stateFilter.value) : '';
      const r = await api('GET', '/v1/sandboxes' + q);
      if (stopped) return;
      body.replaceChildren(
        ...r.sandboxes.map((sb) =>
          el(
            'tr',
            { 'data-sandbox': sb.id },
            el('td', {}, el('a', { href: '#/sandboxes/' + sb.id, text: sb.id })),
            el('td', { text: sb.state }),
            el('td', { text: sb.template || '' }),
            el('td', { text: sb.project || '' }),
            el('td', { text: age(sb.created_at) }),
          ),
        ),
      );
    } catch (e) {
      if (e.status === 401) throw e;
      document.getElementById('status').textContent = 'List: ' + e.message;
    }
    if (!stopped) timer = setTimeout(refresh, 1000);
  }
  stateFilter.addEventListener('change', () => {
    if (timer) clearTimeout(timer);
    refresh();
  });
  refresh();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
