import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openStore } from '../src/entry/node.js'
import { memoryStorage } from '../src/storage/storage.js'
import { Protocol, Session } from '../src/remote/session.js'
import { REVISION, encodeClient } from '../src/remote/wire.js'
import type { Socket } from '../src/runtime/transport.js'

/**
 * LOCK-05: the engine knows a connection by its number alone, so the store numbers every connection
 * to it (store/remote-holds.ts `nextConnection`), whichever server or Durable Object took it: u32,
 * never 0 (a Durable Object's socket without its attachment), and past every number a restarted
 * Durable Object's clients kept (`_connectionTaken`). A number is never given while a connection of
 * it is live, nor while the store has a request of it, even once the counter wrapped.
 */
test('LOCK-05: a store numbers its connections, past the numbers taken already, wrapping as u32 and skipping 0', async () => {
  const store = await openStore({ storage: memoryStorage() })
  assert.equal(store._nextConnection(false), 1)
  assert.equal(store._nextConnection(false), 2)
  store._connectionTaken(41, false)
  assert.equal(store._nextConnection(false), 42)
  store._connectionTaken(7, false)
  assert.equal(store._nextConnection(false), 43, 'a number below the last one changes nothing')
  store._connectionTaken(0xffff_ffff, false)
  assert.equal(store._nextConnection(false), 1, 'past the last u32 it wraps, to 1')
  assert.equal(store._liveConnections, 0, 'none of these was a live connection')
  await store.close()
})

test('LOCK-05: past a wrap, the numbers of live connections (given, or taken after a restart) are skipped until they end', async () => {
  const store = await openStore({ storage: memoryStorage() })
  assert.equal(store._nextConnection(), 1, 'live until it ends')
  assert.equal(store._nextConnection(), 2)
  store._connectionTaken(3)
  assert.equal(store._liveConnections, 3)
  store._connectionEnded(2, true)
  assert.equal(store._liveConnections, 2)
  store._connectionTaken(0xffff_ffff, false)
  assert.equal(store._nextConnection(false), 2, '1 is live; 2 ended')
  assert.equal(store._nextConnection(false), 4, '3 is live (taken)')
  store._connectionEnded(1, false)
  store._connectionEnded(3, true)
  assert.equal(store._liveConnections, 0, 'every live number ended: none is kept')
  store._connectionTaken(0xffff_ffff, false)
  assert.equal(store._nextConnection(false), 1)
  await store.close()
})

/** A session of `protocol` over a socket that keeps nothing, numbered by `store` as a server numbers its connections. */
function session(protocol: Protocol, conn: number, party?: string): Session {
  const socket = { send() {}, close() {}, onMessage() {}, onClose() {} } as unknown as Socket
  const s = new Session(conn, socket, protocol)
  protocol.frame(s, encodeClient(1, { type: 'hello', revision: REVISION, token: 'token', client: party === undefined ? 'test' : `test party=${party}` }))
  return s
}

const hold = (id: number, key: string) =>
  encodeClient(id, { type: 'hold', semaphore: false, limit: 1, name: 'x', key, ttl: 30_000, maxHold: 0, wait: 0, request: id.toString(16).padStart(32, '0') })

test('LOCK-05: a number given not live (a Durable Object RPC call) is never live, but is skipped while the store has a request of it', async () => {
  const store = await openStore({ storage: memoryStorage() })
  const protocol = new Protocol(() => store, 'token')
  // As the Durable Object's calls: a number each, not live, whose request the store keeps.
  const calls = [session(protocol, store._nextConnection(false)), session(protocol, store._nextConnection(false))]
  protocol.frame(calls[0]!, hold(10, 'a'))
  protocol.frame(calls[1]!, hold(11, 'b'))
  assert.equal(store.inspect().length, 2)
  assert.equal(store._liveConnections, 0, 'calls are not live: the set does not grow with them')
  for (let i = 0; i < 100; i++) store._nextConnection(false)
  assert.equal(store._liveConnections, 0)
  store._connectionTaken(0xffff_ffff, false)
  assert.equal(store._nextConnection(), 3, '1 and 2 hold leases: skipped')
  store._connectionEnded(3, true)
  await store.close()
})

test('LOCK-05: sessions ended every way (goodbye, dropped, superseded, refused) leave no live number', async () => {
  const store = await openStore({ storage: memoryStorage() })
  const protocol = new Protocol(() => store, 'token')
  const party = 'p'.repeat(20)
  for (let round = 0; round < 50; round++) {
    const bye = session(protocol, store._nextConnection())
    protocol.frame(bye, hold(1, `k${round}`))
    const dropped = session(protocol, store._nextConnection())
    const older = session(protocol, store._nextConnection(), party)
    const newer = session(protocol, store._nextConnection(), party)
    assert.equal(older.ended, true, 'superseded by its newer connection')
    // Refused at hello: its connection closes, and the server ends it as dropped (its socket's onClose).
    const refused = new Session(store._nextConnection(), { send() {}, close() {}, onMessage() {}, onClose() {} } as unknown as Socket, protocol)
    protocol.frame(refused, encodeClient(1, { type: 'hello', revision: REVISION, token: 'wrong', client: 'test' }))
    assert.equal(refused.closing, true)
    protocol.dropped(refused)
    protocol.frame(bye, encodeClient(2, { type: 'goodbye' }))
    protocol.dropped(dropped)
    protocol.dropped(newer)
    protocol.dropped(older)
  }
  assert.equal(store._liveConnections, 0)
  assert.equal(store.inspect().length, 0, 'goodbyes released their leases')
  await store.close()
})
