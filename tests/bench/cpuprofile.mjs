// Summarizes V8 CPU profiles (.cpuprofile, as written by `node --cpu-prof`; see BENCH_CPU_PROF in
// bench.mjs): where the sampled time went, by function (self and total time) and by file.
//
//   node tests/bench/cpuprofile.mjs FILE.cpuprofile [...]
//   TOP=30        rows per list
//   MATCH=regex   only these functions in the list of total times
//   OPS=N         also show µs per op (N = holds the process handled over the whole profile, warm-up included)
//   SUM=1         the files summed into one (the timed parts of BENCH_CPU_PROF_TIMED: OPS = their holds)
//
// "self" is time sampled in the function itself; "total" includes what it called. Times are ms of the
// profile and % of its whole (idle included: a process waiting on the network is "(idle)"). "by layer"
// puts every sample in one layer: under a call of the wasm codec (encodeClient, decodeClient,
// encodeServer, decodeServer), under another call into wasm (the engine), in a socket write, in GC, else
// by the file of the sampled function. wasm functions are named wasm-function[N] when the .wasm has no
// name section (npm/build.sh removes it). A sample shows where the thread was, on the CPU or not: a
// write that wakes another process may be preempted, so compare with the processes' CPU time (cpu/op
// in the benchmark's notes).

import { readFileSync } from 'node:fs'
import path from 'node:path'

const TOP = Number(process.env.TOP ?? 30)
const MATCH = process.env.MATCH ? new RegExp(process.env.MATCH) : null
const OPS = Number(process.env.OPS ?? 0)
const CODEC = /^(encodeClient|decodeClient|encodeServer|decodeServer)$/
const SYSCALL = /^(writev|writeBuffer|writeUtf8String|writeString|writeLatin1String|writeAsciiString)$/

/**
 * SUM=1: the profiles as one (BENCH_CPU_PROF_TIMED writes one a timed part): their trees under one
 * root, their samples one after another, their lengths added.
 */
function merged(files) {
  const root = { id: 0, callFrame: { functionName: '(root)', url: '', lineNumber: -1 }, children: [] }
  const out = { nodes: [root], samples: [], timeDeltas: [], startTime: 0, endTime: 0 }
  let offset = 1
  for (const file of files) {
    const p = JSON.parse(readFileSync(file, 'utf8'))
    let top = 0
    for (const n of p.nodes) {
      out.nodes.push({ ...n, id: n.id + offset, children: (n.children ?? []).map((c) => c + offset) })
      top = Math.max(top, n.id)
    }
    root.children.push(p.nodes[0].id + offset)
    for (const id of p.samples) out.samples.push(id + offset)
    out.timeDeltas.push(...p.timeDeltas)
    out.endTime += p.endTime - p.startTime
    offset += top + 1
  }
  return out
}

const inputs = process.argv.slice(2)
const profiles = process.env.SUM ? [[`${inputs.length} profiles summed`, merged(inputs)]] : inputs.map((file) => [file, null])
for (const [file, summed] of profiles) {
  const p = summed ?? JSON.parse(readFileSync(file, 'utf8'))
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  // A sample stands for the time since the one before. A gap much longer than the sampling interval is
  // time the thread did not run (preempted, or waiting for a CPU): it is counted apart, as "(gaps)",
  // so that it is not charged to whatever function the thread was in when it ran again.
  const sorted = p.timeDeltas.filter((d) => d > 0).sort((x, y) => x - y)
  const cap = 3 * (sorted[sorted.length >> 1] ?? 1000)
  const self = new Map()
  let gaps = 0
  for (let i = 0; i < p.samples.length; i++) {
    const d = p.timeDeltas[i] ?? 0
    const idle = byIdOf(p, p.samples[i]) === '(idle)'
    const on = idle ? d : Math.min(d, cap)
    gaps += d - on
    self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + on / 1000)
  }
  gaps /= 1000
  const total = (p.endTime - p.startTime) / 1000

  const where = (n) => {
    const f = n.callFrame
    const url = f.url ? path.basename(f.url.replace(/^file:\/\//, '')) : ''
    const pkg = f.url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//)?.[1]
    return `${f.functionName || '(anonymous)'} ${url ? `${pkg && pkg !== 'holdfast' ? `${pkg}/` : ''}${url}:${f.lineNumber + 1}` : ''}`.trim()
  }
  const fileOf = (n) => {
    const u = n.callFrame.url
    if (!u) return n.callFrame.functionName.startsWith('(') ? n.callFrame.functionName : '(native/wasm)'
    if (u.startsWith('node:')) return 'node internals'
    if (u.startsWith('wasm://')) return 'wasm'
    const m = u.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/)
    return m ? (m[1] === 'holdfast' ? `holdfast/${m[2]}` : m[1]) : path.basename(u)
  }

  // Self time by function (merged by name and place), total time by function (each node counted once per stack).
  const selfBy = new Map()
  const totalBy = new Map()
  const fileSelf = new Map()
  const walk = (n, onStack) => {
    const key = where(n)
    const s = self.get(n.id) ?? 0
    selfBy.set(key, (selfBy.get(key) ?? 0) + s)
    fileSelf.set(fileOf(n), (fileSelf.get(fileOf(n)) ?? 0) + s)
    let sub = s
    const first = !onStack.has(key)
    if (first) onStack.add(key)
    for (const c of n.children ?? []) sub += walk(byId.get(c), onStack)
    if (first) {
      onStack.delete(key)
      totalBy.set(key, (totalBy.get(key) ?? 0) + sub)
    }
    return sub
  }
  walk(p.nodes[0], new Set())

  // Layers: the outermost codec or engine call on the stack wins; else what the sampled function is.
  const layer = new Map()
  const classify = (n, boundary) => {
    const f = n.callFrame
    const glue = f.url.endsWith('holdfast_wasm.js')
    if (!boundary && glue && CODEC.test(f.functionName)) boundary = `wasm codec (${f.functionName})`
    else if (!boundary && glue && /^[a-z]\w*$/.test(f.functionName) && !/^(get|pass|handle|add|take|drop|is|debug|__)/.test(f.functionName)) boundary = 'wasm engine (core.* calls)'
    const s = self.get(n.id) ?? 0
    if (s > 0) {
      let l = boundary
      if (SYSCALL.test(f.functionName)) l = 'socket write (syscall)'
      else if (!l) {
        const where = fileOf(n)
        l = where === '(garbage collector)' ? 'GC' : where === '(idle)' ? '(idle)' : where.startsWith('holdfast/') ? `holdfast JS: ${where.slice(9)}` : where
      }
      layer.set(l, (layer.get(l) ?? 0) + s)
    }
    for (const c of n.children ?? []) classify(byId.get(c), boundary)
  }
  classify(p.nodes[0], undefined)
  if (gaps > 0) layer.set('(gaps: not running; sampled interval > 3x the usual)', gaps)

  const perOp = (ms) => (OPS ? `${((ms * 1000) / OPS).toFixed(1).padStart(7)} µs/op` : '')
  const fmt = (ms) => `${ms.toFixed(0).padStart(7)} ms ${((ms / total) * 100).toFixed(1).padStart(5)}%${perOp(ms)}`
  const busy = total - (layer.get('(idle)') ?? 0) - gaps
  console.log(`\n# ${path.basename(file)}: ${total.toFixed(0)} ms sampled (${busy.toFixed(0)} ms running, ${gaps.toFixed(0)} ms in gaps), ${p.samples.length} samples`)
  console.log('\n## by layer (self time of every sample, in exactly one layer)')
  for (const [l, ms] of [...layer].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`${fmt(ms)}  ${l}`)
  console.log('\n## by file (self time)')
  for (const [f, ms] of [...fileSelf].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`${fmt(ms)}  ${f}`)
  console.log('\n## by function (self time)')
  for (const [f, ms] of [...selfBy].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`${fmt(ms)}  ${f}`)
  console.log('\n## by function (total time, callees included)')
  for (const [f, ms] of [...totalBy].filter(([f]) => !MATCH || MATCH.test(f)).sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`${fmt(ms)}  ${f}`)
}

function byIdOf(p, id) {
  p._byId ??= new Map(p.nodes.map((n) => [n.id, n]))
  return p._byId.get(id).callFrame.functionName
}
