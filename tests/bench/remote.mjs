// Remote workloads (R1-R3): a lock service reached over loopback, holdfast's server side by side with
// redis-semaphore and redlock on a local redis-server. Each measurement runs in fresh processes:
//
//   - holdfast's server: `bench.mjs --serve`, one process per measurement (openStore({ storage:
//     memoryStorage() }).serve() on a free port of 127.0.0.1), stopped after it;
//   - redis-server: one for the whole run (started by the parent on a free port of 127.0.0.1 with no
//     persistence, emptied with FLUSHALL before each measurement, shut down at the end);
//   - clients: `bench.mjs --remote-child ADAPTER`, one or two per measurement, driven by the parent
//     through JSON lines on stdin/stdout. They warm up and collect garbage before the timed part.
//
// Checks are made on what the processes record, never on speed:
//   - entries and exits are appended by the holders themselves, inside fn, to a log file opened with
//     O_APPEND and shared by the client processes of a measurement; the kernel orders these appends,
//     so the log is the real-time order of entries and exits. From it the parent reads the entry order
//     (R2) and how many holders were ever inside one key at once (R2, R3);
//   - after the clients closed, the server must list no busy key (holdfast: the server's inspect();
//     Redis: DBSIZE, since every lock key is removed when released).
//
// Times that cross processes are `performance.timeOrigin + performance.now()` (ms, µs resolution):
// every process on the machine counts from the same wall clock with a monotonic clock.
//
// Each result's notes end with `cpu/op`: the CPU time (user + system) that the clients and the lock
// service (holdfast's server, or redis-server) used over the timed part, per hold, and the system
// (kernel: sockets) share of it; `main` is what the processes' main threads used of it (the rest is
// their other threads': V8's compilers and the garbage collector's helpers), where the runtime tells
// (process.threadCpuUsage). On a shared machine ops/s moves with the neighbours' load; CPU per
// op moves much less, and says which side does the work. (Short parts, R2's, have a coarse user/system
// split: the kernel may sample it per tick.)

import { spawn, spawnSync } from 'node:child_process'
import { appendFileSync, closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import inspector from 'node:inspector'
import net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { WS_LOCK, corkedSend, makeRemoteAdapter } from './adapters.mjs'
import { gc } from './workloads.mjs'

const env = process.env
const here = path.dirname(fileURLToPath(import.meta.url))
const script = path.join(here, 'bench.mjs')
const clock = () => performance.timeOrigin + performance.now()
const n = (base, scale) => Math.max(1, Math.round(base * scale))
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// ---------------------------------------------------------------- the workloads (parent side)

export const REMOTE_WORKLOADS = {
  R1: {
    title: 'remote, uncontended: 1 client holds 1 key in sequence (hold/release of an empty async fn)',
    sizes: (s) => `N=${n(20_000, s)} (cap 15s)`,
    async run(m) {
      const a = await m.client('A')
      const N = n(20_000, m.scale)
      await a.request({ op: 'r1', n: Math.ceil(N / 10), capMs: 15_000, warm: true }, 'result')
      await a.request({ op: 'gc' }, 'gc')
      const before = await m.cpu()
      const { result } = await a.request({ op: 'r1', n: N, capMs: 15_000 }, 'result')
      const after = await m.cpu()
      await m.closeClients()
      result.notes.push(m.cpuNote(before, after, result.count))
      return result
    },
  },

  R2: {
    title: 'remote, contended: 100 holders on 1 key from 2 processes, fn awaits a microtask; FIFO entry + mutual exclusion',
    sizes: (s) => `100 holders (alternately from 2 processes) x ${n(5, s)} batches (after 2 warm-up batches)`,
    async run(m) {
      const H = 100
      const B = n(5, m.scale)
      const procs = [await m.client('A'), await m.client('B')]
      const [a] = procs
      // One batch: A holds the key (the gate); holders 0..99 are issued one by one, alternately from A
      // and B, each only once the previous one is known to have reached the server; then A lets the
      // gate go, and the batch is timed from there until the last holder is done. In the warm-up
      // batches (`count`), the last holder's arrival also reads the server's line (holdfast: all 100
      // behind the gate); the entry order is checked in every batch, the warm-up ones too.
      const batch = async (tag, count) => {
        const log = m.file(`r2-${tag}.log`)
        const key = `r2-${tag}`
        await a.request({ op: 'gate', key, log }, 'gated')
        const misplaced = []
        let counted = false
        for (let i = 0; i < H; i++) {
          const ev = await procs[i % 2].request({ op: 'issue', key, i, log, count: count && i === H - 1 }, 'arrived')
          // holdfast: the server saw the first i+1 holders in line, behind the gate.
          if (ev.waiting !== undefined) counted = true
          if (ev.waiting !== undefined && ev.waiting !== i + 1 && misplaced.length < 3) misplaced.push(`holder ${i}: ${ev.waiting} waiting`)
        }
        const before = await m.cpu()
        const { t0 } = await a.request({ op: 'open' }, 'opened')
        const drained = await Promise.all(procs.map((p) => p.request({ op: 'drain' }, 'drained')))
        const after = await m.cpu()
        const failures = drained.flatMap((d) => d.failures)
        const tEnd = Math.max(...drained.map((d) => d.tEnd))
        const seen = readLog(log, H)
        return { ms: tEnd - t0, failures, misplaced, counted, before, after, ...seen }
      }
      const warm = []
      for (let b = 0; b < 2; b++) warm.push(await batch(`warm${b}`, true))
      await Promise.all(procs.map((p) => p.request({ op: 'gc' }, 'gc')))
      const bs = []
      for (let b = 0; b < B; b++) bs.push(await batch(b, false))
      await m.closeClients()
      // CPU of the timed parts only (from the gate's opening to the last holder's end), summed over batches.
      const cpu = bs.reduce((s, b) => cpuAdd(s, cpuAdd(b.after, b.before, -1)), CPU0)

      const ms = bs.reduce((s, b) => s + b.ms, 0)
      const all = [...warm, ...bs]
      const worstOut = Math.max(...all.map((b) => b.outOfPlace))
      const maxInside = Math.max(...all.map((b) => b.maxInside))
      const failures = all.flatMap((b) => b.failures)
      const misplaced = all.flatMap((b) => b.misplaced)
      const c = checker()
      if (worstOut === 0) c.note('FIFO yes')
      else if (m.fifo) c.fail(`FIFO NO (up to ${worstOut}/${H} out of place)`)
      else c.note(`FIFO NO (up to ${worstOut}/${H} out of place)`)
      if (m.fifo) {
        if (misplaced.length) c.fail(`not in line as issued: ${misplaced.slice(0, 3).join('; ')}`)
        else if (all.every((b) => b.counted)) c.note('line = issue order on the server')
        else if (warm.every((b) => b.counted)) c.note(`all ${H} in line on the server (read at the end of each warm-up batch)`)
      }
      c.note(`max inside ${maxInside}`)
      if (maxInside !== 1) c.fail(`mutual exclusion violated: ${maxInside} holders inside at once`)
      if (failures.length) c.fail(`${failures.length} holds failed: ${failures[0]}`)
      c.note(`${(ms / B).toFixed(1)} ms per ${H} holders`)
      c.note(m.cpuNote(CPU0, cpu, H * B))
      return { ops: ((H * B) / ms) * 1e3, count: H * B, ms, ok: c.ok, notes: c.notes }
    },
  },

  R3: {
    title: 'remote, cross-process: 2 processes x 32 workers on 100 keys, fn yields one event-loop turn; per-key count inside <= 1',
    sizes: (s) => `2 procs x 32 workers, 100 keys, ${(5 * s).toFixed(s < 1 ? 1 : 0)}s (after 1s warm-up)`,
    async run(m) {
      const W = 32
      const K = 100
      const seconds = 5 * m.scale
      const procs = [await m.client('A'), await m.client('B')]
      const phase = async (tag, ms) => {
        const log = m.file(`r3-${tag}.log`)
        const start = clock() + 200 // both processes begin at the same moment
        const done = await Promise.all(procs.map((p, i) => p.request({ op: 'r3', start, ms, workers: W, keys: K, log, seed: i + 1 }, 'done', ms + 60_000)))
        const end = Math.max(...done.map((d) => d.end))
        return { ms: end - start, done, ...countInside(log, K) }
      }
      const warm = await phase('warm', 1_000)
      await Promise.all(procs.map((p) => p.request({ op: 'gc' }, 'gc')))
      const before = await m.cpu()
      const run = await phase('timed', seconds * 1_000)
      const after = await m.cpu()
      await m.closeClients()

      const count = run.done.reduce((s, d) => s + d.count, 0)
      const failures = [...warm.done, ...run.done].flatMap((d) => d.failures)
      const maxCounter = Math.max(warm.maxCounter, run.maxCounter)
      const overlaps = warm.overlaps + run.overlaps
      const c = checker()
      c.note(`holds ${count} (split ${run.done.map((d) => d.count).join('/')}; ${warm.done.reduce((s, d) => s + d.count, 0)} more in the warm-up)`)
      if (run.entries !== count) c.fail(`${run.entries} entries logged for ${count} holds`)
      c.note(`overlaps ${overlaps}, max counter ${maxCounter}`)
      if (maxCounter > 1) c.fail(`mutual exclusion violated: ${overlaps} entries into a key already held, up to ${maxCounter} inside one key`)
      if (failures.length) c.fail(`${failures.length} holds failed: ${failures[0]}`)
      c.note(m.cpuNote(before, after, count))
      return { ops: (count / run.ms) * 1e3, count, ms: run.ms, ok: c.ok, notes: c.notes }
    },
  },
}

function checker() {
  const c = {
    ok: true,
    notes: [],
    note: (msg) => void c.notes.push(msg),
    fail: (msg) => void ((c.ok = false), c.notes.push(msg)),
  }
  return c
}

/** R2's log: entry order of the holders (out of place, the ones that never entered included) and most inside at once (the gate included). */
function readLog(file, count) {
  const order = []
  let inside = 0
  let maxInside = 0
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line[0] === '+') {
      if (line !== '+g') order.push(Number(line.slice(1)))
      if (++inside > maxInside) maxInside = inside
    } else if (line[0] === '-') inside--
  }
  let outOfPlace = count - order.length
  for (let j = 0; j < order.length; j++) if (order[j] !== j) outOfPlace++
  return { outOfPlace, maxInside }
}

/** R3's log: a counter per key, up on entry, down on exit; the most it ever reached, and the entries that found it above 0. */
function countInside(file, keys) {
  const counter = new Int32Array(keys)
  let maxCounter = 0
  let overlaps = 0
  let entries = 0
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line[0] === '+') {
      entries++
      const k = Number(line.slice(1))
      if (counter[k] > 0) overlaps++
      if (++counter[k] > maxCounter) maxCounter = counter[k]
    } else if (line[0] === '-') counter[Number(line.slice(1))]--
  }
  return { maxCounter, overlaps, entries }
}

// ---------------------------------------------------------------- one measurement (parent side)

/**
 * Runs workload `w` for adapter `a` in fresh processes: holdfast's server (for holdfast), one or two
 * clients. Resolves to the workload's result, or `{ error }`; never rejects. Checks afterwards that the
 * server lists no busy key.
 */
export async function measureRemote(w, a, ctx) {
  const dir = mkdtempSync(path.join(tmpdir(), `holdfast-bench-${w}-`))
  const procs = []
  const label = `${w}-${a}-${ctx.round}`
  const prof = (role) => ['--cpu-prof', `--cpu-prof-dir=${path.resolve(env.BENCH_CPU_PROF)}`, `--cpu-prof-name=${label}-${role}.cpuprofile`, ...(env.BENCH_CPU_PROF_INTERVAL ? [`--cpu-prof-interval=${env.BENCH_CPU_PROF_INTERVAL}`] : [])]
  const extra = (env.BENCH_CHILD_FLAGS ?? '').split(/\s+/).filter(Boolean)
  const flags = (role) => [...ctx.runtimeFlags, ...extra, ...(env.BENCH_CPU_PROF ? prof(role) : [])]
  const log = (role) => (env.BENCH_CHILD_LOG ? path.join(path.resolve(env.BENCH_CHILD_LOG), `${label}-${role}.log`) : undefined)
  const deadline = Date.now() + ctx.timeoutMs
  let server
  try {
    const childEnv = { ...env, BENCH_TOKEN: ctx.token, BENCH_REDIS_URL: ctx.redisUrl ?? '' }
    // BENCH_CPU_PROF_TIMED: each process names its profiles of the timed parts after its label and role.
    const roleEnv = (role) => (env.BENCH_CPU_PROF_TIMED ? { ...childEnv, BENCH_PROFILE_NAME: `${label}-${role}` } : childEnv)
    if (a === 'holdfast' || a === 'holdfast-b' || a === 'ws-echo' || a === 'ws-lock') {
      server = new Child([...flags('server'), script, '--serve', a], roleEnv('server'), 'server', deadline, log('server'))
      procs.push(server)
      childEnv.BENCH_HOLDFAST_URL = (await server.next('listening')).url
    } else {
      if (!ctx.redisPort) throw new Error('redis-server is not running')
      await redisCommand(ctx.redisPort, 'FLUSHALL')
    }
    const clients = []
    const m = {
      scale: ctx.scale,
      fifo: a === 'holdfast' || a === 'holdfast-b' || a === 'ws-lock' || a.startsWith('holdfast-redis') || a === 'redis-fifo-floor',
      file: (name) => path.join(dir, name),
      client: async (role) => {
        const c = new Child([...flags(role), script, '--remote-child', a], roleEnv(role), `client ${role}`, deadline, log(role))
        procs.push(c)
        clients.push(c)
        await c.next('ready')
        return c
      },
      // CPU time used so far by the clients together and by the lock service (holdfast's server
      // process, or redis-server from INFO cpu), user and system apart, in µs. Per op it says where
      // the work is, whatever else the machine runs; the note gives the sum per op and the kernel's part.
      cpu: async () => {
        const [used, service] = await Promise.all([
          Promise.all(clients.map((c) => c.request({ op: 'cpu' }, 'cpu'))).then((cs) =>
            cs.reduce(
              (s, c) => ({ user: s.user + c.user, sys: s.sys + c.sys, main: s.main + (c.main ?? NaN), vcs: s.vcs + (c.vcs ?? NaN), ics: s.ics + (c.ics ?? NaN) }),
              { user: 0, sys: 0, main: 0, vcs: 0, ics: 0 },
            ),
          ),
          server ? server.request({ op: 'cpu' }, 'cpu') : redisCpu(ctx.redisPort),
        ])
        return {
          cu: used.user,
          cs: used.sys,
          cm: used.main,
          cv: used.vcs,
          ci: used.ics,
          su: service.user,
          ss: service.sys,
          sm: service.main ?? NaN,
          sv: service.vcs ?? NaN,
          si: service.ics ?? NaN,
        }
      },
      cpuNote: (before, after, count) => {
        const d = cpuAdd(after, before, -1)
        const side = (user, sys, main) => `${fmtUs((user + sys) / count)} (sys ${(sys / (user + sys) * 100).toFixed(0)}%${Number.isNaN(main) ? '' : `, main ${fmtUs(main / count)}`})`
        // Context switches a hold, of all the process's threads: voluntary (a thread went to sleep, to be
        // woken later: each is a wake-up paid in latency) and involuntary (a thread was preempted).
        const csw = (v, i) => (Number.isNaN(v) ? '' : ` csw ${(v / count).toFixed(2)}+${(i / count).toFixed(2)}`)
        return `cpu/op: clients ${side(d.cu, d.cs, d.cm)}${csw(d.cv, d.ci)}, ${server ? 'server' : 'redis-server'} ${side(d.su, d.ss, d.sm)}${csw(d.sv, d.si)}`
      },
      closeClients: async () => {
        await Promise.all(clients.map((c) => c.request({ op: 'close' }, 'closed')))
        await exitedOrKilled(clients)
      },
    }
    const result = await REMOTE_WORKLOADS[w].run(m)
    // Nothing may be left held once every client has closed.
    // (holdfast/redis keeps a released key's meta, its last fence, until its grace: a key is busy while
    // its meta counts holders or waiters.)
    // (A lock's holder is the meta's field h; a semaphore counts its holders in n; q counts waiters.)
    const busy = "local n = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1])) do local c = redis.call('HMGET', k, 'n', 'q', 'h') if c[3] or tonumber(c[1] or '0') + tonumber(c[2] or '0') > 0 then n = n + 1 end end return n"
    const left = server
      ? (await server.request({ op: 'inspect' }, 'inspected')).keys
      : a.startsWith('holdfast-redis')
        ? await redisCommand(ctx.redisPort, 'EVAL', busy, '0', 'bench:{*}:m')
        : a === 'redis-fifo-floor'
          ? await redisCommand(ctx.redisPort, 'EVAL', "local n = 0 for _, k in ipairs(redis.call('KEYS', 'bench:{f:*}:k')) do if redis.call('HEXISTS', k, 'h') == 1 then n = n + 1 end end return n", '0')
          : await redisCommand(ctx.redisPort, 'DBSIZE')
    if (left !== 0) {
      result.ok = false
      result.notes.push(`${left} keys still held on the server after every client closed`)
    } else result.notes.push('0 keys left on the server')
    if (server) {
      await server.request({ op: 'close' }, 'closed')
      await exitedOrKilled([server])
    }
    return result
  } catch (error) {
    const stderr = procs.map((p) => p.stderrTail()).filter(Boolean).join(' | ')
    return { error: `${error.message}${stderr ? `: ${stderr}` : ''}` }
  } finally {
    for (const p of procs) p.kill()
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Waits for processes that said they close to exit; one still there after 10 s is killed (SIGKILL),
 * so that a process that hangs in its exit (seen once: a ws-lock server, its listener closed, asleep
 * past process.exit) never holds the run: the measurement itself already has its result.
 */
async function exitedOrKilled(procs) {
  await Promise.all(
    procs.map(async (p) => {
      let timer
      const late = new Promise((resolve) => (timer = setTimeout(resolve, 10_000, 'late')))
      if ((await Promise.race([p.exited, late])) === 'late') {
        p.child.kill('SIGKILL')
        await p.exited
      }
      clearTimeout(timer)
    }),
  )
}

/** A process of one measurement that speaks JSON lines; `request` sends a command and waits for an event. */
export class Child {
  /** `log`: a file that lines the child prints which are not events (a runtime's traces) are appended to. */
  constructor(args, childEnv, name, deadline, log) {
    this.name = name
    this.deadline = deadline
    this.log = log
    this.events = []
    this.waiters = []
    this.stderr = ''
    this.child = spawn(process.execPath, args, { cwd: here, env: childEnv, stdio: ['pipe', 'pipe', 'pipe'] })
    this.exited = new Promise((resolve) =>
      this.child.on('exit', (code, signal) => {
        this.exit = { code, signal }
        resolve(this.exit)
        for (const w of [...this.waiters]) w.check()
      }),
    )
    this.child.stderr.on('data', (d) => (this.stderr = (this.stderr + d).slice(-4000)))
    this.child.stdin.on('error', () => {})
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      // An event is one write of its own, but a runtime's traces (BENCH_CHILD_FLAGS=--trace-opt) are
      // written by C's stdio in blocks, which may end mid-line: an event can then follow part of a
      // trace's line. The part before it is the trace's.
      const at = line[0] === '{' ? 0 : line.indexOf('{"ev":')
      if (at !== 0 && log) appendFileSync(log, `${at < 0 ? line : line.slice(0, at)}\n`)
      if (at < 0) return
      // The events go to the log too, so that a trace can be placed among them (roughly: C's stdio
      // writes its traces a block at a time).
      if (log) appendFileSync(log, `>> ${line.slice(at)}\n`)
      this.events.push(JSON.parse(at === 0 ? line : line.slice(at)))
      for (const w of [...this.waiters]) w.check()
    })
  }

  request(cmd, ev, ms) {
    if (this.log) appendFileSync(this.log, `<< ${JSON.stringify(cmd)}\n`)
    this.child.stdin.write(JSON.stringify(cmd) + '\n')
    return this.next(ev, ms)
  }

  /**
   * The first event named `ev` (or an `error` event) not taken yet; rejects on exit or timeout. Each
   * event is taken once: a child answers its commands in order, one event each.
   */
  next(ev, ms = Infinity) {
    return new Promise((resolve, reject) => {
      const limit = Math.min(this.deadline - Date.now(), ms)
      const w = {
        check: () => {
          for (let i = 0; i < this.events.length; i++) {
            const e = this.events[i]
            if (e.ev !== ev && e.ev !== 'error') continue
            this.events.splice(i, 1)
            done()
            return e.ev === 'error' ? reject(new Error(`${this.name}: ${e.message}`)) : resolve(e)
          }
          if (this.exit) {
            done()
            reject(new Error(`${this.name} exited (code ${this.exit.code}${this.exit.signal ? `, ${this.exit.signal}` : ''}) before '${ev}'`))
          }
        },
      }
      const timer = setTimeout(() => {
        done()
        reject(new Error(`hung: ${this.name} sent no '${ev}' within ${Math.round(limit / 1000)}s`))
      }, Math.max(0, limit))
      const done = () => {
        clearTimeout(timer)
        this.waiters.splice(this.waiters.indexOf(w), 1)
      }
      this.waiters.push(w)
      w.check()
    })
  }

  stderrTail() {
    return this.stderr.trim().split('\n').filter(Boolean).slice(-3).join(' | ')
  }

  kill() {
    if (!this.exit) this.child.kill('SIGKILL')
  }
}

// ---------------------------------------------------------------- redis-server (parent side)

/** Starts redis-server (installed by redis.sh when missing) on a free port of 127.0.0.1, without persistence. */
export async function startRedis() {
  const found = spawnSync('bash', [path.join(here, 'redis.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  const bin = found.stdout.trim().split('\n').pop()
  if (found.status !== 0 || !bin) return { skip: 'redis-server not available (tests/bench/redis.sh failed)' }
  const version = spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.match(/v=(\S+)/)?.[1] ?? '?'
  const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-bench-redis-'))
  const port = await freePort()
  // stdio ignored: the parent blocks in spawnSync during the in-process measurements and would not
  // drain a pipe. The log goes to a file, read back if redis fails to start.
  const child = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', path.join(dir, 'redis.log')], { stdio: 'ignore' })
  let exited = false
  child.on('exit', () => (exited = true))
  const killOnExit = () => child.kill('SIGKILL')
  process.on('exit', killOnExit)
  for (let i = 0; ; i++) {
    try {
      if ((await redisCommand(port, 'PING')) === 'PONG') break
    } catch {}
    if (exited || i > 100) {
      let log = ''
      try {
        log = readFileSync(path.join(dir, 'redis.log'), 'utf8').trim().split('\n').slice(-2).join(' | ')
      } catch {}
      child.kill('SIGKILL')
      return { skip: `redis-server ${version} did not start on port ${port}: ${log}` }
    }
    await sleep(50)
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    version,
    async stop() {
      try {
        await redisCommand(port, 'SHUTDOWN', 'NOSAVE')
      } catch {}
      const timer = setTimeout(() => child.kill('SIGKILL'), 3_000)
      if (!exited) await new Promise((r) => child.once('exit', r))
      clearTimeout(timer)
      process.off('exit', killOnExit)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** redis-server's CPU time so far ({ user, sys } in µs), from INFO cpu. */
async function redisCpu(port) {
  const info = await redisCommand(port, 'INFO', 'cpu')
  const field = (name) => Number(info.match(new RegExp(`^${name}:([0-9.]+)`, 'm'))?.[1] ?? NaN) * 1e6
  return { user: field('used_cpu_user'), sys: field('used_cpu_sys') }
}

const CPU0 = { cu: 0, cs: 0, cm: 0, cv: 0, ci: 0, su: 0, ss: 0, sm: 0, sv: 0, si: 0 }
function cpuAdd(x, y, sign = 1) {
  const sum = {}
  for (const k of Object.keys(CPU0)) sum[k] = x[k] + sign * y[k]
  return sum
}

function fmtUs(us) {
  return us >= 100 ? `${us.toFixed(0)}µs` : `${us.toFixed(1)}µs`
}

/** One command to redis, spoken in RESP over its own connection (the parent loads no Redis client). */
function redisCommand(port, ...args) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    let data = ''
    socket.setEncoding('utf8')
    socket.on('connect', () => socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`))
    socket.on('data', (d) => {
      data += d
      const eol = data.indexOf('\r\n')
      if (eol < 0) return
      const line = data.slice(0, eol)
      if (line[0] === '$') {
        // A bulk string: its length in bytes, then the bytes.
        const bytes = Buffer.from(data.slice(eol + 2))
        if (bytes.length < Number(line.slice(1))) return
        socket.end()
        return resolve(bytes.subarray(0, Number(line.slice(1))).toString('utf8'))
      }
      socket.end()
      if (line[0] === '+') resolve(line.slice(1))
      else if (line[0] === ':') resolve(Number(line.slice(1)))
      else reject(new Error(`redis ${args[0]}: ${line}`))
    })
    socket.on('error', reject)
    socket.on('close', () => reject(new Error(`redis ${args[0]}: connection closed`)))
  })
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.on('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })
}

// ---------------------------------------------------------------- holdfast's server process

/** `bench.mjs --serve holdfast|holdfast-b`: a store (memoryStorage) served on a free port of 127.0.0.1, with BENCH_TOKEN. */
export async function serveChild(kind) {
  const say = (event) => process.stdout.write(JSON.stringify(event) + '\n')
  if (kind === 'ws-echo') return echoChild(say)
  if (kind === 'ws-lock') return wsLockChild(say)
  const { openStore, memoryStorage } = await import(kind)
  const store = await openStore({ storage: memoryStorage() })
  const server = await store.serve({ port: 0, host: '127.0.0.1', token: env.BENCH_TOKEN })
  say({ ev: 'listening', url: server.url })
  createInterface({ input: process.stdin }).on('line', async (line) => {
    const cmd = JSON.parse(line)
    if (cmd.op === 'inspect') say({ ev: 'inspected', keys: store.inspect().length, connections: server.connections })
    else if (cmd.op === 'cpu') say({ ev: 'cpu', ...cpuUsed() })
    else if (cmd.op === 'close') {
      await store.close()
      await server.close()
      say({ ev: 'closed' })
      process.exit(0) // --cpu-prof writes its profile on exit
    }
  })
}

/** `bench.mjs --serve ws-echo`: a WebSocket server (ws) that sends every message back, for the ws-echo floor. */
async function echoChild(say) {
  const { WebSocketServer } = await import('ws')
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
  await new Promise((resolve) => wss.once('listening', resolve))
  wss.on('connection', (ws) => {
    const send = corkedSend(ws)
    ws.on('message', (data) => send(data))
  })
  say({ ev: 'listening', url: `ws://127.0.0.1:${wss.address().port}` })
  createInterface({ input: process.stdin }).on('line', (line) => {
    const cmd = JSON.parse(line)
    if (cmd.op === 'inspect') say({ ev: 'inspected', keys: 0, connections: wss.clients.size })
    else if (cmd.op === 'cpu') say({ ev: 'cpu', ...cpuUsed() })
    else if (cmd.op === 'close') {
      wss.close()
      say({ ev: 'closed' })
      process.exit(0)
    }
  })
}

/**
 * `bench.mjs --serve ws-lock`: the ws-lock floor's server (see `WS_LOCK`). A key is in `held` while
 * someone holds it, with the holds waiting for it in the order they came; a release hands it to the
 * first of them, or frees it. It trusts its clients (a release names only the key) and forgets nothing
 * when one goes: enough for a benchmark whose clients let every key go.
 */
async function wsLockChild(say) {
  const { WebSocketServer } = await import('ws')
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
  await new Promise((resolve) => wss.once('listening', resolve))
  const held = new Map() // key -> [answer, id, answer, id, ...] of the holds in line
  wss.on('connection', (ws) => ws.on('message', wsLockMessages(held, corkedSend(ws))))
  say({ ev: 'listening', url: `ws://127.0.0.1:${wss.address().port}` })
  createInterface({ input: process.stdin }).on('line', (line) => {
    const cmd = JSON.parse(line)
    if (cmd.op === 'inspect') say({ ev: 'inspected', keys: held.size, connections: wss.clients.size })
    else if (cmd.op === 'cpu') say({ ev: 'cpu', ...cpuUsed() })
    else if (cmd.op === 'close') {
      wss.close()
      say({ ev: 'closed' })
      process.exit(0)
    }
  })
}

/**
 * The ws-lock server's handler of one connection's messages (`data`: a Buffer), answering through
 * `send`; `held` is the server's (see `wsLockChild`). Also what `protocol.mjs floor` times.
 */
export function wsLockMessages(held, send) {
  const answer = (id, granted) => {
    const m = Buffer.allocUnsafe(5)
    m.writeUInt32LE(id, 0)
    m[4] = granted ? 1 : 0
    send(m)
  }
  return (data) => {
    const op = data[0]
    const id = data.readUInt32LE(1)
    const key = data.toString('utf8', 5)
    const line = held.get(key)
    if (op === WS_LOCK.hold) {
      if (line === undefined) {
        held.set(key, [])
        answer(id, true)
      } else line.push(answer, id)
    } else if (op === WS_LOCK.try) {
      if (line === undefined) held.set(key, [])
      answer(id, line === undefined)
    } else if (op === WS_LOCK.release) {
      if (line === undefined) return
      if (line.length === 0) held.delete(key)
      else line.shift()(line.shift(), true)
    } else if (op === WS_LOCK.sync) answer(id, true)
  }
}

// ---------------------------------------------------------------- a client process

/** `bench.mjs --remote-child ADAPTER`: connects, says `ready`, then runs the parent's commands one at a time. */
export async function remoteChild(name) {
  const say = (event) => process.stdout.write(JSON.stringify(event) + '\n')
  const adapter = await makeRemoteAdapter(name, { url: env.BENCH_HOLDFAST_URL, token: env.BENCH_TOKEN, redis: env.BENCH_REDIS_URL })
  const fds = new Map()
  const logFd = (file) => {
    let fd = fds.get(file)
    if (fd === undefined) fds.set(file, (fd = openSync(file, 'a'))) // O_APPEND: each write lands whole, at the end
    return fd
  }
  let r2 // the batch under way: { release, gate, holds, last, failures }

  const ops = {
    gc: async () => {
      // BENCH_NO_GC=1: none (to tell what the collection costs the timed part after it: see the README's session 18).
      if (!env.BENCH_NO_GC) gc()
      return { ev: 'gc' }
    },

    cpu: async () => ({ ev: 'cpu', ...cpuUsed() }),

    // R1: N holds in sequence, timed (warm: the same, untimed, before).
    r1: async ({ n: N, capMs, warm }) => {
      let runs = 0
      const fn = async () => {
        runs++
      }
      let count = 0
      const t0 = performance.now()
      const stop = t0 + capMs
      // The cap is checked every 64 holds, so that reading the clock costs nothing to speak of.
      while (count < N && ((count & 63) !== 0 || performance.now() < stop)) {
        await adapter.hold('r1', fn)
        count++
      }
      const ms = performance.now() - t0
      if (warm) return { ev: 'result', result: { count } }
      const c = checker()
      if (runs !== count) c.fail(`fn ran ${runs} times for ${count} holds`)
      if (!(await freeAfterThrow(adapter, 'r1'))) c.fail('key not free after fn threw (tryHold did not acquire)')
      if (c.ok) c.note('fn ran once per hold, key free after fn threw')
      if (count < N) c.note(`time-capped: ${count}/${N} holds`)
      return { ev: 'result', result: { ops: (count / ms) * 1e3, count, ms, ok: c.ok, notes: c.notes } }
    },

    // R2: the gate is a hold like the others, logged as 'g', so that a holder let in before the gate
    // was let go shows as two inside at once.
    gate: async ({ key, log }) => {
      const fd = logFd(log)
      let release
      const gate = new Promise((r) => (release = r))
      let entered
      const inside = new Promise((r) => (entered = r))
      r2 = { release, holds: [], last: 0, failures: [] }
      r2.gate = adapter.hold(key, async () => {
        writeSync(fd, '+g\n')
        entered()
        await gate
        writeSync(fd, '-g\n')
      })
      await inside
      return { ev: 'gated' }
    },

    issue: async ({ key, i, log, count }) => {
      const fd = logFd(log)
      const batch = (r2 ??= { holds: [], last: 0, failures: [] }) // B holds no gate: its batch begins here
      batch.holds.push(
        adapter
          .hold(key, async () => {
            writeSync(fd, `+${i}\n`)
            await undefined // one microtask inside the hold
            writeSync(fd, `-${i}\n`)
          })
          .then(
            () => void (batch.last = Math.max(batch.last, clock())),
            (error) => void batch.failures.push(`holder ${i}: ${error?.message ?? error}`),
          ),
      )
      const waiting = await adapter.sync(key, count)
      return { ev: 'arrived', i, waiting }
    },

    open: async () => {
      const t0 = clock()
      r2.release()
      await r2.gate
      return { ev: 'opened', t0 }
    },

    drain: async () => {
      const batch = r2
      if (!batch) return { ev: 'drained', tEnd: 0, failures: [] }
      await Promise.all(batch.holds)
      if (batch.gate) await batch.gate
      r2 = undefined
      return { ev: 'drained', tEnd: batch.last, failures: batch.failures }
    },

    r3: async ({ start, ms, workers, keys, log, seed }) => {
      const fd = logFd(log)
      const keyNames = Array.from({ length: keys }, (_, k) => `r3:${k}`)
      const end = start + ms
      const failures = []
      let count = 0
      const worker = async (w) => {
        // xorshift32, seeded per process and worker: the same key sequence in every round.
        let x = (seed * 7919 + w * 104729) | 0 || 1
        const fns = keyNames.map((_, k) => async () => {
          writeSync(fd, `+${k}\n`)
          await new Promise(setImmediate) // one turn of the event loop inside the hold
          writeSync(fd, `-${k}\n`)
        })
        while (clock() < end) {
          x ^= x << 13
          x ^= x >>> 17
          x ^= x << 5
          const k = (x >>> 0) % keys
          try {
            await adapter.hold(keyNames[k], fns[k])
            count++
          } catch (error) {
            if (failures.length < 3) failures.push(`${error?.message ?? error}`)
            if (failures.length >= 3) break
          }
        }
      }
      await sleep(Math.max(0, start - clock()))
      await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)))
      return { ev: 'done', count, end: clock(), failures }
    },

    close: async () => {
      for (const fd of fds.values()) closeSync(fd)
      await adapter.close()
      say({ ev: 'closed' })
      process.exit(0) // --cpu-prof writes its profile on exit
    },
  }

  // Commands run one at a time, in the order they came.
  let queue = Promise.resolve()
  createInterface({ input: process.stdin }).on('line', (line) => {
    const cmd = JSON.parse(line)
    queue = queue.then(async () => {
      try {
        say(await ops[cmd.op](cmd))
      } catch (error) {
        process.stderr.write(`${cmd.op}: ${error?.stack ?? error}\n`)
        say({ ev: 'error', message: `${cmd.op}: ${error?.message ?? error}` })
      }
    })
  })
  say({ ev: 'ready' })
}

/**
 * The CPU time this process used so far, in µs: user and system (all its threads), and its main
 * thread's (user + system), where the runtime tells. Read at the bounds of every timed part, so that
 * with BENCH_CPU_PROF_TIMED it also starts a profile at one bound and writes it at the next.
 */
function cpuUsed() {
  timedProfile()
  const u = process.cpuUsage()
  const main = typeof process.threadCpuUsage === 'function' ? process.threadCpuUsage() : undefined
  const r = process.resourceUsage()
  return { user: u.user, sys: u.system, main: main ? main.user + main.system : undefined, vcs: r.voluntaryContextSwitches, ics: r.involuntaryContextSwitches }
}

/**
 * BENCH_CPU_PROF_TIMED: profiles of the timed parts only (V8's profiler through node:inspector),
 * started at one reading of `cpuUsed` and written at the next, as DIR/NAME-K.cpuprofile (NAME: the
 * measurement's label and the process's role; K counts the parts: R2's first two are its warm-up
 * batches). Node only: elsewhere it says so once and profiles nothing.
 */
let profiling
function timedProfile() {
  const dir = env.BENCH_CPU_PROF_TIMED
  if (!dir || profiling === null) return
  if (profiling === undefined) {
    try {
      if (typeof process.versions.bun === 'string') throw new Error('not on Bun')
      const session = new inspector.Session()
      session.connect()
      session.post('Profiler.enable')
      if (env.BENCH_CPU_PROF_INTERVAL) session.post('Profiler.setSamplingInterval', { interval: Number(env.BENCH_CPU_PROF_INTERVAL) })
      profiling = { session, on: false, k: 0 }
    } catch (error) {
      process.stderr.write(`BENCH_CPU_PROF_TIMED: no profiles (${error.message})\n`)
      profiling = null
      return
    }
  }
  const p = profiling
  p.on = !p.on
  if (p.on) return p.session.post('Profiler.start')
  const file = path.join(path.resolve(dir), `${env.BENCH_PROFILE_NAME ?? process.pid}-${p.k++}.cpuprofile`)
  p.session.post('Profiler.stop', (error, answer) => {
    if (error) process.stderr.write(`BENCH_CPU_PROF_TIMED: ${error.message}\n`)
    else writeFileSync(file, JSON.stringify(answer.profile))
  })
}

/** After fn threw, the key must be free again: a tryHold takes it and runs its fn once. */
async function freeAfterThrow(a, key) {
  try {
    await a.hold(key, async () => {
      throw new Error('thrown inside the hold')
    })
  } catch {}
  let runs = 0
  const r = await a.tryHold(key, () => {
    runs++
    return 'ok'
  })
  return r.acquired && r.value === 'ok' && runs === 1
}
