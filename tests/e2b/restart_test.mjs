// A process started through the E2B SDK outlives a kill -9 of spaced. run_e2b_tests.py runs
//   node restart_test.mjs <package> before        -> prints {"sandboxId", "pid", "token"}
// then kills spaced with SIGKILL and starts it again, then
//   node restart_test.mjs <package> after '<json>'
// which reconnects (same envd access token), re-attaches to the command by pid and checks
// that its whole output arrives, written partly while spaced was away.
import assert from 'node:assert/strict'

const [pkg, phase, state] = process.argv.slice(2)
const { Sandbox } = await import(pkg)

if (phase === 'before') {
  const sbx = await Sandbox.create({ timeoutMs: 300_000 })
  const h = await sbx.commands.run('for i in 1 2 3 4 5 6; do echo line $i; sleep 0.5; done', { background: true, timeoutMs: 0 })
  await h.disconnect()
  console.log(JSON.stringify({ sandboxId: sbx.sandboxId, pid: h.pid, token: sbx.envdAccessToken }))
} else {
  const { sandboxId, pid, token } = JSON.parse(state)
  const sbx = await Sandbox.connect(sandboxId)
  assert.equal(sbx.envdAccessToken, token, 'the envd access token survives a restart')
  const h = await sbx.commands.connect(pid)
  const r = await h.wait()
  assert.equal(r.stdout, [1, 2, 3, 4, 5, 6].map((i) => `line ${i}\n`).join(''))
  await sbx.kill()
  console.log('ok - process survived kill -9 of spaced and its output is whole')
}
