import { test } from 'node:test'
import assert from 'node:assert/strict'
import { batchOf, encodeClient } from '../src/remote/wire.js'
import { servedSession } from './served.js'

/**
 * #17 and #13 item 5: the server keeps the name of the hold or release it served to the end of the
 * turn (remote-holds.ts `#keep`), so that a release and the next hold in one message do not make the
 * engine forget the name and register it anew; a name only clients use is still forgotten once idle,
 * at the end of that turn, and never while a handle of the store's user holds it.
 */

/** `[engine resources, store names]` of the store's footprint (store.ts `_footprint`). */
const names = (store: { _footprint(): number[] }) => store._footprint().slice(5)
const turn = () => new Promise(resolve => setImmediate(resolve))
const request = (i: number) => i.toString(16).padStart(32, '0')

async function served() {
  const { store, send, frames } = await servedSession()
  const hold = (i: number, wait: number | null = 0) =>
    encodeClient(i, { type: 'hold', semaphore: false, limit: 1, name: 'x', key: 'k', ttl: 30_000, maxHold: 0, wait, request: request(i) })
  /** The lease of the `granted` last sent. */
  const lease = () => {
    const all = frames()
    const granted = all.find(f => f.type === 'granted') as { lease: string } | undefined
    assert.ok(granted, `granted, not ${JSON.stringify(all)}`)
    return granted.lease
  }
  const release = (l: string) => encodeClient(0, { type: 'release', lease: l })
  return { store, send, hold, lease, release, frames }
}

/** Releases the last lease of the name: kept to the end of that turn, forgotten after it; closes the store. */
async function releaseLast(s: Awaited<ReturnType<typeof served>>, lease: string, kept: string) {
  s.send(s.release(lease))
  assert.deepEqual(names(s.store), [1, 1], kept)
  await turn()
  assert.deepEqual(names(s.store), [0, 0], 'forgotten once idle, at the end of the turn')
  await s.store.close()
}

test('#17, #13 item 5: a release and the next hold of a name in one message keep it; once idle, it is forgotten at the end of the turn', async () => {
  const s = await served()
  s.send(s.hold(1))
  const first = s.lease()
  await turn()
  assert.deepEqual(names(s.store), [1, 1], 'the name held')
  s.send(batchOf([s.release(first), s.hold(2)], false))
  const second = s.lease()
  await turn()
  assert.deepEqual(names(s.store), [1, 1], 'the name held again')
  await releaseLast(s, second, 'kept to the end of the turn')
})

test('#17, #13 item 5: a handle of the store made in the turn a release kept its name pins the name: it is not forgotten under it', async () => {
  const s = await served()
  s.send(s.hold(1))
  const lease = s.lease()
  await turn()
  s.send(s.release(lease))
  // In the same turn: a handle of the user's, which must pin the name as any handle does.
  const local = s.store.lock('x')
  await turn()
  assert.deepEqual(names(s.store), [1, 1], 'kept for the handle alive')
  // The name is the one the handle uses: a hold over the connection waits for the handle's lease.
  const held = await local.acquire('k')
  s.send(s.hold(2))
  assert.deepEqual(
    s.frames().map(f => f.type),
    ['busy'],
    'the key is the handle’s',
  )
  await held.release()
  await s.store.close()
})

test('#17, #13 item 5: a release that hands the key down its line leaves the name in use, kept by nothing; the last release forgets it at the end of its turn', async () => {
  const s = await served()
  s.send(s.hold(1, null))
  const first = s.lease()
  s.send(s.hold(2, null))
  s.send(s.hold(3, null))
  assert.deepEqual(s.frames(), [], 'two in line')
  await turn()
  // Each release grants the next in line: the key never goes idle, so the name is neither kept nor
  // forgotten (remote-holds.ts `idled`).
  s.send(s.release(first))
  const second = s.lease()
  await turn()
  assert.deepEqual(names(s.store), [1, 1], 'the name in use by the second holder')
  s.send(s.release(second))
  const third = s.lease()
  await turn()
  assert.deepEqual(names(s.store), [1, 1], 'the name in use by the third holder')
  await releaseLast(s, third, 'kept to the end of the turn that left the key idle')
})

test('#13 item 5: a name that only a refused hold over a connection asked for is forgotten', async () => {
  const s = await served()
  s.store._setMaxHolds(1)
  s.send(s.hold(1))
  s.lease()
  // The store's one hold over a connection is taken: a hold of another name is refused `limit`, once
  // the server made the name's handle for it.
  s.send(encodeClient(2, { type: 'hold', semaphore: false, limit: 1, name: 'y', key: 'k', ttl: 30_000, maxHold: 0, wait: 0, request: request(2) }))
  assert.deepEqual(
    s.frames().map(f => (f.type === 'error' ? f.code : f.type)),
    ['limit'],
    'refused at the limit',
  )
  assert.deepEqual(names(s.store), [1, 1], 'only the held name is left')
  await turn()
  assert.deepEqual(names(s.store), [1, 1], 'only the held name is left at the end of the turn')
  await s.store.close()
})
