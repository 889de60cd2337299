import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openStore } from '../src/entry/node.js'
import { memoryStorage } from '../src/storage/storage.js'
import { serveOn } from '../src/remote/server.js'
import { REVISION, decodeServerAll, encodeClient } from '../src/remote/wire.js'
import { systemClock } from '../src/util/clock.js'
import type { Socket, Transport } from '../src/runtime/transport.js'

/**
 * LOCK-06 at a server's close() (server.ts `#close`, `#admit`): a connection not yet past hello is
 * closed (1001), but a runtime may still hand over a frame its client sent before it read that close.
 * No transport of the package's was seen to (Node's and Bun's listeners cut every connection in the
 * same turn, Deno's drops what comes on a closing socket), so the frame is handed over here by hand,
 * on a transport that only takes the server's sockets: a hello then must be refused `closed`, never
 * welcomed past close(), nor the frames behind it act on the store.
 */
test('LOCK-06: a hello that comes on a connection its server is closing is refused closed (with its id): never past hello, and the hold behind it holds nothing', async t => {
  const store = await openStore({ storage: memoryStorage() })
  t.after(() => store.close())
  let accept!: (socket: Socket) => void
  const transport = {
    listen: async (_options: unknown, onSocket: (socket: Socket) => void) => {
      accept = onSocket
      return { url: 'ws://test', close: async () => {} }
    },
    dial: async () => assert.fail('no dial'),
  } as unknown as Transport
  const server = await serveOn(store, transport, { token: 'token' }, systemClock)
  const sent: Uint8Array[] = []
  const closes: number[] = []
  const socket = { send: (f: Uint8Array) => void sent.push(f), close: (code = 1000) => void closes.push(code), onMessage() {}, onClose() {} } as Socket
  accept(socket)
  const closing = server.close()
  assert.deepEqual(closes, [1001], 'closed as the server closes')
  // Sent before its client read that close, handed over after it.
  socket.onMessage(encodeClient(1, { type: 'hello', revision: REVISION, token: 'token', client: 'test' }))
  socket.onMessage(
    encodeClient(2, { type: 'hold', semaphore: false, limit: 1, name: 'jobs', key: 'k', ttl: 60_000, maxHold: 0, wait: 0, request: 'ab'.repeat(16) }),
  )
  await closing
  // Before the fix: welcomed (and counted) after close(), and its hold granted.
  assert.deepEqual(
    sent.flatMap(m => decodeServerAll(m)).map(f => [f.id, f.type, (f as { code?: string }).code]),
    [[1, 'error', 'closed']],
  )
  assert.equal(server.connections, 0)
  assert.deepEqual(store.inspectKeys(), [])
})
