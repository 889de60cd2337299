// Tickets: 180 seats of one flight, 1,000 buyers at once from several processes. A pool never goes
// below zero, and each claim is answered once storage kept it: no seat sold twice, no buyer told
// twice, and a restart of the store keeps every sale.
//
// The store runs here, on fileStorage, served on 127.0.0.1; PROCESSES buyer processes (buyer.js)
// connect to it, each with its share of the buyers, all claiming at once.
//
// Run: `npm install && npm start` (Node) or `bun index.js` (Bun, after `npm install`).
// Exits 0 only if every check held.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { openStore, fileStorage } from 'holdfast'

const SEATS = 180
const BUYERS = 1_000
const PROCESSES = 4
const runtime = typeof Bun !== 'undefined' ? `Bun ${Bun.version}` : `Node ${process.versions.node}`

const dir = await mkdtemp(join(tmpdir(), 'holdfast-tickets-'))
try {
  const store = await openStore({ storage: fileStorage(dir) })
  store.pool('flight-aa123', { capacity: SEATS })
  const token = randomBytes(16).toString('hex')
  const server = await store.serve({ port: 0, token })

  // Every buyer process at once, each with its share of the buyers.
  const lines = await Promise.all(
    Array.from({ length: PROCESSES }, (_, p) => buyers(server.url, token, p, BUYERS / PROCESSES)),
  )
  const answers = lines.flat().map(line => line.split(' '))
  const sold = answers.filter(([what]) => what === 'sold')
  const soldOut = answers.filter(([what]) => what === 'sold-out')

  // Each buyer told exactly once; exactly the seats there were sold; never below zero.
  const orders = new Set(answers.map(([, order]) => order))
  assert.equal(answers.length, BUYERS, 'one answer per buyer')
  assert.equal(orders.size, BUYERS, 'no buyer told twice')
  assert.equal(sold.length, SEATS, 'every seat sold, none twice')
  assert.equal(soldOut.length, BUYERS - SEATS)
  const remaining = sold.map(([, , r]) => Number(r)).sort((a, b) => a - b)
  assert.deepEqual(remaining, Array.from({ length: SEATS }, (_, i) => i), 'each sale left one seat fewer: 179 ... 0')
  const pool = store.inspect().find(e => e.kind === 'pool')
  assert.deepEqual([pool.remaining, pool.claims], [0, SEATS])

  // The store restarts (here: closed and opened again on its directory): every sale is still there,
  // and a buyer who asks again (a retry) is told its first answer, taking nothing.
  await store.close()
  const again = await openStore({ storage: fileStorage(dir) })
  const seats = again.pool('flight-aa123', { capacity: SEATS })
  assert.equal(await seats.remaining(), 0)
  const [, order] = sold[0]
  const retry = await seats.claim(1, { id: order })
  assert.deepEqual([retry.claimed, await seats.remaining()], [true, 0], 'a retry is told it bought, and takes nothing')
  await again.close()

  console.log(`${runtime}: ${BUYERS} buyers in ${PROCESSES} processes for ${SEATS} seats: ${sold.length} sold, ${soldOut.length} told sold out, each once; none oversold; every sale kept across a restart`)
} finally {
  await rm(dir, { recursive: true, force: true })
}

/** Runs one buyer process; answers its lines. */
function buyers(url, token, p, n) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fileURLToPath(new URL('./buyer.js', import.meta.url)), url, token, String(p), String(n)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', d => (out += d))
    child.on('error', reject)
    child.on('exit', code => (code === 0 ? resolve(out.trim().split('\n')) : reject(new Error(`buyer process ${p} exited ${code}`))))
  })
}
