// Security and limits of a store's server: the token, and every bound at its limit and one past it
// (frame size, key length, ttl, waiters per key, holds per connection, connections per server),
// garbage frames. Each refusal comes with its error, and the server goes on serving everyone else:
// a "bystander" process holds a lease with a 3 s ttl through each test, renewing it all along, and
// must still hold it, with its fence, at the end.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect, PermissionError, LimitError, InvalidError } from 'holdfast'
import { TOKEN, procs, startServer, serverInspect, untilServer, entryOf, rawClient, refusedUnauthenticated, sleep, bystander, authed } from './helpers.js'
import { encode, newId } from './frames.js'

delete process.env.HOLDFAST_TOKEN

async function rejects(promise, Class, code) {
  await assert.rejects(promise, e => {
    assert.ok(e instanceof Class, `${e?.constructor?.name}: ${e?.message}`)
    assert.equal(e.code, code)
    return true
  })
}

test('security: no token, a wrong token, or any frame before hello is refused before it reaches the engine (PermissionError), and the server serves the others', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const b = await bystander(own, server)

  await rejects(connect(server.url), InvalidError, 'invalid') // no token, no HOLDFAST_TOKEN: nothing is sent
  await rejects(connect(server.url, { token: 'wrong' }), PermissionError, 'permission')
  await rejects(connect(server.url, { token: TOKEN.slice(0, -1) + 'X' }), PermissionError, 'permission') // same length
  await rejects(connect(server.url, { token: TOKEN.slice(0, -1) }), PermissionError, 'permission') // a prefix
  await rejects(connect(server.url, { token: TOKEN + 'x' }), PermissionError, 'permission') // longer
  // The right token, from the option or from HOLDFAST_TOKEN.
  const ok = await connect(server.url, { token: TOKEN })
  await ok.close()
  process.env.HOLDFAST_TOKEN = TOKEN
  try {
    const fromEnv = await connect(server.url)
    await fromEnv.close()
  } finally {
    delete process.env.HOLDFAST_TOKEN
  }

  // Raw: an empty token; a hold, an inspect, a goodbye as the first frame; a hold after a refused hello.
  const refused = first => refusedUnauthenticated(server.url, first)
  await refused([encode.hello(1, '')])
  await refused([encode.hold(1, { name: 'secret', key: 'k' })])
  await refused([encode.inspect(1)])
  await refused([encode.goodbye(1)])
  await refused([encode.hello(1, 'wrong'), encode.hold(2, { name: 'secret', key: 'k' })])
  const s = await serverInspect(server)
  assert.ok(!s.entries.some(e => e.name === 'secret'), 'no refused hold reached the engine')
  await untilServer(server, s => s.connections === 1, 2_000, 'only the bystander connected')
  await b.check()
})

test('limits: a frame of 64 KiB reaches the decoder (and is refused for what it says); one byte more is refused for its size and the connection closed', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const b = await bystander(own, server)
  // 65,536 bytes: an inspect followed by junk; the decoder reads it and refuses the trailing bytes.
  const at = await authed(server.url)
  at.send(Buffer.concat([encode.inspect(2), Buffer.alloc(65_536 - 6)]))
  const answer = await at.answer(f => f.type === 'error')
  assert.equal(answer.code, 'protocol')
  assert.match(answer.message, /65530 bytes after the message/)
  assert.equal((await at.whenClosed).code, 4400)
  // 65,537 bytes: refused by size before it is decoded (WebSocket close 1009, "message too big").
  const past = await authed(server.url)
  past.send(Buffer.concat([encode.inspect(2), Buffer.alloc(65_537 - 6)]))
  assert.equal((await past.whenClosed).code, 1009)
  assert.ok(!past.frames.some(f => f.id === 2), 'nothing was answered for it')
  await b.check()
})

test('limits: a key of 1024 bytes of UTF-8 is held; 1025 bytes is refused (InvalidError from the client; a protocol error from the server), and an empty key is invalid', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const b = await bystander(own, server)
  const remote = await connect(server.url, { token: TOKEN })
  t.after(() => remote.close())
  const lock = remote.lock('keys', { ttl: '5s' })
  for (const key of ['k'.repeat(1024), '🔒'.repeat(256), 'é'.repeat(512)]) {
    assert.equal(Buffer.byteLength(key), 1024)
    assert.equal(await lock.hold(key, lease => lease.key), key)
  }
  for (const key of ['k'.repeat(1025), 'a' + '🔒'.repeat(256), '']) await rejects(lock.hold(key, () => {}), InvalidError, 'invalid')

  // Raw: 1024 bytes granted; 1025 refused by the decoder, and that connection closed.
  const raw = await authed(server.url)
  raw.send(encode.hold(2, { name: 'keys', key: '🔒'.repeat(256) }))
  assert.equal((await raw.answer(2)).type, 'granted')
  raw.send(encode.hold(3, { name: 'keys', key: '' }))
  const empty = await raw.answer(3)
  assert.deepEqual([empty.type, empty.code], ['error', 'invalid'])
  raw.send(encode.hold(4, { name: 'keys', key: 'a' + '🔒'.repeat(256) }))
  const long = await raw.answer(f => f.type === 'error' && f.code === 'protocol')
  assert.match(long.message, /key: 1025 bytes, at most 1024/)
  assert.equal((await raw.whenClosed).code, 4400)
  await b.check()
})

test('limits: a ttl of 1 s and of 1 h is granted; 999 ms and 1 h + 1 ms are refused (InvalidError)', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const b = await bystander(own, server)
  const remote = await connect(server.url, { token: TOKEN })
  t.after(() => remote.close())
  for (const ttl of [1000, '1s', 3_600_000, '1h']) assert.ok((await remote.lock('ttl', { ttl }).hold('k', lease => lease.fence)) > 0)
  for (const ttl of [999, '999ms', 3_600_001, '1h1ms']) assert.throws(() => remote.lock('ttl', { ttl }), InvalidError)
  // Raw: the server checks it too (a client in another language), and keeps the connection.
  const raw = await authed(server.url)
  const cases = [
    [999, 'error'],
    [1000, 'granted'],
    [3_600_000, 'granted'],
    [3_600_001, 'error'],
    [0, 'error'],
  ]
  for (const [i, [ttl, type]] of cases.entries()) {
    raw.send(encode.hold(10 + i, { name: 'ttl', key: `raw-${i}`, ttl }))
    const answer = await raw.answer(10 + i)
    assert.equal(answer.type, type, `ttl ${ttl}: ${JSON.stringify(answer)}`)
    if (type === 'error') assert.equal(answer.code, 'invalid')
    else assert.equal(answer.ttl, ttl)
  }
  assert.equal(raw.closed, undefined, 'a bad ttl does not cost the connection')
  await b.check()
})

test('limits: 10,000 waiters on one key are taken, the 10,001st is refused (LimitError), and other keys are served meanwhile', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const b = await bystander(own, server)
  // Two raw connections (each may have 10,000 holds) put a holder and 10,000 waiters on one key.
  const one = await authed(server.url)
  const two = await authed(server.url)
  one.send(encode.hold(2, { name: 'crowd', key: 'k' }))
  assert.equal((await one.answer(2)).type, 'granted')
  for (let i = 0; i < 5_000; i++) one.send(encode.hold(100 + i, { name: 'crowd', key: 'k' }))
  for (let i = 0; i < 5_000; i++) two.send(encode.hold(100 + i, { name: 'crowd', key: 'k' }))
  await untilServer(server, s => entryOf(s, 'crowd', 'k')?.waiting === 10_000, 20_000, '10,000 waiting')
  assert.ok(!one.frames.concat(two.frames).some(f => f.type === 'error'), 'none of the 10,000 was refused')

  const remote = await connect(server.url, { token: TOKEN })
  t.after(() => remote.close())
  await rejects(remote.lock('crowd').hold('k', { wait: '10s' }, () => {}), LimitError, 'limit')
  assert.ok((await remote.lock('crowd').hold('other', lease => lease.fence)) > 0, 'another key is served')
  // A connection that says goodbye takes its 5,000 waiters out of the line at once: room again.
  two.send(encode.goodbye(9))
  await untilServer(server, s => entryOf(s, 'crowd', 'k')?.waiting === 5_000, 5_000, '5,000 left')
  await rejects(remote.lock('crowd').hold('k', { wait: 300 }, () => {}), Error, 'in_use') // queued, then timed out
  await b.check()
})

test('limits: leases plus waiting holds per connection (connectionLimit 3): the 3rd is taken, the 4th refused (LimitError), other connections unaffected', async t => {
  const own = procs(t)
  const server = await startServer(own, { connectionLimit: 3 })
  const b = await bystander(own, server)
  const owner = await connect(server.url, { token: TOKEN })
  const x = await connect(server.url, { token: TOKEN })
  t.after(() => Promise.all([owner.close(), x.close()]))
  const held = await owner.lock('conn').acquire('busy')
  const lease = await x.lock('conn').acquire('a') // 1: a lease
  const w1 = x.lock('conn').acquire('busy', { wait: '20s' }) // 2: waiting
  const w2 = x.semaphore('sem', { limit: 1 }).acquire('busy-too', { wait: '20s' }) // 3: a lease (a permit)
  await untilServer(server, s => entryOf(s, 'conn', 'busy')?.waiting === 1, 5_000, 'waiting')
  const permit = await w2
  await rejects(x.lock('conn').acquire('d', { wait: '1s' }), LimitError, 'limit') // 4: refused
  // Another connection has its own 3.
  const mine = await owner.lock('conn').acquire('e')
  await mine.release()
  // One fewer: room for one more.
  await lease.release()
  const again = await x.lock('conn').acquire('d', { wait: '1s' })
  await again.release()
  await held.release()
  await (await w1).release()
  await permit.release()
  await b.check()
})

test('limits: connections per server (maxConnections 2, the bystander one of them): one more is refused at once with a "limit" error frame and closed (4429); after one leaves there is room', async t => {
  const own = procs(t)
  const server = await startServer(own, { maxConnections: 2 })
  const b = await bystander(own, server)
  const second = await connect(server.url, { token: TOKEN })
  const raw = await rawClient(server.url)
  raw.send(encode.hello(1, TOKEN))
  const answer = await raw.answer(f => f.type === 'error')
  assert.equal(answer.code, 'limit')
  assert.equal((await raw.whenClosed).code, 4429)
  await second.close()
  await untilServer(server, s => s.connections === 1, 2_000, 'one connection')
  const third = await connect(server.url, { token: TOKEN })
  await third.close()
  await b.check()
})

test('limits: connect() to a server at maxConnections rejects LimitError (code "limit")', async t => {
  const own = procs(t)
  const server = await startServer(own, { maxConnections: 1 })
  const first = await connect(server.url, { token: TOKEN })
  t.after(() => first.close())
  await rejects(connect(server.url, { token: TOKEN }), LimitError, 'limit')
})

test('limits: a connect() refused at maxConnections leaves nothing behind: no client reconnects later to take the slot', async t => {
  // The caller got a rejection and holds no handle to close: nothing may go on in its name.
  const own = procs(t)
  const server = await startServer(own, { maxConnections: 1 })
  const first = await connect(server.url, { token: TOKEN })
  await assert.rejects(connect(server.url, { token: TOKEN }))
  await first.close()
  await untilServer(server, s => s.connections === 0, 2_000, 'no connection')
  await sleep(2_500) // longer than a few reconnect backoffs
  const s = await serverInspect(server)
  assert.equal(s.connections, 0, 'a client whose connect() was refused reconnected by itself and holds the only connection slot')
  const again = await connect(server.url, { token: TOKEN })
  await again.close()
})

test('security: garbage frames from many connections are refused (protocol error, connection closed), and the server keeps serving the others', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const b = await bystander(own, server)
  const hold = encode.hold(2, { name: 'g', key: 'k' })
  // [what, after a good hello?, bytes]
  const junk = [
    ['random bytes before hello', false, Buffer.from('8f2a9c0011ffee', 'hex')],
    ['an empty frame', false, Buffer.alloc(0)],
    ['version 2', true, Buffer.concat([Buffer.from([2]), encode.inspect(2).subarray(1)])],
    ['an unknown type', true, Buffer.from([1, 0x7f, 2, 0, 0, 0])],
    ['a server\'s frame', true, Buffer.from([1, 0x81, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0])],
    ['a truncated hold', true, hold.subarray(0, hold.length - 1)],
    ['a hold with trailing bytes', true, Buffer.concat([hold, Buffer.from([0])])],
    ['a bad boolean', true, Buffer.concat([hold.subarray(0, 6), Buffer.from([7]), hold.subarray(7)])],
    ['a string longer than its frame', true, Buffer.from([1, 1, 1, 0, 0, 0, 0xff, 0xff, 0x61])],
    ['bad UTF-8 in a name', true, Buffer.from([1, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0xff, 0xfe])],
  ]
  for (const [what, hello, bytes] of junk) {
    const raw = hello ? await authed(server.url) : await rawClient(server.url)
    raw.send(bytes)
    const closed = await raw.whenClosed
    const error = raw.frames.find(f => f.type === 'error')
    assert.ok(error, `${what}: an error frame`)
    // Before hello too: a frame that does not decode is a protocol error (it never reaches the engine).
    assert.equal(error.code, 'protocol', `${what}: ${JSON.stringify(error)}`)
    assert.equal(closed.code, 4400, `${what}: closed ${JSON.stringify(closed)}`)
  }
  // (A text message: the test below.)
  // A flood: 20 connections at once, each sending 50 random frames.
  const flood = await Promise.all(Array.from({ length: 20 }, () => rawClient(server.url)))
  for (const [i, raw] of flood.entries()) {
    if (i % 2) raw.send(encode.hello(1, TOKEN))
    for (let j = 0; j < 50; j++) raw.send(Buffer.from(Array.from({ length: 1 + ((i * 50 + j) % 40) }, (_, k) => (i * 131 + j * 31 + k * 7) & 0xff)))
  }
  await Promise.all(flood.map(raw => raw.whenClosed))
  await untilServer(server, s => s.connections === 1, 3_000, 'every bad connection closed')
  // Holds with made-up lease ids are refused, not honoured.
  const guess = await authed(server.url)
  guess.send(encode.renew(2, newId()))
  assert.deepEqual(await guess.answer(2).then(f => [f.type, f.code]), ['error', 'lost'])
  guess.send(encode.release(3, newId()))
  assert.equal((await guess.answer(3)).type, 'done')
  await b.check()
})

test('security: a text message is refused as a frame that does not decode (error protocol, closed 4400, as docs/protocol.md says), and the frames sent after it act on nothing: no lease is kept for a connection that closes', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const b = await bystander(own, server)
  const text = await authed(server.url)
  // In one go, as a confused client would: the holds after the text reach the server in the same read.
  text.ws.send('hello?')
  text.send(encode.hold(2, { name: 'text', key: 'a', ttl: 60_000 }))
  text.send(encode.hold(3, { name: 'text', key: 'b', ttl: 60_000 }))
  const closed = await text.whenClosed
  const error = text.frames.find(f => f.type === 'error')
  assert.equal(error?.code, 'protocol', `an error frame: ${JSON.stringify(text.frames)}`)
  assert.equal(error.id, 0)
  assert.equal(closed.code, 4400, `closed ${JSON.stringify(closed)}`)
  assert.ok(!text.frames.some(f => f.type === 'granted'), 'nothing is granted after the text')
  const s = await serverInspect(server)
  assert.deepEqual(
    s.entries.filter(e => e.name === 'text'),
    [],
    'no lease was granted, to be kept until its ttl, to the connection the text closed',
  )
  await b.check()
})
