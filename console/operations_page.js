// Operations (GET /v1/operations: newest first), filtered by target and state, read again
// every 2 s; a running or pending build can be cancelled (operation.write), its log opened.
import { api } from './api.js';
import { el, may, age, say, renderListPage } from './pages.js';

export function renderOperations(root, me) {
  let leave = null;
  const link = (target) => (/^sb-/.test(target) ? el('a', { href: '#/sandboxes/' + target, text: target }) : target);
  leave = renderListPage(root, {
    title: 'Operations',
    route: '/v1/operations',
    member: 'operations',
    filters: [['target', 'Target', 'sb-… or a template'], ['state', 'State', 'running']],
    everyMs: 2000,
    rowAttrs: (op) => ({ 'data-operation': op.id }),
    columns: [
      ['Operation', (op) => op.id],
      ['Kind', (op) => op.kind],
      ['Target', (op) => link(op.target)],
      ['State', (op) => op.state],
      ['Created', (op) => age(op.created_at) + ' ago'],
      ['Took', (op) => (op.finished_at && op.started_at ? ((Date.parse(op.finished_at) - Date.parse(op.started_at)) / 1000).toFixed(1) + ' s' : '')],
      ['Error', (op) => (op.error ? `${op.error.code}: ${op.error.message}` : '')],
      ['', (op) => {
        if (op.kind !== 'template.build') return '';
        const log = el('a', { href: '#/builds/' + op.id, text: 'log', 'aria-label': 'Build log of ' + op.id });
        if (!may(me, 'operation.write') || !['pending', 'running'].includes(op.state)) return log;
        return el('span', {}, log, ' ', el('button', {
          type: 'button',
          class: 'danger',
          text: 'Cancel',
          'aria-label': 'Cancel ' + op.id,
          onclick: () => api('POST', `/v1/operations/${op.id}/cancel`, {}).then(() => leave.refresh(), (e) => say('Cancel: ' + e.message)),
        }));
      }],
    ],
  });
  return leave;
}
