/**
 * A reconnect whose hello the server refuses (`error` with the hello's id, then the close: a server
 * at its `maxConnections`, or closing): what was asked on that connection while its hello was in
 * flight is answered `dropped` and asked again on the next one, as after any drop — never left
 * awaited for good (remote/client.ts `_open`).
 */

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { encodeServer } from '../src/remote/wire.js'
import { connectOn } from '../src/remote/client.js'
import { manualClock } from '../src/testing.js'
import { fakeServer, loadEngine, turns } from './dialed.js'

loadEngine()

test('LOCK-05: an inspection and a pool operation asked while a reconnect says hello, that hello refused (limit), are asked again on the next connection; nothing is left awaited on the refused one (test clock)', {
  timeout: 10_000,
}, async () => {
  const clock = manualClock(0)
  const server = fakeServer(n => n === 1)
  const remote = await connectOn(server.transport, undefined, 'ws://fake', { token: 't', clock })
  const pool = remote.pool('p', { capacity: 3 })

  remote._dropConnectionForTest()
  await turns()
  clock.advance(100) // past the first backoff: the reconnect dials
  await turns()
  assert.equal(server.connections.length, 2, 'the reconnect dialed')
  const refused = server.connections[1]!
  const hello = refused.frames.find(f => f.type === 'hello')!

  // Asked on the new connection while its hello is unanswered.
  const settled: string[] = []
  const inspected = remote.inspect().then(r => (settled.push('inspect'), r))
  const remaining = pool.remaining().then(r => (settled.push('remaining'), r))
  await turns()
  assert.deepEqual(
    refused.frames.map(f => f.type),
    ['hello', 'inspect', 'pool'],
    'both went on the connection whose hello is in flight',
  )

  // The server refuses the hello (as serve() at its maxConnections), then closes.
  refused.socket.onMessage(encodeServer(hello.id, { type: 'error', code: 'limit', message: 'the server is at its 1000 connections' }))
  refused.socket.close()
  await turns()
  clock.advance(200) // the next backoff: dialed again, and welcomed
  await turns()
  assert.equal(server.connections.length, 3, 'dialed again after the refusal')
  const back = server.connections[2]!
  const asked = back.frames.filter(f => f.type !== 'hello')
  assert.deepEqual(
    asked.map(f => f.type),
    ['inspect', 'pool'],
    'the inspection and the pool operation are asked again on the connection that was welcomed',
  )
  back.socket.onMessage(encodeServer(asked[0]!.id, { type: 'inspected', entries: [] }))
  await turns()
  back.socket.onMessage(encodeServer(asked[1]!.id, { type: 'count', value: 3 }))
  await turns()
  back.socket.onMessage(encodeServer(back.frames.find(f => f.type === 'inspectPools')!.id, { type: 'pools', pools: [] }))
  assert.deepEqual(await inspected, [])
  assert.equal(await remaining, 3)
  assert.deepEqual(settled.sort(), ['inspect', 'remaining'])

  // Nothing is awaited any more: an idle client sends nothing (no ping for an answer that never comes).
  const sent = back.frames.length
  clock.advance(60_000)
  await turns()
  assert.deepEqual(
    back.frames.slice(sent).map(f => f.type),
    [],
    'an idle client pings nobody',
  )
  await remote.close()
})
