// Which of holdfast's timers keep a process alive: a timer keeps it alive while a promise holdfast
// returned is pending that the timer can settle — a waiter in line (its wait's end, or the maxHold of
// the lease ahead that would grant it), a hold whose fn runs under a maxHold, a pool claim that waits —
// and no longer: a lease acquired and forgotten keeps nothing alive for its maxHold. Each case is a
// process of its own (keep-alive-child.js) that awaits the answer at its top level and ends without
// closing its store: before, Node ended it at once ("unsettled top-level await", exit 13), and under
// `node --test` on Node 20 and `deno test` such an await failed "Promise resolution is still pending
// but the event loop has already resolved" (the last test here). Real time, in short durations (250 ms).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openStore, memoryStorage, InUseError, LostError } from 'holdfast'
import { answeredBy } from './proc.js'

/** keep-alive-child.js ran case `which` to its end, exit 0, having printed `expected` (and `end`): how long it lived. */
const answered = (which, expected) => answeredBy('keep-alive-child.js', [which], { ...expected, end: which })

test('LOCK-06: a script awaiting a hold whose wait runs out (the key held for good) is answered InUseError, then exits 0', { timeout: 30_000 }, async () => {
  await answered('wait', { hold: { error: 'in_use' } })
})

test('LOCK-03: a script awaiting a hold whose fn awaits lease.signal is answered LostError at maxHold, then exits 0', { timeout: 30_000 }, async () => {
  await answered('maxhold', { hold: { error: 'lost' } })
})

test('LOCK-03: a waiter without a wait limit is handed the key when the lease ahead is revoked at maxHold (lock and semaphore), then the script exits 0', { timeout: 30_000 }, async () => {
  await answered('expiry', { hold: { ok: 'ran' } })
  await answered('semaphore-expiry', { hold: { ok: 'ran' } })
})

test('POOL-04: a script awaiting a claim that waits is answered { claimed: false } at its wait, or claimed when the claim ahead runs out its ttl, then exits 0', { timeout: 30_000 }, async () => {
  await answered('pool-wait', { claim: { claimed: false } })
  await answered('pool-ttl', { claim: { claimed: true } })
})

test('POOL-03: an ask joined to a claim that waits for good is answered by its own wait, then the script exits 0 (the claim it joined not awaited)', { timeout: 30_000 }, async () => {
  await answered('pool-joined', { claim: { claimed: false } })
})

test('a lease acquired and forgotten keeps nothing alive for its maxHold of 60 s: the script ends at once, also once a waiter left and a hold ended', { timeout: 30_000 }, async () => {
  // Well under the maxHold, whatever the machine's load (a process starts in well under a second).
  const forgotten = await answered('forgotten', { acquired: true })
  assert.ok(forgotten < 10_000, `lived ${Math.round(forgotten)} ms`)
  const after = await answered('forgotten-after-waits', { waited: { error: 'in_use' }, held: { ok: 'ran' } })
  assert.ok(after < 10_000, `lived ${Math.round(after)} ms`)
})

test('LOCK-06, LOCK-03: a test awaiting what only a timer settles — a wait that runs out, a maxHold its fn awaits — is answered, with nothing else keeping the runner alive', { timeout: 30_000 }, async () => {
  // Before, `node --test` on Node 20 failed here: "Promise resolution is still pending but the event
  // loop has already resolved" (so did a Deno.test: tests/deno/no-flags.test.ts).
  const store = await openStore({ storage: memoryStorage() })
  const locks = store.lock('keep-alive')
  const held = await locks.acquire('k')
  await assert.rejects(locks.hold('k', { wait: 250 }, () => 'ran'), InUseError)
  held.release()
  const bounded = store.lock('keep-alive', { maxHold: 250 })
  await assert.rejects(
    bounded.hold('k', lease => new Promise(resolve => lease.signal.addEventListener('abort', resolve, { once: true }))),
    LostError,
  )
  await store.close()
})
