// A process whose first hold waits (before any fn ran in it), for lock04-reentrancy.test.js: the
// waiter's lease must stay in its own fn's context. Prints one JSON line: what top-level code (in no
// hold) was answered when it held the same key afterwards, and what the waiter answered.
import { openStore, memoryStorage } from 'holdfast'

const store = await openStore({ storage: memoryStorage() })
const jobs = store.lock('jobs', { wait: Infinity })
const first = await jobs.acquire('k') // the process's first lease, taken without a fn
let open
const gate = new Promise(resolve => (open = resolve))
let started
const running = new Promise(resolve => (started = resolve))
const worker = jobs.hold('k', async () => {
  started()
  await gate
  return 'worker done'
})
await first.release()
await running
// Top-level code, in no hold: it must wait for the worker, then run — not be refused as a hold inside its own hold.
const mine = jobs.hold('k', () => 'main ran').catch(e => `main refused: ${e.code}: ${e.message}`)
open()
process.stdout.write(`${JSON.stringify({ main: await mine, worker: await worker })}\n`)
await store.close()
