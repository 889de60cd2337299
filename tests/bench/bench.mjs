// holdfast benchmark: holdfast side by side with async-lock and async-mutex (and a no-lock floor), and
// over loopback (holdfast's server) side by side with redis-semaphore and redlock on a local redis-server.
//
// Method
//   - Each measurement is one fresh child process running one workload against one adapter
//     (`bench.mjs --child W3 holdfast`), so no library inherits another's heap, JIT state or garbage.
//     Under Node the child runs with --expose-gc; under Bun it calls Bun.gc(true). The child warms up,
//     collects garbage, times one pass with performance.now(), runs the workload's correctness checks,
//     closes its adapter and prints one line `RESULT {json}`.
//   - Adapters are interleaved: every round runs each workload for every adapter in turn, and the
//     adapter order is reversed every other round, so drift on the machine spreads over all of them.
//   - ops/s is the median over rounds, with [min..max]; ns/op = 1e9 / median; "vs X" = ops/s ÷ X's
//     ops/s (> 1 means faster than X). The closing "ratios" list holdfast ÷ async-lock (W1, W2, W3, W5, W6)
//     and holdfast ÷ async-mutex (W4; async-lock has no semaphore). With 5 rounds or more, each ratio
//     of the list is followed by its 90% interval (interval.mjs: the run's rounds drawn again, in the
//     pairs they ran in): a ratio whose interval spans its line is not told apart from it by the run.
//   - Checks (FIFO entry order, mutual exclusion, semaphore limit, keys released) are reported PASS or
//     FAIL. A FAIL in any round, or a child that crashed, hung or exited without a result (a hold that
//     never settled), makes this process exit 1. Speed never fails anything: there are no timed
//     assertions; BENCH_TIMEOUT only stops a child that hangs.
//   - `bare` (no lock) is the floor of a promise round trip; its checks are expected to fail and are
//     shown as "floor". `bare-context` is that plus a context of its own per hold (AsyncLocalStorage
//     run()), which LOCK-04 needs: the floor of a lock with every guarantee, and the ceiling of what
//     holdfast can reach; the ratios list it too. Its remote counterpart, `ws-echo` (R1 and R3), is one WebSocket round trip to
//     an echo server per hold: the floor of any lock service that answers each hold over one. `ws-lock`
//     (R1-R3) is the simplest FIFO lock service over the same transport (one round trip a hold, an
//     unanswered release, nothing else): the floor under key contention too, where ws-echo has none.
//   - The remote workloads R1-R3 (see remote.mjs) run the same way, interleaved and reversed, but each
//     measurement is several fresh processes: holdfast's server (`bench.mjs --serve`, one per
//     measurement) and one or two clients (`bench.mjs --remote-child ADAPTER`), all on 127.0.0.1. The
//     Redis libraries use one redis-server for the run (started here on a free port, no persistence,
//     installed by redis.sh when missing, emptied before each measurement, shut down at the end). Their
//     ratios are holdfast ÷ redis-semaphore and holdfast ÷ redlock. A FIFO violation fails holdfast
//     (which promises FIFO) and is reported for the Redis libraries (which do not).
//
// Run it with `bash tests/bench/run.sh` (installs the packages, then runs this file). Environment:
//   BENCH_ROUNDS   rounds (default 5)            BENCH_SCALE     multiplies every N (default 1)
//   BENCH_ONLY     workloads, e.g. W1,W3 or R1,R2,R3 (default: W1-W6, the in-process ones)
//   BENCH_REMOTE   1: the remote workloads R1-R3 alone (as BENCH_ONLY=R1,R2,R3)
//   BENCH_ADAPTERS adapters, e.g. async-lock,holdfast,redlock (holdfast-slim, holdfast without its async
//                  context for LOCK-04, runs only when named: what the context costs; so does
//                  plain-context-lock, a lock keeping that context and nothing else, written plainly)
//   BENCH_TIMEOUT  seconds before a child is killed as hung (default 300; for R, per measurement)
//   BENCH_CLOCK    cpu: the in-process workloads time their pass in the CPU time of the child's main
//                  thread (process.threadCpuUsage: Node 23.9+, Bun), not in wall time: ops/s per CPU
//                  second. On a shared machine a process waits for a core for as long as the others
//                  keep it busy, which the wall clock counts and this does not; what it leaves out is
//                  the work of other threads (the JIT compilers, the garbage collector's helpers).
//   BENCH_CPU_PROF a directory: the processes of remote measurements run with --cpu-prof and write
//                  their profiles there, named WORKLOAD-ADAPTER-ROUND-ROLE.cpuprofile (ROLE: server, A, B);
//                  BENCH_CPU_PROF_INTERVAL sets the sampling interval in µs (node's default: 1000).
//                  `node cpuprofile.mjs FILE...` summarizes them.
//   BENCH_CPU_PROF_TIMED a directory: the same, of the timed parts only (Node): each process starts
//                  V8's profiler at the first CPU reading of a timed part and writes the profile at the
//                  next, as WORKLOAD-ADAPTER-ROUND-ROLE-K.cpuprofile (K: the part, from 0; R2's 0 and 1
//                  are its warm-up batches). BENCH_CPU_PROF_INTERVAL applies.
//   BENCH_CHILD_FLAGS  runtime flags for every process of a remote measurement, e.g. "--trace-gc" or
//                  "--trace-gc --min-semi-space-size=1 --max-semi-space-size=1" (scavenges then count
//                  the bytes allocated: one per MB); BENCH_CHILD_LOG a directory where what each prints
//                  that is not an event goes, as WORKLOAD-ADAPTER-ROUND-ROLE.log (ROLE: server, A, B).
//                  "--import ./calls.mjs" (Node): each process counts the functions it calls in its
//                  timed parts (see calls.mjs).
//   BENCH_REDIS_SERVER  the redis-server binary (default: redis-server on PATH, installed by redis.sh)
//   BENCH_ROUNDS_OUT  a file: every round's ops/s written there as JSON, { runtime, scale, rounds:
//                  { W1: { holdfast: [ops/s of round 1, …], … }, … } } (a round without a speed, failed
//                  or n/a, as null): how the rounds spread, which the median and its interval sum up
//   HOLDFAST_SKIP  set by run.sh when holdfast is not built: holdfast is listed as not run, with the reason
//   HOLDFAST_PKG_B (run.sh) a second build, installed as holdfast-b and measured beside holdfast in the
//                  same run (an A/B under the same load): the ratios add holdfast-b ÷ holdfast

import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import os from 'node:os'
import { fileURLToPath } from 'node:url'
import { ADAPTERS, B, DESCRIPTIONS, ON_REQUEST, REMOTE_ADAPTERS, REMOTE_DESCRIPTIONS, makeAdapter, packageInfo, remoteVersion, usesRedis } from './adapters.mjs'
import { ratioInterval } from './interval.mjs'
import { REMOTE_WORKLOADS, measureRemote, remoteChild, serveChild, startRedis } from './remote.mjs'
import { WORKLOADS as LOCAL_WORKLOADS } from './workloads.mjs'

const env = process.env
const isBun = typeof process.versions.bun === 'string'

const WORKLOADS = { ...LOCAL_WORKLOADS, ...REMOTE_WORKLOADS }
const isRemote = (w) => w in REMOTE_WORKLOADS

if (process.argv[2] === '--child') await child(process.argv[3], process.argv[4])
else if (process.argv[2] === '--remote-child') await remoteChild(process.argv[3])
else if (process.argv[2] === '--serve') await serveChild(process.argv[3])
else process.exitCode = await parent()

// ---------------------------------------------------------------- child: one measurement

async function child(workload, name) {
  const scale = Number(env.BENCH_SCALE ?? 1)
  if (env.BENCH_CLOCK === 'cpu') {
    if (typeof process.threadCpuUsage !== 'function') throw new Error('BENCH_CLOCK=cpu needs process.threadCpuUsage (Node 23.9 or later, Bun)')
    // The workloads time their pass with performance.now(): here it reads this thread's CPU time, in ms.
    performance.now = () => {
      const used = process.threadCpuUsage()
      return (used.user + used.system) / 1000
    }
  }
  const adapter = await makeAdapter(name)
  let result
  try {
    result = await WORKLOADS[workload].run(adapter, scale)
  } finally {
    await adapter.close()
  }
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`)
}

// ---------------------------------------------------------------- parent: rounds, table, exit code

async function parent() {
  const started = Date.now()
  const rounds = Math.max(1, parseInt(env.BENCH_ROUNDS ?? '5', 10))
  const scale = Number(env.BENCH_SCALE ?? 1)
  const timeoutMs = Number(env.BENCH_TIMEOUT ?? 300) * 1000
  const localNames = Object.keys(LOCAL_WORKLOADS)
  const remoteNames = Object.keys(REMOTE_WORKLOADS)
  const workloads = list(env.BENCH_ONLY ?? (env.BENCH_REMOTE === '1' ? remoteNames.join(',') : undefined), [...localNames, ...remoteNames], localNames)
  const anyLocal = workloads.some((w) => !isRemote(w))
  const anyRemote = workloads.some(isRemote)
  const allAdapters = [...new Set([...ADAPTERS, ...REMOTE_ADAPTERS])]
  // holdfast-b runs whenever run.sh installed it (HOLDFAST_PKG_B), unless BENCH_ADAPTERS leaves it out.
  const withB = (names) => (packageInfo(B) ? names : names.filter((a) => a !== B))
  const picked = withB(list(env.BENCH_ADAPTERS, allAdapters, allAdapters.filter((a) => !ON_REQUEST.includes(a))))
  const wanted = anyLocal ? ADAPTERS.filter((a) => picked.includes(a)) : []
  const wantedRemote = anyRemote ? REMOTE_ADAPTERS.filter((a) => picked.includes(a)) : []
  const runtimeFlags = isBun ? [] : ['--expose-gc']

  // Which adapters run, and why the others do not.
  const info = {}
  const skipped = {}
  for (const a of wanted) {
    if (a === 'bare' || a === 'bare-context' || a === 'plain-context-lock') info[a] = { version: '-' }
    else if (a.startsWith('holdfast') && env.HOLDFAST_SKIP) skipped[a] = env.HOLDFAST_SKIP
    else if (!(info[a] = packageInfo(a === 'holdfast-slim' ? 'holdfast' : a))) skipped[a] = `not installed (run tests/bench/run.sh)`
  }
  const adapters = wanted.filter((a) => !(a in skipped))

  // The remote side: redis-server for the Redis libraries, a token for holdfast's server.
  const remoteInfo = {}
  const remoteSkipped = {}
  let redis
  for (const a of wantedRemote) {
    if (a.startsWith('holdfast') && env.HOLDFAST_SKIP) remoteSkipped[a] = env.HOLDFAST_SKIP
    else if (!(remoteInfo[a] = remoteVersion(a))) remoteSkipped[a] = `not installed (run tests/bench/run.sh)`
  }
  if (wantedRemote.some((a) => usesRedis(a) && !(a in remoteSkipped))) {
    redis = await startRedis()
    if (redis.skip) for (const a of wantedRemote) if (usesRedis(a) && !(a in remoteSkipped)) remoteSkipped[a] = redis.skip
  }
  const remoteAdapters = wantedRemote.filter((a) => !(a in remoteSkipped))
  const remoteCtx = { runtimeFlags, timeoutMs, scale, token: randomBytes(16).toString('hex'), redisUrl: redis?.url, redisPort: redis?.port, round: 0 }

  const cpus = os.cpus()
  const runtime = isBun ? `bun ${process.versions.bun} (JavaScriptCore)` : `node ${process.version} (v8 ${process.versions.v8})`
  const say = (line = '') => console.log(line)
  say(`# holdfast lock benchmark — ${new Date().toISOString()}`)
  say(`runtime ${runtime} | ${os.platform()} ${os.arch()}, ${cpus.length} CPU (${cpus[0]?.model ?? '?'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB`)
  say(`each measurement = 1 fresh child process (${isBun ? 'bun, Bun.gc' : 'node --expose-gc'}); adapters interleaved, order reversed every other round`)
  say(`rounds ${rounds}; scale ${scale}; workloads ${workloads.join(',')}`)
  if (env.BENCH_CLOCK === 'cpu') say('clock: CPU time of each child\'s main thread (BENCH_CLOCK=cpu): ops/s are holds per CPU second of that thread')
  say(`ops/s = median over rounds [min..max]; ns/op = 1e9/median; "vs X" = ops/s ÷ X's ops/s (>1 faster than X)`)
  say()
  if (anyLocal) {
    say('adapters:')
    for (const a of wanted) {
      if (a in skipped) say(`  ${pad(a, 14)}(not run: ${skipped[a]})`)
      else say(`  ${pad(a, 14)}${pad(info[a].version, 7)} ${DESCRIPTIONS[a]}${a === 'holdfast' || a === B ? ` [${info[a].dir}]` : ''}`)
    }
  }
  if (anyRemote) {
    if (anyLocal) say()
    say(`remote adapters (R1-R3; every process on this machine, over 127.0.0.1, sharing its ${cpus.length} CPU):`)
    for (const a of wantedRemote) {
      if (a in remoteSkipped) say(`  ${pad(a, 16)}(not run: ${remoteSkipped[a]})`)
      else say(`  ${pad(a, 16)}${pad(remoteInfo[a], 7)} ${REMOTE_DESCRIPTIONS[a]}`)
    }
    if (redis?.url) say(`  redis-server ${redis.version} at ${redis.url} (--save '' --appendonly no; one for the run, FLUSHALL before each measurement)`)
    if (remoteAdapters.includes('holdfast')) say(`  holdfast server: a fresh process per measurement (bench.mjs --serve), ws://127.0.0.1:<free port>`)
    if (env.BENCH_CPU_PROF) say(`  CPU profiles of the remote processes in ${env.BENCH_CPU_PROF} (--cpu-prof: speeds are lower)`)
  }

  // Measure: rounds x workloads x adapters, each a fresh child (remote: fresh processes).
  // ws-echo is the floor of one round trip per hold: R2 (contention, FIFO) has no such floor.
  const adaptersOf = (w) => (isRemote(w) ? remoteAdapters.filter((a) => a !== 'ws-echo' || w !== 'R2') : adapters)
  const results = {} // results[w][a] = [result per round]
  for (const w of workloads) results[w] = Object.fromEntries(adaptersOf(w).map((a) => [a, []]))
  try {
    for (let r = 0; r < rounds; r++) {
      remoteCtx.round = r + 1
      for (const w of workloads) {
        const order = r % 2 === 0 ? adaptersOf(w) : [...adaptersOf(w)].reverse()
        for (const a of order) {
          if (process.stderr.isTTY) process.stderr.write(`\rround ${r + 1}/${rounds} ${w} ${pad(a, 16)}`)
          results[w][a].push(isRemote(w) ? await measureRemote(w, a, remoteCtx) : measure(w, a, runtimeFlags, timeoutMs))
        }
      }
      if (!process.stderr.isTTY) process.stderr.write(`round ${r + 1}/${rounds} done\n`)
    }
  } finally {
    await redis?.stop?.()
  }
  if (process.stderr.isTTY) process.stderr.write('\r' + ' '.repeat(48) + '\r')
  if (env.BENCH_ROUNDS_OUT) {
    const perRound = Object.fromEntries(workloads.map((w) => [w, Object.fromEntries(Object.entries(results[w]).map(([a, rs]) => [a, rs.map((r) => r.ops ?? null)]))]))
    writeFileSync(env.BENCH_ROUNDS_OUT, `${JSON.stringify({ runtime, scale, rounds: perRound })}\n`)
  }

  // Report.
  const failures = []
  const medians = {} // medians[w][a] = ops/s
  for (const w of workloads) {
    medians[w] = {}
    // The columns "vs X": the in-process competitors, or the Redis libraries for the remote workloads.
    const [x, y] = isRemote(w) ? ['redis-semaphore', 'redlock'] : ['async-lock', 'async-mutex']
    const width = isRemote(w) ? 16 : 14
    say()
    say(`## ${w} ${WORKLOADS[w].title}`)
    say(`   sizes: ${WORKLOADS[w].sizes(scale)}`)
    say(`${pad('adapter', width)}${lpad('ops/s', 9)}${lpad('[min..max]', 18)}${lpad('ns/op', 10)}${lpad(`vs ${x}`, x.length + 5)}${lpad(`vs ${y}`, y.length + 5)}   ${pad('check', 7)}notes`)
    const rows = adaptersOf(w).map((a) => ({ a, ...summarize(a, results[w][a]) }))
    for (const row of rows) if (row.median !== undefined) medians[w][row.a] = row.median
    for (const row of rows) {
      if (row.check === 'FAIL' || row.check === 'ERROR') failures.push(`${w} ${row.a}: ${row.notes}`)
      if (row.median === undefined) {
        say(`${pad(row.a, width)}${lpad('—', 9)}${' '.repeat(18 + 10 + x.length + 5 + y.length + 5)}   ${pad(row.check, 7)}${row.notes}`)
        continue
      }
      const vs = (b) => (medians[w][b] === undefined || b === row.a ? '' : ratio(row.median / medians[w][b]))
      say(
        `${pad(row.a, width)}${lpad(fmtOps(row.median), 9)}${lpad(`[${fmtOps(row.min)}..${fmtOps(row.max)}]`, 18)}` +
          `${lpad(fmtNs(1e9 / row.median), 10)}${lpad(vs(x), x.length + 5)}${lpad(vs(y), y.length + 5)}   ${pad(row.check, 7)}${row.notes}`,
      )
    }
  }

  say()
  say(`## ratios (holdfast ops/s ÷ competitor ops/s; >1 = holdfast faster${rounds >= 5 ? '; 90%: the interval of the ratio over the rounds, interval.mjs' : ''})`)
  // The interval of `mine` ÷ `other` in workload w, from the speeds of their rounds ('' with fewer than 5).
  const spread = (w, mine, other) => {
    const ops = (a) => (results[w][a] ?? []).map((r) => r.ops)
    const interval = ratioInterval(ops(mine), ops(other))
    return interval === undefined ? '' : `   90%: ${interval[0].toFixed(2)}-${interval[1].toFixed(2)}x`
  }
  const ran = (w) => (isRemote(w) ? remoteAdapters : adapters).includes('holdfast')
  if (anyLocal && !adapters.includes('holdfast')) say(`holdfast not run: ${skipped.holdfast ?? 'not selected (BENCH_ADAPTERS)'}`)
  if (anyRemote && !remoteAdapters.includes('holdfast')) say(`holdfast (remote) not run: ${remoteSkipped.holdfast ?? 'not selected (BENCH_ADAPTERS)'}`)
  // holdfast/redis (and its B build, and the floor of a FIFO lock with fences on Redis) on the same
  // redis-server as the Redis libraries, and beside holdfast's own server.
  const redisRatios = (w) => {
    for (const mine of ['holdfast-redis', 'holdfast-redis-b', 'redis-fifo-floor']) {
      const r = medians[w][mine]
      if (!isRemote(w) || r === undefined) continue
      for (const other of ['redis-semaphore', 'redlock', 'holdfast', 'holdfast-redis', 'redis-fifo-floor']) {
        const o = medians[w][other]
        if (o !== undefined && other !== mine) say(`${pad(w, 4)}${mine} ÷ ${pad(other, 17)}${ratio(r / o)}   (${mine} ${fmtOps(r)}, ${other} ${fmtOps(o)})${spread(w, mine, other)}`)
      }
    }
  }
  for (const w of workloads) {
    redisRatios(w)
    if (!ran(w)) continue
    const others = isRemote(w) ? ['redis-semaphore', 'redlock', ...(w === 'R2' ? [] : ['ws-echo']), 'ws-lock'] : [w === 'W4' ? 'async-mutex' : 'async-lock']
    for (const other of others) {
      const h = medians[w].holdfast
      const o = medians[w][other]
      const text = h === undefined || o === undefined ? '—' : `${ratio(h / o)}   (holdfast ${fmtOps(h)}, ${other} ${fmtOps(o)})${spread(w, 'holdfast', other)}`
      say(`${pad(w, 4)}holdfast ÷ ${pad(other, isRemote(w) ? 17 : 13)}${text}`)
      // The most any lock keeping LOCK-04 could reach here: no lock at all, only the context.
      const c = medians[w]['bare-context']
      if (!isRemote(w) && c !== undefined && o !== undefined) say(`${pad('', 4)}bare-context ÷ ${pad(other, 12)}${ratio(c / o)}   (the ceiling with LOCK-04's context: no lock, only a context entered per hold)${spread(w, 'bare-context', other)}`)
      // Where run (on request): a plain lock keeping LOCK-04's context, against the same library.
      const f = medians[w]['plain-context-lock']
      if (!isRemote(w) && f !== undefined && o !== undefined) say(`${pad('', 4)}plain-context-lock ÷ ${pad(other, 12)}${ratio(f / o)}   (a lock keeping LOCK-04's context and nothing else, written plainly)${spread(w, 'plain-context-lock', other)}`)
    }
    // The A/B: the second build against the first, and against the floor.
    const hb = medians[w][B]
    if (hb !== undefined) {
      for (const other of ['holdfast', ...(isRemote(w) ? ['ws-lock'] : [w === 'W4' ? 'async-mutex' : 'async-lock'])]) {
        const o = medians[w][other]
        if (o !== undefined) say(`${pad(w, 4)}holdfast-b ÷ ${pad(other, isRemote(w) ? 19 : 15)}${ratio(hb / o)}   (holdfast-b ${fmtOps(hb)}, ${other} ${fmtOps(o)})${spread(w, B, other)}`)
      }
    }
  }

  say()
  if (failures.length === 0) say('result: PASS (no correctness failure; speed is reported, never judged)')
  else {
    say(`result: FAIL (${failures.length} correctness failure${failures.length > 1 ? 's' : ''} or errors)`)
    for (const f of failures) say(`  ${f}`)
  }
  say(`total wall time ${((Date.now() - started) / 1000).toFixed(0)}s`)
  return failures.length === 0 ? 0 : 1
}

/** One measurement in a fresh child process. Resolves to the child's result, or { error }. */
function measure(w, a, runtimeFlags, timeoutMs) {
  const script = fileURLToPath(import.meta.url)
  const p = spawnSync(process.execPath, [...runtimeFlags, script, '--child', w, a], {
    encoding: 'utf8',
    env,
    timeout: timeoutMs,
    maxBuffer: 64 << 20,
  })
  const line = (p.stdout ?? '').split('\n').find((l) => l.startsWith('RESULT '))
  if (line && p.status === 0) return JSON.parse(line.slice(7))
  const why = p.error?.code === 'ETIMEDOUT' || p.signal === 'SIGTERM' ? `hung: killed after ${timeoutMs / 1000}s`
    : line ? `exit code ${p.status}`
    : `child exited (code ${p.status}${p.signal ? `, ${p.signal}` : ''}) without a result; a hold that never settled?`
  const tail = lastLines(`${p.stderr ?? ''}`, 3)
  return { error: tail ? `${why}: ${tail}` : why }
}

/** Median, range, check and notes of one adapter's rounds of one workload. */
function summarize(a, rs) {
  const n = rs.length
  const errors = rs.filter((r) => r.error)
  if (errors.length) return { check: 'ERROR', notes: `(${errors.length}/${n} rounds) ${errors[0].error}` }
  if (rs.some((r) => r.na)) return { check: 'n/a', notes: rs.find((r) => r.na).na }
  const ops = rs.map((r) => r.ops).sort((x, y) => x - y)
  const median = n % 2 ? ops[(n - 1) / 2] : (ops[n / 2 - 1] + ops[n / 2]) / 2
  const failed = rs.filter((r) => !r.ok)
  const shown = failed[0] ?? rs[rs.length - 1]
  let notes = shown.notes.join(', ')
  if (a === 'bare' || a === 'bare-context' || a === 'ws-echo') return { median, min: ops[0], max: ops[n - 1], check: 'floor', notes: failed.length ? `${notes} (expected: no lock)` : notes }
  if (failed.length) notes = `why (${failed.length}/${n} rounds): ${notes}`
  return { median, min: ops[0], max: ops[n - 1], check: failed.length ? 'FAIL' : 'PASS', notes }
}

// ---------------------------------------------------------------- formatting

function list(text, all, byDefault = all) {
  if (!text) return byDefault
  const picked = text.split(',').map((s) => s.trim()).filter(Boolean)
  const unknown = picked.filter((s) => !all.includes(s))
  if (unknown.length) throw new Error(`unknown ${unknown.join(', ')} (known: ${all.join(', ')})`)
  return all.filter((s) => picked.includes(s)) // keep the canonical order
}
function sig3(x) {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)
}
function fmtOps(x) {
  return x >= 1e6 ? `${sig3(x / 1e6)}M` : x >= 1e3 ? `${sig3(x / 1e3)}k` : sig3(x)
}
function fmtNs(ns) {
  return ns < 1e4 ? `${ns.toFixed(0)}ns` : ns < 1e6 ? `${(ns / 1e3).toFixed(1)}µs` : `${(ns / 1e6).toFixed(2)}ms`
}
function ratio(x) {
  return `${x.toFixed(2)}x`
}
function pad(s, w) {
  return String(s).padEnd(w)
}
function lpad(s, w) {
  return String(s).padStart(w)
}
function lastLines(text, k) {
  return text.trim().split('\n').filter(Boolean).slice(-k).join(' | ')
}
