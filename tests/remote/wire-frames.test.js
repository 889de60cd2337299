// The WebSocket framing under the protocol (docs/protocol.md, "Transport"), read byte by byte off a
// plain TCP socket: every protocol frame is one final binary WebSocket message, a client's masked with
// a masking key of its own (RFC 6455 §5.3), a server's unmasked; messages sent together arrive whole
// and in the order they were sent. On Node, the transport builds these frames itself, several into one
// write (transport-ws.ts, ws-frames.ts), so nothing of `ws` checks them on the way out.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import net from 'node:net'
import { connect, openStore, memoryStorage } from 'holdfast'
import { TOKEN } from './helpers.js'
import { CLIENT, decodeServer, encode, masked, wsStream } from './frames.js'

delete process.env.HOLDFAST_TOKEN

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'

/** An unmasked binary frame, as a server sends one. */
function serverFrame(payload) {
  return Buffer.concat([Buffer.from([0x82, payload.length]), payload])
}

test('protocol: a client sends each frame as one final binary WebSocket message, masked with a key of its own, whole and in order', async () => {
  const frames = []
  let sock
  const server = net.createServer(s => {
    sock = s
    const read = wsStream(
      frame => {
        frames.push(frame)
        // Answer the hello; the holds are left unanswered.
        if (frame.payload[1] === CLIENT.hello) s.write(serverFrame(Buffer.from([1, 0x81, ...frame.payload.subarray(2, 6), 0, 0, 1, 0, 0, 0, 0, 0])))
      },
      head => {
        const key = /sec-websocket-key: *(\S+)/i.exec(head)[1]
        const accept = createHash('sha1').update(key + GUID).digest('base64')
        s.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`)
      },
    )
    s.on('data', read)
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  const remote = await connect(`ws://127.0.0.1:${server.address().port}`, { token: TOKEN, reconnect: false })
  try {
    const lock = remote.lock('wire', { ttl: '30s' })
    // Asked in one turn: they leave together.
    const keys = Array.from({ length: 40 }, (_, i) => `key-${i}-${'x'.repeat(i * 5)}`)
    for (const key of keys) lock.hold(key, () => {}).catch(() => {})
    while (frames.length < 1 + keys.length) await new Promise(r => setTimeout(r, 5))
    for (const f of frames) {
      assert.ok(f.fin, 'a final frame')
      assert.equal(f.rsv, 0, 'no extension bits')
      assert.equal(f.opcode, 0x2, 'binary')
      assert.ok(f.masked, 'a client frame is masked')
    }
    const masks = new Set(frames.map(f => f.key.toString('hex')))
    assert.equal(masks.size, frames.length, 'each frame has its own masking key')
    assert.equal(frames[0].payload[1], CLIENT.hello)
    const held = frames.slice(1).map(f => {
      assert.equal(f.payload[0], 1, 'protocol version 1')
      assert.equal(f.payload[1], CLIENT.hold)
      // After the semaphore flag, the limit, and the name "wire": the key.
      const at = 2 + 4 + 1 + 4 + 2 + 4
      const n = f.payload.readUInt16LE(at)
      return f.payload.subarray(at + 2, at + 2 + n).toString()
    })
    assert.deepEqual(held, keys, 'every hold arrived whole, in the order it was asked')
  } finally {
    sock?.destroy()
    server.close()
  }
})

test('protocol: a server answers each frame with one final binary WebSocket message, unmasked, in order, a large one among small ones too', async () => {
  const store = await openStore({ storage: memoryStorage() })
  const served = await store.serve({ port: 0, token: TOKEN })
  const answers = []
  const s = net.connect(new URL(served.url).port, '127.0.0.1')
  try {
    await new Promise(resolve => s.once('connect', resolve))
    s.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${Buffer.alloc(16, 7).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`)
    s.on('data', wsStream(f => answers.push(f)))
    // A client's frames, masked, all in one write.
    // 300 holds on keys of 100 bytes, then an inspect (its answer lists them all: over 16 KiB, more than
    // the transport batches itself, so `ws` sends it), then one more hold: all read in one turn, whose
    // answers must leave in this order, the large one between the small ones.
    const N = 300
    const keyOf = i => `k${i}-`.padEnd(100, 'x')
    const holds = Array.from({ length: N }, (_, i) => encode.hold(2 + i, { name: 'wire', key: keyOf(i), wait: 0 }))
    const last = encode.hold(3 + N, { name: 'wire', key: 'last', wait: 0 })
    s.write(Buffer.concat([masked(encode.hello(1, TOKEN)), ...holds.map(masked), masked(encode.inspect(2 + N)), masked(last)]))
    while (answers.length < 3 + N) await new Promise(r => setTimeout(r, 5))
    for (const f of answers) {
      assert.ok(f.fin && f.opcode === 0x2 && f.rsv === 0, 'a final binary frame')
      assert.ok(!f.masked, 'a server frame is not masked')
    }
    const decoded = answers.map(f => decodeServer(f.payload))
    assert.equal(decoded[0].type, 'welcome')
    const expected = [...holds.map((_, i) => [2 + i, 'granted']), [2 + N, 'inspected'], [3 + N, 'granted']]
    assert.deepEqual(decoded.slice(1).map(d => [d.id, d.type]), expected, 'every answer whole, in order')
    assert.ok(answers[1 + N].payload.length > 16 * 1024, `the inspect answer is larger than what is batched (${answers[1 + N].payload.length} bytes)`)
    assert.equal(decoded[1 + N].count, N)
  } finally {
    s.destroy()
    await served.close()
    await store.close()
  }
})
