// Keys (key.read; create and delete with key.write) and projects (the platform's). A new
// key's secret is shown once, in the page only, as the API answers it; nothing keeps it.
import { api } from './api.js';
import { el, may, age, say, field, renderListPage } from './pages.js';

const ROLES = ['viewer', 'developer', 'owner', 'admin'];

export function renderKeys(root, me) {
  const secret = el('p', { class: 'secret', 'aria-live': 'polite' });
  const name = el('input', { type: 'text', required: true, size: 14, spellcheck: 'false' });
  const role = el('select', {}, ...ROLES.map((r) => el('option', { value: r, text: r })));
  const form = may(me, 'key.write')
    ? el(
        'form',
        {
          class: 'bar',
          'aria-label': 'New key',
          onsubmit: async (ev) => {
            ev.preventDefault();
            secret.textContent = '';
            try {
              const k = await api('POST', '/v1/keys', { name: name.value, role: role.value });
              secret.textContent = `New key ${k.id}: ${k.secret} (shown once: copy it now)`;
              name.value = '';
              leave.refresh();
            } catch (e) {
              say('New key: ' + e.message);
            }
          },
        },
        ...field('key-name', 'Name', name),
        ...field('key-role', 'Role', role),
        el('button', { type: 'submit', text: 'Create key' }),
      )
    : null;
  const leave = renderListPage(root, {
    title: 'Keys',
    route: '/v1/keys',
    member: 'keys',
    filters: may(me, 'platform') ? [['project', 'Project', 'all']] : [],
    actions: form,
    rowAttrs: (k) => ({ 'data-key': k.id }),
    columns: [
      ['Key', (k) => k.id + (k.id === me.key_id ? ' (this one)' : '')],
      ['Name', (k) => k.name],
      ['Project', (k) => k.project],
      ['Role', (k) => k.role],
      ['Created', (k) => age(k.created_at) + ' ago'],
      ['Last used', (k) => (k.last_used_at ? age(k.last_used_at) + ' ago' : 'never')],
      ['Expires', (k) => k.expires_at || 'never'],
      ['', (k) =>
        may(me, 'key.write') && k.id !== me.key_id
          ? el('button', {
              type: 'button',
              class: 'danger',
              text: 'Delete',
              'aria-label': 'Delete ' + k.id,
              onclick: () => {
                if (confirm(`Delete ${k.id} (${k.name})? Whoever holds it is refused from now on.`))
                  api('DELETE', '/v1/keys/' + k.id).then(() => leave.refresh(), (e) => say('Delete: ' + e.message));
              },
            })
          : ''],
    ],
  });
  root.insertBefore(secret, root.children[1] || null);
  return leave;
}

export function renderProjects(root, me) {
  const id = el('input', { type: 'text', required: true, size: 14, spellcheck: 'false' });
  const form = may(me, 'platform')
    ? el(
        'form',
        {
          class: 'bar',
          'aria-label': 'New project',
          onsubmit: async (ev) => {
            ev.preventDefault();
            try {
              await api('POST', '/v1/projects', { id: id.value });
              id.value = '';
              leave.refresh();
            } catch (e) {
              say('New project: ' + e.message);
            }
          },
        },
        ...field('project-id', 'Id', id),
        el('button', { type: 'submit', text: 'Create project' }),
      )
    : null;
  const leave = renderListPage(root, {
    title: 'Projects',
    route: '/v1/projects',
    member: 'projects',
    pages: 10,
    filters: [],
    actions: form,
    rowAttrs: (p) => ({ 'data-project': p.id }),
    columns: [
      ['Project', (p) => p.id],
      ['Created', (p) => p.created_at],
    ],
  });
  return leave;
}
