// The approvals inbox (GET /v1/approvals, project.read): commands a require_approval rule
// holds (docs/governance.md), pending ones first shown (the State filter starts at
// "pending"; empty shows every state), read again every 2 s. A key with approval.write
// approves or denies one, with the comment of the field above the list; the key that asked
// gets no buttons (the server refuses it anyway: 403).
import { api } from './api.js';
import { el, may, age, say, renderListPage } from './pages.js';

export function renderApprovals(root, me) {
  let leave = null;
  const comment = el('input', { id: 'approval-comment', type: 'text', size: 28, placeholder: 'why (kept with the decision)', spellcheck: 'false' });
  const decide = (a, verdict) =>
    api('POST', `/v1/approvals/${a.id}/${verdict}`, comment.value.trim() ? { comment: comment.value.trim() } : {}).then(
      () => {
        say(`${a.id} ${verdict === 'approve' ? 'approved' : 'denied'}`);
        leave.refresh();
      },
      (e) => say(`${verdict === 'approve' ? 'Approve' : 'Deny'}: ${e.message}`),
    );
  const buttons = (a) => {
    if (a.state !== 'pending' || !may(me, 'approval.write') || a.requested_by === me.key_id) return '';
    return el('span', {},
      el('button', { type: 'button', text: 'Approve', 'aria-label': 'Approve ' + a.id, onclick: () => decide(a, 'approve') }), ' ',
      el('button', { type: 'button', class: 'danger', text: 'Deny', 'aria-label': 'Deny ' + a.id, onclick: () => decide(a, 'deny') }));
  };
  // age() counts back from now; a deadline counts forward.
  const until = (iso) => age(new Date(2 * Date.now() - Date.parse(iso)).toISOString());
  const argv = (a) => (a.command && Array.isArray(a.command.argv) ? a.command.argv.join(' ') : '');
  leave = renderListPage(root, {
    title: 'Approvals',
    route: '/v1/approvals',
    member: 'approvals',
    pages: 10,
    newestFirst: true,
    filters: [['state', 'State', 'pending, approved, …', 'pending'], ['project', 'Project', '']],
    everyMs: 2000,
    actions: may(me, 'approval.write') ? el('span', {}, el('label', { for: 'approval-comment', text: 'Comment' }), ' ', comment) : null,
    rowAttrs: (a) => ({ 'data-approval': a.id, 'data-state': a.state }),
    columns: [
      ['Approval', (a) => a.id],
      ['Decide', buttons],
      ['Sandbox', (a) => el('a', { href: '#/sandboxes/' + a.sandbox_id, text: a.sandbox_id })],
      ['Command', (a) => el('code', { text: argv(a) })],
      ['Rule', (a) => `${a.policy_id} · ${a.rule_id || 'default'}`],
      ['Reason', (a) => a.reason],
      ['Asked by', (a) => a.requested_by || 'envd'],
      ['State', (a) => a.state + (a.decided_by ? ' by ' + a.decided_by : '') + (a.comment ? ` (${a.comment})` : '')],
      ['Asked', (a) => age(a.created_at) + ' ago'],
      ['Expires', (a) => (a.state === 'pending' ? 'in ' + until(a.expires_at) : '')],
    ],
  });
  return leave;
}
