// A sandbox's egress (docs/network.md): its profile and its own allow/deny rules
// (GET …/network), editable with sandbox.write (PUT …/network: rules can only narrow the
// profile; the server says why a rule is refused), and, for a key that reads the audit log
// (key.read), the last 20 connections the egress gateway decided
// (GET /v1/audit?action=egress.connection&target=<id>).
import { api } from './api.js';
import { el, may } from './pages.js';

const SHOWN = 20;

function lines(text) {
  return text.split('\n').map((l) => l.trim()).filter(Boolean);
}

export function renderNetwork(box, me, id) {
  const summary = el('p', { class: 'network-profile' });
  const allow = el('textarea', { id: 'net-allow', rows: 3, cols: 28, spellcheck: 'false', placeholder: '*.pypi.org:443' });
  const deny = el('textarea', { id: 'net-deny', rows: 3, cols: 28, spellcheck: 'false', placeholder: 'example.com' });
  const error = el('p', { class: 'error', role: 'alert' });
  const conns = el('div', { class: 'scroll' });
  let net = null;
  const form = el('form', {
    class: 'network-form',
    'aria-label': 'Egress rules',
    onsubmit: async (ev) => {
      ev.preventDefault();
      error.textContent = '';
      try {
        net = await api('PUT', `/v1/sandboxes/${id}/network`, { profile: net.profile, allow: lines(allow.value), deny: lines(deny.value) });
        show();
        error.textContent = 'Saved: new connections follow these rules.';
      } catch (e) {
        error.textContent = 'Network: ' + e.message;
      }
    },
  },
  el('label', { for: 'net-allow', text: 'Allow (one rule a line; empty: all the profile allows)' }), allow,
  el('label', { for: 'net-deny', text: 'Deny' }), deny,
  el('button', { type: 'submit', text: 'Save rules' }));
  const editable = may(me, 'sandbox.write');
  box.replaceChildren(el('h2', { text: 'Network' }), summary, ...(editable ? [form] : []), error, conns);

  function show() {
    summary.textContent = `Profile ${net.profile}` + (net.allow.length ? ` · allow ${net.allow.join(', ')}` : '') + (net.deny.length ? ` · deny ${net.deny.join(', ')}` : '');
    allow.value = net.allow.join('\n');
    deny.value = net.deny.join('\n');
    form.hidden = net.profile === 'none';
  }

  async function connections() {
    if (!may(me, 'key.read')) return;
    const r = await api('GET', `/v1/audit?action=egress.connection&target=${encodeURIComponent(id)}&limit=1000`);
    const rows = r.audit.slice(-SHOWN).reverse();
    if (!rows.length) return conns.replaceChildren(el('p', { text: 'No connections yet.' }));
    conns.replaceChildren(el('table', { class: 'sandboxes', 'aria-label': 'Connections' },
      el('thead', {}, el('tr', {}, ...['Time', 'Name', 'Port', 'Decision', 'Bytes out/in'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, ...rows.map((a) => {
        const d = a.detail || {};
        return el('tr', { 'data-connection': a.id, 'data-decision': d.decision || '' },
          el('td', { text: a.time }), el('td', { text: d.name || d.dst || '' }), el('td', { text: String(d.port ?? '') }),
          el('td', { text: (d.decision || '') + (d.reason ? ' (' + d.reason + ')' : '') }),
          el('td', { text: `${d.bytes_out ?? 0} / ${d.bytes_in ?? 0}` }));
      }))));
  }

  async function refresh() {
    try {
      net = await api('GET', `/v1/sandboxes/${id}/network`);
      show();
      await connections();
    } catch (e) {
      error.textContent = 'Network: ' + e.message;
    }
  }
  refresh();
  return { refresh };
}
