// console-bench's browser half (bench/console_bench.py starts spaced and the sandboxes):
// Debian's Chromium, headless, driven by playwright-core from tests/console/node_modules.
//   1. first render of the sandbox list: a navigation to /console#/sandboxes until its table
//      holds every sandbox (CONSOLE_BENCH_SANDBOXES rows), against, in the same page and
//      the same round, the API's own answer (fetch of GET /v1/sandboxes, every page) alone;
//   2. keystroke echo: a key pressed in the terminal until the terminal's rows show it,
//      against a bare POST of one byte to the shell's stdin from the same page.
// Prints one JSON object: {"render": {"page": [ms...], "api": [ms...]}, "echo": {...}}.
import { createRequire } from 'node:module';

// playwright-core as the console tests installed it (tests/console/node_modules)
const { chromium } = createRequire(process.env.CONSOLE_BENCH_MODULES + '/')('playwright-core');

const BASE = process.env.SPACE_URL;
const KEY = process.env.SPACE_ADMIN_KEY;
const N = Number(process.env.CONSOLE_BENCH_SANDBOXES);
const SANDBOX = process.env.CONSOLE_BENCH_SANDBOX;
const RENDERS = Number(process.env.CONSOLE_BENCH_RENDERS || 20);
const KEYS = Number(process.env.CONSOLE_BENCH_KEYS || 200);
const TOKEN = process.env.CONSOLE_BENCH_TOKEN; // a data-plane session's attach token, as the terminal holds one

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
await page.goto(BASE + '/console');
await page.getByLabel('API key').fill(KEY);
await page.getByRole('button', { name: 'Sign in', exact: true }).click();
await page.getByRole('heading', { name: 'Sandboxes' }).waitFor();

const out = { render: { page: [], api: [] }, echo: { terminal: [], stdin: [] } };

for (let i = 0; i < RENDERS; i++) {
  // the API alone: every page of the list, parsed, as the page's first answer would be
  out.render.api.push(
    await page.evaluate(async () => {
      const t0 = performance.now();
      let cursor = null;
      do {
        const r = await fetch('/v1/sandboxes?limit=1000' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''), { credentials: 'same-origin' });
        const j = await r.json();
        cursor = j.next_cursor;
      } while (cursor);
      return performance.now() - t0;
    }),
  );
  await page.goto('about:blank');
  const t0 = Date.now();
  await page.goto(BASE + '/console#/sandboxes');
  await page.waitForFunction((n) => document.querySelectorAll('table.sandboxes tbody tr').length >= n, N, { polling: 'raf', timeout: 60000 });
  out.render.page.push(Date.now() - t0);
}

console.log(JSON.stringify({ render: out.render }));

// The terminal of one running sandbox: a shell that echoes what is typed.
await page.goto(BASE + '/console#/sandboxes/' + SANDBOX);
await page.locator('.xterm-rows').waitFor();
await page.locator('.xterm').scrollIntoViewIfNeeded();
await page.waitForFunction(() => [...document.querySelectorAll('.xterm-rows > div')].some((r) => /[#$]\s*$/.test(r.textContent.replace(/\u00a0/g, ' '))), null, { timeout: 30000 });
await page.locator('.xterm').click();
const command = await page.locator('.xterm-host').getAttribute('data-command');
// In the page: the time from the key's keydown to the first paint of the rows that shows
// one more of the typed letter.
await page.evaluate(() => {
  window.__echo = [];
  const host = document.querySelector('.xterm-host');
  const count = () => ((document.querySelector('.xterm-rows') || host).textContent.match(/q/g) || []).length;
  let want = null;
  let t0 = 0;
  document.addEventListener('keydown', () => { t0 = performance.now(); want = count() + 1; }, true);
  new MutationObserver(() => {
    if (want !== null && count() >= want) { window.__echo.push(performance.now() - t0); want = null; }
  }).observe(host, { childList: true, subtree: true, characterData: true });
});
for (let i = 0; i < KEYS; i++) {
  if (i % 60 === 59) { await page.keyboard.press('Control+U'); await page.waitForTimeout(50); }
  const before = await page.evaluate(() => window.__echo.length);
  await page.keyboard.press('q');
  await page.waitForFunction((b) => window.__echo.length > b, before, { polling: 'raf', timeout: 30000 });
  // the same sandbox's stdin, one byte, from the page (the network and spaced part alone);
  // NUL is ignored by the shell's line editor and prints nothing
  out.echo.stdin.push(
    await page.evaluate(async ([sb, cmd, token]) => {
      const t0 = performance.now();
      const r = await fetch(`/v1/sandboxes/${sb}/commands/${cmd}/stdin`, {
        method: 'POST',
        body: new Uint8Array([0]),
        headers: { 'Content-Type': 'application/octet-stream', Authorization: 'Bearer ' + token },
        credentials: 'omit',
      });
      await r.arrayBuffer();
      if (r.status !== 204) throw new Error('stdin answered ' + r.status);
      return performance.now() - t0;
    }, [SANDBOX, command, TOKEN]),
  );
}
out.echo.terminal = await page.evaluate(() => window.__echo);
console.log(JSON.stringify(out));
await browser.close();
