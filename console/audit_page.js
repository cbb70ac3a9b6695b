// The audit log (GET /v1/audit, key.read: owners and admins), filtered as the route filters
// (action, target, key, project, since, until); the rows that match, oldest first from the
// store, are shown newest first (at most 10 pages of 1000: narrow with since).
import { renderListPage } from './pages.js';

export function renderAudit(root) {
  return renderListPage(root, {
    title: 'Audit',
    route: '/v1/audit',
    member: 'audit',
    pages: 10,
    newestFirst: true,
    filters: [
      ['action', 'Action', 'sandbox.create'],
      ['target', 'Target', 'sb-…'],
      ['key_id', 'Key', 'key-…'],
      ['project', 'Project', ''],
      ['since', 'Since', '2026-12-01T00:00:00Z'],
      ['until', 'Until', ''],
    ],
    rowAttrs: (a) => ({ 'data-audit': a.id }),
    columns: [
      ['Time', (a) => a.time],
      ['Action', (a) => a.action],
      ['Target', (a) => a.target],
      ['Status', (a) => a.status + (a.error_code ? ' ' + a.error_code : '')],
      ['Key', (a) => a.key_id],
      ['Project', (a) => a.project],
      ['Role', (a) => a.role],
      ['Method', (a) => a.method],
      ['Source', (a) => a.source],
    ],
  });
}
