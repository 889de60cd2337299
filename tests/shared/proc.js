// Shared by the suites whose tests drive real processes (tests/remote, tests/redis, tests/js); the runners copy
// tests/shared/*.js into each suite's project, beside the suite's own files.
import { spawn } from 'node:child_process'
import assert from 'node:assert/strict'
import { createInterface } from 'node:readline'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))

/** A child process that speaks JSON lines; every event is kept, and `next()` waits for one. */
export class Proc {
  /** Runs `script` (a file beside this one) on `runtime` with `args`. */
  constructor(runtime, script, args, name = path.basename(script, '.js')) {
    this.name = name
    this.events = []
    this.waiters = []
    this.stderr = ''
    this.child = spawn(runtime, [path.join(here, script), ...args], { cwd: here, stdio: ['pipe', 'pipe', 'pipe'] })
    this.pid = this.child.pid
    this.exited = new Promise(resolve =>
      this.child.on('exit', (code, signal) => {
        this.exit = { code, signal }
        resolve(this.exit)
        // Nothing more will come: whoever waits is told now, not at its timeout.
        for (const w of [...this.waiters]) w.gone?.()
      }),
    )
    this.child.stderr.on('data', d => (this.stderr += d))
    this.child.stdin.on('error', () => {})
    createInterface({ input: this.child.stdout }).on('line', line => {
      let event
      try {
        event = JSON.parse(line)
      } catch {
        event = { ev: 'stdout', line }
      }
      this.events.push(event)
      for (const w of [...this.waiters]) if (w.match(event)) w.resolve(event)
    })
  }

  send(cmd) {
    this.child.stdin.write(JSON.stringify(cmd) + '\n')
  }

  /** Sends a command and waits for the first event after it that matches. */
  request(cmd, match, ms = 10_000) {
    const since = this.events.length
    this.send(cmd)
    return this.next(match, ms, { since })
  }

  /** The first event (already seen, or to come) that matches; rejects after `ms`. */
  next(match, ms = 10_000, { since = 0 } = {}) {
    const m = typeof match === 'function' ? match : e => Object.entries(match).every(([k, v]) => e[k] === v)
    const seen = this.events.slice(since).find(m)
    if (seen) return Promise.resolve(seen)
    if (this.exit) return Promise.reject(new Error(`${this.name}: exited (${JSON.stringify(this.exit)}); stderr: ${this.stderr.slice(-800)}`))
    return new Promise((resolve, reject) => {
      const w = { match: m }
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1)
        reject(new Error(`${this.name}: no event ${JSON.stringify(typeof match === 'function' ? String(match) : match)} in ${ms}ms; events: ${JSON.stringify(this.events.slice(-8))}; stderr: ${this.stderr.slice(-800)}`))
      }, ms)
      w.resolve = e => {
        clearTimeout(timer)
        this.waiters.splice(this.waiters.indexOf(w), 1)
        resolve(e)
      }
      w.gone = () => {
        clearTimeout(timer)
        this.waiters.splice(this.waiters.indexOf(w), 1)
        reject(new Error(`${this.name}: exited (${JSON.stringify(this.exit)}) before event ${JSON.stringify(typeof match === 'function' ? String(match) : match)}; events: ${JSON.stringify(this.events.slice(-8))}; stderr: ${this.stderr.slice(-800)}`))
      }
      this.waiters.push(w)
    })
  }

  /** Whether an event matching has been seen. */
  saw(match) {
    return this.events.some(e => Object.entries(match).every(([k, v]) => e[k] === v))
  }

  kill(signal = 'SIGKILL') {
    try {
      process.kill(this.pid, signal)
    } catch {
      // already gone
    }
  }

  /** Ends the process (SIGKILL) and waits for it: the cleanup of every test. */
  async stop() {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.kill('SIGCONT')
      this.kill('SIGKILL')
    }
    await this.exited
  }
}

/**
 * Runs `script` (a file beside this one) with `args` on this very runtime (under Deno, `deno run
 * --allow-all`) to its end, killed after `ms`: its exit `code`, its `stdout` and `stderr`, the JSON
 * objects it printed one a line (`printed`), and how long it lived (`ms`).
 */
export function runScript(script, args = [], ms = 30_000) {
  const file = path.join(here, script)
  const argv = typeof Deno === 'undefined' ? [file, ...args] : ['run', '--allow-all', file, ...args]
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, argv, { cwd: here, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', d => (stdout += d))
    child.stderr.on('data', d => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), ms)
    child.on('error', reject)
    child.on('close', code => {
      clearTimeout(timer)
      const printed = stdout
        .split('\n')
        .filter(line => line.startsWith('{'))
        .map(line => JSON.parse(line))
      resolve({ code, stdout, stderr, printed, ms: performance.now() - started })
    })
  })
}

/**
 * `runScript`, whose script must exit 0 having printed `{ what, value }` lines that make up `expected`
 * (`{ [what]: value }`): answers how long it lived.
 */
export async function answeredBy(script, args, expected, ms) {
  const { code, printed, stderr, ms: lived } = await runScript(script, args, ms)
  const answers = Object.fromEntries(printed.map(({ what, value }) => [what, value]))
  assert.equal(code, 0, `${script} ${args.join(' ')}: exit ${code} after ${Math.round(lived)} ms, printed ${JSON.stringify(answers)}: ${stderr.slice(-800)}`)
  assert.deepEqual(answers, expected)
  return lived
}
