// W3 (or W1) pass by pass from a fresh process: how a library's hold gets faster as the JIT tiers its
// code up. The benchmark's W3 times 20 batches of 1,000 holders after 2 of warm-up; here each pass is
// 2 batches, so pass 1 is the benchmark's warm-up and passes 2-11 its timed part. With W=W1, a pass is
// 20,000 holds of one key in sequence: pass 1 is W1's warm-up, passes 2-11 its 200,000 timed holds
// (HOLDS=5000: passes of 5,000, the first 4 W1's warm-up, for a finer curve; PASSES=44 then).
//
//   bun tests/bench/warmup.mjs holdfast async-lock     (after run.sh installed the packages; any
//   in-process adapter of adapters.mjs)
//   K=10 fresh processes per library, interleaved; PASSES=11; W=W3 (or W1); HOLDS=20000 (W1's pass)
//
// It prints the mean µs per hold of each pass over the K processes, and of the passes after the
// warm-up's (passes 2-11 at the default sizes: what the benchmark's W1 or W3 times): their mean, and
// the median over the processes of each one's mean (which a slow process, a neighbour on the machine,
// moves less). Run it under the runtime to measure; JSC's and V8's options (BUN_JSC_useFTLJIT=0,
// BUN_JSC_reportCompileTimes=1, BUN_JSC_verboseOSR=1, node --trace-opt) pass to the children.
// Nothing is asserted.

import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { makeAdapter } from './adapters.mjs'
import { median } from './interval.mjs'

const W1 = process.env.W === 'W1'
if (!W1 && (process.env.W ?? 'W3') !== 'W3') throw new Error(`warmup.mjs: W=${process.env.W}: W1 or W3`)
const H = W1 ? Number(process.env.HOLDS ?? 20_000) : 1000
if (!Number.isInteger(H) || H < 1) throw new Error(`warmup.mjs: HOLDS=${process.env.HOLDS}: a whole number of holds, 1 or more`)
const PER_PASS = W1 ? 1 : 2
const PASSES = Number(process.env.PASSES ?? 11)
// The passes of the benchmark's warm-up: W1 warms up with 20,000 holds, W3 with 2 batches.
const WARM = W1 ? Math.max(1, Math.round(20_000 / H)) : 1

/** A child: one library's passes (the benchmark's adapter, its `holdWait`, or `hold` for W1), printed as one line of µs per hold. */
async function child(name) {
  const adapter = await makeAdapter(name)
  let runs = 0
  const fn = W1
    ? async () => {
        runs++ // as the benchmark's W1
      }
    : async () => {
        await undefined // one microtask inside the hold, as W3's fn
      }
  // W1: H holds in sequence; W3: H holders at once, handed the key in turn.
  const batch = W1
    ? async () => {
        for (let i = 0; i < H; i++) await adapter.hold('k', fn)
      }
    : async () => {
        const all = new Array(H)
        for (let i = 0; i < H; i++) all[i] = adapter.holdWait('k', fn)
        await Promise.all(all)
      }
  const passes = []
  for (let p = 0; p < PASSES; p++) {
    const t0 = performance.now()
    for (let b = 0; b < PER_PASS; b++) await batch()
    passes.push(((performance.now() - t0) * 1000) / (PER_PASS * H))
  }
  console.log(JSON.stringify(passes))
}

if (process.argv[2] === '--child') {
  await child(process.argv[3])
  process.exit(0)
}

const names = process.argv.slice(2)
if (names.length === 0) throw new Error('usage: warmup.mjs ADAPTER [...] (holdfast, async-lock, ...)')
const K = Number(process.env.K ?? 10)
const sums = new Map(names.map((n) => [n, new Array(PASSES).fill(0)]))
// Each process's mean of its passes after WARM, for the median over processes: one slow process (a
// neighbour on the machine) moves the mean, not the median.
const timedOf = new Map(names.map((n) => [n, []]))
for (let k = 0; k < K; k++) {
  for (const name of k % 2 ? [...names].reverse() : names) {
    const run = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
    if (run.status !== 0) throw new Error(`warmup.mjs: the child of ${name} exited with ${run.status}`)
    const passes = JSON.parse(run.stdout.trim().split('\n').pop())
    passes.forEach((us, i) => (sums.get(name)[i] += us))
    timedOf.get(name).push(passes.slice(WARM).reduce((a, b) => a + b, 0) / (PASSES - WARM))
  }
}
console.log(`µs per hold, mean of ${K} fresh processes, pass by pass (${PER_PASS * H} holds a pass); then passes ${WARM + 1}-${PASSES}: their mean, and the median of the processes' means`)
for (const [name, sum] of sums) {
  const mean = sum.map((s) => s / K)
  const timed = mean.slice(WARM).reduce((a, b) => a + b, 0) / (PASSES - WARM)
  console.log(`${name.padEnd(10)} ${mean.map((x) => x.toFixed(2).padStart(5)).join(' ')}   ${timed.toFixed(3)}  ${median(timedOf.get(name)).toFixed(3)}`)
}
