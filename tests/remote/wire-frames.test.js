// The WebSocket framing under the protocol (docs/protocol.md, "Transport"), read byte by byte off a
// plain TCP socket: every message is one final binary WebSocket message, a client's masked with a
// masking key of its own (RFC 6455 §5.3), a server's unmasked; messages sent together arrive whole and
// in the order they were sent. Between peers of revision 2 each carries one protocol frame; between
// peers that both said revision 3, the frames of a turn go as one batch (or a few, each at most 16 KiB;
// a larger frame alone). On Node, the transport builds these frames itself, several into one write
// (transport-ws.ts, ws-frames.ts), so nothing of `ws` checks them on the way out.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import net from 'node:net'
import { ClosedError, connect, openStore, memoryStorage } from 'holdfast'
import { TOKEN } from './helpers.js'
import { CLIENT, decodeServer, encode, encodeServer, framesOf, masked, newId, wsStream } from './frames.js'

delete process.env.HOLDFAST_TOKEN

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'

/** An unmasked binary frame, as a server sends one. */
function serverFrame(payload) {
  const head = payload.length > 125 ? Buffer.from([0x82, 126, payload.length >> 8, payload.length & 0xff]) : Buffer.from([0x82, payload.length])
  return Buffer.concat([head, payload])
}

/**
 * A plain TCP server that answers WebSocket upgrades and hands each connection's frames (unmasked)
 * to `onFrame(frame, socket, connection)`: a server written by hand, old or new as the test says.
 */
async function handServer(onFrame) {
  const sockets = []
  const server = net.createServer(s => {
    sockets.push(s)
    const connection = sockets.length
    s.on('error', () => {})
    s.on(
      'data',
      wsStream(
        frame => onFrame(frame, s, connection),
        head => {
          const key = /sec-websocket-key: *(\S+)/i.exec(head)[1]
          const accept = createHash('sha1').update(key + GUID).digest('base64')
          s.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`)
        },
      ),
    )
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `ws://127.0.0.1:${server.address().port}`,
    close: () => {
      for (const s of sockets) s.destroy()
      server.close()
    },
  }
}

/** A server's frame: version 1, `type`, `id`, then the body. */
const answer = (type, id, ...body) => {
  const head = Buffer.alloc(6)
  head[0] = 1
  head[1] = type
  head.writeUInt32LE(id, 2)
  return Buffer.concat([head, ...body])
}
const u32 = v => {
  const b = Buffer.alloc(4)
  b.writeUInt32LE(v)
  return b
}
const u64 = v => {
  const b = Buffer.alloc(8)
  b.writeBigUInt64LE(BigInt(v))
  return b
}

/** The key of a hold frame (after the semaphore flag, the limit and the name "wire"). */
function keyOfHold(payload) {
  const at = 2 + 4 + 1 + 4 + 2 + 4
  const n = payload.readUInt16LE(at)
  return payload.subarray(at + 2, at + 2 + n).toString()
}

test('protocol, #17: a client meeting a server older than revision 3 is refused its new hello, says the old one on a new connection, and then sends each frame as one final binary WebSocket message, masked with a key of its own, whole and in order', async () => {
  const frames = []
  const hellos = []
  let fence = 0
  // A server of revision 2, as the old code answers: the new hello (type 0x09) is a frame it cannot
  // decode — an error "protocol" with id 0, then the close 4400; the old hello is welcomed, each hold
  // granted.
  const server = await handServer((frame, s, connection) => {
    const type = frame.payload[1]
    const id = frame.payload.subarray(2, 6)
    if (type === CLIENT.hello3 || type === CLIENT.hello) hellos.push([connection, type])
    if (type === CLIENT.hello3) {
      const message = Buffer.from('bad frame: unknown client message type 0x09')
      const length = Buffer.alloc(2)
      length.writeUInt16LE(message.length)
      s.write(serverFrame(answer(0x86, 0, Buffer.from([9]), length, message)))
      s.end(Buffer.from([0x88, 2, 4400 >> 8, 4400 & 0xff]))
      return
    }
    if (frame.opcode === 0x8) return // the refused connection's close
    frames.push(frame)
    if (type === CLIENT.hello) s.write(serverFrame(Buffer.from([1, 0x81, ...id, 0, 0, 1, 0, 0, 0, 0, 0])))
    if (type === CLIENT.hold) {
      const request = frame.payload.subarray(frame.payload.length - 16)
      s.write(serverFrame(answer(0x82, id.readUInt32LE(0), request, newId(), u64(++fence), u32(30_000), u64(0))))
    }
  })
  const remote = await connect(server.url, { token: TOKEN, reconnect: false })
  try {
    assert.deepEqual(hellos, [[1, CLIENT.hello3], [2, CLIENT.hello]], 'the new hello, refused; then the old one on a second connection')
    const lock = remote.lock('wire', { ttl: '30s' })
    // Asked in one turn: they leave together.
    const keys = Array.from({ length: 40 }, (_, i) => `key-${i}-${'x'.repeat(i * 5)}`)
    const held = Promise.all(keys.map(key => lock.hold(key, lease => lease.fence)))
    const holds = () => frames.filter(f => f.payload[1] === CLIENT.hold)
    while (holds().length < keys.length) await new Promise(r => setTimeout(r, 5))
    for (const f of frames) {
      assert.ok(f.fin, 'a final frame')
      assert.equal(f.rsv, 0, 'no extension bits')
      assert.equal(f.opcode, 0x2, 'binary')
      assert.ok(f.masked, 'a client frame is masked')
    }
    const masks = new Set(frames.map(f => f.key.toString('hex')))
    assert.equal(masks.size, frames.length, 'each frame has its own masking key')
    assert.equal(frames[0].payload[1], CLIENT.hello)
    for (const f of frames.slice(1)) {
      assert.equal(f.payload[0], 1, 'protocol version 1')
      assert.ok([CLIENT.hold, CLIENT.release].includes(f.payload[1]), 'a hold or a release alone in its message: no batch to a server of revision 2')
    }
    const asked = holds().map(f => keyOfHold(f.payload))
    assert.deepEqual(asked, keys, 'every hold arrived whole, in the order it was asked')
    assert.equal((await held).length, keys.length, 'and every hold was served')
  } finally {
    await remote.close().catch(() => {})
    server.close()
  }
})

test('protocol, #17: a client of revision 3 or later (8: pools inspected page by page) welcomed at revision 3 sends the frames of a turn as one batch: one final binary masked message, its frames whole and in order', async () => {
  const messages = []
  const server = await handServer((frame, s) => {
    messages.push(frame)
    // A server of revision 3: the new welcome, saying revision 3.
    if (frame.payload[1] === CLIENT.hello3) s.write(serverFrame(answer(0x8a, frame.payload.readUInt32LE(2), Buffer.from([3]), u32(65_536), u32(0))))
  })
  const remote = await connect(server.url, { token: TOKEN, reconnect: false })
  try {
    assert.equal(messages[0].payload[1], CLIENT.hello3, 'the hello that says the revision')
    assert.equal(messages[0].payload[6], 8, 'revision 8 (pools inspected page by page)')
    const lock = remote.lock('wire', { ttl: '30s' })
    const keys = Array.from({ length: 40 }, (_, i) => `key-${i}-${'x'.repeat(i * 5)}`)
    for (const key of keys) lock.hold(key, () => {}).catch(() => {})
    while (messages.length < 2) await new Promise(r => setTimeout(r, 5))
    await new Promise(r => setTimeout(r, 50))
    assert.equal(messages.length, 2, 'the hello, then one message for the turn')
    const batch = messages[1]
    assert.ok(batch.fin && batch.opcode === 0x2 && batch.rsv === 0 && batch.masked)
    assert.equal(batch.payload[1], CLIENT.batch)
    assert.equal(batch.payload.readUInt32LE(2), 0, 'a batch has id 0')
    const asked = []
    for (let at = 6; at < batch.payload.length; ) {
      const n = batch.payload.readUInt16LE(at)
      const f = batch.payload.subarray(at + 2, at + 2 + n)
      assert.equal(f[1], CLIENT.hold)
      asked.push(keyOfHold(f))
      at += 2 + n
    }
    assert.deepEqual(asked, keys, 'every hold in the batch, whole, in the order it was asked')
  } finally {
    await remote.close().catch(() => {})
    server.close()
  }
})

for (const revision of [2, 3])
test(`protocol, #17: a server answers a client of revision ${revision} ${revision === 2 ? 'each frame with one final binary WebSocket message' : 'in batches of at most 16 KiB (a larger frame alone), final binary WebSocket messages'}, unmasked, in order, a large one among small ones too`, async () => {
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
    const hello = revision === 2 ? encode.hello(1, TOKEN) : encode.hello3(1, TOKEN)
    s.write(Buffer.concat([masked(hello), ...holds.map(masked), masked(encode.inspect(2 + N)), masked(last)]))
    const decoded = () => answers.flatMap(f => framesOf(f.payload))
    while (decoded().length < 3 + N) await new Promise(r => setTimeout(r, 5))
    for (const f of answers) {
      assert.ok(f.fin && f.opcode === 0x2 && f.rsv === 0, 'a final binary frame')
      assert.ok(!f.masked, 'a server frame is not masked')
      if (revision === 3) assert.ok(f.payload.length <= 16 * 1024 || decodeServer(f.payload).type === 'inspected', `a batch of ${f.payload.length} bytes`)
    }
    const frames = decoded()
    assert.deepEqual([frames[0].type, frames[0].revision], ['welcome', revision])
    const expected = [...holds.map((_, i) => [2 + i, 'granted']), [2 + N, 'inspected'], [3 + N, 'granted']]
    assert.deepEqual(frames.slice(1).map(d => [d.id, d.type]), expected, 'every answer whole, in order')
    const inspected = answers.find(f => decodeServer(f.payload).type === 'inspected')
    assert.ok(inspected.payload.length > 16 * 1024, `the inspect answer is larger than what is batched (${inspected.payload.length} bytes), alone in its message`)
    assert.equal(frames[1 + N].count, N)
    const batches = answers.filter(f => decodeServer(f.payload).type === 'batch').length
    if (revision === 2) assert.equal(batches, 0, 'no batch to a client of revision 2')
    else assert.ok(batches >= 2 && answers.length < N / 10, `the ${N} grants in a few batches (${answers.length} messages)`)
  } finally {
    s.destroy()
    await served.close()
    await store.close()
  }
})

test('protocol, #17: a client reads no message from the server past its bound (16 MiB): the connection closes (1009) with it unread, and an inspect() it would answer rejects ClosedError', async () => {
  const closes = []
  const server = await handServer((frame, s) => {
    if (frame.opcode === 0x8) return void closes.push(frame.payload.length >= 2 ? frame.payload.readUInt16BE(0) : 0)
    const type = frame.payload[1]
    const id = frame.payload.readUInt32LE(2)
    if (type === CLIENT.hello3) s.write(serverFrame(encodeServer.welcome(id, 3)))
    if (type !== CLIENT.inspect) return
    // A well-formed `inspected` of 80,000 busy keys: 17.3 MB, past the client's 16 MiB.
    const entry = i => {
      const key = Buffer.from(`k${i}-${'x'.repeat(200)}`)
      const len = Buffer.alloc(2)
      len.writeUInt16LE(key.length)
      return Buffer.concat([Buffer.from([0, 3, 0]), Buffer.from('big'), len, key, u32(0), u32(0)])
    }
    const count = 80_000
    const payload = answer(0x87, id, u32(count), ...Array.from({ length: count }, (_, i) => entry(i)))
    assert.ok(payload.length > 16 * 1024 * 1024)
    const head = Buffer.alloc(10)
    head[0] = 0x82
    head[1] = 127
    head.writeBigUInt64BE(BigInt(payload.length), 2)
    s.write(Buffer.concat([head, payload]))
  })
  const remote = await connect(server.url, { token: TOKEN, reconnect: false })
  try {
    await assert.rejects(remote.inspect(), ClosedError)
    while (closes.length === 0) await new Promise(r => setTimeout(r, 5))
    assert.deepEqual(closes, [1009], 'closed as too big, by the client')
  } finally {
    await remote.close().catch(() => {})
    server.close()
  }
})
