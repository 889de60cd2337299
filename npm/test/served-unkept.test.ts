import { test } from 'node:test'
import assert from 'node:assert/strict'
import { StorageError } from '../src/errors.js'
import { batchOf, encodeClient, type ServerFrame } from '../src/remote/wire.js'
import { servedSession } from './served.js'

/**
 * LOCK-05 for a host that keeps leases (the Durable Object: cloudflare/object.ts): a client's release
 * waits for the host to forget the lease (`releasing`), lets the key go only then, and answers the
 * host's error when it could not; the frames the client sent after it act after it, in order — a
 * renewal of the lease, a hold of its key — whether in the same message or a later one. A goodbye
 * likewise (`leaving`): one whose leases the host could not forget ends as a dropped connection.
 */

const request = (i: number) => i.toString(16).padStart(32, '0')
const hold = (id: number, key: string) =>
  encodeClient(id, { type: 'hold', semaphore: false, limit: 1, name: 'x', key, ttl: 30_000, maxHold: 0, wait: 0, request: request(id) })

/** A host whose forgetting waits until the test settles it: `settle(error?)` the oldest under way. */
async function host() {
  const pending: { resolve: () => void; reject: (e: unknown) => void }[] = []
  const leaving: ((all: boolean) => void)[] = []
  const s = await servedSession({
    hooks: {
      releasing: () => new Promise<void>((resolve, reject) => pending.push({ resolve, reject })),
      leaving: () => new Promise<boolean>(resolve => leaving.push(resolve)),
    },
  })
  const settle = (error?: unknown) => {
    const p = pending.shift()!
    if (error) p.reject(error)
    else p.resolve()
  }
  const granted = (frames: ServerFrame[], id: number) => {
    const frame = frames.find(f => f.id === id)
    assert.equal(frame?.type, 'granted', `frame ${id}: ${JSON.stringify(frames)}`)
    return frame as { lease: string; fence: number }
  }
  return { ...s, pending, leaving, settle, granted }
}

const tick = () => new Promise(resolve => setImmediate(resolve))
const types = (frames: ServerFrame[]) => frames.map(f => [f.id, f.type, (f as { code?: string }).code].filter(x => x !== undefined))

test('LOCK-05: a release that waits for its host holds back the frames after it, in the same message and later ones; refused, it lets nothing go and answers the error', async () => {
  const s = await host()
  s.send(hold(1, 'a'))
  const a = s.granted(s.frames(), 1)
  s.send(batchOf([encodeClient(2, { type: 'release', lease: a.lease }), encodeClient(3, { type: 'renew', lease: a.lease }), hold(4, 'a')], false))
  s.send(encodeClient(5, { type: 'inspect' }))
  await tick()
  assert.deepEqual(s.frames(), [], 'nothing acts while the release waits')
  assert.equal(s.pending.length, 1)
  s.settle(new StorageError('lock x: key "a": not released (ask again)'))
  await tick()
  const frames = s.frames()
  assert.deepEqual(types(frames), [
    [2, 'error', 'storage'],
    [3, 'renewed'],
    [4, 'busy'],
    [5, 'inspected'],
  ])
  assert.deepEqual(
    s.store.inspectKeys().map(k => [k.key, k.holders.length]),
    [['a', 1]],
    'still held',
  )
  // Asked again and forgotten: released, and a hold after it in the same message gets the key.
  s.send(batchOf([encodeClient(6, { type: 'release', lease: a.lease }), hold(7, 'a')], false))
  s.settle()
  await tick()
  const after = s.frames()
  assert.deepEqual(types(after), [
    [6, 'done'],
    [7, 'granted'],
  ])
  assert.ok(s.granted(after, 7).fence > a.fence)
  await s.store.close()
})

test('LOCK-05: a release of frame id 0 that waits for its host is answered nothing either way; a cancel of a granted hold waits as a release does', async () => {
  const s = await host()
  s.send(hold(1, 'a'))
  const a = s.granted(s.frames(), 1)
  s.send(encodeClient(0, { type: 'release', lease: a.lease }))
  s.send(hold(2, 'a'))
  s.settle(new StorageError('not released'))
  await tick()
  assert.deepEqual(types(s.frames()), [[2, 'busy']])
  s.send(encodeClient(3, { type: 'cancel', request: request(1) }))
  s.send(hold(4, 'a'))
  await tick()
  assert.deepEqual(s.frames(), [])
  s.settle()
  await tick()
  assert.deepEqual(types(s.frames()), [
    [3, 'done'],
    [4, 'granted'],
  ])
  await s.store.close()
})

test('LOCK-05: a goodbye whose leases its host could not all forget ends the session as a dropped connection (its leases to their ttl); one it forgot, as goodbye', async () => {
  for (const all of [false, true]) {
    const s = await host()
    s.send(hold(1, 'a'))
    s.granted(s.frames(), 1)
    s.send(encodeClient(2, { type: 'goodbye' }))
    await tick()
    assert.deepEqual(s.frames(), [], 'answered once the host forgot')
    s.leaving.shift()!(all)
    await tick()
    assert.deepEqual(types(s.frames()), [[2, 'done']])
    assert.equal(s.session.ended, true)
    assert.deepEqual(
      s.store.inspectKeys().map(k => k.key),
      all ? [] : ['a'],
      all ? 'let go at the goodbye' : 'left to its ttl',
    )
    await s.store.close()
  }
})

test('LOCK-05: frames queued behind a slow release still let go once it is done though the connection dropped meanwhile: a goodbye ends the leases, a release its lease; a hold acts on nothing', async () => {
  for (const last of ['goodbye', 'release'] as const) {
    const s = await host()
    s.send(hold(1, 'a'))
    const a = s.granted(s.frames(), 1)
    s.send(hold(2, 'b'))
    const b = s.granted(s.frames(), 2)
    // The client's release waits for its host; its goodbye (or a release) and a hold wait behind it.
    s.send(encodeClient(3, { type: 'release', lease: a.lease }))
    s.send(hold(4, 'c'))
    s.send(last === 'goodbye' ? encodeClient(5, { type: 'goodbye' }) : encodeClient(5, { type: 'release', lease: b.lease }))
    await tick()
    // It gave up waiting for the answer and closed: the connection ended before its frames acted.
    s.protocol.dropped(s.session)
    assert.equal(s.session.ended, true)
    s.settle()
    await tick()
    if (last === 'goodbye') {
      assert.equal(s.leaving.length, 1, 'the host is asked to forget the leases the goodbye ends')
      s.leaving.shift()!(true)
    } else {
      s.settle()
    }
    await tick()
    assert.deepEqual(
      s.store.inspectKeys().map(k => k.key),
      [],
      'a let go by its release, b by the goodbye or its own release, c never held for a connection gone',
    )
    assert.deepEqual(s.frames(), [], 'nothing is sent to a connection gone')
    await s.store.close()
  }
})

test('POOL-01: a pool release and a withdraw queued behind a slow release still let go once it is done though the connection dropped meanwhile; a claim queued there takes nothing', async () => {
  const s = await host()
  const pool = s.store.pool('seats', { capacity: 4 })
  const claim = (id: number, claim: string) => encodeClient(id, { type: 'claim', pool: 'seats', capacity: 0, n: 1, claim, wait: 0, ttl: 0 })
  // A withdraw names the claim frame whose answer it takes back (revision 7); a release names none.
  const op = (id: number, op: 'release' | 'withdraw', claim: string, value = 0) =>
    encodeClient(id, { type: 'pool', op, pool: 'seats', capacity: 0, claim, value })
  s.send(hold(1, 'a'))
  const a = s.granted(s.frames(), 1)
  s.send(claim(2, 'kept'))
  s.send(claim(3, 'crossed'))
  s.send(claim(4, 'unnamed'))
  const answered: ServerFrame[] = []
  for (let i = 0; i < 50 && answered.length < 3; i++) {
    await tick()
    answered.push(...s.frames())
  }
  assert.deepEqual(
    answered.map(f => [f.id, f.type]),
    [2, 3, 4].map(id => [id, 'claimed']),
  )
  assert.equal(await pool.remaining(), 1, 'all three claimed')
  // The client's lock release waits for its host; a pool release (its caller's), a withdraw (a
  // `claimed` answer that crossed its cancel) and a claim wait behind it. A withdraw naming no claim
  // frame (revision 6) could undo, acting late, a claim of its id that its client asked again since.
  s.send(encodeClient(5, { type: 'release', lease: a.lease }))
  s.send(op(6, 'release', 'kept'))
  s.send(op(7, 'withdraw', 'crossed', 3))
  s.send(op(8, 'withdraw', 'unnamed'))
  s.send(claim(9, 'late'))
  await tick()
  // The client gave up waiting (its close) and the connection ended before these acted.
  s.protocol.dropped(s.session)
  s.settle()
  for (let i = 0; i < 50 && (await pool.remaining()) !== 3; i++) await tick()
  for (let i = 0; i < 10; i++) await tick()
  assert.equal(await pool.remaining(), 3, 'the release and the withdraw gave their units back; the claim for a connection gone took none')
  assert.ok(s.store._claimOpen('seats', 'unnamed'), 'the withdraw naming no frame acted on nothing')
  assert.deepEqual(s.store.inspectKeys(), [], 'a let go by its release')
  assert.deepEqual(s.frames(), [], 'nothing is sent to a connection gone')
  await s.store.close()
})
