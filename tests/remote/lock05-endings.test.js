// LOCK-05 and LOCK-06 over a connection: a client that closes cleanly (close(), which says goodbye)
// releases its leases at once; a connection that just ends (the process killed) takes its waiting
// holds out of the line at once — nobody waits for them (they keep their place for their ttl only
// for a client that reconnects, see lock05-reconnect) — while its leases live until their ttl.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { RUNTIMES, procs, startServer, startAgent, ask, untilServer, serverInspect, entryOf, sleep } from './helpers.js'

test('LOCK-05/LOCK-06: close() says goodbye: its leases are released at once (the next in line is served), its waiting holds leave the line', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const leaving = await startAgent(own, 'leaving', RUNTIMES.node20, server.url)
  const next = await startAgent(own, 'next', RUNTIMES.bun, server.url)
  const owner = await startAgent(own, 'owner', RUNTIMES.node24, server.url)
  await ask(leaving, { id: 'a', lock: 'jobs', key: 'a', ttl: 30_000 })
  const held = await leaving.next({ ev: 'granted', id: 'a' })
  await ask(owner, { id: 'b', lock: 'jobs', key: 'b', ttl: 30_000 })
  await owner.next({ ev: 'granted', id: 'b' })
  await ask(leaving, { id: 'b', lock: 'jobs', key: 'b', ttl: 30_000, wait: 60_000 })
  await ask(next, { id: 'a', lock: 'jobs', key: 'a', ttl: 30_000, wait: 60_000 })
  await untilServer(server, s => entryOf(s, 'jobs', 'a')?.waiting === 1 && entryOf(s, 'jobs', 'b')?.waiting === 1, 5_000, 'both waiting')

  const closedAt = Date.now()
  const closed = await leaving.request({ op: 'close' }, { ev: 'closed' })
  const granted = await next.next({ ev: 'granted', id: 'a' }, 5_000)
  assert.ok(granted.t - closedAt < 1_000, `served ${granted.t - closedAt}ms after close(), not at once (the ttl was 30 s)`)
  assert.ok(granted.fence > held.fence)
  const s = await serverInspect(server)
  assert.equal(entryOf(s, 'jobs', 'b')?.waiting, 0, 'the waiting hold left the line')
  assert.equal(s.connections, 2)
  // In the closing client: the lease ended with a ClosedError, the waiting hold rejected ClosedError.
  const lost = await leaving.next({ ev: 'lost', id: 'a' })
  assert.equal(lost.error.code, 'closed')
  const waited = await leaving.next({ ev: 'done', id: 'b' })
  assert.equal(waited.ok, false)
  assert.equal(waited.error.code, 'closed')
  leaving.send({ op: 'release', id: 'a' })
  const done = await leaving.next({ ev: 'done', id: 'a' })
  assert.equal(done.error.code, 'closed')
  assert.ok(closed.t - closedAt < 2_000)
})

test('LOCK-05: a connection that ends without goodbye (kill -9) takes its waiting holds out of the line at once (the next is served past them), while its leases live until their ttl', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const dying = await startAgent(own, 'dying', RUNTIMES.bun, server.url)
  const owner = await startAgent(own, 'owner', RUNTIMES.node20, server.url)
  const behind = await startAgent(own, 'behind', RUNTIMES.node20, server.url)
  await ask(owner, { id: 'w', lock: 'jobs', key: 'w', ttl: 10_000 })
  await owner.next({ ev: 'granted', id: 'w' })
  await ask(dying, { id: 'l', lock: 'jobs', key: 'l', ttl: 2000 })
  const held = await dying.next({ ev: 'granted', id: 'l' })
  await ask(dying, { id: 'w', lock: 'jobs', key: 'w', ttl: 2000, wait: 60_000 })
  await untilServer(server, s => entryOf(s, 'jobs', 'w')?.waiting === 1, 5_000, 'waiting')
  await ask(behind, { id: 'w', lock: 'jobs', key: 'w', ttl: 2000, wait: 60_000 })
  await untilServer(server, s => entryOf(s, 'jobs', 'w')?.waiting === 2, 5_000, 'two waiting')

  dying.kill('SIGKILL')
  const killedAt = Date.now()
  await dying.exited
  const cancelled = await untilServer(server, s => entryOf(s, 'jobs', 'w')?.waiting === 1 && s.connections === 2, 1_000, 'its waiting hold gone')
  assert.ok(cancelled.t - killedAt < 500, `the waiting hold left ${cancelled.t - killedAt}ms after the connection ended`)
  // Its lease still holds: the last renewal was at most ~ttl/3 before the kill, so it lasts past 1.2 s.
  await sleep(Math.max(0, killedAt + 1_200 - Date.now()))
  assert.deepEqual(entryOf(await serverInspect(server), 'jobs', 'l')?.holders.map(h => h.fence), [held.fence], 'the lease lives on')
  const freed = await untilServer(server, s => !entryOf(s, 'jobs', 'l'), 3_000, 'the lease ended at its ttl')
  assert.ok(freed.t - killedAt <= 2_600, `the lease ended ${freed.t - killedAt}ms after the kill (ttl 2 s)`)
  // The one behind is next: the dead connection's waiting hold is passed over, not waited for.
  const releasedAt = Date.now()
  owner.send({ op: 'release', id: 'w' })
  const served = await behind.next({ ev: 'granted', id: 'w' }, 3_000)
  assert.ok(served.t - releasedAt < 1_000, `served ${served.t - releasedAt}ms after the release`)
})

test('LOCK-01/LOCK-05: a store served twice numbers its connections across both servers: a goodbye on one ends its own client\'s leases only, never a lease of the other server\'s client', async t => {
  const { openStore, memoryStorage, connect } = await import('holdfast')
  const { TOKEN } = await import('./helpers.js')
  const store = await openStore({ storage: memoryStorage() })
  t.after(() => store.close())
  const first = await store.serve({ port: 0, token: TOKEN })
  const second = await store.serve({ port: 0, token: TOKEN })
  // Each the first connection of its server.
  const leaving = await connect(first.url, { token: TOKEN, reconnect: false })
  const holder = await connect(second.url, { token: TOKEN, reconnect: false })
  t.after(() => holder.close())
  let entered
  const inside = new Promise(resolve => (entered = resolve))
  let release
  const held = holder.lock('jobs', { ttl: 30_000 }).hold('b', () => (entered(), new Promise(resolve => (release = resolve))))
  await inside
  await leaving.lock('jobs', { ttl: 30_000 }).hold('a', () => {})
  // Goodbye: the engine ends the leases of the leaving client's connection, and only its.
  await leaving.close()
  const b = (await store.inspect()).find(e => e.name === 'jobs' && e.key === 'b')
  // Before the fix both were connection 1: the holder's lease ended with the goodbye, its key free
  // while its fn still ran.
  assert.equal(b?.holders.length, 1, 'jobs/b is still held by the client of the other server')
  release()
  await held
})
