// The console's entry: who is signed in, then the page the location's hash names
// (#/ the sandboxes, #/sandboxes/<id> one sandbox). docs/console.md.
import { api, ApiError, setCsrf } from './api.js';
import { renderSignIn } from './pages.js';
import { renderSandboxList } from './sandbox_list.js';
import { renderSandbox } from './sandbox_page.js';

const main = document.getElementById('main');
const who = document.getElementById('who');
const signOut = document.getElementById('sign-out');
let me = null;
let leave = null; // what the current page stops (timers, streams) when another one opens

export function status(text) {
  document.getElementById('status').textContent = text || '';
}

function showCaller() {
  who.textContent = me ? `${me.role} · ${me.project} · ${me.key_id}` : '';
  signOut.hidden = !me;
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
  const m = location.hash.match(/^#\/sandboxes\/([A-Za-z0-9_-]+)$/);
  leave = m ? renderSandbox(main, me, m[1]) : renderSandboxList(main, me);
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
