// Shared by the CLI tests: real `holdfast` processes (the bin of the packed package, installed into a
// fresh project by tests/cli/run.sh, which sets HOLDFAST_BIN), real servers on free ports.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer } from 'node:net'

export const BIN = process.env.HOLDFAST_BIN
if (!BIN) throw new Error('HOLDFAST_BIN must name the installed holdfast command (tests/cli/run.sh sets it)')

/** How long a test waits for something that should happen, before calling it hung. Never a speed check. */
const PATIENCE = 30_000

/** Temporary directories to remove when the test process exits (one exit listener for all). */
const tempDirs = []
process.on('exit', () => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
})

/** A fresh temporary directory, removed when the test process exits. */
export function tempDir() {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-cli-'))
  tempDirs.push(dir)
  return dir
}

/** The environment of a holdfast process: the test's, without a HOLDFAST_TOKEN unless given. */
function envOf(extra = {}) {
  const env = { ...process.env, ...extra }
  if (!('HOLDFAST_TOKEN' in extra)) delete env.HOLDFAST_TOKEN
  return env
}

/**
 * Starts `holdfast ARGS…` and collects its output. `done` resolves to { code, signal, stdout, stderr }
 * when it exits; `output()` is what it printed so far.
 */
export function start(args, { env, cwd } = {}) {
  const child = spawn(BIN, args, { env: envOf(env), cwd, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', d => (stdout += d))
  child.stderr.setEncoding('utf8').on('data', d => (stderr += d))
  const done = new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
  return { child, done, output: () => ({ stdout, stderr }) }
}

/** Runs `holdfast ARGS…` to its end. */
export function run(args, options) {
  return start(args, options).done
}

/** Polls `check` until it answers something truthy; fails after PATIENCE. */
export async function until(check, what) {
  const deadline = Date.now() + PATIENCE
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 25))
  }
}

/** Waits for a file to exist (a command's sign that it started). */
export function fileAppears(file) {
  return until(() => existsSync(file), `${file} to appear`)
}

/**
 * Starts `holdfast serve` on a free port in a fresh directory (or `dir`), with `env` added to its
 * environment, and waits until it says where it listens. Answers { url, tokenFile, dir, proc, stop() }.
 */
export async function serve({ dir = join(tempDir(), 'store'), args = ['--port', '0'], env } = {}) {
  const proc = start(['serve', '--dir', dir, ...args], { env })
  let exited = false
  void proc.done.then(() => (exited = true))
  const m = await until(() => {
    if (exited) throw new Error(`holdfast serve exited early:\n${proc.output().stdout}${proc.output().stderr}`)
    return /^holdfast: serving (\S+) \(token in (.+)\)$/m.exec(proc.output().stdout)
  }, 'holdfast serve to print where it listens')
  const server = {
    url: m[1],
    tokenFile: m[2],
    dir,
    proc,
    token: () => readFileSync(m[2], 'utf8').trim(),
    async stop(signal = 'SIGTERM') {
      if (!exited) proc.child.kill(signal)
      return proc.done
    },
  }
  return server
}

/** The environment of a `holdfast serve` that loads the test-only module `file` (NODE_OPTIONS=--import) first. */
function preloading(file) {
  const preload = new URL(file, import.meta.url).href
  return { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${preload}`.trim() }
}

/**
 * The environment of a `holdfast serve` whose store traps, as a bug in the engine would, when its
 * process gets SIGUSR2 (test-only: trap-on-sigusr2.js).
 */
export function trapOnSignal() {
  return preloading('./trap-on-sigusr2.js')
}

/**
 * The environment of a `holdfast serve` whose store traps during the close a signal begins: `where`
 * is `engine` (in the engine's own close) or `after` (once the close closed the engine, while it waits
 * for what it closes). Test-only: trap-in-close.js.
 */
export function trapInClose(where) {
  return { ...preloading('./trap-in-close.js'), HOLDFAST_TEST_TRAP_IN_CLOSE: where }
}

/** A TCP port nothing listens on (it was free a moment ago). */
export async function closedPort() {
  const server = createServer()
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise(resolve => server.close(resolve))
  return port
}

/** Whether a process is gone (or a zombie nobody reaped yet: it runs no more either way). */
export function processGone(pid) {
  const state = processState(pid)
  return state === undefined || state === 'Z'
}

/** A process's state letter from /proc (`T`: stopped, `Z`: a zombie), or undefined once it is gone. */
export function processState(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat[stat.lastIndexOf(')') + 2]
  } catch {
    return undefined
  }
}

/** Whether an output has exactly one line. */
export function oneLine(text) {
  return text.trim().length > 0 && !text.trim().includes('\n')
}

/** Whether script(1) (util-linux) is there, to run a command in a terminal of its own. */
export const hasScript = spawnSync('script', ['--version']).status === 0

/**
 * Starts `holdfast ARGS…` in a terminal of its own (script(1)), its stdin and stdout that terminal, its
 * stderr a file. `hangUp()` closes the terminal, as closing its window or losing an ssh session does
 * (every use of it fails EIO from then on), then sends the command SIGHUP, as the terminal's shell
 * passes it on to its jobs; it resolves to { code, stderr } once the command ended. The shell ignores
 * SIGHUP itself, to outlive its terminal and tell the command's exit status. `shown()` is what the
 * command printed to the terminal so far.
 */
export async function inTerminal(args) {
  const marks = tempDir()
  const status = join(marks, 'status')
  const errors = join(marks, 'stderr')
  const quoted = [BIN, ...args].map(a => `'${a.replaceAll("'", "'\\''")}'`).join(' ')
  const line = `trap '' HUP; ${quoted} <&1 2>${errors} & echo "pid $!"; wait $!; echo $? > ${status}`
  const terminal = spawn('script', ['-qfec', line, '/dev/null'], { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, SHELL: '/bin/sh' } })
  const closed = new Promise(resolve => terminal.once('exit', resolve))
  let shown = ''
  terminal.stdout.setEncoding('utf8').on('data', d => (shown += d))
  const pid = Number((await until(() => /^pid (\d+)\r?$/m.exec(shown), 'the command to start in its terminal'))[1])
  return {
    pid,
    shown: () => shown,
    async hangUp() {
      terminal.kill('SIGKILL')
      await closed
      signal(pid, 'SIGHUP')
      const code = await until(() => (existsSync(status) ? readFileSync(status, 'utf8').trim() : ''), 'the command to end')
      return { code: Number(code), stderr: readFileSync(errors, 'utf8') }
    },
    /** Ends it if a test failed before hangUp(). */
    kill() {
      terminal.kill('SIGKILL')
      signal(pid, 'SIGKILL')
    },
  }
}

/** Sends `name` to the process `pid`, if it is still there. */
function signal(pid, name) {
  try {
    process.kill(pid, name)
  } catch {
    // gone
  }
}
