// The history of a sandbox as a picture (docs/console.md): the tree of its snapshots and
// forks, drawn in SVG. A node is a snapshot (parent → child by parent_snapshot_id; a fork's
// snapshots hang off the snapshot it was forked from, since a fork's head starts there) or a
// sandbox's present state (hung off its lineage.head_snapshot_id). The tree shown is the one
// the sandbox is in: every snapshot and sandbox connected to it, over every sandbox of its
// family. Restore and fork from any snapshot node, with the same routes and permissions as
// the API (docs/api.md, Restore and Fork).
import { api } from './api.js';
import { el, may, age } from './pages.js';

const SVG = 'http://www.w3.org/2000/svg';
const COL = 170; // px between generations
const ROW = 64; // px between leaves
const PAD = 56;

function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, v);
  for (const c of children) if (c) e.append(c);
  return e;
}

export function bytes(n) {
  if (n === null || n === undefined) return 'size pending';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return (i ? n.toFixed(n < 10 ? 1 : 0) : String(n)) + ' ' + units[i];
}

function short(text, n) {
  return text.length > n ? text.slice(0, n - 1) + '…' : text;
}

// Every page of a list route.
async function all(path, member) {
  const out = [];
  let cursor = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const r = await api('GET', path + sep + 'limit=1000' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    out.push(...r[member]);
    cursor = r.next_cursor;
  } while (cursor);
  return out;
}

function rolling(snap) {
  return snap.label === 'rolling';
}

// nodes: id → {id, type, data, parent, children}. Returns the roots of the tree that holds
// the sandbox `id`, oldest first.
export function buildTree(sandboxes, snapshots, id) {
  const nodes = new Map();
  for (const s of snapshots) nodes.set(s.id, { id: s.id, type: 'snapshot', data: s, parent: null, children: [] });
  for (const sb of sandboxes) nodes.set('tip:' + sb.id, { id: 'tip:' + sb.id, type: 'sandbox', data: sb, parent: null, children: [] });
  for (const s of snapshots) {
    const p = s.parent_snapshot_id && nodes.get(s.parent_snapshot_id);
    if (p) nodes.get(s.id).parent = p;
  }
  for (const sb of sandboxes) {
    const l = sb.lineage || {};
    const p = nodes.get(l.head_snapshot_id || '') || nodes.get(l.parent_snapshot_id || '');
    if (p) nodes.get('tip:' + sb.id).parent = p;
  }
  // The tree of `id`, and the others its sandboxes' snapshots are in (a deleted snapshot in
  // the middle of a chain splits it in two trees, both shown).
  const rootOf = (n) => {
    while (n.parent) n = n.parent;
    return n;
  };
  const start = nodes.get('tip:' + id);
  if (!start) return [];
  const family = new Set([id]);
  const roots = new Set([rootOf(start)]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const n of nodes.values()) {
      const owner = n.type === 'snapshot' ? n.data.sandbox_id : n.data.id;
      const r = rootOf(n);
      if (roots.has(r) && owner && !family.has(owner)) {
        family.add(owner);
        grew = true;
      }
      if (owner && family.has(owner) && !roots.has(r)) {
        roots.add(r);
        grew = true;
      }
    }
  }
  for (const n of nodes.values()) if (n.parent && roots.has(rootOf(n))) n.parent.children.push(n);
  const when = (n) => Date.parse(n.data.created_at) || 0;
  const sort = (list) => list.sort((a, b) => when(a) - when(b) || (a.type === 'sandbox') - (b.type === 'sandbox'));
  for (const n of nodes.values()) sort(n.children);
  return sort([...roots]);
}

// x by generation, y by leaf order (a parent in the middle of its children).
function layout(roots) {
  let leaf = 0;
  let depth = 0;
  const placed = [];
  const place = (n, d) => {
    n.depth = d;
    depth = Math.max(depth, d);
    placed.push(n);
    if (!n.children.length) n.row = leaf++;
    else {
      for (const c of n.children) place(c, d + 1);
      n.row = (n.children[0].row + n.children[n.children.length - 1].row) / 2;
    }
  };
  for (const r of roots) {
    place(r, 0);
    leaf += 0.5; // a little air between trees
  }
  for (const n of placed) {
    n.x = PAD + n.depth * COL;
    n.y = PAD + n.row * ROW;
  }
  return { placed, width: PAD * 2 + depth * COL + 130, height: PAD * 2 + Math.max(0, leaf - 1.5) * ROW + 30 };
}

function describe(n) {
  if (n.type === 'sandbox') return `Sandbox ${n.data.id}, ${n.data.state}`;
  const s = n.data;
  return `Snapshot ${s.id}, ${s.label || 'no label'}, ${rolling(s) ? 'rolling' : 'manual'}, ${bytes(s.bytes_exclusive)}, of ${s.sandbox_id || 'no sandbox'}`;
}

function draw(roots, current, head, onPick) {
  const { placed, width, height } = layout(roots);
  const edges = svg('g', { class: 'edges' });
  const dots = svg('g', { class: 'nodes' });
  for (const n of placed) {
    if (n.parent) {
      const p = n.parent;
      const mid = (p.x + n.x) / 2;
      const fork = n.type === 'snapshot' ? n.data.sandbox_id !== p.data.sandbox_id : n.data.id !== p.data.sandbox_id;
      edges.append(svg('path', { d: `M${p.x},${p.y} C${mid},${p.y} ${mid},${n.y} ${n.x},${n.y}`, class: fork ? 'edge fork' : 'edge' }));
    }
    const g = svg('g', {
      class: 'node ' + n.type,
      transform: `translate(${n.x},${n.y})`,
      tabindex: '0',
      role: 'button',
      'aria-label': describe(n),
      'data-node': n.type === 'sandbox' ? n.data.id : n.id,
    });
    g.append(svg('title', {}, document.createTextNode(describe(n))));
    if (n.type === 'sandbox') {
      const mine = n.data.id === current;
      g.classList.add(n.data.state);
      if (mine) g.classList.add('current');
      g.append(svg('rect', { x: -6, y: -13, width: 128, height: 26, rx: 6 }));
      const t = svg('text', { x: 58, y: 4, 'text-anchor': 'middle' });
      t.textContent = short(n.data.id, 13) + (mine ? ' ◀' : '');
      g.append(t);
      const s = svg('text', { x: 58, y: 26, 'text-anchor': 'middle', class: 'sub' });
      s.textContent = n.data.state;
      g.append(s);
    } else {
      const s = n.data;
      g.classList.add(rolling(s) ? 'rolling' : 'manual');
      if (s.state !== 'ready') g.classList.add('pending');
      if (s.id === head) g.classList.add('head');
      g.append(svg('circle', { r: rolling(s) ? 6 : 9 }));
      const t = svg('text', { y: -15, 'text-anchor': 'middle' });
      t.textContent = short(s.label || '(no label)', 18);
      g.append(t);
      const z = svg('text', { y: 24, 'text-anchor': 'middle', class: 'sub' });
      z.textContent = bytes(s.bytes_exclusive);
      g.append(z);
    }
    const pick = () => onPick(n, g);
    g.addEventListener('click', pick);
    g.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' || ev.key === ' ') {
        ev.preventDefault();
        pick();
      }
    });
    dots.append(g);
  }
  return svg(
    'svg',
    { width, height, viewBox: `0 0 ${width} ${height}`, role: 'group', 'aria-label': 'History: snapshots and forks', class: 'history-tree' },
    edges,
    dots,
  );
}

// The history section of the sandbox page. act(label, fn) runs an action the way the page's
// other buttons do (status line, then a reload of the page). Returns {refresh(sb)}.
export function renderHistory(box, me, act) {
  const picture = el('div', { class: 'history-scroll' });
  const panel = el('div', { class: 'history-node', 'aria-live': 'polite' });
  const legend = el('p', { class: 'legend', text: '● manual snapshot · ○ rolling · ▭ a sandbox now · dashed: a fork · ringed: where the sandbox is now' });
  box.replaceChildren(el('h2', { text: 'History' }), legend, picture, panel);
  let selected = null;
  let current = null;
  let live = new Set();

  function showNode(n) {
    selected = n.type === 'sandbox' ? n.data.id : n.id;
    for (const g of picture.querySelectorAll('.node.selected')) g.classList.remove('selected');
    const g = picture.querySelector(`[data-node="${selected}"]`);
    if (g) g.classList.add('selected');
    const rows = [];
    const buttons = [];
    if (n.type === 'sandbox') {
      const sb = n.data;
      rows.push(['Sandbox', sb.id], ['State', sb.state], ['Created', `${sb.created_at} (${age(sb.created_at)} ago)`]);
      if (sb.id !== current.id) buttons.push(el('a', { href: '#/sandboxes/' + sb.id, text: 'Open ' + sb.id }));
    } else {
      const s = n.data;
      rows.push(
        ['Snapshot', s.id],
        ['Label', s.label || '(none)'],
        ['Kind', (rolling(s) ? 'rolling' : 'manual') + ', ' + s.kind],
        ['Adds', bytes(s.bytes_exclusive)],
        ['Of', s.sandbox_id || '(no sandbox)'],
        ['State', s.state],
        ['Created', `${s.created_at} (${age(s.created_at)} ago)`],
      );
      const usable = s.state === 'ready' && ['running', 'paused', 'stopped'].includes(current.state);
      if (may(me, 'sandbox.write') && s.state === 'ready' && s.sandbox_id === current.id && usable)
        buttons.push(
          el('button', {
            type: 'button',
            text: 'Restore to this',
            'aria-label': 'Restore to ' + s.id,
            onclick: () => {
              if (confirm(`Restore ${current.id} to ${s.id}? Its processes end and later changes are left behind.`))
                act('Restore', () => api('POST', `/v1/sandboxes/${current.id}/restore?wait=true`, { snapshot_id: s.id }), { restored: true });
            },
          }),
        );
      if (may(me, 'sandbox.write') && s.state === 'ready' && live.has(s.sandbox_id))
        buttons.push(
          el('button', {
            type: 'button',
            text: 'Fork from this',
            'aria-label': 'Fork from ' + s.id,
            onclick: () =>
              act('Fork', async () => {
                const r = await api('POST', `/v1/sandboxes/${s.sandbox_id}/fork?wait=true`, { snapshot_id: s.id });
                const child = r.sandboxes && r.sandboxes[0];
                return child ? 'Forked: ' + child.id : null;
              }),
          }),
        );
    }
    panel.replaceChildren(
      el('dl', { class: 'details' }, ...rows.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: String(v) })])),
      el('div', { class: 'actions', role: 'group', 'aria-label': 'Node actions' }, ...buttons),
    );
  }

  async function refresh(sb) {
    current = sb;
    const q = '?project=' + encodeURIComponent(sb.project);
    const [sandboxes, snapshots] = await Promise.all([all('/v1/sandboxes' + q, 'sandboxes'), all('/v1/snapshots' + q, 'snapshots')]);
    live = new Set(sandboxes.filter((x) => !['destroying', 'destroyed', 'failed'].includes(x.state)).map((x) => x.id));
    if (!sandboxes.some((x) => x.id === sb.id)) sandboxes.push(sb);
    const roots = buildTree(sandboxes, snapshots, sb.id);
    const head = sb.lineage && sb.lineage.head_snapshot_id;
    let again = null;
    const tree = draw(roots, sb.id, head, (n) => showNode(n));
    picture.replaceChildren(tree);
    if (selected) {
      const g = tree.querySelector(`[data-node="${selected}"]`);
      if (g) again = g;
    }
    if (again) again.dispatchEvent(new Event('click'));
    else panel.replaceChildren(el('p', { class: 'muted', text: 'Choose a node for its details, restore and fork.' }));
  }

  return { refresh };
}
