// LOCK-05, the server's side of the heartbeat (npm/src/remote/silent-clients.ts): a client of
// revision 5 that goes silent with a hold in line (its host gone without a close) is dropped after 30
// to 40 s of silence, so that its hold stands aside instead of being granted to nobody; a client of an
// older revision (which never pings), an idle one, one that only holds a lease, and one that pings are
// kept. The server runs on a manual clock moved by the test; its clients are raw, silent unless told.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { TOKEN, procs, rawClient, startServer, serverInspect, entryOf } from './helpers.js'
import { encode } from './frames.js'

const hold = (id, key, extra = {}) => encode.hold(id, { name: 'silent', key, ttl: 60_000, ...extra })

/** Moves the server's clock by `ms`: its answer says how many connections it still has. */
async function advance(server, ms) {
  const since = server.events.length
  server.send({ op: 'advance', ms })
  return (await server.next({ ev: 'advanced' }, 5_000, { since })).connections
}

/** A raw client welcomed at `revision`. */
async function welcomed(t, server, revision) {
  const raw = await rawClient(server.url)
  t.after(() => raw.close())
  raw.send(encode.hello3(1, TOKEN, revision))
  assert.equal((await raw.answer(1)).revision, revision)
  return raw
}

test('LOCK-05: a client of revision 5 silent for 30 to 40 s with a hold in line is dropped (close 4408) and its hold stands aside; one of revision 4, an idle one, a holder of a lease and one that pings are kept (test clock)', async t => {
  const own = procs(t)
  const server = await startServer(own, { manualClock: 1_000_000 })
  const holder = await welcomed(t, server, 5)
  holder.send(hold(2, 'busy'))
  const lease = await holder.answer(2)
  assert.equal(lease.type, 'granted')
  // In line for `busy`, in this order: gone (revision 5), old (revision 4), pinging (revision 5).
  const gone = await welcomed(t, server, 5)
  gone.send(hold(2, 'busy'))
  const old = await welcomed(t, server, 4)
  old.send(hold(2, 'busy'))
  const pinging = await welcomed(t, server, 5)
  pinging.send(hold(2, 'busy'))
  const idle = await welcomed(t, server, 5)
  // Every sweep so far counts from the first welcome; all frames were read at the clock's start.
  let inspected = await serverInspect(server)
  assert.equal(entryOf(inspected, 'silent', 'busy').waiting, 3)
  assert.equal(inspected.connections, 5)

  // The pinging client pings every 10 s (a live client of revision 5 pings within 15 s while it waits).
  for (let i = 0; i < 3; i++) {
    assert.equal(await advance(server, 10_000), 5, `nobody dropped at ${(i + 1) * 10} s`)
    pinging.send(encode.ping(10 + i))
    assert.equal((await pinging.answer(10 + i)).type, 'done')
  }
  assert.equal(await advance(server, 9_999), 5, 'nobody dropped at 39,999 ms')
  assert.equal(gone.closed, undefined)
  assert.equal(await advance(server, 1), 4, 'the silent client with a hold in line is dropped at 40 s (the sweep that found it silent a third time)')
  const closed = await gone.whenClosed
  assert.equal(closed.code, 4408)
  assert.match(closed.reason, /silent for 30 s with a hold in line or a claim awaited/)
  inspected = await serverInspect(server)
  assert.equal(entryOf(inspected, 'silent', 'busy').waiting, 2, 'its hold stands aside (away, keeping its place for its ttl)')

  // The key goes past it, to the client of revision 4: silent too, but never dropped for it.
  holder.send(encode.release(3, lease.lease))
  assert.equal((await holder.answer(3)).type, 'done')
  const granted = await old.answer(2)
  assert.equal(granted.type, 'granted', 'the next in line after the dropped client is granted')
  assert.ok(granted.fence > lease.fence)

  // The pinging client pings once more (at 40 s), then falls silent while it still waits in line: it
  // goes the same way, at the sweep of 80 s. The idle client, the holder that let go (nothing in line)
  // and the one of revision 4 (a lease now) stay, a minute on and more.
  pinging.send(encode.ping(20))
  assert.equal((await pinging.answer(20)).type, 'done')
  for (let i = 0; i < 3; i++) assert.equal(await advance(server, 10_000), 4, `nobody more dropped at ${50 + i * 10} s`)
  assert.equal(await advance(server, 10_000), 3, 'the client silent since its ping at 40 s is dropped at 80 s')
  assert.equal((await pinging.whenClosed).code, 4408)
  for (let i = 0; i < 3; i++) assert.equal(await advance(server, 10_000), 3)
  for (const [what, raw] of [['idle', idle], ['holder', holder], ['revision 4', old]]) assert.equal(raw.closed, undefined, `${what}: kept`)
})

test('LOCK-05: a client of revision 5 silent for 40 s with a claim awaited is dropped, and its claim cancelled; the units go to the next claim (test clock)', async t => {
  const own = procs(t)
  const server = await startServer(own, { manualClock: 1_000_000 })
  const first = await welcomed(t, server, 5)
  first.send(encode.claim(2, { pool: 'seats', capacity: 2, n: 2, claim: 'a' }))
  assert.equal((await first.answer(2)).claimed, true)
  const gone = await welcomed(t, server, 5)
  gone.send(encode.claim(2, { pool: 'seats', capacity: 2, n: 2, claim: 'b', wait: 3_600_000 }))
  for (let i = 0; i < 3; i++) assert.equal(await advance(server, 10_000), 2)
  assert.equal(await advance(server, 10_000), 1, 'dropped at the fourth sweep')
  assert.equal((await gone.whenClosed).code, 4408)
  // Its claim was cancelled: the units `first` gives back are there for the next, not taken by it.
  first.send(encode.pool(3, { op: 'release', pool: 'seats', claim: 'a' }))
  assert.equal((await first.answer(3)).value, 1)
  first.send(encode.pool(4, { op: 'remaining', pool: 'seats' }))
  assert.equal((await first.answer(4)).value, 2, 'the dropped client holds none of the pool')
})
