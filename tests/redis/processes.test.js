// Several processes — Node 20, Node 24 and Bun, with ioredis, node-redis and Bun's own client — sharing keys through one
// redis-server: exclusion, FIFO by the order Redis received the requests, fences growing; a holder
// killed (its key passes at its ttl, nobody else asking); a holder frozen past its ttl (its late write
// refused by the fence in SQLite).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { startRedis, startAgent, tempDir, RUNTIMES, sleep } from './helpers.js'

const MIX = [
  ['node20', 'ioredis'],
  ['node24', 'node-redis'],
  ['bun', 'ioredis'],
  ['bun', 'node-redis'],
  ['bun', 'bun'],
]

/** Every key's fences, from every process, each list in grant order, strictly growing. */
function assertGrowing(fencesByProcess) {
  for (const fences of fencesByProcess) {
    for (const [key, list] of Object.entries(fences)) {
      for (let i = 1; i < list.length; i++) assert.ok(list[i] > list[i - 1], `key ${key}: fence ${list[i]} after ${list[i - 1]}`)
    }
  }
  const all = fencesByProcess.flatMap(f => Object.entries(f).flatMap(([k, list]) => list.map(x => `${k}/${x}`)))
  assert.equal(new Set(all).size, all.length, 'no fence of a key was given twice')
}

test(`LOCK-01/LOCK-02: ${MIX.length} processes × 8 workers on 5 shared keys: one holder at a time, fences growing and never repeated`, async t => {
  const server = await startRedis(t)
  const dir = tempDir(t)
  const agents = await Promise.all(MIX.map(([rt, kind], i) => startAgent(t, `p${i}-${rt}-${kind}`, RUNTIMES[rt], server.url, { kind })))
  const keys = ['a', 'b', 'c', 'd', 'e']
  const results = await Promise.all(agents.map(a => a.request({ op: 'loop', lock: 'shared', keys, count: 15, workers: 8, dir }, { ev: 'looped' }, 120_000)))
  for (const r of results) {
    assert.equal(r.violations, 0, `${r.who}: two holders at once`)
    assert.deepEqual(r.errors, {})
    assert.equal(r.holds, 15 * 8)
  }
  assertGrowing(results.map(r => r.fences))
})

test(`LOCK-01: waiters in ${MIX.length} processes are granted in the order Redis received them, with growing fences`, async t => {
  const server = await startRedis(t)
  const agents = await Promise.all(MIX.map(([rt, kind], i) => startAgent(t, `q${i}-${rt}-${kind}`, RUNTIMES[rt], server.url, { kind })))
  const [first, ...rest] = agents
  first.send({ op: 'hold', id: 'h0', lock: 'fifo', key: 'k' })
  const held = await first.next({ ev: 'granted', id: 'h0' })
  const order = [...rest, first, ...rest.slice().reverse()]
  for (const [i, agent] of order.entries()) {
    agent.send({ op: 'hold', id: `w${i}`, lock: 'fifo', key: 'k' })
    // In line before the next asks: the order Redis received them is the order asked.
    for (;;) {
      const { entries } = await first.request({ op: 'inspect' }, { ev: 'inspected' })
      if (entries.find(e => e.key === 'k')?.waiting === i + 1) break
      await sleep(10)
    }
  }
  let last = held.fence
  first.send({ op: 'release', id: 'h0' })
  for (const [i, agent] of order.entries()) {
    const granted = await agent.next({ ev: 'granted', id: `w${i}` })
    for (const other of agents) assert.ok(!other.events.some(e => e.ev === 'granted' && e.id.startsWith('w') && Number(e.id.slice(1)) > i), `w${i} was granted before a later waiter`)
    assert.ok(granted.fence > last)
    last = granted.fence
    agent.send({ op: 'release', id: `w${i}` })
  }
})

test('LOCK-05: a holder killed with kill -9 loses its key at its ttl: the waiter in another process is granted then, nobody else asking', async t => {
  const server = await startRedis(t)
  const holder = await startAgent(t, 'holder', RUNTIMES.bun, server.url, { kind: 'ioredis' })
  const waiter = await startAgent(t, 'waiter', RUNTIMES.node20, server.url, { kind: 'node-redis' })
  holder.send({ op: 'hold', id: 'h', lock: 'dead', key: 'k', ttl: 2_000 })
  const held = await holder.next({ ev: 'granted', id: 'h' })
  // The waiter's own ttl is 30 s: its heartbeats come every 10 s, so only the holder's deadline brings it in time.
  waiter.send({ op: 'hold', id: 'w', lock: 'dead', key: 'k', ttl: 30_000 })
  await waiter.next({ ev: 'asked', id: 'w' })
  await sleep(1_000)
  holder.kill('SIGKILL')
  const killedAt = Date.now()
  const granted = await waiter.next({ ev: 'granted', id: 'w' }, 10_000)
  const after = granted.t - killedAt
  // The lease was renewed every ttl/3: it ends between 2/3 ttl and one ttl after the kill.
  assert.ok(after >= 1_000 && after <= 2_600, `granted ${after}ms after the kill (ttl 2000 ms)`)
  assert.ok(granted.fence > held.fence)
})

for (const [rt, kind] of [['node24', 'ioredis'], ['bun', 'node-redis'], ['bun', 'bun']]) {
  test(`LOCK-05: a holder frozen (SIGSTOP) past its ttl loses the key; after SIGCONT its late write is refused by the fence in SQLite (${rt}, ${kind})`, async t => {
    const server = await startRedis(t)
    const dir = tempDir(t)
    const db = path.join(dir, 'items.db')
    const stalled = await startAgent(t, 'stalled', RUNTIMES[rt], server.url, { kind })
    const next = await startAgent(t, 'next', RUNTIMES[rt], server.url, { kind: kind === 'ioredis' ? 'node-redis' : 'ioredis' })
    await stalled.request({ op: 'sql', db, run: [['CREATE TABLE items (id TEXT PRIMARY KEY, value TEXT, fence INTEGER NOT NULL)'], ["INSERT INTO items VALUES ('row', 'none', 0)"]] }, { ev: 'sql' })
    stalled.send({ op: 'hold', id: 's', lock: 'sql', key: 'row', ttl: 1_500 })
    const first = await stalled.next({ ev: 'granted', id: 's' })
    assert.equal((await stalled.request({ op: 'write', id: 's', db, row: 'row', value: 'first' }, { ev: 'wrote' })).changes, 1)
    next.send({ op: 'hold', id: 'n', lock: 'sql', key: 'row', ttl: 30_000 })
    await next.next({ ev: 'asked', id: 'n' })
    stalled.kill('SIGSTOP')
    const granted = await next.next({ ev: 'granted', id: 'n' }, 10_000)
    assert.ok(granted.fence > first.fence)
    assert.equal((await next.request({ op: 'write', id: 'n', db, row: 'row', value: 'second' }, { ev: 'wrote' })).changes, 1)
    stalled.kill('SIGCONT')
    const late = await stalled.request({ op: 'write', id: 's', db, row: 'row', value: 'late' }, { ev: 'wrote' })
    assert.equal(late.changes, 0, 'the late write was refused by the fence')
    const lost = await stalled.next({ ev: 'lost', id: 's' })
    assert.equal(lost.error.code, 'lost')
    const { rows } = await next.request({ op: 'sql', db, query: 'SELECT value, fence FROM items' }, { ev: 'sql' })
    assert.deepEqual(rows, [{ value: 'second', fence: granted.fence }])
  })
}

for (const [rt, kind] of [['node20', 'ioredis'], ['bun', 'node-redis'], ['bun', 'bun']]) {
  test(`LOCK-05: a waiter frozen (SIGSTOP) while its grant is in flight, past the lease's ttl, does not run fn as a holder beside the next one: it asks Redis first, and waits its turn again (${rt}, ${kind})`, async t => {
    // Its wake-up, read late, counted a whole ttl from the reading: fn ran with lease.lost false while
    // Redis had expired that lease and granted the key to the next in line (two holders at once).
    const server = await startRedis(t)
    const first = await startAgent(t, 'first', RUNTIMES[rt], server.url, { kind })
    const frozen = await startAgent(t, 'frozen', RUNTIMES[rt], server.url, { kind })
    const next = await startAgent(t, 'next', RUNTIMES[rt], server.url, { kind })
    first.send({ op: 'hold', id: 'a', lock: 'stale', key: 'k', ttl: 1_500 })
    const a = await first.next({ ev: 'granted', id: 'a' })
    frozen.send({ op: 'hold', id: 'b', lock: 'stale', key: 'k', ttl: 1_500, wait: 60_000 })
    await frozen.next({ ev: 'asked', id: 'b' })
    await sleep(300) // in line, before the next
    next.send({ op: 'hold', id: 'c', lock: 'stale', key: 'k', ttl: 1_500, wait: 60_000 })
    await next.next({ ev: 'asked', id: 'c' })
    await sleep(300)
    frozen.kill('SIGSTOP')
    first.send({ op: 'release', id: 'a' }) // the key goes to the frozen one, its wake-up unread
    const c = await next.next({ ev: 'granted', id: 'c' }, 10_000) // its lease ran out in Redis
    assert.ok(c.fence > a.fence)
    frozen.kill('SIGCONT')
    await sleep(1_000)
    assert.ok(!frozen.saw({ ev: 'granted', id: 'b' }), 'the frozen waiter ran fn while the next held the key')
    next.send({ op: 'release', id: 'c' })
    const b = await frozen.next({ ev: 'granted', id: 'b' }, 10_000)
    assert.ok(b.t >= c.t && b.fence > c.fence, `granted again after the next let go, with a larger fence (${b.fence} after ${c.fence})`)
    frozen.send({ op: 'release', id: 'b' })
    assert.equal((await frozen.next({ ev: 'done', id: 'b' })).ok, true)
  })
}
