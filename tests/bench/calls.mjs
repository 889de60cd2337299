// Counts the JavaScript functions each process of a remote measurement calls in its timed parts (Node
// only): a preload, given to every process by BENCH_CHILD_FLAGS.
//
//   BENCH_CHILD_FLAGS="--import ./calls.mjs" CALLS_DIR=DIR CALLS_DIV=N BENCH_RUNTIME=node24 \
//     BENCH_REMOTE=1 BENCH_ONLY=R2 BENCH_ROUNDS=1 BENCH_ADAPTERS=holdfast,ws-lock bash tests/bench/run.sh
//
// (a path in BENCH_CHILD_FLAGS is the child's, whose working directory is tests/bench/.) Each process
// writes DIR/PID.txt at its exit: its command line, then every function it called inside a timed part,
// with its calls ÷ N (CALLS_DIV, default 1: say the hand-overs a process served), most called first.
// Only the files of the holdfast package and of the benchmark are counted (`ws` included); natives
// and wasm are not.
//
// Why count calls: in the first tiers of a JIT (JSC's LLInt and baseline, where R2 on Bun spends its
// timed part on two cores, tests/bench/README.md), a call is not inlined and costs tens of ns, so the
// number of calls a hand-over makes is close to the code it runs there. The count is exact, unlike a
// sampled profile, and the same on every runtime for the same code (but the transport's).
//
// How: V8's precise coverage with call counts (node:inspector). remote.mjs reads the process's CPU
// time (`process.cpuUsage`) at each bound of a timed part and nowhere else, so each such call here
// takes the counts so far (which resets them): those since an opening bound are added up, those
// since a closing one are dropped.
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector'

const dir = process.env.CALLS_DIR
if (!dir) throw new Error('calls.mjs: set CALLS_DIR, the directory for the counts')
const div = Number(process.env.CALLS_DIV ?? 1)
const counted = /\/holdfast(-b)?\/|\/tests\/bench\//

const session = new Session()
session.connect()
session.post('Profiler.enable')
session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false })

/** Calls by function (`name file:offset`), summed over the timed parts. */
const calls = new Map()
let inside = false
let parts = 0

/** Takes the counts since the last bound (a session's calls answer at once, in this thread). */
function bound() {
  session.post('Profiler.takePreciseCoverage', (error, answer) => {
    if (error) throw error
    if (inside) {
      parts++
      for (const script of answer.result) {
        if (!counted.test(script.url)) continue
        const file = script.url.replace(/.*\/(dist|wasm|bench|node_modules)\//, '$1/')
        for (const f of script.functions) {
          const count = f.ranges[0].count
          if (count === 0) continue
          const name = `${f.functionName || '(anonymous)'} ${file}:${f.ranges[0].startOffset}`
          calls.set(name, (calls.get(name) ?? 0) + count)
        }
      }
    }
    inside = !inside
  })
}

const cpuUsage = process.cpuUsage.bind(process)
process.cpuUsage = (previous) => {
  bound()
  return cpuUsage(previous)
}

process.on('exit', () => {
  const rows = [...calls].sort((a, b) => b[1] - a[1])
  const total = rows.reduce((sum, [, count]) => sum + count, 0)
  const lines = rows.map(([name, count]) => `${(count / div).toFixed(2).padStart(10)}  ${name}`)
  const head = `${process.argv.slice(1).join(' ')}\n${parts} timed parts; ${(total / div).toFixed(1)} calls ÷ ${div} in all\n`
  writeFileSync(`${dir}/${process.pid}.txt`, `${head}${lines.join('\n')}\n`)
})
