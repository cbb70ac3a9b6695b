// A process started through the E2B SDK outlives a kill -9 of spaced. run_e2b_tests.py runs
//   node restart_test.mjs <package> before        -> prints {"sandboxId", "pid", "token"}
// then kills spaced with SIGKILL and starts it again, then
//   node restart_test.mjs <package> after '<json>'
// which reconnects (same envd access token), re-attaches to the command by pid and checks
// that what it writes from then on arrives without a gap, to its last line (as in envd,
// Connect gives only output written after it). The command runs 30 s: it must outlive the
// restart and a start of node, which took over 10 s on a loaded 2-core machine.
import assert from 'node:assert/strict'

const [pkg, phase, state] = process.argv.slice(2)
const { Sandbox } = await import(pkg)

if (phase === 'before') {
  const sbx = await Sandbox.create({ timeoutMs: 300_000 })
  const h = await sbx.commands.run('for i in $(seq 1 60); do echo line $i; sleep 0.5; done', { background: true, timeoutMs: 0 })
  await h.disconnect()
  console.log(JSON.stringify({ sandboxId: sbx.sandboxId, pid: h.pid, token: sbx.envdAccessToken }))
} else {
  const { sandboxId, pid, token } = JSON.parse(state)
  const sbx = await Sandbox.connect(sandboxId)
  assert.equal(sbx.envdAccessToken, token, 'the envd access token survives a restart')
  const h = await sbx.commands.connect(pid)
  const r = await h.wait()
  const lines = r.stdout.split('\n').filter(Boolean)
  assert.ok(lines.length > 0 && lines.length < 60, r.stdout)
  const first = Number(lines[0].split(' ')[1])
  assert.deepEqual(lines, Array.from({ length: 61 - first }, (_, k) => `line ${first + k}`))
  await sbx.kill()
  console.log('ok - process survived kill -9 of spaced and its output goes on without a gap')
}
