// One sandbox: details, lifecycle buttons, snapshot and fork, its history (the tree of
// snapshots and forks, history.js), a terminal and its files, its commands (commands.js)
// and its network (network_card.js).
// A button is shown only when the caller's key has the permission its route needs
// (docs/tenancy.md); the server refuses anyway.
import { api, DataPlane } from './api.js';
import { el, may, age } from './pages.js';
import { openTerminal } from './terminal.js';
import { renderFiles } from './files.js';
import { renderHistory } from './history.js';
import { renderCommands } from './commands.js';
import { renderNetwork } from './network_card.js';

const ACTIONS = [
  // label, route, the states it applies to
  ['Pause', 'pause', ['running']],
  ['Resume', 'resume', ['paused']],
  ['Stop', 'stop', ['running', 'paused']],
  ['Start', 'start', ['stopped']],
];

function say(text) {
  document.getElementById('status').textContent = text;
}

export function renderSandbox(root, me, id) {
  const path = '/v1/sandboxes/' + id;
  const details = el('dl', { class: 'details' });
  const actions = el('div', { class: 'actions', role: 'group', 'aria-label': 'Sandbox actions' });
  const historyBox = el('section', { class: 'card history', 'aria-label': 'History' });
  const termBox = el('section', { class: 'terminal', 'aria-label': 'Terminal' });
  const filesBox = el('section', { class: 'files', 'aria-label': 'Files' });
  const commandsBox = el('section', { class: 'card wide', 'aria-label': 'Commands' });
  const networkBox = el('section', { class: 'card wide', 'aria-label': 'Network' });
  root.append(
    el('div', { class: 'bar' }, el('a', { href: '#/', text: '← Sandboxes' }), el('h1', { text: id })),
    el('div', { class: 'sandbox-grid' },
      el('section', { class: 'card', 'aria-label': 'Details' }, el('h2', { text: 'Details' }), details, actions),
      termBox, historyBox, filesBox, commandsBox, networkBox),
  );
  const plane = may(me, 'sandbox.exec') ? new DataPlane(id) : null;
  let sb = null;
  let busy = false; // an action (act) is under way
  let terminal = null;
  let files = null;
  let gone = false;
  const history = may(me, 'snapshot.read') ? renderHistory(historyBox, me, act) : null;
  // Not while an action runs: a restore or a pause changes the state under the list's feet.
  const commands = plane ? renderCommands(commandsBox, plane, () => !busy && sb !== null && sb.state === 'running') : null;
  if (!commands) commandsBox.replaceChildren(el('h2', { text: 'Commands' }), el('p', { text: 'This key may not read commands here.' }));
  renderNetwork(networkBox, me, id);
  if (!history) historyBox.replaceChildren(el('h2', { text: 'History' }), el('p', { text: 'This key may not read snapshots.' }));

  // restored: the sandbox's processes were ended (a restore), so its shell is gone: a new one
  // is opened once it runs again.
  async function act(label, fn, { restored = false } = {}) {
    busy = true;
    say(label + '…');
    for (const b of actions.querySelectorAll('button')) b.disabled = true;
    try {
      const said = await fn(); // a string: what to say instead of "done"
      say(typeof said === 'string' ? said : label + ': done');
    } catch (e) {
      say(label + ': ' + e.message);
    }
    if (restored && terminal) {
      terminal.close(false);
      files.close();
      terminal = files = null;
    }
    await load();
    busy = false;
  }

  function button(label, fn) {
    return el('button', { type: 'button', text: label, onclick: () => act(label, fn) });
  }

  function showActions() {
    const list = [];
    if (may(me, 'sandbox.write')) {
      for (const [label, verb, states] of ACTIONS)
        if (states.includes(sb.state)) list.push(button(label, () => api('POST', `${path}/${verb}?wait=true`, {})));
    }
    if (may(me, 'snapshot.write') && ['running', 'paused', 'stopped'].includes(sb.state))
      list.push(button('Snapshot', () => api('POST', `${path}/snapshots?wait=true`, { label: 'console' })));
    if (may(me, 'sandbox.write') && ['running', 'paused', 'stopped'].includes(sb.state))
      list.push(
        button('Fork', async () => {
          const r = await api('POST', `${path}/fork?wait=true`, {});
          const child = r.sandboxes && r.sandboxes[0];
          return child ? 'Forked: ' + child.id : null;
        }),
      );
    if (may(me, 'sandbox.write') && sb.state !== 'destroyed')
      list.push(
        el('button', {
          type: 'button',
          class: 'danger',
          text: 'Destroy',
          onclick: () => {
            if (confirm(`Destroy ${id}? Its files are gone for good.`)) act('Destroy', () => api('DELETE', `${path}?wait=true`));
          },
        }),
      );
    actions.replaceChildren(...list);
  }

  function showDetails() {
    const rows = [
      ['State', sb.state + (sb.state_reason ? ` (${sb.state_reason})` : '')],
      ['Template', sb.template],
      ['Project', sb.project],
      ['Created', `${sb.created_at} (${age(sb.created_at)} ago)`],
      ['CPUs', sb.resources && sb.resources.cpus],
      ['Memory', sb.resources && sb.resources.memory_mb + ' MiB'],
      ['Parent', sb.lineage && sb.lineage.parent_sandbox_id],
    ];
    details.replaceChildren(
      ...rows.filter(([, v]) => v !== undefined && v !== null && v !== '').flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: String(v) })]),
    );
  }

  async function load() {
    if (gone) return;
    try {
      sb = await api('GET', path);
    } catch (e) {
      say(e.message);
      return;
    }
    showDetails();
    showActions();
    if (history) await history.refresh(sb).catch((e) => say('History: ' + e.message));
    // A paused sandbox keeps its shell (frozen with it); one that stops loses it.
    const live = sb.state === 'running';
    const kept = live || sb.state === 'paused';
    if (plane && live && !terminal) {
      terminal = openTerminal(termBox, plane);
      files = renderFiles(filesBox, plane);
    } else if (!kept && terminal) {
      terminal.close(false);
      files.close();
      terminal = files = null;
      filesBox.replaceChildren();
    }
    if (!terminal)
      termBox.replaceChildren(el('p', { text: plane ? 'The terminal and files need the sandbox running.' : 'This key may not run commands here.' }));
  }

  load();
  return () => {
    gone = true;
    if (terminal) terminal.close(sb && sb.state === 'running');
    if (files) files.close();
    if (commands) commands.close();
  };
}
