// Issue 16 parity checks: behaviours where envd answers in a particular way and the SDK (or
// code written against E2B) relies on it. Same harness as sdk_test.mjs (run_e2b_tests.py
// starts spaced and runs this file with each pinned SDK). Usage:
//   node parity_test.mjs <package>
import assert from 'node:assert/strict'

const pkg = process.argv[2] || 'e2b-latest'
const { Sandbox, CommandExitError, TimeoutError } = await import(pkg)
const { readFileSync } = await import('node:fs')
const { createRequire } = await import('node:module')
const { sdkVersion, checker } = await import('./e2b_check.mjs')
const version = sdkVersion(pkg)
const { check, made, finish } = checker(version, Sandbox)

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

async function create(opts = {}) {
  const sbx = await Sandbox.create({ timeoutMs: 300_000, ...opts })
  made.push(sbx.sandboxId)
  return sbx
}

const sbx = await create({ metadata: { suite: 'e2b-parity' } })

// envd's Remove is os.RemoveAll: a path that is not there is no error.
await check('files.remove of a missing path succeeds, as in envd', async () => {
  assert.equal(await sbx.files.exists('/home/user/never-made'), false)
  await sbx.files.remove('/home/user/never-made')
  await sbx.files.remove('/home/user/no/such/parent/either')
  await sbx.files.remove('relative-and-missing')
  // Still refused where the user may not remove what is there.
  await assert.rejects(sbx.files.remove('/etc/passwd'))
  assert.equal(await sbx.files.exists('/etc/passwd'), true)
})

// /proc files stat as 0 bytes; envd reads them to their end.
await check('files.read of /proc files returns their whole content', async () => {
  const status = await sbx.files.read('/proc/self/status')
  assert.match(status, /^Name:\t/)
  assert.match(status, /\nPid:\t\d+\n/)
  const mounts = await sbx.files.read('/proc/mounts')
  assert.equal(mounts, (await sbx.commands.run('cat /proc/mounts')).stdout)
  // A plain empty file is still empty, and bytes come whole.
  await sbx.files.write('/home/user/empty', '')
  assert.equal(await sbx.files.read('/home/user/empty'), '')
  const bytes = await sbx.files.read('/proc/self/cmdline', { format: 'bytes' })
  assert.ok(bytes.length > 0, 'cmdline is not empty')
})

await check('an expired signed URL: 401 "signature is already expired", as envd', async () => {
  if (typeof sbx.downloadUrl !== 'function') return 'skip'
  await sbx.files.write('/home/user/expiring.txt', 'soon gone')
  const down = await sbx.downloadUrl('/home/user/expiring.txt', { useSignatureExpiration: 1 })
  let r = await fetch(down)
  assert.equal(r.status, 200)
  assert.equal(await r.text(), 'soon gone')
  await sleep(2100)
  r = await fetch(down)
  assert.equal(r.status, 401)
  assert.deepEqual(await r.json(), { code: 401, message: 'signature is already expired' })
  // A signature that does not match says so, expired or not.
  const bad = new URL(down)
  bad.searchParams.set('signature', 'v1_' + 'A'.repeat(43))
  r = await fetch(bad)
  assert.equal(r.status, 401)
  assert.notEqual((await r.json()).message, 'signature is already expired')
})

// envd dies with its sandbox: a stream it was serving just drops (no end event), and the
// SDK, finding /health gone, raises "the sandbox was killed". Older SDKs raise the dropped
// stream as it is; neither may see a command that exited.
await check('a sandbox killed mid-command drops the stream (no end with exit -1)', async () => {
  const doomed = await create()
  const running = doomed.commands.run('echo started; sleep 60')
  await sleep(1000)
  assert.equal(await Sandbox.kill(doomed.sandboxId), true)
  const t0 = Date.now()
  const e = await running.then(() => null, (x) => x)
  assert.ok(e, 'the command did not fail')
  assert.ok(Date.now() - t0 < 10_000, 'the stream outlived its sandbox')
  assert.ok(!(e instanceof CommandExitError), `an end event came: ${e}`)
  assert.doesNotMatch(String(e.message), /exit|lost/, String(e))
  if (/end of life/.test(readFileSync(createRequire(import.meta.url).resolve(pkg), 'utf8')))
    assert.ok(e instanceof TimeoutError && /killed or reached its end of life/.test(e.message), String(e))
})

// Connect-Timeout-Ms: envd's context deadline ends the call with deadline_exceeded, which
// the SDK raises as a TimeoutError naming timeoutMs.
await check('a command past its timeoutMs ends with deadline_exceeded', async () => {
  const t0 = Date.now()
  const e = await sbx.commands.run('sleep 30', { timeoutMs: 1000 }).then(() => null, (x) => x)
  assert.ok(e instanceof TimeoutError, `got ${e}`)
  assert.match(e.message, /timeoutMs/)
  assert.ok(Date.now() - t0 < 10_000)
  const h = await sbx.commands.run('sleep 30', { background: true, timeoutMs: 1000 })
  const w = await h.wait().then(() => null, (x) => x)
  assert.ok(w instanceof TimeoutError && /timeoutMs/.test(w.message), `background: got ${w}`)
})

// envd writes a file in place (O_TRUNC): a watcher sees a new file created, an existing
// one written, and never a name the writer used on the way.
await check('files.write over a file is a WRITE event; no upload temp names', async () => {
  await sbx.files.makeDir('/home/user/w6')
  await sbx.files.write('/home/user/w6/f.txt', 'first')
  const events = []
  const h = await sbx.files.watchDir('/home/user/w6', (e) => events.push(e))
  await sbx.files.write('/home/user/w6/f.txt', 'second, longer')
  await sbx.files.write('/home/user/w6/g.txt', 'new')
  await sleep(500)
  await h.stop()
  const seen = events.map((e) => `${e.type}:${e.name}`)
  assert.ok(seen.includes('write:f.txt'), `no write of f.txt in ${JSON.stringify(seen)}`)
  assert.ok(!seen.includes('create:f.txt'), `the overwrite showed as a create: ${JSON.stringify(seen)}`)
  assert.ok(seen.includes('create:g.txt'), `no create of g.txt in ${JSON.stringify(seen)}`)
  assert.ok(seen.every((e) => /:(f|g)\.txt$/.test(e)), `other names: ${JSON.stringify(seen)}`)
  assert.equal(await sbx.files.read('/home/user/w6/f.txt'), 'second, longer')
})

// envd resolves a relative cwd against the user's home.
await check('a relative cwd is taken from the user\'s home', async () => {
  await sbx.files.makeDir('/home/user/sub/dir')
  assert.equal((await sbx.commands.run('pwd', { cwd: 'sub/dir' })).stdout, '/home/user/sub/dir\n')
  await sbx.commands.run('mkdir -p /root/rdir', { user: 'root' })
  assert.equal((await sbx.commands.run('pwd', { cwd: 'rdir', user: 'root' })).stdout, '/root/rdir\n')
})

// envd reports the target of a link as an absolute path.
await check('symlinkTarget is absolute', async () => {
  await sbx.commands.run('mkdir -p /home/user/ln/a && echo x > /home/user/ln/a/t && cd /home/user/ln && ' +
    'ln -s a/t rel && ln -s /home/user/ln/a/t abs && ln -s ../ln/./a/t up')
  for (const name of ['rel', 'abs', 'up']) {
    const info = await sbx.files.getInfo(`/home/user/ln/${name}`)
    assert.equal(info.symlinkTarget, '/home/user/ln/a/t', `${name}: ${JSON.stringify(info)}`)
  }
  const rel = (await sbx.files.list('/home/user/ln')).find((e) => e.name === 'rel')
  if (rel) assert.equal(rel.symlinkTarget, '/home/user/ln/a/t') // SDK 2.14 leaves links out of lists
})

// E2B's timeout 0 ends the sandbox now (space's timeout_s 0 would be "never").
await check('setTimeout(0) ends the sandbox, as in E2B', async () => {
  const short = await create()
  await short.setTimeout(0)
  const t0 = Date.now()
  while (await short.isRunning() && Date.now() - t0 < 10_000) await sleep(250)
  assert.equal(await short.isRunning(), false, 'still running 10 s after setTimeout(0)')
  await assert.rejects(Sandbox.getInfo(short.sandboxId))
})

// envd 0.6.2: X-Metadata-<key> headers on an upload are the file's metadata (user.e2b.*
// attributes), keys lowercased; every EntryInfo carries them; each upload replaces them.
const sdkSource = readFileSync(createRequire(import.meta.url).resolve(pkg), 'utf8')
await check('file metadata: written with the file, read back by getInfo, list and rename', async () => {
  if (!sdkSource.includes('X-Metadata-')) return 'skip'
  const w = await sbx.files.write('/home/user/meta/a.txt', 'with metadata', { metadata: { Author: 'ada', 'x-y': 'z' } })
  assert.deepEqual(w.metadata, { author: 'ada', 'x-y': 'z' })
  assert.deepEqual((await sbx.files.getInfo('/home/user/meta/a.txt')).metadata, { author: 'ada', 'x-y': 'z' })
  const listed = (await sbx.files.list('/home/user/meta')).find((e) => e.name === 'a.txt')
  assert.deepEqual(listed.metadata, { author: 'ada', 'x-y': 'z' })
  const moved = await sbx.files.rename('/home/user/meta/a.txt', '/home/user/meta/b.txt')
  assert.deepEqual(moved.metadata, { author: 'ada', 'x-y': 'z' })
  assert.equal(await sbx.files.read('/home/user/meta/b.txt'), 'with metadata')
  // An upload replaces them: other keys, or none at all.
  await sbx.files.write('/home/user/meta/b.txt', 'v2', { metadata: { k: 'v' } })
  assert.deepEqual((await sbx.files.getInfo('/home/user/meta/b.txt')).metadata, { k: 'v' })
  await sbx.files.write('/home/user/meta/b.txt', 'v3')
  assert.equal((await sbx.files.getInfo('/home/user/meta/b.txt')).metadata, undefined)
  // Several files in one upload get the same metadata; raw uploads carry it too; root's too.
  const many = await sbx.files.write([{ path: '/home/user/meta/m1', data: '1' }, { path: '/home/user/meta/m2', data: '2' }],
    { metadata: { batch: '7' } })
  for (const f of many) assert.deepEqual((await sbx.files.getInfo(f.path)).metadata, { batch: '7' })
  await sbx.files.write('/home/user/meta/raw', 'raw', { metadata: { raw: 'yes' }, useOctetStream: true })
  assert.deepEqual((await sbx.files.getInfo('/home/user/meta/raw')).metadata, { raw: 'yes' })
  await sbx.files.write('/root/meta-root', 'r', { metadata: { who: 'root' }, user: 'root' })
  assert.deepEqual((await sbx.files.getInfo('/root/meta-root', { user: 'root' })).metadata, { who: 'root' })
  // A file without any has none.
  assert.equal((await sbx.files.getInfo('/home/user/meta')).metadata, undefined)
})

await check('file metadata past envd\'s limits is refused (400) and writes nothing', async () => {
  if (!sdkSource.includes('X-Metadata-')) return 'skip'
  await assert.rejects(sbx.files.write('/home/user/meta/long-key', 'x', { metadata: { ['k'.repeat(247)]: 'v' } }))
  assert.equal(await sbx.files.exists('/home/user/meta/long-key'), false)
  const big = {}
  for (let i = 0; i < 5; i++) big[`key${i}`] = 'v'.repeat(900)
  await assert.rejects(sbx.files.write('/home/user/meta/too-much', 'x', { metadata: big }))
  assert.equal(await sbx.files.exists('/home/user/meta/too-much'), false)
  // At the limit it fits: 246-byte key, and 4096 bytes in all.
  const edge = { ['k'.repeat(246)]: 'v'.repeat(4096 - 9 - 246) }
  await sbx.files.write('/home/user/meta/edge', 'x', { metadata: edge })
  assert.deepEqual((await sbx.files.getInfo('/home/user/meta/edge')).metadata, edge)
})

// envd 0.6.3: includeEntry puts the entry's EntryInfo on each event (none once it is gone).
await check('watchDir includeEntry: events carry the entry', async () => {
  if (!sdkSource.includes('includeEntry')) return 'skip'
  await sbx.files.makeDir('/home/user/w-entry')
  const events = []
  const h = await sbx.files.watchDir('/home/user/w-entry', (e) => events.push(e), { includeEntry: true, allowNetworkMounts: true })
  await sbx.files.write('/home/user/w-entry/f.txt', 'twelve bytes', { metadata: { tag: 'w' } })
  await sleep(300)
  await sbx.files.remove('/home/user/w-entry/f.txt')
  await sleep(500)
  await h.stop()
  const made = events.find((e) => e.type === 'create' && e.name === 'f.txt')
  assert.ok(made, `no create in ${JSON.stringify(events)}`)
  assert.equal(made.entry?.name, 'f.txt')
  assert.equal(made.entry.path, '/home/user/w-entry/f.txt')
  assert.equal(made.entry.type, 'file')
  assert.equal(made.entry.owner, 'user')
  const gone = events.find((e) => e.type === 'remove' && e.name === 'f.txt')
  assert.ok(gone, `no remove in ${JSON.stringify(events)}`)
  assert.equal(gone.entry, undefined)
  // Without the option, no entries.
  const plain = []
  const h2 = await sbx.files.watchDir('/home/user/w-entry', (e) => plain.push(e))
  await sbx.files.write('/home/user/w-entry/g.txt', 'g')
  await sleep(500)
  await h2.stop()
  assert.ok(plain.length > 0 && plain.every((e) => e.entry === undefined), JSON.stringify(plain))
})

// The Python SDK's sync watcher: Filesystem.CreateWatcher / GetWatcherEvents / RemoveWatcher,
// unary calls polled by the client. Driven here through the JS SDK's own Connect client of
// the filesystem service (same transport, same descriptor as the Python SDK's).
await check('polled watchers (CreateWatcher, GetWatcherEvents, RemoveWatcher) as the Python SDK uses them', async () => {
  const rpc = sbx.files.rpc
  if (!rpc || typeof rpc.createWatcher !== 'function') return 'skip'
  await sbx.files.makeDir('/home/user/polled')
  const { watcherId } = await rpc.createWatcher({ path: '/home/user/polled', recursive: false, includeEntry: true })
  assert.match(watcherId, /^[0-9a-f]{32}$/)
  assert.deepEqual((await rpc.getWatcherEvents({ watcherId })).events, [])
  await sbx.files.write('/home/user/polled/a.txt', 'a')
  await sbx.files.write('/home/user/polled/a.txt', 'again')
  await sbx.files.remove('/home/user/polled/a.txt')
  await sleep(500)
  const got = (await rpc.getWatcherEvents({ watcherId })).events
  const seen = got.map((e) => `${e.type}:${e.name}`)
  // Enum values as numbers in the SDK's decoded messages: 1 create, 2 write, 3 remove.
  assert.deepEqual(seen, ['1:a.txt', '2:a.txt', '3:a.txt'], JSON.stringify(seen))
  // The entry as it was at the event, though the file is gone by the poll (an SDK whose
  // descriptor predates includeEntry drops the field).
  if (sdkSource.includes('includeEntry')) assert.equal(got[0].entry?.path, '/home/user/polled/a.txt')
  assert.equal(got[2].entry, undefined)
  // Only what came since the last call.
  assert.deepEqual((await rpc.getWatcherEvents({ watcherId })).events, [])
  // Another sandbox cannot name it; after RemoveWatcher nobody can.
  const other = await create()
  await assert.rejects(other.files.rpc.getWatcherEvents({ watcherId }), /not.found|not_found/i)
  await rpc.removeWatcher({ watcherId })
  await assert.rejects(rpc.getWatcherEvents({ watcherId }), /not.found|not_found/i)
  await assert.rejects(rpc.removeWatcher({ watcherId }), /not.found|not_found/i)
  // A watch whose directory goes answers its last events, then not_found.
  const second = (await rpc.createWatcher({ path: '/home/user/polled', recursive: false })).watcherId
  await sbx.files.remove('/home/user/polled')
  await sleep(500)
  const last = (await rpc.getWatcherEvents({ watcherId: second })).events
  assert.ok(last.length > 0, 'no event for the directory going')
  await assert.rejects(rpc.getWatcherEvents({ watcherId: second }), /not.found|not_found/i)
  await assert.rejects(rpc.createWatcher({ path: '/home/user/never-there' }), /not.found|not_found/i)
  await other.kill()
})

// envd's sandboxes are on ext4: a directory's size is whole blocks, 4096 when empty.
await check('an empty directory\'s size is 4096, as envd reports it', async () => {
  await sbx.files.makeDir('/home/user/empty-dir')
  assert.equal((await sbx.files.getInfo('/home/user/empty-dir')).size, 4096)
  const listed = (await sbx.files.list('/home/user')).find((e) => e.name === 'empty-dir')
  assert.equal(listed.size, 4096)
  await sbx.files.write('/home/user/empty-dir/f', 'not a directory: its own size')
  assert.equal((await sbx.files.getInfo('/home/user/empty-dir/f')).size, 29)
  assert.equal((await sbx.files.getInfo('/home/user/empty-dir')).size % 4096, 0)
})

// envd runs as root and gives what it makes to the user: the default user can create files
// and directories outside its home. What is there keeps its permissions.
await check('the default user creates paths outside its home, as envd lets it; existing files stay protected', async () => {
  const info = await sbx.files.write('/made-by-user/sub/f.txt', 'mine')
  assert.equal(info.path, '/made-by-user/sub/f.txt')
  assert.equal(await sbx.files.read('/made-by-user/sub/f.txt'), 'mine')
  for (const p of ['/made-by-user', '/made-by-user/sub', '/made-by-user/sub/f.txt'])
    assert.equal((await sbx.files.getInfo(p)).owner, 'user', p)
  assert.equal(await sbx.files.makeDir('/made-dir/a/b'), true)
  for (const p of ['/made-dir', '/made-dir/a', '/made-dir/a/b']) assert.equal((await sbx.files.getInfo(p)).owner, 'user', p)
  assert.equal(await sbx.files.makeDir('/made-dir/a'), false)
  assert.equal(await sbx.files.makeDir('/etc'), false)
  // In root's home too (as envd), owned by the user.
  await sbx.files.write('/root/for-user.txt', 'in root\'s home')
  assert.equal((await sbx.files.getInfo('/root/for-user.txt', { user: 'root' })).owner, 'user')
  // A file the user may not write is not replaced, and stays as it was.
  const passwd = await sbx.files.read('/etc/passwd')
  await assert.rejects(sbx.files.write('/etc/passwd', 'owned'))
  assert.equal(await sbx.files.read('/etc/passwd'), passwd)
  assert.equal((await sbx.files.getInfo('/etc/passwd')).owner, 'root')
  await sbx.commands.run('rm -rf /made-by-user /made-dir /root/for-user.txt', { user: 'root' })
})

// A fork's snapshot is the fork's own: it must not outlive it or show as the user's.
await check('fork leaves no snapshot behind (listSnapshots)', async () => {
  if (typeof sbx.fork !== 'function') return 'skip'
  const before = await Sandbox.listSnapshots({ sandboxId: sbx.sandboxId }).nextItems()
  await sbx.commands.run('echo forked > /home/user/fork-note')
  const forks = await sbx.fork({ count: 2 })
  for (const f of forks) {
    assert.ok(f instanceof Sandbox, `fork failed: ${f}`)
    made.push(f.sandboxId)
    assert.equal((await f.commands.run('cat /home/user/fork-note')).stdout, 'forked\n')
  }
  const after = await Sandbox.listSnapshots({ sandboxId: sbx.sandboxId }).nextItems()
  assert.deepEqual(after.map((s) => s.snapshotId), before.map((s) => s.snapshotId))
  // The children stand on their own copies.
  await forks[0].files.write('/home/user/child', 'mine')
  assert.equal(await forks[1].files.exists('/home/user/child'), false)
  for (const f of forks) await f.kill()
})

// E2B's network.allowPublicTraffic false: the sandbox's ports answer only requests with its
// trafficAccessToken in the e2b-traffic-access-token header (create and connect return it).
await check('allowPublicTraffic false: ports need the trafficAccessToken (e2b-traffic-access-token)', async () => {
  const priv = await create({ network: { allowPublicTraffic: false } })
  const token = priv.trafficAccessToken
  assert.ok(token, 'create returned a traffic access token')
  assert.equal(sbx.trafficAccessToken, undefined, 'a public sandbox has none')
  assert.notEqual(token, priv.envdAccessToken)
  await priv.commands.run('mkdir -p /tmp/www && echo private-port > /tmp/www/index.html && ' +
    '(if command -v httpd >/dev/null; then httpd -p 127.0.0.1:8081 -h /tmp/www; ' +
    'else cd /tmp/www && (python3 -m http.server 8081 --bind 127.0.0.1 >/dev/null 2>&1 &); sleep 1; fi)')
  const get = (headers) => fetch(`${process.env.E2B_API_URL}/sandboxes/${priv.sandboxId}/ports/8081/index.html`, { headers })
  let r = await get({})
  assert.equal(r.status, 403)
  assert.match((await r.json()).message, /e2b-traffic-access-token/)
  r = await get({ 'e2b-traffic-access-token': token.slice(0, -1) + (token.endsWith('0') ? '1' : '0') })
  assert.equal(r.status, 403)
  r = await get({ 'e2b-traffic-access-token': priv.envdAccessToken })
  assert.equal(r.status, 403, 'the envd token is not the traffic token')
  r = await get({ 'e2b-traffic-access-token': token })
  assert.equal(r.status, 200)
  assert.equal(await r.text(), 'private-port\n')
  // Another sandbox's token opens nothing here.
  const other = await create({ network: { allowPublicTraffic: false } })
  r = await get({ 'e2b-traffic-access-token': other.trafficAccessToken })
  assert.equal(r.status, 403)
  const again = await Sandbox.connect(priv.sandboxId)
  assert.equal(again.trafficAccessToken, token, 'connect returns the same token')
  const info = await Sandbox.getInfo(priv.sandboxId)
  if (info.network) assert.equal(info.network.allowPublicTraffic, false)
  // A public sandbox's ports stay open without a header.
  await sbx.commands.run('mkdir -p /tmp/pub && echo public-port > /tmp/pub/index.html && ' +
    '(if command -v httpd >/dev/null; then httpd -p 127.0.0.1:8082 -h /tmp/pub; ' +
    'else cd /tmp/pub && (python3 -m http.server 8082 --bind 127.0.0.1 >/dev/null 2>&1 &); sleep 1; fi)')
  r = await fetch(`${process.env.E2B_API_URL}/sandboxes/${sbx.sandboxId}/ports/8082/index.html`)
  assert.equal(r.status, 200)
  await other.kill()
})

await finish(`${version} parity`)
