// LOCK-01 and LOCK-05 across processes: Node 20, Node 24, Node 26 and Bun clients contend through one
// server (a separate process; in the FIFO test a Node 26 one) over real sockets. Exclusion is checked outside holdfast, through the file
// system, and the order of service against the order in which holds reached the server.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { RUNTIMES, procs, tempDir, startServer, startAgent, ask, untilServer, entryOf } from './helpers.js'

const MIX = [
  ['n20-a', RUNTIMES.node20],
  ['n20-b', RUNTIMES.node20],
  ['n26-c', RUNTIMES.node26],
  ['n24-d', RUNTIMES.node24],
  ['bun-e', RUNTIMES.bun],
]

test('LOCK-01/LOCK-05: processes on Node 20, Node 24, Node 26 and Bun holding keys through one server are never two inside a key at once', async t => {
  const own = procs(t)
  const dir = tempDir(t)
  const server = await startServer(own)
  const agents = await Promise.all(MIX.map(([name, rt]) => startAgent(own, name, rt, server.url)))
  const keys = ['k0', 'k1', 'k2']
  const count = 40
  // Each agent holds the keys in turn; inside each hold it takes `KEY.inside` with O_EXCL (the count
  // of holders inside: it can only be 0 or 1), bumps `KEY.count` with a pause between read and
  // write, and logs the lease's fence. A second holder inside would show as a violation or a lost update.
  agents.forEach((a, i) => a.send({ op: 'loop', lock: 'counter', keys, count, dir, offset: i, ttl: 2000 }))
  const results = await Promise.all(agents.map(a => a.next({ ev: 'looped' }, 90_000)))
  for (const r of results) {
    assert.equal(r.violations, 0, `${r.who} found another holder inside`)
    assert.equal(r.holds, count)
  }
  let total = 0
  for (const key of keys) {
    total += Number(fs.readFileSync(path.join(dir, `${key}.count`), 'utf8'))
    assert.ok(!fs.existsSync(path.join(dir, `${key}.inside`)), `${key}: someone is still inside`)
    // Appended inside the lock: the fences of one key come in the order of its holders, growing.
    const fences = fs.readFileSync(path.join(dir, `${key}.log`), 'utf8').trim().split('\n').map(l => Number(l.split(' ')[0]))
    for (let i = 1; i < fences.length; i++) assert.ok(fences[i] > fences[i - 1], `${key}: fence ${fences[i]} after ${fences[i - 1]}`)
    const who = new Set(fs.readFileSync(path.join(dir, `${key}.log`), 'utf8').trim().split('\n').map(l => l.split(' ')[1]))
    assert.equal(who.size, MIX.length, `${key}: every process held it`)
  }
  assert.equal(total, MIX.length * count, 'no update was lost: never two holders at once')
  for (const a of agents) assert.ok(!a.saw({ ev: 'unhandled' }), `${a.name}: an unhandled error`)
})

test('LOCK-01/LOCK-05: waiters in several processes are served in the order their holds reached the server (a server on Node 26)', async t => {
  const own = procs(t)
  const server = await startServer(own, {}, RUNTIMES.node26)
  const holder = await startAgent(own, 'holder', RUNTIMES.node20, server.url)
  const agents = await Promise.all(MIX.map(([name, rt]) => startAgent(own, name, rt, server.url)))
  // Three rounds, three arrival orders. The holds are sent one at a time, each once the server
  // counts the one before in the key's line, so that the order in which they reached the server is
  // known; then the holder lets go and the grants (their fences grow in grant order) must follow it.
  const orders = [
    [0, 1, 2, 3, 4],
    [4, 3, 2, 1, 0],
    [2, 4, 0, 3, 1],
  ]
  for (const [round, order] of orders.entries()) {
    const key = `fifo-${round}`
    await ask(holder, { id: key, lock: 'fifo', key, ttl: 2000 })
    const held = await holder.next({ ev: 'granted', id: key })
    for (const [i, n] of order.entries()) {
      await ask(agents[n], { id: key, lock: 'fifo', key, ttl: 2000, wait: 30_000 })
      await untilServer(server, s => entryOf(s, 'fifo', key)?.waiting === i + 1, 5_000, `${key}: ${i + 1} waiting`)
    }
    // Each grantee lets go as soon as it holds, so that the next is served.
    const grants = Promise.all(
      order.map(n =>
        agents[n].next({ ev: 'granted', id: key }, 15_000).then(e => {
          agents[n].send({ op: 'release', id: key })
          return e
        }),
      ),
    )
    holder.send({ op: 'release', id: key })
    const got = await grants
    const served = [...got].sort((a, b) => a.fence - b.fence).map(e => e.who)
    assert.deepEqual(served, order.map(n => MIX[n][0]), `${key}: served in arrival order`)
    for (const e of got) assert.ok(e.fence > held.fence)
    // And in time: each grant came after the one before it.
    const byFence = [...got].sort((a, b) => a.fence - b.fence)
    for (let i = 1; i < byFence.length; i++) assert.ok(byFence[i].t >= byFence[i - 1].t, `${key}: grant times follow fences`)
    await Promise.all(order.map(n => agents[n].next({ ev: 'done', id: key })))
  }
})

test('LOCK-01/LOCK-05: over a Unix socket (serve({ path }), ws+unix://), Node and Bun processes are served one at a time, in order, and a killed holder\'s key moves on at its ttl', async t => {
  const own = procs(t)
  const dir = tempDir(t)
  const server = await startServer(own, { path: path.join(dir, 'holdfast.sock') })
  assert.equal(server.url, `ws+unix://${path.join(dir, 'holdfast.sock')}`)
  const holder = await startAgent(own, 'holder', RUNTIMES.bun, server.url)
  const agents = await Promise.all([
    startAgent(own, 'n20', RUNTIMES.node20, server.url),
    startAgent(own, 'bun', RUNTIMES.bun, server.url),
    startAgent(own, 'n24', RUNTIMES.node24, server.url),
    startAgent(own, 'n26', RUNTIMES.node26, server.url),
  ])
  await ask(holder, { id: 'u', lock: 'unix', key: 'u', ttl: 1000 })
  const held = await holder.next({ ev: 'granted', id: 'u' })
  for (const [i, a] of agents.entries()) {
    await ask(a, { id: 'u', lock: 'unix', key: 'u', ttl: 1000, wait: 20_000 })
    await untilServer(server, s => entryOf(s, 'unix', 'u')?.waiting === i + 1, 5_000, `${i + 1} waiting`)
  }
  holder.kill('SIGKILL')
  const killedAt = Date.now()
  const grants = []
  for (const a of agents) {
    const g = await a.next({ ev: 'granted', id: 'u' }, 5_000)
    grants.push(g)
    a.send({ op: 'release', id: 'u' })
  }
  assert.ok(grants[0].t - killedAt >= 600, `the killed holder's key moved ${grants[0].t - killedAt}ms after the kill, before its ttl`)
  assert.deepEqual(grants.map(g => g.who), ['n20', 'bun', 'n24', 'n26'])
  assert.ok(grants[0].fence > held.fence)
  for (let i = 1; i < grants.length; i++) assert.ok(grants[i].fence > grants[i - 1].fence)
})
