// LOCK-05 when connections drop: the client reconnects by itself and asks again with the same request
// ids, so that a lease held across a drop shorter than its ttl is kept (same fence) and a waiting hold
// keeps its place; and when the server itself is killed and restarted on its directory, clients lose
// what they held, reconnect, and every new fence is larger than every fence before.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { RUNTIMES, procs, tempDir, startServer, startAgent, startProxy, ask, untilServer, serverInspect, entryOf, portOf, sleep } from './helpers.js'

test('LOCK-05: a connection dropped for real (its proxy killed with kill -9) and re-established inside the ttl keeps its lease and fence', async t => {
  const own = procs(t)
  const server = await startServer(own)
  let proxy = await startProxy(own, portOf(server.url))
  const port = proxy.port
  const holder = await startAgent(own, 'holder', RUNTIMES.node20, `ws://127.0.0.1:${port}`)
  const other = await startAgent(own, 'other', RUNTIMES.node24, server.url)
  await ask(holder, { id: 'h', lock: 'jobs', key: 'held', ttl: 3000 })
  const held = await holder.next({ ev: 'granted', id: 'h' })
  await ask(other, { id: 'h', lock: 'jobs', key: 'held', ttl: 3000, wait: 30_000 })
  await untilServer(server, s => entryOf(s, 'jobs', 'held')?.waiting === 1 && s.connections === 2, 5_000, 'one waiting')

  proxy.kill('SIGKILL')
  const droppedAt = Date.now()
  await proxy.exited
  await untilServer(server, s => s.connections === 1, 3_000, 'the dropped connection ended on the server')
  await sleep(300)
  proxy = await startProxy(own, portOf(server.url), { listen: port })
  // The client finds the proxy again by itself.
  await untilServer(server, s => s.connections === 2, 5_000, 'the client reconnected')
  // Past the ttl counted from the drop: the lease was asked for again and renewed, not lost.
  await sleep(Math.max(0, droppedAt + 3_500 - Date.now()))
  const s = await serverInspect(server)
  assert.deepEqual(entryOf(s, 'jobs', 'held')?.holders.map(h => h.fence), [held.fence], 'the same lease holds')
  assert.equal(entryOf(s, 'jobs', 'held')?.waiting, 1)
  assert.ok(!holder.saw({ ev: 'lost' }), 'the lease was not lost')
  assert.ok(!other.saw({ ev: 'granted' }), 'nobody else was granted the key')

  holder.send({ op: 'release', id: 'h' })
  assert.deepEqual(await holder.next({ ev: 'done', id: 'h' }).then(e => [e.ok, e.value]), [true, held.fence])
  const next = await other.next({ ev: 'granted', id: 'h' }, 3_000)
  assert.ok(next.fence > held.fence)
  assert.ok(!holder.saw({ ev: 'unhandled' }))
})

test('LOCK-05: a waiting hold whose connection drops on the client side and is re-established keeps its place in line (and a lease its fence); the old connection, still open on the server, ends at the new one\'s hello (its party\'s), not when the server sees it close', async t => {
  const own = procs(t)
  const server = await startServer(own)
  // SIGUSR1 makes the proxy reset the client side of every connection at once, and close the
  // server side only 1.5 s later: the client sees its connection end before the server does.
  const proxy = await startProxy(own, portOf(server.url), { holdOpen: 1500 })
  const first = await startAgent(own, 'first', RUNTIMES.bun, `ws://127.0.0.1:${proxy.port}`)
  const owner = await startAgent(own, 'owner', RUNTIMES.node20, server.url)
  const second = await startAgent(own, 'second', RUNTIMES.node24, server.url)
  await ask(owner, { id: 'q', lock: 'jobs', key: 'q', ttl: 3000 })
  const ownerLease = await owner.next({ ev: 'granted', id: 'q' })
  await ask(first, { id: 'lease', lock: 'jobs', key: 'mine', ttl: 3000 })
  const mine = await first.next({ ev: 'granted', id: 'lease' })
  await ask(first, { id: 'q', lock: 'jobs', key: 'q', ttl: 3000, wait: 30_000 })
  await untilServer(server, s => entryOf(s, 'jobs', 'q')?.waiting === 1, 5_000, 'first in line')
  await ask(second, { id: 'q', lock: 'jobs', key: 'q', ttl: 3000, wait: 30_000 })
  await untilServer(server, s => entryOf(s, 'jobs', 'q')?.waiting === 2, 5_000, 'second in line')

  proxy.kill('SIGUSR1')
  await proxy.next({ ev: 'half-dropped' })
  // The client reconnects (a new connection through the proxy) and asks again for both holds: an
  // inspection through it is answered once it said hello, which superseded the old connection (its
  // client's, by the party it names), still open on the server — ended there as a drop, at once.
  first.send({ op: 'inspect' })
  await first.next({ ev: 'inspected' }, 5_000)
  assert.equal((await serverInspect(server)).connections, 3, 'the old connection ended at the new hello')
  await sleep(200)
  const s = await serverInspect(server)
  assert.equal(entryOf(s, 'jobs', 'q')?.waiting, 2, 'both still waiting')
  assert.deepEqual(entryOf(s, 'jobs', 'mine')?.holders.map(h => h.fence), [mine.fence])

  owner.send({ op: 'release', id: 'q' })
  const got = await first.next({ ev: 'granted', id: 'q' }, 5_000)
  assert.ok(got.fence > ownerLease.fence)
  await sleep(200)
  assert.ok(!second.saw({ ev: 'granted', id: 'q' }), 'the one that came later was not served first')
  first.send({ op: 'release', id: 'q' })
  const then = await second.next({ ev: 'granted', id: 'q' }, 5_000)
  assert.ok(then.fence > got.fence)
  assert.ok(!first.saw({ ev: 'lost' }), 'no lease was lost')
  first.send({ op: 'release', id: 'lease' })
  assert.equal((await first.next({ ev: 'done', id: 'lease' })).value, mine.fence)
})

test('LOCK-05, limits: a client whose connection went half-open while the server is at maxConnections gets back in at once: its new hello supersedes the old connection and takes its slot, and its lease outlives its ttl (renewed there) and is released', async t => {
  // The new connection was refused `limit` at accept while the old one, still open on the server,
  // held the slot: the client was kept out until the silent-client sweep dropped it (30-40 s), and a
  // lease shorter than that was lost.
  const own = procs(t)
  const server = await startServer(own, { maxConnections: 2 })
  // The server side stays open well past the lease's ttl: only the new hello can end it in time.
  const proxy = await startProxy(own, portOf(server.url), { holdOpen: 60_000 })
  const holder = await startAgent(own, 'holder', RUNTIMES.node24, `ws://127.0.0.1:${proxy.port}`)
  const other = await startAgent(own, 'other', RUNTIMES.bun, server.url)
  await ask(holder, { id: 'h', lock: 'jobs', key: 'held', ttl: 3000 })
  const held = await holder.next({ ev: 'granted', id: 'h' })
  await untilServer(server, s => s.connections === 2, 5_000, 'the server full')

  proxy.kill('SIGUSR1')
  await proxy.next({ ev: 'half-dropped' })
  const droppedAt = Date.now()
  // Answered once the client is back: its hello was welcomed, past the limit only for the old slot.
  holder.send({ op: 'inspect' })
  await holder.next({ ev: 'inspected' }, 5_000)
  assert.equal((await serverInspect(server)).connections, 2, 'the old connection ended at the new hello')
  // Past the ttl counted from the drop: the lease was asked for again and renewed, not lost.
  await sleep(Math.max(0, droppedAt + 3_500 - Date.now()))
  const s = await serverInspect(server)
  assert.deepEqual(entryOf(s, 'jobs', 'held')?.holders.map(h => h.fence), [held.fence])
  assert.equal(s.connections, 2)
  await ask(other, { id: 'h', lock: 'jobs', key: 'held', ttl: 3000, wait: 0 })
  const busy = await other.next({ ev: 'done', id: 'h' })
  assert.deepEqual([busy.ok, busy.error.code], [false, 'in_use'], "still the holder's")
  holder.send({ op: 'release', id: 'h' })
  assert.equal((await holder.next({ ev: 'done', id: 'h' })).value, held.fence)
  assert.ok(!holder.saw({ ev: 'lost' }), 'no lease was lost')
})

test('LOCK-05: a grant sent while the client\'s connection is down is not lost: asked again, the hold answers that same lease and fence, once', async t => {
  const own = procs(t)
  const server = await startServer(own)
  // The client side is reset, and the client cannot reconnect for 800 ms; the server side stays
  // open 1.5 s: the grant goes out on a connection whose client is gone.
  const proxy = await startProxy(own, portOf(server.url), { holdOpen: 1500, pauseAccept: 800 })
  const waiter = await startAgent(own, 'waiter', RUNTIMES.node20, `ws://127.0.0.1:${proxy.port}`)
  const owner = await startAgent(own, 'owner', RUNTIMES.bun, server.url)
  const later = await startAgent(own, 'later', RUNTIMES.node24, server.url)
  await ask(owner, { id: 'q', lock: 'jobs', key: 'q', ttl: 3000 })
  const before = await owner.next({ ev: 'granted', id: 'q' })
  await ask(waiter, { id: 'q', lock: 'jobs', key: 'q', ttl: 3000, wait: 30_000 })
  await untilServer(server, s => entryOf(s, 'jobs', 'q')?.waiting === 1, 5_000, 'waiting')
  await ask(later, { id: 'q', lock: 'jobs', key: 'q', ttl: 3000, wait: 30_000 })
  await untilServer(server, s => entryOf(s, 'jobs', 'q')?.waiting === 2, 5_000, 'two waiting')

  proxy.kill('SIGUSR1')
  await proxy.next({ ev: 'half-dropped' })
  owner.send({ op: 'release', id: 'q' })
  const handed = await untilServer(server, s => entryOf(s, 'jobs', 'q')?.holders.length === 1 && entryOf(s, 'jobs', 'q').holders[0].fence > before.fence, 2_000, 'handed on')
  const fence = entryOf(handed, 'jobs', 'q').holders[0].fence
  assert.ok(!waiter.saw({ ev: 'granted', id: 'q' }), 'the grant went to a connection the client had lost')
  const got = await waiter.next({ ev: 'granted', id: 'q' }, 5_000)
  assert.equal(got.fence, fence, 'the same lease, not a second grant')
  await sleep(300)
  assert.ok(!later.saw({ ev: 'granted', id: 'q' }))
  waiter.send({ op: 'release', id: 'q' })
  const next = await later.next({ ev: 'granted', id: 'q' }, 5_000)
  assert.ok(next.fence > fence)
  assert.equal(waiter.events.filter(e => e.ev === 'granted').length, 1)
})

test('LOCK-05: a waiting hold whose connection ends for real (proxy killed) is passed over at once, and back in its place, answered once, when the client reconnects within its ttl', async t => {
  // A connection that ends takes its waiting holds out of the line's way at once (nobody waits for
  // them, see lock05-endings), but each keeps its place for its ttl: asked again in time with its
  // request id, it is back where it was — ahead of those who came after it.
  const own = procs(t)
  const server = await startServer(own)
  let proxy = await startProxy(own, portOf(server.url))
  const port = proxy.port
  const waiter = await startAgent(own, 'waiter', RUNTIMES.node20, `ws://127.0.0.1:${port}`)
  const owner = await startAgent(own, 'owner', RUNTIMES.bun, server.url)
  const later = await startAgent(own, 'later', RUNTIMES.node24, server.url)
  await ask(owner, { id: 'q', lock: 'jobs', key: 'q', ttl: 3000 })
  await owner.next({ ev: 'granted', id: 'q' })
  await ask(waiter, { id: 'q', lock: 'jobs', key: 'q', ttl: 3000, wait: 30_000 })
  await untilServer(server, s => entryOf(s, 'jobs', 'q')?.waiting === 1, 5_000, 'one waiting')
  await ask(later, { id: 'q', lock: 'jobs', key: 'q', ttl: 3000, wait: 30_000 })
  await untilServer(server, s => entryOf(s, 'jobs', 'q')?.waiting === 2, 5_000, 'two waiting')
  proxy.kill('SIGKILL')
  await proxy.exited
  await untilServer(server, s => entryOf(s, 'jobs', 'q')?.waiting === 1, 1_000, 'the dropped waiting hold counted out at once')
  proxy = await startProxy(own, portOf(server.url), { listen: port })
  await untilServer(server, s => entryOf(s, 'jobs', 'q')?.waiting === 2, 5_000, 'asked again after reconnecting')
  owner.send({ op: 'release', id: 'q' })
  await waiter.next({ ev: 'granted', id: 'q' }, 5_000)
  await sleep(200)
  assert.ok(!later.saw({ ev: 'granted', id: 'q' }), 'the one that came later was served first')
  waiter.send({ op: 'release', id: 'q' })
  await waiter.next({ ev: 'done', id: 'q', ok: true })
  await later.next({ ev: 'granted', id: 'q' }, 5_000)
  assert.equal(waiter.events.filter(e => e.ev === 'granted').length, 1)
})

test('LOCK-05/LOCK-02: the server killed with kill -9 and restarted on its directory: holders lose their leases, clients reconnect, and every new fence is larger than every fence before', async t => {
  const own = procs(t)
  const dir = tempDir(t)
  let server = await startServer(own, { dir })
  const port = portOf(server.url)
  const a = await startAgent(own, 'a', RUNTIMES.node20, server.url)
  const b = await startAgent(own, 'b', RUNTIMES.bun, server.url)
  const c = await startAgent(own, 'c', RUNTIMES.node26, server.url)
  const before = []
  for (let i = 0; i < 5; i++) {
    await ask(c, { id: `warm-${i}`, lock: 'jobs', key: `warm-${i}`, ttl: 2000 })
    before.push((await c.next({ ev: 'granted', id: `warm-${i}` })).fence)
    c.send({ op: 'release', id: `warm-${i}` })
  }
  await ask(a, { id: 'k1', lock: 'jobs', key: 'k1', ttl: 2000 })
  before.push((await a.next({ ev: 'granted', id: 'k1' })).fence)
  await ask(b, { id: 'k2', lock: 'jobs', key: 'k2', ttl: 2000 })
  before.push((await b.next({ ev: 'granted', id: 'k2' })).fence)
  await ask(c, { id: 'k1', lock: 'jobs', key: 'k1', ttl: 2000, wait: 30_000 })
  await untilServer(server, s => entryOf(s, 'jobs', 'k1')?.waiting === 1, 5_000, 'one waiting')

  server.kill('SIGKILL')
  await server.exited
  await sleep(300)
  server = await startServer(own, { dir, port })
  assert.equal(server.url, `ws://127.0.0.1:${port}`)

  // Both holders are told their leases are gone (lost, or closed), whatever the new server answers.
  const lostA = await a.next({ ev: 'lost', id: 'k1' }, 5_000)
  const lostB = await b.next({ ev: 'lost', id: 'k2' }, 5_000)
  assert.ok(['lost', 'closed'].includes(lostA.error.code), JSON.stringify(lostA))
  assert.ok(['lost', 'closed'].includes(lostB.error.code), JSON.stringify(lostB))
  a.send({ op: 'release', id: 'k1' })
  b.send({ op: 'release', id: 'k2' })
  assert.equal((await a.next({ ev: 'done', id: 'k1' })).ok, false)
  assert.equal((await b.next({ ev: 'done', id: 'k2' })).ok, false)

  // The waiter reconnected and asked again: it is served by the new server.
  const after = [(await c.next({ ev: 'granted', id: 'k1' }, 10_000)).fence]
  c.send({ op: 'release', id: 'k1' })
  // New holds from every client, on old keys and new.
  for (const [agent, key] of [[a, 'k1'], [b, 'k2'], [c, 'k3']]) {
    await ask(agent, { id: `after-${key}`, lock: 'jobs', key, ttl: 2000, wait: 10_000 })
    after.push((await agent.next({ ev: 'granted', id: `after-${key}` }, 10_000)).fence)
    agent.send({ op: 'release', id: `after-${key}` })
  }
  const most = Math.max(...before)
  for (const f of after) assert.ok(f > most, `fence ${f} after the restart is not larger than ${most} before it`)
  for (const x of [a, b, c]) assert.ok(!x.saw({ ev: 'unhandled' }), `${x.name}: an unhandled error`)
})

test('LOCK-05: after a server restart, a hold asked again is not answered with a new lease taken for the old one: the old lease is lost at once and no lease nobody knows blocks the key', async t => {
  // The restarted server knows nothing of the request, so asking again with the same request id gets
  // a new grant (a new lease id, a new fence). The client must not take it for the lease it held
  // (fence and lease id differ): that lease is gone with the old server. Taken for it, the holder
  // goes on with its old fence until its next renewal (with the old lease id) is refused, and the new
  // lease, whose id no client keeps, holds the key for a whole ttl after its holder was told "lost".
  const own = procs(t)
  const dir = tempDir(t)
  let server = await startServer(own, { dir })
  const port = portOf(server.url)
  const a = await startAgent(own, 'a', RUNTIMES.node20, server.url)
  const c = await startAgent(own, 'c', RUNTIMES.node20, server.url)
  await ask(a, { id: 'k', lock: 'jobs', key: 'k', ttl: 6000 })
  const old = await a.next({ ev: 'granted', id: 'k' })
  server.kill('SIGKILL')
  await server.exited
  server = await startServer(own, { dir, port })
  const back = await untilServer(server, s => s.connections === 2, 5_000, 'both clients reconnected')
  const problems = []
  const lost = await a.next({ ev: 'lost', id: 'k' }, 8_000)
  if (lost.t - back.t > 1_000) problems.push(`the holder was told its lease is lost ${lost.t - back.t}ms after it reconnected (it went on with fence ${old.fence} meanwhile)`)
  a.send({ op: 'release', id: 'k' })
  const done = await a.next({ ev: 'done', id: 'k' })
  assert.equal(done.ok, false)
  await ask(c, { id: 'k', lock: 'jobs', key: 'k', ttl: 6000, wait: 20_000 })
  const s = await serverInspect(server)
  const granted = await c.next({ ev: 'granted', id: 'k' }, 10_000)
  if (granted.t - done.t > 1_000) {
    problems.push(`the key stayed held ${granted.t - done.t}ms after its only holder was told "lost" and let go, by a lease no client knows: ${JSON.stringify(entryOf(s, 'jobs', 'k'))}`)
  }
  assert.deepEqual(problems, [])
})
