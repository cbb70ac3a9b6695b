// A shell on a pseudo-terminal of the sandbox, in xterm.js: a streamed command with a tty
// (docs/api.md, data plane), its output read from the command's event stream, keystrokes
// sent to its stdin in order, the window size sent on every resize. A stream that breaks
// is reopened after the last event seen (Last-Event-ID), so no output is lost or repeated.
import { Terminal } from './xterm.mjs';
import { FitAddon } from './addon-fit.mjs';
import { answer } from './api.js';
import { readEvents, bytesOf } from './sse.js';

export function openTerminal(box, plane) {
  const host = document.createElement('div');
  host.className = 'xterm-host';
  host.setAttribute('aria-label', 'Terminal');
  box.replaceChildren(host);
  const term = new Terminal({ cursorBlink: true, fontSize: 14, scrollback: 5000, convertEol: false });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(host);
  fit.fit();
  let closed = false;
  let command = null;
  let lastId = 0;
  let pending = '';
  let sending = null;
  const abort = new AbortController();

  async function start() {
    const c = await plane.call('POST', '/commands', {
      cmd: ['/bin/sh'],
      env: { TERM: 'xterm-256color' },
      stdin: true,
      tty: { cols: term.cols, rows: term.rows },
      tag: 'console',
    });
    command = c.command_id;
    host.dataset.command = command;
    read();
  }

  // One stream of events at a time; reopened after the last id when it ends early.
  async function read() {
    while (!closed) {
      let done = false;
      try {
        const r = await plane.raw('GET', `/commands/${command}/events`, {
          headers: lastId ? { 'Last-Event-ID': String(lastId) } : {},
          signal: abort.signal,
        });
        if (!r.ok) await answer(r);
        await readEvents(r, (ev) => (done = handle(ev) || done));
      } catch (e) {
        if (closed) return;
        term.write(`\r\n\x1b[31m[${e.message}: reconnecting]\x1b[0m\r\n`);
      }
      if (done) return;
      await new Promise((res) => setTimeout(res, 500));
    }
  }

  // True when the stream is over for good.
  function handle(ev) {
    if (ev.id) lastId = Number(ev.id);
    const d = JSON.parse(ev.data);
    if (ev.event === 'pty' || ev.event === 'stdout' || ev.event === 'stderr') term.write(bytesOf(d.data));
    else if (ev.event === 'exit' || ev.event === 'gone') {
      term.write(`\r\n[the shell ended${d.exit_code !== undefined && d.exit_code !== null ? ': exit ' + d.exit_code : ''}]\r\n`);
      return true;
    }
    return false;
  }

  // Keystrokes go in order: what is typed while one request is out goes in the next.
  async function flush() {
    if (sending || !pending || !command) return;
    const data = pending;
    pending = '';
    sending = plane
      .raw('POST', `/commands/${command}/stdin`, { body: data, headers: { 'Content-Type': 'application/octet-stream' } })
      .then(answer)
      .catch((e) => term.write(`\r\n\x1b[31m[input: ${e.message}]\x1b[0m\r\n`))
      .finally(() => {
        sending = null;
        flush();
      });
  }

  term.onData((d) => {
    pending += d;
    flush();
  });
  term.onResize(({ cols, rows }) => {
    if (command) plane.call('POST', `/commands/${command}/resize`, { cols, rows }).catch(() => {});
  });
  const onWindow = () => fit.fit();
  window.addEventListener('resize', onWindow);
  start().catch((e) => term.write(`\x1b[31m[cannot start a shell: ${e.message}]\x1b[0m\r\n`));
  term.focus();

  return {
    term,
    // hangup: end the shell too (leaving the page of a running sandbox)
    close(hangup) {
      closed = true;
      abort.abort();
      window.removeEventListener('resize', onWindow);
      if (hangup && command) plane.call('POST', `/commands/${command}/signal`, { signal: 'HUP' }).catch(() => {});
      term.dispose();
    },
  };
}
