// What the E2B SDK test files share: the version of the SDK under test, check() that runs one
// named check and prints "ok - …" / "not ok - …", the sandboxes made (killed at the end), and
// the last line and exit status. E2B_TEST_ONLY (a regular expression) picks checks by name.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

export function sdkVersion(pkg) {
  return JSON.parse(readFileSync(createRequire(import.meta.url).resolve(`${pkg}/package.json`))).version
}

export function checker(version, Sandbox) {
  const only = process.env.E2B_TEST_ONLY ? new RegExp(process.env.E2B_TEST_ONLY) : null
  const made = []
  let failed = 0
  async function check(name, fn) {
    if (only && !only.test(name)) return
    const t0 = Date.now()
    try {
      const skipped = await fn()
      console.log(`ok - ${version} ${name} (${Date.now() - t0} ms)${skipped === 'skip' ? ' # SKIP not in this SDK' : ''}`)
    } catch (e) {
      failed++
      console.log(`not ok - ${version} ${name}: ${e && e.stack ? e.stack : e}`)
    }
  }
  async function finish(label) {
    for (const id of made) await Sandbox.kill(id).catch(() => {})
    console.log(failed ? `# ${label}: ${failed} failed` : `# ${label}: all passed`)
    process.exit(failed ? 1 : 0)
  }
  return { check, made, finish }
}
