import { test } from 'node:test'
import assert from 'node:assert/strict'
import { REVISION, batchOf, decodeServerAll, encodeClient, type ServerFrame } from '../src/remote/wire.js'
import { Session } from '../src/remote/session.js'
import type { Socket } from '../src/runtime/transport.js'
import { servedSession } from './served.js'

/**
 * #17: a `release` frame is found and ended in one call into the engine (remote-holds.ts `release`,
 * `core.releaseRemote`). It must end exactly the lease it names, hand the key to the next in line,
 * count the request out of the store's requests over connections (`maxHolds`), and do nothing at all
 * for a lease id no live request has.
 */

const request = (i: number) => i.toString(16).padStart(32, '0')

async function served(maxHolds: number) {
  const { store, send, frames, protocol, session } = await servedSession()
  store._setMaxHolds(maxHolds)
  const hold = (i: number, key: string, wait: number | null) =>
    encodeClient(i, { type: 'hold', semaphore: false, limit: 1, name: 'x', key, ttl: 30_000, maxHold: 0, wait, request: request(i) })
  const release = (id: number, lease: string) => encodeClient(id, { type: 'release', lease })
  return { store, send, hold, release, frames, protocol, session }
}

const granted = (frames: ServerFrame[], id: number) => {
  const frame = frames.find(f => f.id === id && f.type === 'granted') as { lease: string; fence: number } | undefined
  assert.ok(frame, `frame ${id} granted, not ${JSON.stringify(frames)}`)
  return frame
}

test('#17 LOCK-05: a release by lease id ends that lease only; the next in line gets the key, with a larger fence', async () => {
  const s = await served(100)
  s.send(s.hold(1, 'a', null))
  s.send(s.hold(2, 'b', null))
  s.send(s.hold(3, 'a', null))
  let frames = s.frames()
  const a = granted(frames, 1)
  const b = granted(frames, 2)
  assert.ok(!frames.some(f => f.id === 3), 'the second hold of a waits')
  s.send(s.release(4, a.lease))
  frames = s.frames()
  assert.ok(
    frames.some(f => f.id === 4 && f.type === 'done'),
    'the release is answered',
  )
  assert.ok(granted(frames, 3).fence > a.fence, 'the next in line, with a larger fence')
  const held = (key: string) => s.store.inspectKeys().find(k => k.name === 'x' && k.key === key)?.holders.length ?? 0
  assert.equal(held('b'), 1, 'b is still held: only the lease named was released')
  assert.equal(held('a'), 1, 'a is held by the next in line')
  s.send(s.release(0, b.lease))
  assert.deepEqual(s.frames(), [], 'a release of id 0 is not answered')
  assert.equal(held('b'), 0, 'b is free')
  await s.store.close()
})

test('#17 LOCK-05: a release of a lease id no request holds (never granted, or released already) changes nothing, and is answered done', async () => {
  // maxHolds 1: a release that counted a request out when it ended none would let a second one in.
  const s = await served(1)
  s.send(s.hold(1, 'a', null))
  const a = granted(s.frames(), 1)
  s.send(batchOf([s.release(2, 'f'.repeat(32)), s.release(3, request(1))], false))
  assert.deepEqual(
    s.frames().map(f => [f.id, f.type]),
    [
      [2, 'done'],
      [3, 'done'],
    ],
  )
  assert.equal(s.store.inspectKeys().find(k => k.key === 'a')?.holders[0]?.fence, a.fence, 'the lease still holds its key')
  s.send(s.hold(4, 'b', 0))
  assert.deepEqual(
    s.frames().map(f => [f.id, f.type, (f as { code?: string }).code]),
    [[4, 'error', 'limit']],
    'still one request over connections: the store is at its maxHolds',
  )
  s.send(s.release(5, a.lease))
  s.send(s.release(6, a.lease))
  s.send(s.hold(7, 'b', 0))
  const frames = s.frames()
  assert.deepEqual(
    frames.map(f => [f.id, f.type]),
    [
      [5, 'done'],
      [6, 'done'],
      [7, 'granted'],
    ],
    'released once (the second release is of a lease no longer held), and counted out once: a new hold fits',
  )
  await s.store.close()
})

test("LOCK-01: a release and a cancel sent again on a new connection (their first may have been read before the drop) never end the lease of the key's next holder", async () => {
  const s = await served(100)
  // Another client's connection, on the same protocol and store.
  const sentB: Uint8Array[] = []
  const socketB = { send: (f: Uint8Array) => void sentB.push(f), close() {}, onMessage() {}, onClose() {} } as unknown as Socket
  const b = new Session(2, socketB, s.protocol)
  s.protocol.frame(b, encodeClient(1, { type: 'hello', revision: REVISION, token: 'token', client: 'test' }))
  const framesB = () => sentB.splice(0).flatMap(m => decodeServerAll(m))
  framesB()

  // The first client holds a, releases it (read), and its connection drops; b is next in line.
  s.send(s.hold(1, 'a', null))
  const first = granted(s.frames(), 1)
  s.protocol.frame(
    b,
    encodeClient(2, { type: 'hold', semaphore: false, limit: 1, name: 'x', key: 'a', ttl: 30_000, maxHold: 0, wait: null, request: request(99) }),
  )
  assert.deepEqual(framesB(), [], 'b waits')
  s.send(s.release(0, first.lease))
  const next = granted(framesB(), 2)
  assert.ok(next.fence > first.fence)
  s.protocol.dropped(s.session)

  // Reconnected, the first client sends again what it could not know was read: the release, and a cancel of its request.
  const sentC: Uint8Array[] = []
  const socketC = { send: (f: Uint8Array) => void sentC.push(f), close() {}, onMessage() {}, onClose() {} } as unknown as Socket
  const c = new Session(3, socketC, s.protocol)
  s.protocol.frame(c, encodeClient(1, { type: 'hello', revision: REVISION, token: 'token', client: 'test' }))
  s.protocol.frame(c, batchOf([s.release(2, first.lease), encodeClient(3, { type: 'cancel', request: request(1) }), s.hold(4, 'a', 0)], false))
  assert.deepEqual(
    sentC
      .splice(1)
      .flatMap(m => decodeServerAll(m))
      .map(f => [f.id, f.type]),
    [
      [2, 'done'],
      [3, 'done'],
      [4, 'busy'],
    ],
    'answered, and a is still held: one holder at a time',
  )
  assert.deepEqual(
    s.store
      .inspectKeys()
      .find(k => k.key === 'a')
      ?.holders.map(h => h.fence),
    [next.fence],
    'b holds a, with its fence',
  )
  // b's lease is b's to renew and release.
  s.protocol.frame(b, encodeClient(3, { type: 'renew', lease: next.lease }))
  assert.deepEqual(
    framesB().map(f => f.type),
    ['renewed'],
  )
  await s.store.close()
})
