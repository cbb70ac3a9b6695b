// With the e2b-base preset built, E2B's default template "base" is it: bash runs the
// commands as `user` in /home/user, with E2B's base tools: python (and python3), pip that
// installs for the user, git, curl, procps, node, a C compiler, and passwordless sudo to the
// sandbox's root (only the sandbox's: it still cannot mount). run_e2b_tests.py builds the
// preset, then runs: node base_template_test.mjs <package>
import assert from 'node:assert/strict'

const { Sandbox } = await import(process.argv[2] || 'e2b-latest')
const sbx = await Sandbox.create()
const ok = (what) => console.log('ok - base is e2b-base: ' + what)
try {
  const r = await sbx.commands.run('[[ -n "$BASH_VERSION" ]] && echo bash; python -c "print(6*7)"; id -un; pwd')
  assert.equal(r.stdout, 'bash\n42\nuser\n/home/user\n')
  assert.equal((await sbx.getInfo()).templateId, 'base')
  ok('bash, python, user /home/user')

  await sbx.files.write('hello.py', 'import sys\nprint("hello from", sys.version_info[0])\n')
  assert.equal((await sbx.commands.run('python3 hello.py')).stdout, 'hello from 3\n')

  // pip installs for the user (no externally-managed-environment refusal); no network here,
  // so a local package without build isolation.
  await sbx.files.write('pkg/pyproject.toml', '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n' +
    '[project]\nname = "spacehello"\nversion = "1.0"\n')
  await sbx.files.write('pkg/spacehello.py', 'def hi():\n    return "hi from pip"\n')
  const pip = await sbx.commands.run('pip install --no-index --no-build-isolation ./pkg 2>&1 && python -c "import spacehello; print(spacehello.hi())"')
  assert.match(pip.stdout, /hi from pip\n$/)
  assert.doesNotMatch(pip.stdout, /externally-managed-environment/)
  ok('pip installs for the user')

  for (const cmd of ['git --version', 'curl --version', 'wget --version', 'ps -e', 'jq --version', 'node --version',
    'npm --version', 'gcc --version', 'make --version']) {
    const c = await sbx.commands.run(cmd)
    assert.equal(c.exitCode, 0, cmd)
  }
  ok('git, curl, wget, ps, jq, node, npm, gcc, make')

  const sudo = await sbx.commands.run('sudo id -u; sudo -n true && echo nopasswd')
  assert.equal(sudo.stdout, '0\nnopasswd\n')
  ok('sudo id -u is 0, without a password')

  // Root through sudo is the sandbox's root: no mounts, no namespaces, no host processes.
  for (const cmd of ['sudo mount -t tmpfs none /mnt', 'sudo unshare -U true', 'sudo nsenter -t 1 -m true']) {
    const c = await sbx.commands.run(cmd).catch((e) => e)
    assert.notEqual(c.exitCode, 0, cmd + ' succeeded')
  }
  const pids = await sbx.commands.run('sudo sh -c \'ls -d /proc/[0-9]* | wc -l\'')
  assert.ok(Number(pids.stdout) <= 8, 'sudo root sees ' + pids.stdout + ' processes')
  assert.match((await sbx.commands.run("sudo cat /proc/1/cmdline | tr '\\0' ' '")).stdout, /^space-agent /)
  ok('sudo root cannot mount, make namespaces or see host processes')
} finally {
  await sbx.kill()
}
