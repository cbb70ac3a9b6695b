// The sandboxes list (docs/console.md): filters by state, project (a platform key) and
// metadata (key=value, the API's metadata.<key> filter), CPU and memory figures of the ones
// that run (GET /v1/sandboxes/{id}/stats). The list is polled every second: spaced has no
// event stream of sandbox changes yet.
import { api } from './api.js';
import { el, may, age } from './pages.js';
import { bytes } from './history.js';

const STATES = ['', 'creating', 'running', 'paused', 'stopped', 'failed', 'destroyed'];
const STATS_ROWS = 50; // figures are read for at most this many running rows, the first ones shown
const STATS_EVERY_MS = 3000;

// "a=b, c=d" → [['a','b'], ['c','d']]; null when a part is not key=value.
export function parseMetadata(text) {
  const out = [];
  for (const part of text.split(/[,\s]+/).filter(Boolean)) {
    const i = part.indexOf('=');
    if (i <= 0) return null;
    out.push([part.slice(0, i), part.slice(i + 1)]);
  }
  return out;
}

export function renderSandboxList(root, me) {
  const stateFilter = el('select', { id: 'state-filter' }, ...STATES.map((s) => el('option', { value: s, text: s || 'any' })));
  const platform = may(me, 'platform');
  const projectFilter = platform ? el('input', { id: 'project-filter', type: 'text', placeholder: 'all', size: 10, spellcheck: 'false' }) : null;
  const metaFilter = el('input', { id: 'metadata-filter', type: 'text', placeholder: 'key=value', size: 16, spellcheck: 'false' });
  const body = el('tbody');
  const more = el('p', { class: 'muted' });
  const table = el(
    'table',
    { class: 'sandboxes', 'aria-label': 'Sandboxes' },
    el('thead', {}, el('tr', {}, ...['Sandbox', 'State', 'Template', 'Project', 'Age', 'CPU', 'Memory'].map((h) => el('th', { scope: 'col', text: h })))),
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
  const form = el(
    'form',
    { class: 'bar filters', role: 'search', 'aria-label': 'Filter sandboxes', onsubmit: (ev) => { ev.preventDefault(); now(); } },
    el('label', { for: 'state-filter', text: 'State' }),
    stateFilter,
    projectFilter && el('label', { for: 'project-filter', text: 'Project' }),
    projectFilter,
    el('label', { for: 'metadata-filter', text: 'Metadata' }),
    metaFilter,
    el('button', { type: 'submit', text: 'Filter' }),
  );
  root.append(el('div', { class: 'bar' }, el('h1', { text: 'Sandboxes' }), create), form, el('div', { class: 'scroll' }, table), more);

  let stopped = false;
  let timer = null;
  let statsTimer = null;
  let shown = [];
  const figures = new Map(); // id → {cpu: '12%', mem: '40 MiB / 512 MiB', usage, at}

  function query() {
    const q = new URLSearchParams({ limit: '1000' });
    if (stateFilter.value) q.set('state', stateFilter.value);
    if (projectFilter && projectFilter.value.trim()) q.set('project', projectFilter.value.trim());
    const meta = parseMetadata(metaFilter.value);
    if (meta === null) throw new Error('metadata: write key=value, separated by commas');
    for (const [k, v] of meta) q.set('metadata.' + k, v);
    return '?' + q.toString();
  }

  function row(sb) {
    const f = figures.get(sb.id);
    return el(
      'tr',
      { 'data-sandbox': sb.id },
      el('td', {}, el('a', { href: '#/sandboxes/' + sb.id, text: sb.id })),
      el('td', { text: sb.state }),
      el('td', { text: sb.template || '' }),
      el('td', { text: sb.project || '' }),
      el('td', { text: age(sb.created_at) }),
      el('td', { class: 'cpu', text: f ? f.cpu : '' }),
      el('td', { class: 'memory', text: f ? f.mem : '' }),
    );
  }

  async function refresh() {
    timer = null;
    try {
      const r = await api('GET', '/v1/sandboxes' + query());
      if (stopped) return;
      shown = r.sandboxes;
      body.replaceChildren(...shown.map(row));
      more.textContent = r.next_cursor ? `The first ${shown.length} are shown: narrow the filters for the others.` : '';
    } catch (e) {
      if (e.status === 401) throw e;
      document.getElementById('status').textContent = 'List: ' + e.message;
    }
    if (!stopped) timer = setTimeout(refresh, 1000);
  }

  // CPU is the share of one CPU used since the last reading (cpu.usage_us over wall time).
  async function readStats() {
    statsTimer = null;
    const ids = shown.filter((sb) => sb.state === 'running' || sb.state === 'paused').slice(0, STATS_ROWS).map((sb) => sb.id);
    await Promise.all(
      ids.map(async (id) => {
        try {
          const s = await api('GET', `/v1/sandboxes/${id}/stats`);
          const at = Date.parse(s.timestamp);
          const before = figures.get(id);
          const cpu = before && at > before.at ? ((100 * (s.cpu.usage_us - before.usage)) / ((at - before.at) * 1000)).toFixed(1) + '%' : '…';
          const mem = bytes(s.memory.used_bytes) + (s.memory.limit_bytes ? ' / ' + bytes(s.memory.limit_bytes) : '');
          figures.set(id, { cpu, mem, usage: s.cpu.usage_us, at });
          const tr = body.querySelector(`tr[data-sandbox="${id}"]`);
          if (tr) {
            tr.querySelector('.cpu').textContent = cpu;
            tr.querySelector('.memory').textContent = mem;
          }
        } catch (e) {
          if (e.status === 401) throw e;
          figures.delete(id); // stopped meanwhile (409), or gone
        }
      }),
    );
    if (!stopped) statsTimer = setTimeout(readStats, STATS_EVERY_MS);
  }

  function now() {
    if (timer) clearTimeout(timer);
    refresh();
  }
  stateFilter.addEventListener('change', now);
  refresh().then(() => {
    if (!stopped) readStats();
  });
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    if (statsTimer) clearTimeout(statsTimer);
  };
}
