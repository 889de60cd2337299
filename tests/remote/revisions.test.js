// #17, protocol revision 3 (docs/protocol.md # Revisions) between clients and servers of different
// revisions: a client that says the old hello (revision 2, as every client before) is answered as
// before and never sent a batch; a client that says a later revision than the server's gets the
// server's; batches are taken only from a client that said revision 3, decoded whole before any frame
// of them is acted on, and answered in order. (A client of revision 3 meeting a server of revision 2
// falls back to the old hello: wire-frames.test.js, against a server written by hand as the old code
// answers.)
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { TOKEN, procs, rawClient, startServer, serverInspect } from './helpers.js'
import { encode, newId } from './frames.js'

const hold = (id, key, extra = {}) => encode.hold(id, { name: 'rev', key, ttl: 30_000, ...extra })

/** A raw client of `server` that said `hello` (revision 3's by default) and was answered; closed when the test ends. */
async function welcomed(t, server, hello = encode.hello3(1, TOKEN)) {
  const raw = await rawClient(server.url)
  t.after(() => raw.close())
  raw.send(hello)
  await raw.answer(1)
  return raw
}

test('#17 revision 3: a client of revision 2 (the old hello) gets the old welcome and one frame a message, never a batch; a batch from it is refused (protocol, closed 4400)', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const raw = await rawClient(server.url)
  t.after(() => raw.close())
  raw.send(encode.hello(1, TOKEN))
  const welcome = await raw.answer(1)
  assert.deepEqual([welcome.type, welcome.revision], ['welcome', 2], 'the old welcome (type 0x81), which says no revision')
  // 50 holds sent at once are answered 50 messages, one frame each.
  for (let i = 0; i < 50; i++) raw.send(hold(10 + i, `old-${i}`, { wait: 0 }))
  await raw.answer(59)
  assert.equal(raw.messages, 51, 'one message per answer')
  assert.ok(raw.frames.slice(1).every(f => f.type === 'granted'))
  // What it never said it takes, it may not send either.
  raw.send(encode.batch([hold(100, 'old-batch', { wait: 0 })]))
  const refused = await raw.answer(f => f.type === 'error')
  assert.equal(refused.code, 'protocol')
  assert.match(refused.message, /batch from a client of revision 2/)
  await raw.whenClosed
  assert.equal(raw.closed.code, 4400)
  const inspected = await serverInspect(server)
  assert.ok(!inspected.entries.some(e => e.key === 'old-batch'), 'nothing of the refused batch was held')
})

test('#17 revision 3: a client saying a later revision than the server speaks is answered the server’s (8: pools inspected page by page); the new welcome says it', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const raw = await rawClient(server.url)
  t.after(() => raw.close())
  raw.send(encode.hello3(1, TOKEN, 9))
  const welcome = await raw.answer(1)
  assert.deepEqual([welcome.type, welcome.revision], ['welcome', 8])
  // And it is taken at its word: a batch is answered.
  raw.send(encode.batch([hold(2, 'later', { wait: 0 })]))
  assert.equal((await raw.answer(2)).type, 'granted')
})

test('#17 revision 3: a batch before hello is refused as any first frame but a good hello (permission, 4401); a hello inside a batch, or a bad frame anywhere in one, refuses all of it (protocol, 4400), nothing of it held', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const before = await rawClient(server.url)
  t.after(() => before.close())
  before.send(encode.batch([hold(1, 'before-hello', { wait: 0 })]))
  assert.equal((await before.answer(f => f.type === 'error')).code, 'permission')
  await before.whenClosed
  assert.equal(before.closed.code, 4401)

  for (const [what, inner] of [
    ['a hello in a batch', encode.hello(3, TOKEN)],
    ['a frame that does not decode', Buffer.from([1, 0x02, 3, 0, 0, 0, 9])],
  ]) {
    const raw = await welcomed(t, server)
    raw.send(encode.batch([hold(2, `refused-${what}`, { wait: 0 }), inner]))
    const refused = await raw.answer(f => f.type === 'error')
    assert.equal(refused.code, 'protocol', what)
    await raw.whenClosed
    assert.equal(raw.closed.code, 4400, what)
    assert.ok(!raw.frames.some(f => f.type === 'granted'), `${what}: the good frame before it was not acted on`)
    const inspected = await serverInspect(server)
    assert.ok(!inspected.entries.some(e => e.key.startsWith('refused-')), `${what}: nothing held`)
  }
})

test('#17 revision 3: the frames of a batch are acted on in order — a release and a hold of the same key in one batch: the hold finds the key free, with a larger fence', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const raw = await welcomed(t, server)
  raw.send(encode.batch([hold(2, 'k', { wait: 0 })]))
  const first = await raw.answer(2)
  assert.equal(first.type, 'granted')
  // The release carried in the same message as the next hold (id 0: no answer wanted).
  raw.send(encode.batch([encode.release(0, first.lease), hold(3, 'k', { wait: 0, request: newId() }), encode.inspect(4)]))
  const second = await raw.answer(3)
  assert.equal(second.type, 'granted', 'the key was free: the release before it went first')
  assert.ok(second.fence > first.fence)
  assert.equal((await raw.answer(4)).count, 1, 'and the inspection after both sees one holder')
})

test('revision 5: a ping is answered done, with its id, at once, while a hold of its connection waits in line; from a client that said the old hello or revision 3 too, since done is a type every client knows', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const holder = await rawClient(server.url)
  t.after(() => holder.close())
  holder.send(encode.hello3(1, TOKEN, 5))
  assert.deepEqual([(await holder.answer(1)).revision], [5], 'the welcome says revision 5')
  holder.send(hold(2, 'pinged', { wait: 0 }))
  assert.equal((await holder.answer(2)).type, 'granted')
  for (const hello of [encode.hello3(1, TOKEN, 5), encode.hello3(1, TOKEN, 3), encode.hello(1, TOKEN)]) {
    const raw = await welcomed(t, server, hello)
    raw.send(hold(2, 'pinged')) // waits in line behind the holder
    raw.send(encode.ping(3))
    const pong = await raw.answer(3)
    assert.deepEqual([pong.type, pong.id], ['done', 3], 'answered while the hold waits')
    assert.ok(!raw.frames.some(f => f.id === 2), 'the hold still waits: the ping ended nothing')
    assert.equal(raw.closed, undefined, 'and the connection stays open')
  }
})

test('LOCK-05: a request id asked again for another key is refused invalid, not answered the lease of the key it was asked for first', async t => {
  // Asked again, a hold with its request id answers its lease: under another key that told the client
  // it held the second key (with the first key's lease and fence), which a third was then granted.
  const own = procs(t)
  const server = await startServer(own)
  const raw = await welcomed(t, server)
  const request = newId()
  raw.send(hold(2, 'first', { wait: 0, request }))
  const first = await raw.answer(2)
  assert.equal(first.type, 'granted')
  raw.send(hold(3, 'second', { wait: 0, request }))
  const again = await raw.answer(3)
  assert.equal(again.type, 'error', JSON.stringify(again))
  assert.equal(again.code, 'invalid')
  assert.match(again.message, /another key/)
  raw.send(hold(4, 'second', { wait: 0 }))
  assert.equal((await raw.answer(4)).type, 'granted', 'the second key was free all along')
  raw.send(hold(5, 'first', { wait: 0, request }))
  const same = await raw.answer(5)
  assert.equal(same.type, 'granted')
  assert.equal(same.fence, first.fence, 'asked again for its own key: the same lease and fence')
})

test('protocol: the welcome says the per-connection limit serve() was given (connectionLimit), and 0 (the default, 10,000) when none was', async t => {
  const own = procs(t)
  for (const [options, said] of [[{ connectionLimit: 25 }, 25], [{}, 0]]) {
    const server = await startServer(own, options)
    for (const hello of [encode.hello(1, TOKEN), encode.hello3(1, TOKEN)]) {
      const raw = await rawClient(server.url)
      t.after(() => raw.close())
      raw.send(hello)
      const welcome = await raw.answer(1)
      assert.equal(welcome.type, 'welcome')
      assert.equal(welcome.connectionLimit, said, `the welcome of a server given ${JSON.stringify(options)}`)
    }
  }
})
