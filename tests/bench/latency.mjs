// R1's holds one by one: the latency of each hold of one client holding one key in sequence, against a
// lock server in a process of its own (`bench.mjs --serve`, as the benchmark starts it), as percentiles
// and the time lost to stalls. The benchmark's R1 gives the mean; this says whether a difference is in
// every hold (the median) or in a few long ones (the tail: a process waiting for a core, a collection).
//
//   node tests/bench/latency.mjs holdfast|ws-lock [...]   (after run.sh installed the packages)
//   N=20000 holds timed, after 2,000 untimed; ROUNDS=3 fresh servers per adapter, adapters interleaved
//
// Run it under the runtime to measure (`tests/runtimes/node_modules/node26/bin/node`, `bun`): the
// server runs under the same one. Nothing is asserted; it prints one line a measurement.

import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { makeRemoteAdapter } from './adapters.mjs'
import { Child } from './remote.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const N = Number(process.env.N ?? 20_000)
const ROUNDS = Number(process.env.ROUNDS ?? 3)
const TOKEN = 'latency'

async function measure(kind) {
  // The benchmark's own server process and its protocol of JSON events (remote.mjs `Child`).
  const server = new Child([path.join(here, 'bench.mjs'), '--serve', kind], { ...process.env, BENCH_TOKEN: TOKEN }, `${kind} server`, Date.now() + 60_000)
  try {
    const { url } = await server.next('listening')
    const a = await makeRemoteAdapter(kind, { url, token: TOKEN })
    const fn = async () => {}
    for (let i = 0; i < 2_000; i++) await a.hold('r1', fn)
    const lat = new Float64Array(N)
    const t0 = performance.now()
    for (let i = 0; i < N; i++) {
      const start = performance.now()
      await a.hold('r1', fn)
      lat[i] = performance.now() - start
    }
    const ms = performance.now() - t0
    await a.close()
    lat.sort()
    const at = (p) => `${Math.round(lat[Math.floor(p * (N - 1))] * 1000)}`
    let stalls = 0
    let stalled = 0
    for (const x of lat) {
      if (x <= 1) continue
      stalls++
      stalled += x
    }
    return `${kind.padEnd(9)} ${Math.round((N / ms) * 1000)} holds/s; µs p50 ${at(0.5)} p90 ${at(0.9)} p99 ${at(0.99)} max ${at(1)}; over 1 ms: ${stalls} holds, ${Math.round((stalled / ms) * 100)}% of the time`
  } finally {
    server.kill()
  }
}

const kinds = process.argv.slice(2)
if (kinds.length === 0) throw new Error('usage: latency.mjs holdfast|ws-lock [...]')
for (let r = 0; r < ROUNDS; r++) for (const kind of r % 2 ? [...kinds].reverse() : kinds) console.log(await measure(kind))
process.exit(0)
