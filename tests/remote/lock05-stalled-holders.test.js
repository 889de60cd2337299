// LOCK-05 with holders that die or stall: a lease over a connection lasts its ttl from its last
// renewal, then its key goes to the next in line (or back to free, if nobody asks), with a larger
// fence; a holder that comes back late has lost its lease, and the fence lets SQLite refuse its write.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { RUNTIMES, TOKEN, procs, tempDir, startServer, startAgent, startProxy, ask, untilServer, serverInspect, entryOf, rawClient, sleep } from './helpers.js'
import { decodeServer, encode } from './frames.js'

test('LOCK-05: a holder killed with kill -9 mid-hold loses its key after its ttl (1 s), to the next in line or to nobody, and the next fence is larger', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const holder = await startAgent(own, 'holder', RUNTIMES.node20, server.url)
  const next = await startAgent(own, 'next', RUNTIMES.bun, server.url)
  await ask(holder, { id: 'k', lock: 'jobs', key: 'k', ttl: 1000 })
  await ask(holder, { id: 'solo', lock: 'jobs', key: 'solo', ttl: 1000 })
  const held = await holder.next({ ev: 'granted', id: 'k' })
  const solo = await holder.next({ ev: 'granted', id: 'solo' })
  await ask(next, { id: 'k', lock: 'jobs', key: 'k', ttl: 1000, wait: 20_000 })
  await untilServer(server, s => entryOf(s, 'jobs', 'k')?.waiting === 1, 5_000, 'one waiting')
  // Renewal keeps a live holder's lease well past its ttl.
  await sleep(1_500)
  assert.ok(!next.saw({ ev: 'granted' }), 'a renewed lease is not taken away')
  assert.ok(!holder.saw({ ev: 'lost' }))

  holder.kill('SIGKILL')
  const killedAt = Date.now()
  await holder.exited
  // The connection ended, but a dropped connection is not a release: the lease lives on for now.
  await sleep(250)
  const after = await serverInspect(server)
  assert.deepEqual(entryOf(after, 'jobs', 'k')?.holders.map(h => h.fence), [held.fence], 'still held right after the kill')
  assert.equal(entryOf(after, 'jobs', 'k')?.waiting, 1)

  const granted = await next.next({ ev: 'granted', id: 'k' }, 5_000)
  const took = granted.t - killedAt
  // The last renewal was at most ttl/3 (plus a little) before the kill; the lease ends 1 s after it.
  assert.ok(took >= 1000 - 400, `the key moved ${took}ms after the kill: before the ttl`)
  assert.ok(took <= 2_000, `the key moved ${took}ms after the kill: long after the ttl`)
  assert.ok(granted.fence > held.fence && granted.fence > solo.fence, `fence ${granted.fence} after ${held.fence}`)

  // Nobody asked for "solo": it went back to free at its ttl all the same.
  const idle = await untilServer(server, s => !entryOf(s, 'jobs', 'solo'), 3_000, '"solo" free')
  assert.ok(idle.t - killedAt <= 2_000, `"solo" was freed ${idle.t - killedAt}ms after the kill`)
  next.send({ op: 'release', id: 'k' })
  await next.next({ ev: 'done', id: 'k', ok: true })
})

test('LOCK-05: a holder paused with SIGSTOP past its ttl finds its lease lost after SIGCONT (signal aborted, renewal refused), and SQLite refuses its late write by the fence while the new holder\'s stands', async t => {
  const own = procs(t)
  const dir = tempDir(t)
  const db = path.join(dir, 'items.db')
  const server = await startServer(own)
  // The paused holder reaches the server through a proxy that shows what the server answers it.
  const proxy = await startProxy(own, Number(new URL(server.url).port), { frames: true })
  const stalled = await startAgent(own, 'stalled', RUNTIMES.node24, `ws://127.0.0.1:${proxy.port}`)
  const fresh = await startAgent(own, 'fresh', RUNTIMES.bun, server.url)
  await fresh.request({ op: 'sql', db, run: [['CREATE TABLE items (id TEXT PRIMARY KEY, value TEXT, fence INTEGER NOT NULL)'], ["INSERT INTO items VALUES ('summary', 'none', 0)"]] }, { ev: 'sql' })

  await ask(stalled, { id: 'w', lock: 'summaries', key: 'chat-1', ttl: 1000 })
  const first = await stalled.next({ ev: 'granted', id: 'w' })
  assert.equal((await stalled.request({ op: 'write', id: 'w', db, row: 'summary', value: 'early' }, { ev: 'wrote', id: 'w' })).changes, 1)
  await ask(fresh, { id: 'w', lock: 'summaries', key: 'chat-1', ttl: 1000, wait: 20_000 })
  await untilServer(server, s => entryOf(s, 'summaries', 'chat-1')?.waiting === 1, 5_000, 'one waiting')

  // Pause it just after a renewal was answered, so that its next renewal is due while it sleeps.
  const seen = proxy.events.length
  const renewed = await proxy.next(e => e.ev === 'frame' && decodeServer(Buffer.from(e.hex, 'hex')).type === 'renewed', 3_000, { since: seen })
  stalled.kill('SIGSTOP')
  /** The server's frames to the stalled client after the renewal answered just before the pause. */
  const frames = () =>
    proxy.events
      .slice(proxy.events.indexOf(renewed) + 1)
      .filter(e => e.ev === 'frame')
      .map(e => ({ ...decodeServer(Buffer.from(e.hex, 'hex')), t: e.t }))
  const stoppedAt = Date.now()

  const second = await fresh.next({ ev: 'granted', id: 'w' }, 5_000)
  assert.ok(second.t - stoppedAt <= 2_000, 'the key moved on within the ttl of the stalled lease')
  assert.ok(second.fence > first.fence)
  const good = await fresh.request({ op: 'write', id: 'w', db, row: 'summary', value: 'fresh' }, { ev: 'wrote', id: 'w' })
  assert.equal(good.changes, 1)
  await sleep(500)

  stalled.kill('SIGCONT')
  const lost = await stalled.next({ ev: 'lost', id: 'w' }, 5_000)
  assert.equal(lost.error.code, 'lost')
  assert.equal(lost.error.name, 'LostError')
  // It writes late, as a stalled program would: the fence guard refuses it.
  const late = await stalled.request({ op: 'write', id: 'w', db, row: 'summary', value: 'late' }, { ev: 'wrote', id: 'w' })
  assert.equal(late.aborted, true, 'lease.signal aborted')
  assert.equal(late.changes, 0, 'the late write was refused by the fence')
  const { rows } = await fresh.request({ op: 'sql', db, query: 'SELECT value, fence FROM items' }, { ev: 'sql' })
  assert.deepEqual(rows, [{ value: 'fresh', fence: second.fence }])

  // What the server told the stalled client (seen on the wire, through the proxy): its lease ended
  // while it slept, and nothing of it was renewed after that. Whether the client, on waking, reads
  // that "lost" first or first sends the renewal that was due (answered "lost") depends on where the
  // pause caught its event loop; either way the renewal is refused.
  const told = frames()
  assert.ok(told.some(f => (f.type === 'lost' || f.type === 'error') && f.code === 'lost'), `told "lost": ${JSON.stringify(told)}`)
  assert.ok(!told.some(f => f.type === 'renewed'), `renewed after its ttl ran out: ${JSON.stringify(told)}`)

  stalled.send({ op: 'release', id: 'w' })
  const done = await stalled.next({ ev: 'done', id: 'w' })
  assert.equal(done.ok, false)
  assert.equal(done.error.code, 'lost')
  fresh.send({ op: 'release', id: 'w' })
  await fresh.next({ ev: 'done', id: 'w', ok: true })
  assert.ok(!stalled.saw({ ev: 'unhandled' }) && !fresh.saw({ ev: 'unhandled' }))
})

test('LOCK-05, #13 item 10: a holder paused with SIGSTOP past its ttl reads lease.lost and signal.aborted true on its first tick after SIGCONT, before any timer or word from the server told it (Node 20, Node 24, Node 26, Bun)', async t => {
  for (const [runtime, path] of [['node20', RUNTIMES.node20], ['node24', RUNTIMES.node24], ['node26', RUNTIMES.node26], ['bun', RUNTIMES.bun]]) {
    const own = procs(t)
    const server = await startServer(own)
    // The paused holder reaches the server through a proxy, paused with it: the server's "lost" cannot
    // reach the holder before its own first tick does.
    const proxy = await startProxy(own, Number(new URL(server.url).port), { frames: true })
    const stalled = await startAgent(own, `stalled-${runtime}`, path, `ws://127.0.0.1:${proxy.port}`)
    const next = await startAgent(own, 'next', RUNTIMES.self, server.url)
    await ask(stalled, { id: 'w', lock: 'ticks', key: 'k', ttl: 1000 })
    await stalled.next({ ev: 'granted', id: 'w' })
    await stalled.request({ op: 'watch', id: 'w' }, { ev: 'watching', id: 'w' })
    await ask(next, { id: 'w', lock: 'ticks', key: 'k', ttl: 1000, wait: 20_000 })
    await untilServer(server, s => entryOf(s, 'ticks', 'k')?.waiting === 1, 5_000, 'one waiting')

    // Paused just after a renewal was answered: its next renewal (ttl/3) is due after its next tick.
    const renewed = await proxy.next(e => e.ev === 'frame' && decodeServer(Buffer.from(e.hex, 'hex')).type === 'renewed', 3_000, { since: proxy.events.length })
    proxy.kill('SIGSTOP')
    stalled.kill('SIGSTOP')
    assert.ok(Date.now() - renewed.t < 200, `${runtime}: paused ${Date.now() - renewed.t}ms after the renewal`)
    // The key goes to the next holder at the stalled lease's ttl; the holder sleeps on, 1.5 s past it.
    await next.next({ ev: 'granted', id: 'w' }, 5_000)
    await sleep(1_500)
    stalled.kill('SIGCONT')
    const tick = await stalled.next({ ev: 'tick', id: 'w' }, 5_000)
    assert.ok(tick.gap >= 1_500, `${runtime}: the first tick after the pause: ${JSON.stringify(tick)}`)
    assert.equal(tick.aborted, true, `${runtime}: a signal kept from before reads aborted on the first tick`)
    assert.equal(tick.lost, true, `${runtime}: lease.lost reads true on the first tick`)
    const lost = await stalled.next({ ev: 'lost', id: 'w' })
    assert.equal(lost.error.name, 'LostError')
    assert.match(lost.error.message, /not renewed within its ttl/)
    proxy.kill('SIGCONT')
    stalled.send({ op: 'release', id: 'w' })
    assert.equal((await stalled.next({ ev: 'done', id: 'w' })).error.code, 'lost')
    next.send({ op: 'release', id: 'w' })
    await next.next({ ev: 'done', id: 'w', ok: true })
    await Promise.all([server, proxy, stalled, next].map(p => p.stop()))
  }
})

test('LOCK-05: a lease past its ttl is never renewed: the renewal answers "lost", and the key went free at its ttl though nobody asked for it (raw protocol)', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const raw = await rawClient(server.url)
  t.after(() => raw.close())
  raw.send(encode.hello(1, TOKEN))
  await raw.answer(1)
  raw.send(encode.hold(2, { name: 'jobs', key: 'raw', ttl: 1000 }))
  const granted = await raw.answer(2)
  assert.equal(granted.type, 'granted')
  await sleep(500)
  raw.send(encode.renew(3, granted.lease))
  assert.deepEqual(await raw.answer(3).then(f => [f.type, f.ttl]), ['renewed', 1000])
  // No renewal for more than the ttl: the server ends the lease at its deadline, and says so.
  const lostFrame = await raw.answer(f => f.type === 'lost', 3_000)
  assert.equal(lostFrame.code, 'lost')
  assert.ok(!entryOf(await serverInspect(server), 'jobs', 'raw'), 'the key is free')
  raw.send(encode.renew(4, granted.lease))
  assert.deepEqual(await raw.answer(4).then(f => [f.type, f.code]), ['error', 'lost'])
  raw.send(encode.release(5, granted.lease))
  assert.equal((await raw.answer(5)).type, 'done')
  // The next holder gets a larger fence.
  raw.send(encode.hold(6, { name: 'jobs', key: 'raw', ttl: 1000 }))
  const next = await raw.answer(6)
  assert.ok(next.fence > granted.fence)
})
