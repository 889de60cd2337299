// Reads what BENCH_ROUNDS_OUT wrote (every round's ops/s) and prints, per workload and adapter, the
// time a hold took over the rounds: median, mean, geometric mean and least, in ns. The benchmark's
// ratio is of medians; where an adapter's rounds fall in two clusters (a process whose JIT tiered its
// code up early, or late), the median jumps between them from run to run, and the mean moves less.
//
//   node tests/bench/rounds.mjs FILE.json [W1,W3]
//
// Nothing is asserted.

import { readFileSync } from 'node:fs'
import { median } from './interval.mjs'

const [file, only] = process.argv.slice(2)
if (!file) throw new Error('rounds.mjs: FILE.json (what BENCH_ROUNDS_OUT wrote) [workloads, e.g. W1,W3]')
const { runtime, scale, rounds } = JSON.parse(readFileSync(file, 'utf8'))
const mean = (v) => v.reduce((s, x) => s + x, 0) / v.length
const ns = (x) => x.toFixed(0).padStart(7)

console.log(`${runtime}, scale ${scale}: ns a hold over the rounds (median, mean, geometric mean, least)`)
for (const [w, adapters] of Object.entries(rounds)) {
  if (only && !only.split(',').includes(w)) continue
  console.log(w)
  for (const [a, ops] of Object.entries(adapters)) {
    const t = ops.filter((x) => x !== null).map((x) => 1e9 / x)
    if (t.length === 0) continue
    const gm = Math.exp(mean(t.map(Math.log)))
    console.log(`  ${a.padEnd(16)}${ns(median(t))}${ns(mean(t))}${ns(gm)}${ns(Math.min(...t))}   (${t.length} rounds)`)
  }
}
