// kill -9 of redis-server mid-traffic, with `appendfsync always` and `everysec`, and a restart on the
// same data: fences keep growing (the time term of the fence covers the second `everysec` may lose),
// and the clients carry on by themselves (they reconnect; the Function library came back with the AOF).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startRedis, startAgent, tempDir, commandStats, RUNTIMES, sleep } from './helpers.js'

for (const fsync of ['always', 'everysec']) {
  test(`LOCK-02/LOCK-05: kill -9 of redis-server mid-traffic (appendfsync ${fsync}) and a restart: fences keep growing, clients carry on`, async t => {
    const server = await startRedis(t, { appendfsync: fsync })
    const dir = tempDir(t)
    const agents = [await startAgent(t, 'node20-ioredis', RUNTIMES.node20, server.url, { kind: 'ioredis' }), await startAgent(t, 'bun-node-redis', RUNTIMES.bun, server.url, { kind: 'node-redis' })]
    const loops = agents.map(a => a.request({ op: 'loop', lock: 'restart', keys: ['a', 'b', 'c'], ms: 4_000, workers: 4, ttl: 3_000, wait: 20_000, holdMs: 2, dir: fsync === 'always' ? dir : undefined }, { ev: 'looped' }, 60_000))
    await sleep(1_200)
    await server.crash()
    const results = await Promise.all(loops)
    for (const r of results) {
      assert.ok(r.holds > 20, `${r.who}: only ${r.holds} holds`)
      // With every write on disk before it is answered, a restart loses no grant: still one holder at a time.
      if (fsync === 'always') assert.equal(r.violations, 0, `${r.who}: two holders at once`)
    }
    for (const r of results) {
      for (const [key, list] of Object.entries(r.fences)) {
        for (let i = 1; i < list.length; i++) assert.ok(list[i] > list[i - 1], `${r.who} key ${key}: fence ${list[i]} after ${list[i - 1]}`)
      }
    }
    // The clients carry on: a hold now is granted, by the Functions the AOF kept.
    for (const a of agents) {
      a.send({ op: 'hold', id: 'after', lock: 'restart', key: 'a', wait: 10_000 })
      await a.next({ ev: 'granted', id: 'after' }, 15_000)
      a.send({ op: 'release', id: 'after' })
      await a.next({ ev: 'done', id: 'after' })
    }
    assert.ok((await commandStats(server.port)).fcall > 0, 'by FCALL after the restart')
  })
}
