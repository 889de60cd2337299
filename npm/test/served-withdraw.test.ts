import { test } from 'node:test'
import assert from 'node:assert/strict'
import { manualClock } from '../src/testing.js'
import { encodeClient, type ServerFrame } from '../src/remote/wire.js'
import { servedSession } from './served.js'

/**
 * POOL-03/POOL-01: a client's `withdraw` (revision 6) undoes a claim only when nobody but its
 * connection was answered `claimed` for it (room.ts # Withdrawn claims). What the server keeps of
 * who was told is swept of claims that ended unseen (their ttl ran out) once it grew past 1,024
 * entries: never of an open claim's.
 */
test('POOL-03/POOL-01: a withdraw undoes a claim told to its connection alone, keeps one told to a caller in the process too, across a sweep of claims whose ttl ran out', async () => {
  const clock = manualClock(1_000_000)
  const s = await servedSession({ clock })
  const pool = s.store.pool('seats', { capacity: 10_000 })
  let id = 10
  const claim = (claim: string, ttl: number) => {
    s.send(encodeClient(id++, { type: 'claim', pool: 'seats', capacity: 0, n: 1, claim, wait: 0, ttl }))
    return id - 1
  }
  const withdraw = (claim: string) => {
    s.send(encodeClient(id++, { type: 'pool', op: 'withdraw', pool: 'seats', capacity: 0, claim, value: 0 }))
    return id - 1
  }
  const answer = answersOf(s)
  const mine = claim('mine', 0)
  const shared = claim('shared', 0)
  const ttls = Array.from({ length: 1_000 }, (_, i) => claim(`ttl-${i}`, 1_000))
  assert.deepEqual(await answer(mine), { id: mine, type: 'claimed', claimed: true, remaining: 9_999 })
  await answer(shared)
  for (const f of ttls) assert.equal((await answer(f))?.type, 'claimed')
  assert.equal((await pool.claim(1, { id: 'shared' })).claimed, true, 'a caller in the process is told it too')
  clock.advance(2_000) // the ttls run out, acted on by the next call
  assert.equal(await pool.remaining(), 10_000 - 2)
  // Past 1,024 entries: the sweep, after this turn.
  const more = Array.from({ length: 30 }, (_, i) => claim(`more-${i}`, 0))
  for (const f of more) assert.equal((await answer(f))?.type, 'claimed')
  assert.deepEqual(await answer(withdraw('shared')), { id: id - 1, type: 'count', value: 0 }, 'kept: the caller in the process holds it')
  assert.deepEqual(await answer(withdraw('mine')), { id: id - 1, type: 'count', value: 1 }, 'undone: told to this connection alone')
  assert.deepEqual(await answer(withdraw('ttl-3')), { id: id - 1, type: 'count', value: 0 }, 'its ttl ran out: nothing to undo')
  assert.equal(await pool.remaining(), 10_000 - 1 - 30)
  await s.store.close()
})

test('POOL-03/POOL-01: a store keeps who was told only once a connection asked for a claim; a claim told in the process before then, joined by the connection after, is kept by its withdraw', async () => {
  const clock = manualClock(1_000_000)
  const s = await servedSession({ clock })
  const pool = s.store.pool('seats', { capacity: 10 })
  const answer = answersOf(s)
  // Told to a caller in the process while no connection had asked for a claim: nothing kept of it.
  assert.equal((await pool.claim(1, { id: 'early' })).claimed, true)
  s.send(encodeClient(10, { type: 'claim', pool: 'seats', capacity: 0, n: 1, claim: 'early', wait: 0, ttl: 0 }))
  s.send(encodeClient(11, { type: 'pool', op: 'withdraw', pool: 'seats', capacity: 0, claim: 'early', value: 0 }))
  s.send(encodeClient(12, { type: 'claim', pool: 'seats', capacity: 0, n: 1, claim: 'later', wait: 0, ttl: 0 }))
  assert.deepEqual(await answer(10), { id: 10, type: 'claimed', claimed: true, remaining: 9 }, 'the connection joins the open claim')
  assert.deepEqual(await answer(11), { id: 11, type: 'count', value: 0 }, 'kept: the caller in the process was told it first')
  // Written (a withdraw of a claim still being written undoes nothing), then withdrawn.
  assert.equal((await answer(12))?.type, 'claimed')
  s.send(encodeClient(13, { type: 'pool', op: 'withdraw', pool: 'seats', capacity: 0, claim: 'later', value: 0 }))
  assert.deepEqual(await answer(13), { id: 13, type: 'count', value: 1 }, 'a claim the connection made and alone was told is undone')
  assert.equal(await pool.remaining(), 9)
  await s.store.close()
})

test('POOL-03/POOL-01: a client of revision 5 releasing claims whose claimed answers crossed its cancels: each release is read as a withdraw (kept when a caller in the process was told it too), across a sweep of claims whose ttl ran out', async () => {
  const clock = manualClock(1_000_000)
  const s = await servedSession({ clock, revision: 5 })
  const pool = s.store.pool('seats', { capacity: 10_000 })
  let id = 10
  const send = (frame: Parameters<typeof encodeClient>[1]) => {
    s.send(encodeClient(id++, frame))
    return id - 1
  }
  const claim = (claim: string, ttl: number) => send({ type: 'claim', pool: 'seats', capacity: 0, n: 1, claim, wait: 0, ttl })
  const op = (op: 'cancel' | 'release', claim: string) => send({ type: 'pool', op, pool: 'seats', capacity: 0, claim, value: 0 })
  const answer = answersOf(s)
  const mine = claim('mine', 0)
  const shared = claim('shared', 0)
  const ttls = Array.from({ length: 1_000 }, (_, i) => claim(`ttl-${i}`, 1_000))
  assert.equal((await answer(mine))?.type, 'claimed')
  await answer(shared)
  for (const f of ttls) assert.equal((await answer(f))?.type, 'claimed')
  assert.equal((await pool.claim(1, { id: 'shared' })).claimed, true, 'a caller in the process is told it too')
  // Their answers crossed the caller's cancel: the client cancels, then lets them go.
  op('cancel', 'mine')
  op('cancel', 'shared')
  clock.advance(2_000) // the ttls run out, acted on by the next call
  assert.equal(await pool.remaining(), 10_000 - 2)
  // Past 1,024 entries: the sweep forgets the claims that ended, not these two.
  const more = Array.from({ length: 30 }, (_, i) => claim(`more-${i}`, 0))
  for (const f of more) assert.equal((await answer(f))?.type, 'claimed')
  assert.deepEqual(await answer(op('release', 'shared')), { id: id - 1, type: 'count', value: 0 }, 'kept: the caller in the process holds it')
  assert.deepEqual(await answer(op('release', 'mine')), { id: id - 1, type: 'count', value: 1 }, 'undone: told to this connection alone')
  assert.deepEqual(await answer(op('release', 'more-0')), { id: id - 1, type: 'count', value: 1 }, 'no cancel: a release')
  assert.equal(await pool.remaining(), 10_000 - 1 - 29)
  await s.store.close()
})

/** The answer of frame `id` from session `s`, as soon as it came (up to 200 ms). */
function answersOf(s: { frames(): ServerFrame[] }): (frame: number) => Promise<ServerFrame | undefined> {
  const seen: ServerFrame[] = []
  return async frame => {
    for (let i = 0; i < 200 && !seen.some(f => f.id === frame); i++) {
      await new Promise(resolve => setTimeout(resolve, 1))
      seen.push(...s.frames())
    }
    return seen.find(f => f.id === frame)
  }
}
