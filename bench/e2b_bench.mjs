// e2b_bench.mjs: what public sandbox leaderboards measure, through the official E2B SDK:
// Sandbox.create() then the first commands.run('echo hi'), N times one after the other.
// Prints p50/p95/p99 (nearest rank, ms) of the whole, of create and of the first run.
// Each sandbox is killed after its sample (not timed). bench/e2b_bench.py runs it against a
// throwaway spaced; by hand: E2B_API_URL / E2B_SANDBOX_URL / E2B_API_KEY, then
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
const total = [], create = [], first = []
for (let i = 0; i < 3; i++) { // warm-up: the connection pool, the template's page cache
  const s = await Sandbox.create()
  await s.commands.run('echo hi')
  await s.kill()
}
for (let i = 0; i < n; i++) {
  const t0 = performance.now()
  const sbx = await Sandbox.create()
  const t1 = performance.now()
  const r = await sbx.commands.run('echo hi')
  const t2 = performance.now()
  if (r.stdout !== 'hi\n') throw new Error(`unexpected output ${JSON.stringify(r.stdout)}`)
  total.push(t2 - t0)
  create.push(t1 - t0)
  first.push(t2 - t1)
  await sbx.kill()
}
const row = (name, xs) => ({ name, p50: rank(xs, 50), p95: rank(xs, 95), p99: rank(xs, 99), max: Math.max(...xs) })
const rows = [row('create + first commands.run', total), row('  Sandbox.create()', create), row("  commands.run('echo hi')", first)]
if (json) {
  console.log(JSON.stringify({ sdk: version, n, rows }))
} else {
  console.log(`E2B SDK ${version}, ${n} runs, one at a time (ms, nearest rank)`)
  console.log('| measure | p50 | p95 | p99 | max |\n|---|---|---|---|---|')
  for (const r of rows) console.log(`| ${r.name} | ${r.p50.toFixed(1)} | ${r.p95.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.max.toFixed(1)} |`)
}
