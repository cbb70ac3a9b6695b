// With the python preset built, E2B's default template "base" is it: bash runs the
// commands, python3 is there, the user is `user` in /home/user. run_e2b_tests.py builds the
// preset, then runs: node base_python_test.mjs <package>
import assert from 'node:assert/strict'

const { Sandbox } = await import(process.argv[2] || 'e2b-latest')
const sbx = await Sandbox.create()
try {
  const r = await sbx.commands.run('[[ -n "$BASH_VERSION" ]] && echo bash; python3 -c "print(6*7)"; id -un; pwd')
  assert.equal(r.stdout, 'bash\n42\nuser\n/home/user\n')
  await sbx.files.write('hello.py', 'import sys\nprint("hello from", sys.version_info[0])\n')
  assert.equal((await sbx.commands.run('python3 hello.py')).stdout, 'hello from 3\n')
  assert.equal((await sbx.getInfo()).templateId, 'base')
  console.log('ok - base is the python preset: bash, python3, user /home/user')
} finally {
  await sbx.kill()
}
