// Runs the simulation's seeds through the wasm build and holds each trace hash against the native one.
//
//   node compare.cjs <dir of the wasm-bindgen nodejs output> <file of native "seed hash" lines> [LEN]
//
// A trace hash folds every answer and event the engine gave in a seed's run (crate/sim/src/trace.rs),
// so equal hashes mean the engine compiled to wasm32 behaved exactly as the native one, call for call.
// Prints one line per runtime; exits 1 at the first seed that differs (or fails in wasm).
'use strict'
const fs = require('node:fs')
const path = require('node:path')

const [dir, nativeFile, lenArg] = process.argv.slice(2)
if (!dir || !nativeFile) {
  console.error('usage: node compare.cjs WASM_DIR NATIVE_HASHES [LEN]')
  process.exit(2)
}
const len = Number(lenArg ?? 10000)
const { traceHash } = require(path.resolve(dir, 'holdfast_sim.js'))
const runtime = typeof Bun !== 'undefined' ? `bun ${Bun.version}` : `node ${process.version}`

const native = fs
  .readFileSync(nativeFile, 'utf8')
  .trim()
  .split('\n')
  .map(line => {
    const at = line.indexOf(' ')
    return { seed: BigInt(line.slice(0, at)), hash: line.slice(at + 1) }
  })
if (native.length === 0) {
  console.error('no native hashes')
  process.exit(2)
}

const started = performance.now()
for (const { seed, hash } of native) {
  const got = traceHash(seed, len)
  if (got !== hash) {
    console.error(`${runtime}: seed ${seed}: wasm trace ${got}, native ${hash}`)
    process.exit(1)
  }
  if (got.startsWith('fail')) {
    console.error(`${runtime}: seed ${seed} failed (natively too): ${got}`)
    process.exit(1)
  }
}
const ms = Math.round(performance.now() - started)
console.log(`${runtime}: ${native.length} seeds x ${len} operations: wasm trace hashes equal the native ones (${ms} ms)`)
