// The sandboxes list (docs/console.md), live: GET /v1/sandboxes/events sends the list, then
// each change (a sandbox that appears, changes or is destroyed). Filters by state and
// metadata (key=value) apply in the page; by project (a platform key) the stream is opened
// again for that project. CPU and memory figures of the ones that run come from
// GET /v1/sandboxes/{id}/stats.
import { api, answer, ApiError } from './api.js';
import { el, may, age } from './pages.js';
import { bytes } from './history.js';
import { readEvents } from './sse.js';

// destroyed ones are not in the stream (nor in GET /v1/sandboxes without ?state=destroyed)
const STATES = ['', 'creating', 'running', 'paused', 'stopped', 'failed'];
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
    { class: 'bar filters', role: 'search', 'aria-label': 'Filter sandboxes', onsubmit: (ev) => { ev.preventDefault(); if (projectChanged()) stream.abort(); draw(); } },
    el('label', { for: 'state-filter', text: 'State' }),
    stateFilter,
    projectFilter && el('label', { for: 'project-filter', text: 'Project' }),
    projectFilter,
    el('label', { for: 'metadata-filter', text: 'Metadata' }),
    metaFilter,
    el('button', { type: 'submit', text: 'Filter' }),
  );
  root.append(el('div', { class: 'bar' }, el('h1', { text: 'Sandboxes' }), create), form, el('div', { class: 'scroll' }, table));

  let stopped = false;
  let statsTimer = null;
  let drawTimer = null;
  let shown = [];
  let sandboxes = new Map(); // id → sandbox, as the stream last said
  const figures = new Map(); // id → {cpu: '12%', mem: '40 MiB / 512 MiB', usage, at}
  let stream = null; // the AbortController of the open stream
  let streamProject = ''; // and the project it was opened for

  function filters() {
    const meta = parseMetadata(metaFilter.value);
    if (meta === null) throw new Error('metadata: write key=value, separated by commas');
    return { state: stateFilter.value, meta };
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

  function draw() {
    drawTimer = null;
    let f;
    try {
      f = filters();
    } catch (e) {
      document.getElementById('status').textContent = 'List: ' + e.message;
      return;
    }
    shown = [...sandboxes.values()]
      .filter((sb) => (!f.state || sb.state === f.state) && f.meta.every(([k, v]) => sb.metadata && sb.metadata[k] === v))
      .sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at) || (a.id < b.id ? -1 : 1));
    body.replaceChildren(...shown.map(row));
    const status = document.getElementById('status');
    if (status.textContent.startsWith('List: ')) status.textContent = '';
  }

  // Changes that come together are drawn together.
  function drawSoon() {
    if (!drawTimer) drawTimer = setTimeout(draw, 50);
  }

  // One stream at a time; reopened when it ends (spaced ends it every few minutes) or breaks.
  async function follow() {
    while (!stopped) {
      const ac = new AbortController();
      stream = ac;
      let fresh = new Map(); // the list the stream sends first, until `synced`
      try {
        const project = projectFilter ? projectFilter.value.trim() : '';
        streamProject = project;
        const r = await fetch('/v1/sandboxes/events' + (project ? '?project=' + encodeURIComponent(project) : ''), {
          credentials: 'same-origin',
          signal: ac.signal,
        });
        if (!r.ok) await answer(r);
        await readEvents(r, (ev) => {
          const d = JSON.parse(ev.data);
          const into = fresh || sandboxes;
          if (ev.event === 'sandbox') into.set(d.id, d);
          else if (ev.event === 'removed') into.delete(d.id);
          else if (ev.event === 'synced') {
            sandboxes = fresh;
            fresh = null;
            document.body.dataset.sandboxesSynced = String(d.count);
          }
          if (!fresh) drawSoon();
          return false;
        });
      } catch (e) {
        if (stopped || ac.signal.aborted) {
          if (stopped) return;
          continue; // a new project asked for: the loop opens the new stream
        }
        if (e instanceof ApiError && e.status === 401) throw e;
        document.getElementById('status').textContent = 'List: ' + e.message;
      }
      if (!stopped && !ac.signal.aborted) await new Promise((res) => setTimeout(res, 1000));
    }
  }

  // The project the open stream is of differs from the field's.
  function projectChanged() {
    return stream && projectFilter && projectFilter.value.trim() !== streamProject;
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

  stateFilter.addEventListener('change', draw);
  if (projectFilter) projectFilter.addEventListener('change', () => projectChanged() && stream.abort());
  follow();
  readStats();
  return () => {
    stopped = true;
    if (stream) stream.abort();
    if (drawTimer) clearTimeout(drawTimer);
    if (statsTimer) clearTimeout(statsTimer);
  };
}
