// The console's entry: who is signed in, then the page the location's hash names
// (#/ the sandboxes, #/sandboxes/<id> one sandbox, #/templates, #/builds/<op>, #/operations,
// #/approvals, #/audit, #/keys, #/projects). docs/console.md. The navigation shows a page only to a key
// whose permissions its route needs; the server refuses the rest anyway.
import { api, ApiError, setCsrf } from './api.js';
import { renderSignIn } from './pages.js';
import { renderSandboxList } from './sandbox_list.js';
import { renderSandbox } from './sandbox_page.js';
import { renderTemplates, renderBuild } from './templates_page.js';
import { renderOperations } from './operations_page.js';
import { renderAudit } from './audit_page.js';
import { renderApprovals } from './approvals_page.js';
import { renderKeys, renderProjects } from './keys_page.js';

// hash, label, the permission its list needs
const PAGES = [
  ['#/', 'Sandboxes', 'sandbox.read'],
  ['#/templates', 'Templates', 'template.read'],
  ['#/operations', 'Operations', 'operation.read'],
  ['#/approvals', 'Approvals', 'project.read'],
  ['#/audit', 'Audit', 'key.read'],
  ['#/keys', 'Keys', 'key.read'],
  ['#/projects', 'Projects', 'platform'],
];

const main = document.getElementById('main');
const who = document.getElementById('who');
const signOut = document.getElementById('sign-out');
const nav = document.getElementById('nav');
let me = null;
let leave = null; // what the current page stops (timers, streams) when another one opens

export function status(text) {
  document.getElementById('status').textContent = text || '';
}

function showCaller() {
  who.textContent = me ? `${me.role} · ${me.project} · ${me.key_id}` : '';
  signOut.hidden = !me;
  nav.replaceChildren(
    ...(me ? PAGES.filter(([, , perm]) => me.permissions.includes(perm)) : []).map(([hash, label]) => {
      const a = document.createElement('a');
      a.href = hash;
      a.textContent = label;
      return a;
    }),
  );
  markPage();
}

function markPage() {
  const here = location.hash || '#/';
  for (const a of nav.querySelectorAll('a')) {
    const h = a.getAttribute('href');
    if (h === here || (h !== '#/' && here.startsWith(h + '/')) || (h === '#/templates' && here.startsWith('#/builds/'))) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

async function whoAmI() {
  try {
    me = await api('GET', '/v1/console/session');
    setCsrf(me.session ? me.session.csrf_token : null);
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401) throw e;
    me = null;
    setCsrf(null);
  }
  showCaller();
}

async function route() {
  if (leave) leave();
  leave = null;
  main.replaceChildren();
  status('');
  if (!me) {
    renderSignIn(main, async (caller) => {
      me = caller;
      setCsrf(caller.session.csrf_token);
      showCaller();
      if (location.hash !== '#/') location.hash = '#/';
      else route();
    });
    return;
  }
  markPage();
  const h = location.hash;
  let m;
  if ((m = h.match(/^#\/sandboxes\/([A-Za-z0-9_-]+)$/))) leave = renderSandbox(main, me, m[1]);
  else if ((m = h.match(/^#\/builds\/([A-Za-z0-9_-]+)$/))) leave = renderBuild(main, me, m[1]);
  else if (h === '#/templates') leave = renderTemplates(main, me);
  else if (h === '#/operations') leave = renderOperations(main, me);
  else if (h === '#/approvals') leave = renderApprovals(main, me);
  else if (h === '#/audit') leave = renderAudit(main, me);
  else if (h === '#/keys') leave = renderKeys(main, me);
  else if (h === '#/projects') leave = renderProjects(main, me);
  else leave = renderSandboxList(main, me);
}

signOut.addEventListener('click', async () => {
  try {
    await api('DELETE', '/v1/console/session');
  } catch (e) {
    status('Sign-out: ' + e.message);
  }
  me = null;
  setCsrf(null);
  showCaller();
  route();
});

// A call refused with 401 (the session expired, or signed out elsewhere): sign in again.
window.addEventListener('unhandledrejection', (ev) => {
  if (ev.reason instanceof ApiError && ev.reason.status === 401) {
    me = null;
    showCaller();
    route();
  }
});

window.addEventListener('hashchange', route);
whoAmI().then(route, (e) => status('Cannot reach spaced: ' + e.message));
