// No client can starve the others (issue #13): what one peer — with the token or without it — can
// make a server keep, each bound at its limit and one past it, with the server still serving a
// bystander (a process holding a lease throughout, as in security-limits.test.js).
//   item 2: connections that never say hello; item 3: a client that does not read; item 4: leases
//   kept alive by reconnecting; item 6: an inspection larger than a frame; item 7: the Unix socket's
//   mode; item 12: a second hello.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { statSync } from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { connect, LimitError } from 'holdfast'
import { TOKEN, procs, startServer, serverInspect, entryOf, untilServer, rawClient, stallingClient, closeDeafClient, tempDir, bystander, authed, sleep } from './helpers.js'
import { encode, newId } from './frames.js'

delete process.env.HOLDFAST_TOKEN

/** The server's own count of busy keys, connections past hello, and its RSS. */
async function counted(server) {
  const since = server.events.length
  server.send({ op: 'count' })
  return server.next({ ev: 'counted' }, 10_000, { since })
}

async function fill(server, count, keyBytes) {
  const since = server.events.length
  server.send({ op: 'fill', lock: 'filled', count, keyBytes })
  await server.next({ ev: 'filled' }, 60_000, { since })
}

/** `promise`, or a failure naming `what` after `ms` (a server that never closes must fail, not hang). */
function within(promise, ms, what) {
  let timer
  return Promise.race([promise, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`not within ${ms}ms: ${what}`)), ms)))]).finally(() => clearTimeout(timer))
}

const isLimit = e => {
  assert.ok(e instanceof LimitError, `${e?.constructor?.name}: ${e?.message}`)
  assert.equal(e.code, 'limit')
  return true
}

test('#13 item 2: 200 connections that never say hello keep no client with the token out: those past 64 close the oldest at once (limit, 4429)', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const b = await bystander(own, server)
  const silent = []
  for (let i = 0; i < 200; i++) silent.push(await rawClient(server.url))
  // The oldest 136 were closed, each at once when a newer one came, as `limit`; the newest 64 are open.
  await within(Promise.all(silent.slice(0, 136).map(raw => raw.whenClosed)), 10_000, 'the oldest 136 closed')
  for (const raw of silent.slice(0, 136)) {
    assert.equal(raw.closed.code, 4429)
    assert.deepEqual([raw.frames[0]?.id, raw.frames[0]?.type, raw.frames[0]?.code], [0, 'error', 'limit'])
  }
  assert.ok(silent.slice(136).every(raw => raw.closed === undefined), 'the newest 64 wait for their hello')
  // A client with the token gets in, and holds.
  const remote = await connect(server.url, { token: TOKEN })
  t.after(() => remote.close())
  assert.ok((await remote.lock('in').hold('k', lease => lease.fence)) > 0)
  assert.equal((await counted(server)).connections, 2, 'the bystander and the client: no silent connection counts as one')
  for (const raw of silent) raw.close()
  await b.check()
})

test('#13 item 2: a connection that says no hello within helloTimeout is closed; one that never even upgrades is cut too; past maxConnections one is refused at its hello (LimitError)', async t => {
  const own = procs(t)
  const server = await startServer(own, { helloTimeout: 800, maxConnections: 2 })
  const b = await bystander(own, server)
  const silent = await rawClient(server.url)
  const tcp = net.connect(Number(new URL(server.url).port), '127.0.0.1')
  tcp.on('error', () => {})
  const tcpClosed = new Promise(resolve => tcp.once('close', resolve))
  const closed = await within(silent.whenClosed, 10_000, 'the silent connection closed')
  const error = silent.frames.find(f => f.type === 'error')
  assert.equal(error?.code, 'closed')
  assert.match(error.message, /no hello within 800ms/)
  assert.equal(closed.code, 4400)
  // Never upgraded: cut at the same deadline by Node's HTTP server. (Bun cuts it by itself, after
  // about 12 s, whatever it is told: not waited for here.)
  if (!process.versions.bun) await within(tcpClosed, 10_000, 'the TCP connection closed')
  tcp.destroy()
  // The bystander is one of two; a second client is the other; a third is refused at once.
  const second = await connect(server.url, { token: TOKEN })
  t.after(() => second.close())
  await assert.rejects(connect(server.url, { token: TOKEN }), e => isLimit(e) && /2 connections is the most \(serve\(\) option maxConnections\)/.test(e.message))
  // Refused at its hello, not at accept: a hello may supersede its client's older connection (see
  // pools.test.js); until then it is one of those not past hello.
  const raw = await rawClient(server.url)
  raw.send(encode.hello(1, TOKEN))
  const refused = await within(raw.whenClosed, 10_000, 'the connection past maxConnections closed')
  assert.equal(refused.code, 4429)
  assert.deepEqual([raw.frames[0]?.id, raw.frames[0]?.code], [1, 'limit'])
  await b.check()
})

test('#13 item 2: a connection that dribbles its WebSocket upgrade (a byte of its request every 300 ms) is cut at helloTimeout, as a silent one is, not kept for the HTTP server\'s minute of headersTimeout', { skip: process.versions.bun ? 'Bun.serve cuts it by itself, after about 12 s, whatever it is told' : false }, async t => {
  const own = procs(t)
  // (A fraction of a ms too: Node's own timeouts take whole ms only.)
  const server = await startServer(own, { helloTimeout: 800.5 })
  const tcp = net.connect(Number(new URL(server.url).port), '127.0.0.1')
  tcp.on('error', () => {})
  const tcpClosed = new Promise(resolve => tcp.once('close', resolve))
  await new Promise(resolve => tcp.once('connect', resolve))
  tcp.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n`)
  // Each byte restarts an idle timeout: only a deadline from the connection's start cuts it.
  const dribble = setInterval(() => tcp.destroyed || tcp.write('X'), 300)
  t.after(() => {
    clearInterval(dribble)
    tcp.destroy()
  })
  await within(tcpClosed, 5_000, 'the dribbling connection closed')
})

test('#13 item 2: a helloTimeout longer than a runtime timer keeps (30 days, past 2^31-1 ms) is kept whole: a connection is not refused "no hello" a millisecond after it came, but at its deadline (test clock)', async t => {
  const own = procs(t)
  const server = await startServer(own, { manualClock: 0, helloTimeout: '30d' })
  const advance = async ms => {
    const since = server.events.length
    server.send({ op: 'advance', ms })
    await server.next({ ev: 'advanced' }, 5_000, { since })
  }
  const early = await rawClient(server.url)
  await advance(1_000)
  early.send(encode.hello(1, TOKEN))
  assert.equal((await early.answer(1)).type, 'welcome', `welcomed 1 s in: ${JSON.stringify(early.frames)}, closed ${JSON.stringify(early.closed)}`)
  const silent = await rawClient(server.url)
  await advance(30 * 24 * 3600 * 1000 - 1)
  const ping = await authed(server.url)
  ping.send(encode.ping(2))
  await ping.answer(2)
  assert.equal(silent.closed, undefined, 'not refused before its deadline')
  await advance(1)
  const error = await silent.answer(f => f.type === 'error')
  assert.equal(error.code, 'closed')
  assert.match(error.message, /no hello within 2592000000ms/)
  early.close()
  ping.close()
})

test('#13 item 12: a second hello, with the right token or a wrong one, is a protocol error: answered and closed (4400)', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const b = await bystander(own, server)
  for (const token of [TOKEN, 'wrong']) {
    const raw = await authed(server.url)
    raw.send(encode.hello(2, token))
    const answer = await raw.answer(2)
    assert.deepEqual([answer.type, answer.code], ['error', 'protocol'], JSON.stringify(answer))
    assert.match(answer.message, /second hello/)
    assert.equal((await raw.whenClosed).code, 4400)
    assert.ok(!raw.frames.some(f => f.type === 'welcome' && f.id === 2), 'never welcomed twice')
  }
  await b.check()
})

test('LOCK-05, #13 item 12: a connection refused past its hello (a second hello) ends at once as a dropped one, before its client answers the close: its hold in line steps aside, and the key released meanwhile is not granted to it, to be kept for nobody until its ttl', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const holder = await authed(server.url)
  holder.send(encode.hold(2, { name: 'refused', key: 'k', ttl: 60_000 }))
  const held = await holder.answer(2)
  assert.equal(held.type, 'granted')
  // Its client reads, but never answers the close (the server cuts it only after a grace).
  const deaf = await closeDeafClient(server.url, [encode.hello(1, TOKEN), encode.hold(2, { name: 'refused', key: 'k', ttl: 60_000 })])
  assert.equal((await deaf.answer(1)).type, 'welcome')
  await untilServer(server, s => entryOf(s, 'refused', 'k')?.waiting === 1, 5_000, 'the hold waits in line')
  deaf.send(encode.hello(3, TOKEN))
  assert.equal((await deaf.answer(3)).code, 'protocol')
  // Its connection is closing now: the key released here must not go to its hold.
  holder.send(encode.release(4, held.lease))
  assert.equal((await holder.answer(4)).type, 'done')
  const s = await serverInspect(server)
  // (Its hold stood aside, keeping its place for its ttl, as any dropped connection's: no holder.)
  assert.deepEqual(entryOf(s, 'refused', 'k')?.holders ?? [], [], `the key is free, not held for the refused connection: ${JSON.stringify(entryOf(s, 'refused', 'k'))}`)
  assert.ok(!deaf.frames.some(f => f.type === 'granted'), 'nothing granted after the refusal')
  holder.send(encode.hold(5, { name: 'refused', key: 'k', ttl: 60_000, wait: 0 }))
  assert.equal((await holder.answer(5)).type, 'granted', 'the key is free for the next')
  assert.equal(s.connections, 1, 'the refused connection no longer counts')
  deaf.close()
  holder.close()
})

test('#13 item 3: a client that does not read is cut once maxBuffered bytes wait for it, and the server serves the others', async t => {
  const own = procs(t)
  // 300 busy keys of 1,000 bytes: each inspect answer is ~310 KB; 300 of them unread are ~93 MB.
  const server = await startServer(own, { maxBuffered: 1024 * 1024 })
  const b = await bystander(own, server)
  await fill(server, 300, 1000)
  const before = await counted(server)
  const stall = await stallingClient(server.url, [encode.hello(1, TOKEN), ...Array.from({ length: 300 }, (_, i) => encode.inspect(2 + i))])
  // Cut by the server: its connection goes (said hello: it counted), and the others are served meanwhile.
  for (const end = Date.now() + 10_000; (await counted(server)).connections !== before.connections; ) {
    assert.ok(Date.now() < end, 'the stalled connection was not cut within 10 s')
    await sleep(20)
  }
  // Reading at last, the client finds its connection ended (with fewer bytes than it asked for).
  let read = 0
  stall.socket.on('data', chunk => (read += chunk.length))
  stall.socket.resume()
  await within(stall.closed, 10_000, 'the stalled connection ended')
  assert.ok(read < 300 * 300_000, `it was not sent all it asked for (${read} bytes)`)
  const remote = await connect(server.url, { token: TOKEN })
  t.after(() => remote.close())
  assert.equal((await remote.inspect()).length, 301)
  await b.check()
})

test('#13 item 4: leases and waiting holds in the whole store (maxHolds), dropped connections\' included, are bounded: one more is refused LimitError naming maxHolds; asked again, one is not', async t => {
  const own = procs(t)
  const server = await startServer(own, { maxHolds: 6, connectionLimit: 4 })
  const b = await bystander(own, server) // 1
  // A connection holds 4 (its own limit) with a ttl of an hour, and drops without goodbye.
  const first = await authed(server.url)
  const requests = []
  for (let i = 0; i < 4; i++) {
    requests.push(newId())
    first.send(encode.hold(2 + i, { name: 'pinned', key: `k${i}`, ttl: 3_600_000, request: requests[i] }))
    assert.equal((await first.answer(2 + i)).type, 'granted')
  }
  first.close()
  await untilServer(server, s => s.connections === 1, 5_000, 'the first connection gone')
  // Its leases still count: a new connection gets one more (6), and then none.
  const second = await authed(server.url)
  second.send(encode.hold(2, { name: 'pinned', key: 'k4', ttl: 3_600_000 }))
  const held = await second.answer(2)
  assert.equal(held.type, 'granted')
  second.send(encode.hold(3, { name: 'pinned', key: 'k5', ttl: 3_600_000 }))
  const refused = await second.answer(3)
  assert.deepEqual([refused.type, refused.code], ['error', 'limit'])
  assert.match(refused.message, /6 leases and waiting holds .*maxHolds/)
  const remote = await connect(server.url, { token: TOKEN })
  t.after(() => remote.close())
  await assert.rejects(remote.lock('pinned').acquire('k6'), e => isLimit(e) && /maxHolds/.test(e.message))
  // The dropped client comes back and asks again with a request id: its lease, not a new request.
  const back = await authed(server.url)
  back.send(encode.hold(2, { name: 'pinned', key: 'k0', ttl: 3_600_000, request: requests[0] }))
  const again = await back.answer(2)
  assert.equal(again.type, 'granted')
  // One let go: room for one.
  second.send(encode.release(4, held.lease))
  assert.equal((await second.answer(4)).type, 'done')
  const lease = await remote.lock('pinned').acquire('k6')
  await lease.release()
  await b.check()
})

test('#13 item 6: an inspection larger than a frame (17,000 busy keys of 1 KiB): connect().inspect() gets every key, page by page; a client of revision 1 is refused limit, naming the size', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const b = await bystander(own, server)
  await fill(server, 17_000, 1024)
  const remote = await connect(server.url, { token: TOKEN })
  t.after(() => remote.close())
  const entries = await remote.inspect()
  const filled = entries.filter(e => e.name === 'filled')
  assert.equal(filled.length, 17_000)
  assert.equal(new Set(filled.map(e => e.key)).size, 17_000, 'each key once')
  assert.ok(entries.some(e => e.name === 'bystander'))
  // What a client that knows no pages asks: refused with the size, and the connection kept.
  const raw = await authed(server.url)
  raw.send(encode.inspect(2))
  const answer = await raw.answer(2)
  assert.deepEqual([answer.type, answer.code], ['error', 'limit'])
  assert.match(answer.message, /the answer is 17\.\d MiB \(17001 busy keys\), more than the 4\.0 MiB/)
  raw.send(encode.inspectPage(3))
  const page = await raw.answer(3)
  assert.equal(page.type, 'inspectedPage')
  assert.ok(page.more && page.count > 0 && page.count < 17_001, JSON.stringify(page))
  // Filled to its budget, to the byte as the codec counts: within one entry of 4 MiB, never past it.
  assert.ok(page.bytes <= 4 * 1024 * 1024 && page.bytes > 4 * 1024 * 1024 - 1100, `a page of ${page.bytes} bytes`)
  assert.equal(raw.closed, undefined)
  await b.check()
})

test('#13 item 7: a Unix socket is made 0600 (only its owner may connect); socketMode sets another', async t => {
  const own = procs(t)
  const dir = tempDir(t)
  const plain = await startServer(own, { path: path.join(dir, 'a.sock') })
  assert.equal(statSync(path.join(dir, 'a.sock')).mode & 0o777, 0o600)
  const group = await startServer(own, { path: path.join(dir, 'b.sock'), socketMode: 0o660 })
  assert.equal(statSync(path.join(dir, 'b.sock')).mode & 0o777, 0o660)
  for (const server of [plain, group]) {
    const remote = await connect(server.url, { token: TOKEN })
    assert.ok((await remote.lock('unix').hold('k', lease => lease.fence)) > 0)
    await remote.close()
  }
})
