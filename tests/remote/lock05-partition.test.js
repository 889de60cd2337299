// LOCK-05 when the server cannot be reached: the client counts its own deadline from each renewal it
// sent, minus a margin, "so it always gives up before the server does". A holder cut off from its
// server must see lease.signal abort (LostError) before the server hands the key to anyone else, and
// a waiting hold must not outlive its `wait` because nobody answers.
//
// Each test holds several keys at once, so that a deadline timer that misfires only some of the time
// (a race with the clock) shows in almost every run rather than in half of them.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { RUNTIMES, procs, startServer, startAgent, startProxy, ask, untilServer, entryOf, portOf } from './helpers.js'

const KEYS = ['k0', 'k1', 'k2', 'k3']

test('LOCK-05: holders (Node 20 and Bun) cut off from their server by a partition (their proxy frozen with SIGSTOP) give up their leases before the server hands the keys on', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const proxy = await startProxy(own, portOf(server.url))
  const holders = [await startAgent(own, 'n20', RUNTIMES.node20, `ws://127.0.0.1:${proxy.port}`), await startAgent(own, 'bun', RUNTIMES.bun, `ws://127.0.0.1:${proxy.port}`)]
  const next = await startAgent(own, 'next', RUNTIMES.node20, server.url)
  const held = {}
  for (const h of holders) {
    for (const k of KEYS) {
      const key = `${h.name}-${k}`
      await ask(h, { id: key, lock: 'jobs', key, ttl: 2000 })
      held[key] = await h.next({ ev: 'granted', id: key })
      await ask(next, { id: key, lock: 'jobs', key, ttl: 2000, wait: 30_000 })
    }
  }
  await untilServer(server, s => Object.keys(held).every(key => entryOf(s, 'jobs', key)?.waiting === 1), 5_000, 'a waiter on each key')

  // Nothing passes either way now, and neither side sees its connection end.
  proxy.kill('SIGSTOP')
  const cutAt = Date.now()
  const granted = await Promise.all(Object.keys(held).map(key => next.next({ ev: 'granted', id: key }, 5_000)))
  const problems = []
  for (const g of granted) {
    const holder = holders.find(h => g.id.startsWith(h.name))
    assert.ok(g.fence > held[g.id].fence)
    const lost = await holder.next({ ev: 'lost', id: g.id }, Math.max(1, g.t + 1_000 - Date.now())).catch(() => undefined)
    if (!lost) problems.push(`${g.id}: still held by its cut-off holder ${Date.now() - cutAt}ms after the cut (ttl 2 s); the server gave it to another ${g.t - cutAt}ms after the cut`)
    else if (lost.t > g.t) problems.push(`${g.id}: its holder gave up ${lost.t - g.t}ms after the server handed it on`)
    else assert.equal(lost.error.code, 'lost')
  }
  assert.deepEqual(problems, [], 'two holders at once')
})

test('LOCK-05: a holder whose server is gone for good (kill -9, no restart) is told its leases are lost within their ttl', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const holder = await startAgent(own, 'holder', RUNTIMES.node20, server.url)
  for (const key of KEYS) {
    await ask(holder, { id: key, lock: 'jobs', key, ttl: 2000 })
    await holder.next({ ev: 'granted', id: key })
  }
  server.kill('SIGKILL')
  const killedAt = Date.now()
  const problems = []
  for (const key of KEYS) {
    const lost = await holder.next({ ev: 'lost', id: key }, Math.max(1, killedAt + 3_000 - Date.now())).catch(() => undefined)
    if (!lost) problems.push(`${key}: no "lost" ${Date.now() - killedAt}ms after the server died (ttl 2 s): its holder goes on as if it held the key`)
    else if (lost.t - killedAt > 2_000) problems.push(`${key}: lost ${lost.t - killedAt}ms after the server died`)
  }
  assert.deepEqual(problems, [])
})

test('LOCK-05: a hold waiting with wait 2 s on a server that is gone settles after its wait, instead of hanging', async t => {
  const own = procs(t)
  const server = await startServer(own)
  const owner = await startAgent(own, 'owner', RUNTIMES.node20, server.url)
  const waiter = await startAgent(own, 'waiter', RUNTIMES.node20, server.url)
  await ask(owner, { id: 'k', lock: 'jobs', key: 'k', ttl: 5000 })
  await owner.next({ ev: 'granted', id: 'k' })
  await ask(waiter, { id: 'k', lock: 'jobs', key: 'k', ttl: 5000, wait: 2000 })
  await untilServer(server, s => entryOf(s, 'jobs', 'k')?.waiting === 1, 5_000, 'waiting')
  const askedAt = Date.now()
  server.kill('SIGKILL')
  // The client gives the server's own answer a grace of 1 s past the wait; 6 s is "not hanging" on a
  // loaded machine, without judging speed.
  const done = await waiter.next({ ev: 'done', id: 'k' }, 6_000).catch(() => undefined)
  assert.ok(done, `hold(key, { wait: 2000 }) still pending ${Date.now() - askedAt}ms after it was asked, with the server gone`)
  assert.equal(done.ok, false)
  assert.ok(['in_use', 'closed'].includes(done.error.code), JSON.stringify(done.error))
})
