// The sign-in page and what the pages share (el, may, age).
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

export function say(text) {
  document.getElementById('status').textContent = text || '';
}

// A table of rows: columns [[heading, row → text or Node]], rowAttrs(row) → attributes of its <tr>.
export function table(label, columns, rows, rowAttrs = () => ({})) {
  return el(
    'table',
    { class: 'sandboxes', 'aria-label': label },
    el('thead', {}, el('tr', {}, ...columns.map(([h]) => el('th', { scope: 'col', text: h })))),
    el(
      'tbody',
      {},
      ...rows.map((r) =>
        el('tr', rowAttrs(r), ...columns.map(([, f]) => {
          const v = f(r);
          return v instanceof Node ? el('td', {}, v) : el('td', { text: v === null || v === undefined ? '' : String(v) });
        })),
      ),
    ),
  );
}

// A labelled field of a filter form.
export function field(id, label, input) {
  input.id = id;
  return [el('label', { for: id, text: label }), input];
}

// A page that lists what a route returns, with filters (each a query parameter of the
// route), read again every `everyMs` (0: only when asked). spec: {title, route, member,
// filters: [[param, label, placeholder?, initial value?]], columns (as table()), rowAttrs?, everyMs?,
// newestFirst?, pages?: how many pages to follow (default 1), actions?: Node}. Returns the
// page's leave function.
export function renderListPage(root, spec) {
  const inputs = spec.filters.map(([param, label, placeholder, initial]) => [param, ...field('filter-' + param, label, el('input', { type: 'text', placeholder: placeholder || '', value: initial || null, size: 14, spellcheck: 'false' }))]);
  const box = el('div', { class: 'scroll' });
  const form = el(
    'form',
    { class: 'bar filters', role: 'search', 'aria-label': 'Filter ' + spec.title.toLowerCase(), onsubmit: (ev) => { ev.preventDefault(); now(); } },
    ...inputs.flatMap(([, l, i]) => [l, i]),
    el('button', { type: 'submit', text: 'Filter' }),
  );
  root.append(el('div', { class: 'bar' }, el('h1', { text: spec.title }), spec.actions || null), ...(spec.filters.length ? [form] : []), box);
  let stopped = false;
  let timer = null;
  async function refresh() {
    timer = null;
    try {
      const q = new URLSearchParams({ limit: '1000' });
      for (const [param, , input] of inputs) if (input.value.trim()) q.set(param, input.value.trim());
      let rows = [];
      for (let page = 0, cursor = null; page < (spec.pages || 1); page++) {
        if (cursor) q.set('cursor', cursor);
        const r = await api('GET', spec.route + '?' + q.toString());
        rows = rows.concat(r[spec.member]);
        cursor = r.next_cursor;
        if (!cursor) break;
      }
      if (stopped) return;
      if (spec.newestFirst) rows.reverse();
      box.replaceChildren(table(spec.title, spec.columns, rows, spec.rowAttrs));
      const status = document.getElementById('status');
      if (status.textContent.startsWith(spec.title + ': ')) status.textContent = '';
    } catch (e) {
      if (e.status === 401) throw e;
      say(spec.title + ': ' + e.message);
    }
    if (!stopped && spec.everyMs) timer = setTimeout(refresh, spec.everyMs);
  }
  function now() {
    if (timer) clearTimeout(timer);
    refresh();
  }
  refresh();
  const leave = () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
  leave.refresh = now;
  return leave;
}
