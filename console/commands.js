// The streamed commands of a sandbox (GET …/commands on the data plane, docs/api.md; an exec
// answers at once and keeps no record, the terminal's shell is one): the latest 50,
// newest first, read again every 3 s while the sandbox page is open; Output opens one's
// stdout and stderr (its event stream, followed while it runs, from the first record kept).
import { answer } from './api.js';
import { el, age } from './pages.js';
import { readEvents, bytesOf } from './sse.js';

const SHOWN = 50;

function describe(c) {
  const spec = c.spec || {};
  if (spec.shell) return spec.shell;
  if (Array.isArray(spec.cmd)) return spec.cmd.join(' ');
  return c.tag || '';
}

function outcome(c) {
  if (c.state === 'exited') return 'exit ' + c.exit_code + (c.timed_out ? ' (timed out)' : '');
  if (c.state === 'lost') return 'lost' + (c.reason ? ' (' + c.reason + ')' : '');
  return c.state;
}

// live(): whether the sandbox runs now (the list is read only then: the data plane refuses
// a paused or stopped sandbox's).
export function renderCommands(box, plane, live = () => true) {
  const list = el('div', { class: 'scroll' });
  const outTitle = el('h3', { text: '' });
  const out = el('pre', { class: 'command-output', 'aria-label': 'Command output', tabindex: '0' });
  const error = el('p', { class: 'error', role: 'alert' });
  box.replaceChildren(el('h2', { text: 'Commands' }), list, outTitle, out, error);
  let closed = false;
  let timer = null;
  let reading = null; // the AbortController of the output being read

  async function show(c) {
    if (reading) reading.abort();
    const abort = new AbortController();
    reading = abort;
    outTitle.textContent = `Output of ${c.command_id}`;
    out.textContent = '';
    out.dataset.command = c.command_id;
    delete out.dataset.ended;
    const text = new TextDecoder();
    try {
      const r = await plane.raw('GET', `/commands/${c.command_id}/events`, { signal: abort.signal });
      if (!r.ok) await answer(r);
      await readEvents(r, (ev) => {
        const d = JSON.parse(ev.data);
        if (ev.event === 'stdout' || ev.event === 'stderr' || ev.event === 'pty') out.append(text.decode(bytesOf(d.data), { stream: true }));
        else if (ev.event === 'exit' || ev.event === 'gone') {
          out.dataset.ended = ev.event;
          out.append(`\n[${ev.event === 'exit' ? 'exit ' + d.exit_code + (d.reason ? ' ' + d.reason : '') : 'the log is gone'}]\n`);
          return true;
        }
        return false;
      });
    } catch (e) {
      if (!abort.signal.aborted) error.textContent = 'Output: ' + e.message;
    }
  }

  async function refresh() {
    timer = null;
    if (!live()) {
      if (!closed) timer = setTimeout(refresh, 3000);
      return;
    }
    try {
      let rows = [];
      for (let cursor = null, page = 0; page < 20; page++) {
        const r = await plane.call('GET', '/commands?limit=1000' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
        rows = rows.concat(r.commands);
        cursor = r.next_cursor;
        if (!cursor) break;
      }
      if (closed) return;
      rows = rows.slice(-SHOWN).reverse();
      list.replaceChildren(
        el('table', { class: 'sandboxes', 'aria-label': 'Commands' },
          el('thead', {}, el('tr', {}, ...['Command', 'What', 'State', 'Started', ''].map((h) => el('th', { scope: 'col', text: h })))),
          el('tbody', {}, ...rows.map((c) =>
            el('tr', { 'data-command': c.command_id, 'data-state': c.state },
              el('td', { text: c.command_id }),
              el('td', {}, el('code', { text: describe(c) })),
              el('td', { text: outcome(c) }),
              el('td', { text: c.started_at ? age(c.started_at) + ' ago' : '' }),
              el('td', {}, el('button', { type: 'button', text: 'Output', 'aria-label': 'Output of ' + c.command_id, onclick: () => show(c) })))))),
      );
      if (!rows.length) list.replaceChildren(el('p', { text: 'No commands yet.' }));
      error.textContent = '';
    } catch (e) {
      error.textContent = 'Commands: ' + e.message;
    }
    if (!closed) timer = setTimeout(refresh, 3000);
  }

  refresh();
  return {
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      if (reading) reading.abort();
    },
  };
}
