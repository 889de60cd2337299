// holdfast/redis: a script awaiting what only a timer settles is answered, and ends at once once it
// closed its store and quit its client, a lease it acquired and forgot included.
// Each case is a process of its own (keep-alive-child.js) on this runtime with this run's client.
// Real time, in short durations.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startRedis, CLIENT } from './helpers.js'
import { answeredBy } from './proc.js'

/** keep-alive-child.js ran case `which` to its end, exit 0, having printed `expected` (and `end`): how long it lived. */
const answered = (url, which, expected) => answeredBy('keep-alive-child.js', [CLIENT, url, which], { ...expected, end: which }, 60_000)

test('LOCK-06 on Redis: a script awaiting a hold whose wait runs out is answered InUseError, then exits 0 once it closed its store and quit its client', { timeout: 60_000 }, async t => {
  const server = await startRedis(t)
  await answered(server.url, 'wait', { hold: { error: 'in_use' } })
})

test('LOCK-05 on Redis: a waiter without a wait limit is handed the key when the lease of a holder gone away runs out its ttl, then the script exits 0', { timeout: 60_000 }, async t => {
  const server = await startRedis(t)
  await answered(server.url, 'expiry', { hold: { ok: 'ran' } })
})

test('on Redis, a lease acquired and forgotten (ttl 30 s, renewed every 10 s) keeps nothing alive: the script ends at once when it closed its store and quit its client', { timeout: 60_000 }, async t => {
  const server = await startRedis(t)
  const ms = await answered(server.url, 'forgotten', { acquired: true })
  // Well under the ttl and its first renewal, whatever the machine's load.
  assert.ok(ms < 8_000, `lived ${Math.round(ms)} ms`)
})

test('on Redis, a store left open keeps nothing alive once the application quit its client: its own subscriber connection goes with the client, and the script exits 0', { timeout: 60_000 }, async t => {
  // The store's subscriber (a connection of its own: a duplicate of the client) stayed connected, and
  // the process lived on for good.
  const server = await startRedis(t)
  await answered(server.url, 'quit', { held: true, claimed: true })
})
