// e2b_bench.mjs: what public sandbox leaderboards measure, through the official E2B SDK:
// Sandbox.create() then the first commands.run('echo hi'), N times one after the other.
// With SPACE_URL and SPACE_API_KEY, each sample is paired with the same through spaced's v1
// API (POST /v1/sandboxes?wait=true, then POST …/exec of `echo hi`; fetch's keep-alive
// connections), the two in a random order per pair so that both see the same load.
// Prints p50/p95/p99 (nearest rank, ms) of the whole, of create and of the first run, and
// the SDK's whole against v1's. Each sandbox is destroyed after its sample (not timed).
// bench/e2b_bench.py runs it against a throwaway spaced; by hand: E2B_API_URL /
// E2B_SANDBOX_URL / E2B_API_KEY (and SPACE_URL / SPACE_API_KEY), then
//   node bench/e2b_bench.mjs [-n N] [--sdk e2b-latest|e2b-2.14] [--json]
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import path from 'node:path'

const args = process.argv.slice(2)
const opt = (name, dflt) => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : dflt
}
const n = Number(opt('-n', '100'))
const sdk = opt('--sdk', 'e2b-latest')
const json = args.includes('--json')
// The SDKs are installed by the E2B tests (tests/e2b/node_modules).
const here = path.dirname(fileURLToPath(import.meta.url))
const require = createRequire(path.join(here, '..', 'tests', 'e2b', 'package.json'))
const { Sandbox } = await import(require.resolve(sdk))
const version = require(`${sdk}/package.json`).version

const rank = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)]
}
const v1url = process.env.SPACE_URL
const v1key = process.env.SPACE_API_KEY

async function v1(method, route, body) {
  const r = await fetch(v1url + route, {
    method,
    headers: Object.assign({ Authorization: 'Bearer ' + v1key }, body === undefined ? {} : { 'Content-Type': 'application/json' }),
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await r.text()
  if (!r.ok) throw new Error(`${method} ${route}: ${r.status} ${text}`)
  return text ? JSON.parse(text) : null
}

const sdkRun = { total: [], create: [], first: [] }
const v1Run = { total: [], create: [], first: [] }

async function sdkSample(keep) {
  const t0 = performance.now()
  const sbx = await Sandbox.create()
  const t1 = performance.now()
  const r = await sbx.commands.run('echo hi')
  const t2 = performance.now()
  if (r.stdout !== 'hi\n') throw new Error(`unexpected output ${JSON.stringify(r.stdout)}`)
  if (keep) {
    sdkRun.total.push(t2 - t0)
    sdkRun.create.push(t1 - t0)
    sdkRun.first.push(t2 - t1)
  }
  await sbx.kill()
}

async function v1Sample(keep) {
  const t0 = performance.now()
  const made = await v1('POST', '/v1/sandboxes?wait=true', {})
  const t1 = performance.now()
  const r = await v1('POST', `/v1/sandboxes/${made.sandbox.id}/exec`, { shell: 'echo hi' })
  const t2 = performance.now()
  if (r.stdout !== 'hi\n') throw new Error(`unexpected v1 output ${JSON.stringify(r)}`)
  if (keep) {
    v1Run.total.push(t2 - t0)
    v1Run.create.push(t1 - t0)
    v1Run.first.push(t2 - t1)
  }
  await v1('DELETE', `/v1/sandboxes/${made.sandbox.id}`)
}

for (let i = 0; i < 3 + n; i++) { // the first 3: warm-up (connection pools, the template's page cache)
  const order = v1url && Math.random() < 0.5 ? [v1Sample, sdkSample] : [sdkSample, v1Sample]
  for (const f of order) if (f === sdkSample || v1url) await f(i >= 3)
}
const row = (name, xs) => ({ name, p50: rank(xs, 50), p95: rank(xs, 95), p99: rank(xs, 99), max: Math.max(...xs) })
const rows = [row('create + first commands.run', sdkRun.total), row('  Sandbox.create()', sdkRun.create), row("  commands.run('echo hi')", sdkRun.first)]
if (v1url)
  rows.push(row('v1: create + first exec', v1Run.total), row('  POST /v1/sandboxes?wait=true', v1Run.create), row('  POST …/exec echo hi', v1Run.first))
const over = v1url ? { p50: rank(sdkRun.total, 50) - rank(v1Run.total, 50), p99: rank(sdkRun.total, 99) - rank(v1Run.total, 99) } : null
if (json) {
  console.log(JSON.stringify({ sdk: version, n, rows, sdk_over_v1_ms: over }))
} else {
  console.log(`E2B SDK ${version}, ${n} runs, one at a time${v1url ? ', each paired with the same through the v1 API' : ''} (ms, nearest rank)`)
  console.log('| measure | p50 | p95 | p99 | max |\n|---|---|---|---|---|')
  for (const r of rows) console.log(`| ${r.name} | ${r.p50.toFixed(1)} | ${r.p95.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.max.toFixed(1)} |`)
  if (over) console.log(`SDK over v1: p50 ${over.p50.toFixed(1)} ms, p99 ${over.p99.toFixed(1)} ms`)
}
