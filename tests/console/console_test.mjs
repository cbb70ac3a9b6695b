// The web console in a real browser (docs/console.md): Debian's Chromium, headless, driven
// by playwright-core against the spaced that run_console_tests.py started. Each check prints
// "ok - name" or "not ok - name: why"; the exit status is 1 when any failed. Screenshots go
// to $CONSOLE_ARTIFACTS. CONSOLE_TEST_ONLY (a regular expression) picks checks by name.
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const BASE = process.env.SPACE_URL;
const ADMIN = process.env.SPACE_ADMIN_KEY;
const VIEWER = process.env.SPACE_VIEWER_KEY;
const OUT = process.env.CONSOLE_ARTIFACTS;
const only = process.env.CONSOLE_TEST_ONLY ? new RegExp(process.env.CONSOLE_TEST_ONLY) : null;
mkdirSync(OUT, { recursive: true });

async function api(method, path, body, key = ADMIN, headers = {}) {
  const h = Object.assign({}, headers);
  if (key) h.Authorization = 'Bearer ' + key;
  if (body !== undefined) h['Content-Type'] = 'application/json';
  const r = await fetch(BASE + path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

let failed = 0;
let stopAt = false; // a failed check that later ones stand on ends the run
async function check(name, fn, { essential = false } = {}) {
  if (stopAt || (only && !only.test(name))) return;
  const t0 = Date.now();
  try {
    await fn();
    console.log(`ok - ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}: ${e && e.stack ? e.stack : e}`);
    if (essential) stopAt = true;
  }
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
const problems = []; // requests elsewhere than spaced, CSP violations, script errors

async function newPage(viewport = { width: 1280, height: 800 }) {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  const page = await context.newPage();
  page.on('request', (r) => {
    if (!r.url().startsWith(BASE + '/') && !r.url().startsWith('blob:' + BASE) && !r.url().startsWith('data:'))
      problems.push('a request elsewhere: ' + r.url());
  });
  page.on('console', (m) => {
    // 4xx answers the tests ask for (a bad audit filter, a viewer refused, a signed-out cookie) are logged by Chromium
    if (m.type() === 'error' && !/status of 40[0134]/.test(m.text())) problems.push('console error: ' + m.text());
  });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  // Which request a 'Failed to load resource' line was about (Chromium's line names no URL).
  page.on('response', (r) => { if (r.status() >= 405 || r.status() === 402) console.log(`# answer ${r.status()} for ${r.request().method()} ${r.url()}`); });
  page.on('dialog', (d) => d.accept());
  return { context, page };
}

async function signIn(page, key) {
  await page.goto(BASE + '/console');
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Sandboxes' }).waitFor();
}

// The lines the terminal shows now (xterm.js's DOM renderer: one div per row).
async function terminalLines(page) {
  return page.$$eval('.xterm-rows > div', (rows) => rows.map((r) => r.textContent.replace(/\u00a0/g, ' ').trimEnd()));
}

async function waitForLine(page, test, what) {
  const deadline = Date.now() + 20000;
  for (;;) {
    const lines = await terminalLines(page);
    const hit = lines.find(test);
    if (hit !== undefined) return hit;
    if (Date.now() > deadline) throw new Error(`no ${what} in the terminal:\n${lines.filter(Boolean).join('\n')}`);
    await page.waitForTimeout(100);
  }
}

async function detail(page, name) {
  return page.locator(`dt:text-is("${name}") + dd`).textContent();
}

async function waitState(page, state) {
  await page.locator('dt:text-is("State") + dd').filter({ hasText: new RegExp('^' + state) }).waitFor({ timeout: 60000 });
}

const { context, page } = await newPage();
let sandbox = null;
let cookie = null;
let firstSnapshot = null;

await check('sign in with an API key', async () => {
  await page.goto(BASE + '/console');
  await page.getByLabel('API key').waitFor();
  await page.screenshot({ path: join(OUT, 'sign-in.png') });
  await signIn(page, ADMIN);
  const cookies = await context.cookies();
  cookie = cookies.find((c) => c.name === 'space_console');
  assert.ok(cookie, 'no session cookie');
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, 'Strict');
  assert.equal(cookie.path, '/');
  const seen = await page.evaluate(() => ({ cookie: document.cookie, local: localStorage.length, session: sessionStorage.length }));
  assert.deepEqual(seen, { cookie: '', local: 0, session: 0 }, 'the page can see or stored a credential');
  assert.ok(!(await page.content()).includes(ADMIN), 'the key is still in the page');
}, { essential: true });

await check('a sandbox created through the API appears without a reload', async () => {
  let navigations = 0;
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) navigations++; });
  const r = await api('POST', '/v1/sandboxes?wait=true&timeout_s=120', { metadata: { by: 'console-test' } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  sandbox = r.body.sandbox.id;
  const row = page.locator(`tr[data-sandbox="${sandbox}"]`);
  await row.waitFor({ timeout: 20000 });
  await row.getByText('running').waitFor({ timeout: 20000 });
  assert.equal(navigations, 0, 'the page was reloaded');
  await page.screenshot({ path: join(OUT, 'sandboxes.png') });
}, { essential: true });

await check('the list shows CPU and memory and filters by state, project and metadata', async () => {
  const row = page.locator(`tr[data-sandbox="${sandbox}"]`);
  await row.locator('td.memory').filter({ hasText: /iB \/ \d+ MiB$/ }).waitFor({ timeout: 20000 });
  await row.locator('td.cpu').filter({ hasText: /^\d+\.\d%$/ }).waitFor({ timeout: 20000 });
  // the list is live over the event stream, not polled
  let lists = 0;
  const count = (r) => { if (/\/v1\/sandboxes(\?|$)/.test(r.url())) lists++; };
  page.on('request', count);
  await page.waitForTimeout(2500);
  page.off('request', count);
  assert.equal(lists, 0, 'the page polled GET /v1/sandboxes');
  const rows = () => page.locator('table.sandboxes tbody tr');
  await page.getByLabel('Metadata').fill('by=nobody');
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await row.waitFor({ state: 'detached', timeout: 10000 });
  assert.equal(await rows().count(), 0);
  await page.getByLabel('Metadata').fill('by=console-test');
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await row.waitFor({ timeout: 10000 });
  await page.getByLabel('Project').fill('default');
  await page.getByLabel('State').selectOption('stopped');
  await row.waitFor({ state: 'detached', timeout: 10000 });
  await page.getByLabel('State').selectOption('running');
  await row.waitFor({ timeout: 10000 });
  await page.getByLabel('Metadata').fill('by');
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await page.getByRole('status').filter({ hasText: 'key=value' }).waitFor({ timeout: 10000 });
  await page.getByLabel('Metadata').fill('');
  await page.getByLabel('Project').fill('');
  await page.getByLabel('State').selectOption('');
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await page.getByRole('status').filter({ hasText: /^$/ }).waitFor({ timeout: 10000 });
  await page.screenshot({ path: join(OUT, 'sandboxes.png') });
});

await check('open the sandbox', async () => {
  await page.getByRole('link', { name: sandbox }).click();
  await page.getByRole('heading', { name: sandbox }).waitFor();
  await waitState(page, 'running');
  assert.equal(await detail(page, 'Project'), 'default');
}, { essential: true });

await check('type echo hi in the terminal and see hi', async () => {
  await page.locator('.xterm-rows').waitFor();
  await waitForLine(page, (l) => /[#$] ?$/.test(l), 'shell prompt');
  await page.locator('.xterm').click();
  await page.keyboard.type('echo hi\n');
  await waitForLine(page, (l) => l === 'hi', '"hi" line');
  await page.screenshot({ path: join(OUT, 'sandbox.png') });
});

await check('the terminal follows the window size', async () => {
  await page.keyboard.type('stty size\n');
  const before = await waitForLine(page, (l) => /^\d+ \d+$/.test(l), '"rows cols" line');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(500);
  await page.keyboard.type('clear; stty size\n');
  const after = await waitForLine(page, (l) => /^\d+ \d+$/.test(l) && l !== before, 'new "rows cols" line');
  assert.ok(Number(after.split(' ')[1]) < Number(before.split(' ')[1]), `cols did not shrink: ${before} -> ${after}`);
  await page.screenshot({ path: join(OUT, 'sandbox-phone.png'), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 800 });
});

await check('the terminal reconnects after its token is revoked, losing and repeating nothing', async () => {
  await page.keyboard.type('clear; for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo line$i; sleep 0.5; done\n');
  await waitForLine(page, (l) => l === 'line2', '"line2"');
  const sessions = await api('GET', `/v1/sandboxes/${sandbox}/sessions`);
  for (const s of sessions.body.sessions)
    if (s.state === 'active') assert.equal((await api('DELETE', `/v1/sandboxes/${sandbox}/sessions/${s.session_id}`)).status, 204);
  await waitForLine(page, (l) => l === 'line12', '"line12"');
  const revoked = new Set(sessions.body.sessions.map((s) => s.session_id));
  const now = await api('GET', `/v1/sandboxes/${sandbox}/sessions`);
  assert.ok(now.body.sessions.some((s) => s.state === 'active' && !revoked.has(s.session_id)), 'the page opened no new session');
  const lines = (await terminalLines(page)).filter((l) => /^line\d+$/.test(l));
  assert.deepEqual(lines, Array.from({ length: 12 }, (_, i) => 'line' + (i + 1)));
});

await check('upload a file and download it', async () => {
  const content = 'hello from the browser\n' + 'x'.repeat(1000) + '\n';
  await page.getByLabel('Upload a file here').setInputFiles({ name: 'hello.txt', mimeType: 'text/plain', buffer: Buffer.from(content) });
  await page.locator('li[data-path="/tmp/hello.txt"]').waitFor({ timeout: 20000 });
  const cat = await api('POST', `/v1/sandboxes/${sandbox}/exec`, { cmd: ['cat', '/tmp/hello.txt'] });
  assert.equal(cat.status, 200, JSON.stringify(cat.body));
  assert.equal(cat.body.stdout, content);
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download hello.txt' }).click()]);
  assert.equal(download.suggestedFilename(), 'hello.txt');
  assert.equal(readFileSync(await download.path(), 'utf8'), content);
});

await check('take a snapshot', async () => {
  await page.getByRole('button', { name: 'Snapshot', exact: true }).click();
  await page.getByRole('status').filter({ hasText: 'Snapshot: done' }).waitFor({ timeout: 120000 });
  const r = await api('GET', `/v1/sandboxes/${sandbox}/snapshots`);
  const snap = r.body.snapshots.find((s) => s.label === 'console');
  assert.ok(snap, JSON.stringify(r.body));
  firstSnapshot = snap.id;
  const node = page.locator(`.history-tree g[data-node="${snap.id}"]`);
  await node.waitFor();
  assert.match(await node.getAttribute('class'), /\bmanual\b/);
  assert.match(await node.getAttribute('class'), /\bhead\b/, 'the new snapshot is not ringed as the head');
  // the sandbox now hangs off it
  assert.equal(await page.locator(`.history-tree g[data-node="${sandbox}"]`).count(), 1);
});

await check('pause and resume', async () => {
  await page.getByRole('button', { name: 'Pause', exact: true }).click();
  await waitState(page, 'paused');
  assert.equal((await api('GET', `/v1/sandboxes/${sandbox}`)).body.state, 'paused');
  await page.getByRole('button', { name: 'Resume', exact: true }).click();
  await waitState(page, 'running');
  assert.equal((await api('GET', `/v1/sandboxes/${sandbox}`)).body.state, 'running');
});

await check('fork', async () => {
  await page.getByRole('button', { name: 'Fork', exact: true }).click();
  const status = page.getByRole('status').filter({ hasText: /^Fork(ed)?: / });
  await status.waitFor({ timeout: 120000 });
  const said = await status.textContent();
  assert.match(said, /^Forked: sb-/);
  const child = said.match(/sb-[0-9a-f]+/)[0];
  const r = await api('GET', `/v1/sandboxes/${child}`);
  assert.equal(r.body.lineage.parent_sandbox_id, sandbox);
  // the history shows the fork: the child's box hangs off the snapshot taken for it, dashed
  const forkSnap = r.body.lineage.parent_snapshot_id;
  await page.locator(`.history-tree g[data-node="${child}"]`).waitFor();
  assert.equal(await page.locator(`.history-tree g[data-node="${forkSnap}"]`).count(), 1);
  assert.ok((await page.locator('.history-tree path.edge.fork').count()) >= 1, 'no fork edge');
});

// exec as root in the sandbox (the API, not the page)
async function sh(script) {
  const r = await api('POST', `/v1/sandboxes/${sandbox}/exec`, { shell: script, user: 'root' });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.stdout;
}

await check('restore from a node of the history tree', async () => {
  await sh('echo before > /console-marker');
  const taken = await api('POST', `/v1/sandboxes/${sandbox}/snapshots?wait=true`, { label: 'before-restore' });
  assert.equal(taken.status, 200, JSON.stringify(taken.body));
  const snap = taken.body.snapshot.id;
  await sh('echo after > /console-marker');
  await page.reload(); // the page reads the history when it opens and after its own actions
  const node = page.locator(`.history-tree g[data-node="${snap}"]`);
  await node.waitFor({ timeout: 20000 });
  await node.click();
  await page.getByRole('button', { name: 'Restore to ' + snap }).click();
  await page.getByRole('status').filter({ hasText: /^Restore: / }).waitFor({ timeout: 120000 });
  assert.equal(await page.getByRole('status').textContent(), 'Restore: done');
  await waitState(page, 'running');
  assert.equal(await sh('cat /console-marker'), 'before\n');
  await page.locator(`.history-tree g[data-node="${snap}"].head`).waitFor({ timeout: 20000 });
  // The page opened a new shell (the restore ended the old one) and it answers. The
  // terminal is scrolled into view first: xterm.js paints no rows while it is off-screen
  // (here the history tree was clicked, lower on the page), so its rows read empty.
  await page.locator('.xterm').scrollIntoViewIfNeeded();
  await waitForLine(page, (l) => /[#$] ?$/.test(l), 'shell prompt after the restore');
  await page.locator('.xterm').click();
  await page.keyboard.type('cat /console-marker\n');
  await waitForLine(page, (l) => l === 'before', '"before" line from the new shell');
});

await check('fork from a node of the history tree', async () => {
  const node = page.locator(`.history-tree g[data-node="${firstSnapshot}"]`);
  await node.focus();
  await page.keyboard.press('Enter'); // a node is a button for the keyboard too
  await page.getByRole('button', { name: 'Fork from ' + firstSnapshot }).click();
  const status = page.getByRole('status').filter({ hasText: /^Fork(ed)?: / });
  await status.waitFor({ timeout: 120000 });
  const said = await status.textContent();
  assert.match(said, /^Forked: sb-/);
  const child = said.match(/sb-[0-9a-f]+/)[0];
  const r = await api('GET', `/v1/sandboxes/${child}`);
  assert.equal(r.body.lineage.parent_sandbox_id, sandbox);
  assert.equal(r.body.lineage.parent_snapshot_id, firstSnapshot);
  await page.locator(`.history-tree g[data-node="${child}"]`).waitFor();
  await page.locator('.history').screenshot({ path: join(OUT, 'history.png') });
  // the child's own page shows the same tree, itself marked
  await page.goto(`${BASE}/console#/sandboxes/${child}`);
  await page.locator(`.history-tree g[data-node="${child}"].current`).waitFor({ timeout: 20000 });
  assert.equal(await page.locator(`.history-tree g[data-node="${firstSnapshot}"]`).count(), 1);
  await page.goto(`${BASE}/console#/sandboxes/${sandbox}`);
  await page.getByRole('heading', { name: sandbox }).waitFor();
});

async function go(p, hash, heading) {
  await p.evaluate((h) => { location.hash = h; }, hash);
  await p.getByRole('heading', { name: heading, exact: true }).waitFor();
}

let buildOp = null;
await check('the templates page, and a build\'s log live while it runs', async () => {
  const tar = readFileSync(process.env.CONSOLE_BUILD_CONTEXT);
  const r = await fetch(`${BASE}/v1/templates?name=console-demo:v1`, { method: 'POST', headers: { Authorization: 'Bearer ' + ADMIN, 'Content-Type': 'application/x-tar' }, body: tar });
  const b = await r.json();
  assert.equal(r.status, 202, JSON.stringify(b));
  buildOp = b.operation.id;
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Templates' }).click();
  await page.getByRole('heading', { name: 'Templates', exact: true }).waitFor();
  await page.locator('tr[data-template="busybox"]').waitFor();
  const row = page.locator('tr[data-template="console-demo:v1"]');
  await row.waitFor({ timeout: 10000 });
  await row.getByRole('link', { name: 'Build log of console-demo:v1' }).click();
  await page.getByRole('heading', { name: 'Build ' + buildOp }).waitFor();
  const log = page.getByLabel('Build log');
  await log.filter({ hasText: 'build-line-2' }).waitFor({ timeout: 30000 });
  assert.ok(!(await log.textContent()).includes('BUILD SUCCEEDED'), 'the log was not shown before the build ended');
  await log.filter({ hasText: 'BUILD SUCCEEDED' }).waitFor({ timeout: 60000 });
  await page.locator('.build-state').filter({ hasText: 'build succeeded' }).waitFor({ timeout: 10000 });
  const text = await log.textContent();
  for (let i = 1; i <= 5; i++) assert.equal(text.split('\n').filter((l) => l === 'build-line-' + i).length, 1, 'line ' + i + ' not exactly once');
  await page.screenshot({ path: join(OUT, 'build.png') });
});

await check('the operations page, filtered by target', async () => {
  await go(page, '#/operations', 'Operations');
  await page.locator(`tr[data-operation="${buildOp}"]`).waitFor({ timeout: 10000 });
  await page.getByLabel('Target').fill(sandbox);
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await page.locator(`tr[data-operation="${buildOp}"]`).waitFor({ state: 'detached', timeout: 10000 });
  const kinds = await page.$$eval('tr[data-operation] td:nth-child(2)', (tds) => tds.map((t) => t.textContent));
  for (const k of ['sandbox.create', 'sandbox.snapshot', 'sandbox.pause', 'sandbox.resume', 'sandbox.fork', 'sandbox.restore'])
    assert.ok(kinds.includes(k), `no ${k} in ${kinds}`);
  await page.screenshot({ path: join(OUT, 'operations.png') });
});

await check('the audit page, filtered by action', async () => {
  await go(page, '#/audit', 'Audit');
  await page.getByLabel('Action').fill('sandbox.restore');
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  const rows = page.locator('tr[data-audit]');
  await rows.first().waitFor({ timeout: 10000 });
  await page.waitForTimeout(300);
  const actions = await page.$$eval('tr[data-audit] td:nth-child(2)', (tds) => tds.map((t) => t.textContent));
  assert.ok(actions.length >= 1 && actions.every((a) => a === 'sandbox.restore'), JSON.stringify(actions));
  assert.equal(await rows.first().locator('td:nth-child(3)').textContent(), sandbox);
  await page.getByLabel('Since').fill('not a time');
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await page.getByRole('status').filter({ hasText: /^Audit: / }).waitFor({ timeout: 10000 });
  await page.getByLabel('Since').fill('');
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await page.screenshot({ path: join(OUT, 'audit.png') });
});

await check('the approvals inbox: approve one held command with a comment, deny another', async () => {
  const made = await api('POST', '/v1/sandboxes?wait=true&timeout_s=120', { metadata: { by: 'console-approvals' } });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  const sid = made.body.sandbox.id;
  const owner = await api('POST', '/v1/keys', { name: 'console-asker', role: 'owner' });
  assert.equal(owner.status, 201, JSON.stringify(owner.body));
  const policy = await api('POST', '/v1/policies', { name: 'console-hold', rules: [
    { id: 'hold', effect: 'require_approval', actions: ['command'], message: 'a person looks', match: { argv: { glob: '*console-approval*' } } }] });
  assert.equal(policy.status, 201, JSON.stringify(policy.body));
  try {
    const held = [];
    for (const word of ['yes', 'no']) {
      const r = await api('POST', `/v1/sandboxes/${sid}/exec`, { shell: `echo ${word} > /tmp/console-approval-${word}` }, owner.body.secret);
      assert.equal(r.status, 202, JSON.stringify(r.body));
      held.push(r.body.approval_id);
    }
    await go(page, '#/approvals', 'Approvals');
    for (const id of held) await page.locator(`tr[data-approval="${id}"][data-state="pending"]`).waitFor({ timeout: 10000 });
    await page.screenshot({ path: join(OUT, 'approvals.png') });
    await page.getByLabel('Comment').fill('looks fine');
    await page.getByRole('button', { name: 'Approve ' + held[0], exact: true }).click();
    await page.locator(`tr[data-approval="${held[0]}"]`).waitFor({ state: 'detached', timeout: 10000 }); // no longer pending
    await page.getByLabel('Comment').fill('');
    await page.getByRole('button', { name: 'Deny ' + held[1], exact: true }).click();
    await page.locator(`tr[data-approval="${held[1]}"]`).waitFor({ state: 'detached', timeout: 10000 });
    const yes = (await api('GET', '/v1/approvals/' + held[0])).body;
    const no = (await api('GET', '/v1/approvals/' + held[1])).body;
    assert.deepEqual([yes.state, yes.comment, no.state, no.comment], ['approved', 'looks fine', 'denied', null]);
    // The approved one ran as it was asked; the denied one did not.
    const ran = await api('POST', `/v1/sandboxes/${sid}/exec`, { cmd: ['ls', '/tmp'] });
    assert.ok(ran.body.stdout.includes('console-approval-yes') && !ran.body.stdout.includes('console-approval-no'), ran.body.stdout);
    // Every state, with who decided.
    await page.getByLabel('State').fill('');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.locator(`tr[data-approval="${held[1]}"][data-state="denied"]`).waitFor({ timeout: 10000 });
    assert.equal(await page.getByRole('button', { name: 'Deny ' + held[1] }).count(), 0);
  } finally {
    await api('DELETE', '/v1/policies/' + policy.body.id);
    await api('DELETE', '/v1/keys/' + owner.body.id);
    await api('DELETE', '/v1/sandboxes/' + sid);
  }
});

await check('a sandbox\'s commands (with their output) and its network rules', async () => {
  const made = await api('POST', '/v1/sandboxes?wait=true&timeout_s=120', { metadata: { by: 'console-cards' }, network: { profile: 'public', deny: ['blocked.example'] } });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  const sid = made.body.sandbox.id;
  try {
    const sess = await api('POST', `/v1/sandboxes/${sid}/sessions`, {});
    const started = await api('POST', `/v1/sandboxes/${sid}/commands`, { cmd: ['/bin/sh', '-c', 'echo card-out; echo card-err >&2; exit 3'], tag: 'card' }, sess.body.attach_token);
    assert.ok([200, 201, 202].includes(started.status), JSON.stringify(started.body));
    const done = await api('GET', `/v1/sandboxes/${sid}/commands/${started.body.command_id}?wait=true&timeout_s=30`, undefined, sess.body.attach_token);
    assert.equal(done.body.exit_code, 3, JSON.stringify(done.body));
    await go(page, `#/sandboxes/${sid}`, sid);
    const cards = page.getByRole('region', { name: 'Commands' });
    const row = cards.locator('tr[data-command]').filter({ hasText: 'echo card-out' });
    await row.waitFor({ timeout: 15000 });
    assert.match(await row.textContent(), /exit 3/);
    await row.getByRole('button', { name: /^Output of / }).click();
    const out = page.getByLabel('Command output');
    await page.locator('pre.command-output[data-ended="exit"]').waitFor({ timeout: 15000 });
    const text = await out.textContent();
    assert.ok(text.includes('card-out') && text.includes('card-err') && text.includes('[exit 3'), text);
    // The network card: the profile and the sandbox's own rules, changed from the page.
    const net = page.getByRole('region', { name: 'Network' });
    await net.getByText('Profile public').waitFor({ timeout: 15000 });
    assert.equal(await page.getByLabel('Deny').inputValue(), 'blocked.example');
    await page.getByLabel('Deny').fill('blocked.example\nalso-blocked.example:443');
    await net.getByRole('button', { name: 'Save rules' }).click();
    await net.getByText(/^Saved/).waitFor({ timeout: 10000 });
    const got = (await api('GET', `/v1/sandboxes/${sid}/network`)).body;
    assert.deepEqual(got.deny, ['blocked.example', 'also-blocked.example:443']);
    // A rule that does not parse is the server's 400, said in the card; nothing changes.
    await page.getByLabel('Allow (one rule a line; empty: all the profile allows)').fill('not a rule!');
    await net.getByRole('button', { name: 'Save rules' }).click();
    await net.getByText(/^Network: /).waitFor({ timeout: 10000 });
    assert.deepEqual((await api('GET', `/v1/sandboxes/${sid}/network`)).body.allow, []);
    await page.screenshot({ path: join(OUT, 'sandbox-cards.png'), fullPage: true });
  } finally {
    await go(page, '#/operations', 'Operations'); // leave its page before it goes
    await api('DELETE', '/v1/sandboxes/' + sid);
  }
});

await check('the keys page: create a key (its secret shown once) and delete it', async () => {
  await go(page, '#/keys', 'Keys');
  await page.getByLabel('Name').fill('made-in-console');
  await page.getByLabel('Role').selectOption('viewer');
  await page.getByRole('button', { name: 'Create key', exact: true }).click();
  const said = await page.locator('.secret').filter({ hasText: 'shown once' }).textContent({ timeout: 10000 });
  const [, id, secret] = said.match(/^New key (key-\S+): (space_\S+) /);
  assert.equal((await api('GET', '/v1/sandboxes', undefined, secret)).status, 200, 'the new key does not work');
  const row = page.locator(`tr[data-key="${id}"]`);
  await row.waitFor({ timeout: 10000 });
  assert.equal(await row.locator('td:nth-child(4)').textContent(), 'viewer');
  await page.screenshot({ path: join(OUT, 'keys.png') });
  await row.getByRole('button', { name: 'Delete ' + id }).click();
  await row.waitFor({ state: 'detached', timeout: 10000 });
  assert.equal((await api('GET', '/v1/sandboxes', undefined, secret)).status, 401, 'the deleted key still works');
  const seen = await page.evaluate(() => ({ local: localStorage.length, session: sessionStorage.length }));
  assert.deepEqual(seen, { local: 0, session: 0 });
});

await check('the projects page: create a project', async () => {
  await go(page, '#/projects', 'Projects');
  await page.getByLabel('Id').fill('console-made');
  await page.getByRole('button', { name: 'Create project', exact: true }).click();
  await page.locator('tr[data-project="console-made"]').waitFor({ timeout: 10000 });
  assert.equal((await api('GET', '/v1/projects/console-made')).status, 200);
  await go(page, `#/sandboxes/${sandbox}`, sandbox);
});

await check('a viewer sees no keys, audit or projects pages and no build or cancel buttons', async () => {
  const viewer = await newPage({ width: 390, height: 844 });
  try {
    await signIn(viewer.page, VIEWER);
    const nav = viewer.page.getByRole('navigation', { name: 'Pages' });
    await nav.getByRole('link', { name: 'Templates' }).waitFor();
    for (const name of ['Keys', 'Audit', 'Projects'])
      assert.equal(await nav.getByRole('link', { name, exact: true }).count(), 0, `a viewer sees ${name}`);
    await go(viewer.page, '#/templates', 'Templates');
    await viewer.page.locator('tr[data-template="busybox"]').waitFor();
    assert.equal(await viewer.page.getByRole('button', { name: /^Build / }).count(), 0);
    await go(viewer.page, '#/builds/' + buildOp, 'Build ' + buildOp);
    await viewer.page.getByLabel('Build log').filter({ hasText: 'BUILD SUCCEEDED' }).waitFor({ timeout: 20000 });
    assert.equal(await viewer.page.getByRole('button', { name: 'Cancel the build' }).count(), 0);
    await go(viewer.page, '#/operations', 'Operations');
    await viewer.page.locator(`tr[data-operation="${buildOp}"]`).waitFor({ timeout: 10000 });
    assert.equal(await viewer.page.getByRole('button', { name: /^Cancel / }).count(), 0);
    await viewer.page.screenshot({ path: join(OUT, 'operations-phone.png'), fullPage: true });
    // the page would not show them; the server refuses them anyway
    await go(viewer.page, '#/keys', 'Keys');
    await viewer.page.getByRole('status').filter({ hasText: /^Keys: / }).waitFor({ timeout: 10000 });
    assert.equal(await viewer.page.getByRole('button', { name: 'Create key' }).count(), 0);
    const forced = await viewer.page.evaluate(async () => (await fetch('/v1/audit')).status);
    assert.equal(forced, 403);
  } finally {
    await viewer.context.close();
  }
});

await check('a viewer key sees no destroy button and the server refuses it anyway', async () => {
  const viewer = await newPage();
  try {
    await signIn(viewer.page, VIEWER);
    await viewer.page.goto(`${BASE}/console#/sandboxes/${sandbox}`);
    await viewer.page.getByRole('heading', { name: sandbox }).waitFor();
    await waitState(viewer.page, 'running');
    for (const name of ['Destroy', 'Pause', 'Stop', 'Snapshot', 'Fork'])
      assert.equal(await viewer.page.getByRole('button', { name, exact: true }).count(), 0, `a viewer sees ${name}`);
    // the history is there to look at, without restore or fork
    await viewer.page.locator(`.history-tree g[data-node="${firstSnapshot}"]`).click();
    await viewer.page.locator('.history-node dt:text-is("Snapshot")').waitFor();
    for (const name of ['Restore to ' + firstSnapshot, 'Fork from ' + firstSnapshot])
      assert.equal(await viewer.page.getByRole('button', { name, exact: true }).count(), 0, `a viewer sees ${name}`);
    await viewer.page.screenshot({ path: join(OUT, 'sandbox-viewer.png') });
    const forced = await viewer.page.evaluate(async (id) => {
      const me = await (await fetch('/v1/console/session')).json();
      const r = await fetch(`/v1/sandboxes/${id}`, { method: 'DELETE', headers: { 'X-Space-CSRF': me.session.csrf_token } });
      return { status: r.status, body: await r.json() };
    }, sandbox);
    assert.equal(forced.status, 403, JSON.stringify(forced.body));
    assert.equal((await api('GET', `/v1/sandboxes/${sandbox}`)).body.state, 'running');
  } finally {
    await viewer.context.close();
  }
});

await check('signing out invalidates the cookie on the server', async () => {
  const old = `space_console=${cookie.value}`;
  assert.equal((await api('GET', '/v1/sandboxes', undefined, null, { Cookie: old })).status, 200);
  await page.getByRole('button', { name: 'Sign out', exact: true }).click();
  await page.getByLabel('API key').waitFor();
  assert.equal((await api('GET', '/v1/sandboxes', undefined, null, { Cookie: old })).status, 401, 'the old cookie still works');
  assert.equal((await context.cookies()).find((c) => c.name === 'space_console'), undefined, 'the cookie was not cleared');
});

await check('no request left spaced, no CSP violation, no script error', async () => {
  assert.deepEqual(problems, []);
});

await browser.close();
console.log(failed ? `# console: ${failed} failed` : '# console: all passed');
process.exit(failed ? 1 : 0);
