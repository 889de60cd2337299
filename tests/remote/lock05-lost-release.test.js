// LOCK-05 when a release is lost: a lease's release is not answered (frame id 0), so one sent on a
// connection that, unseen, no longer reaches the server (half-open one way, a NAT that forgot it)
// would leave the key held there, by nobody, until its ttl, though its client reconnected. The client
// keeps such a release until the server answers something sent after it, pings for that answer,
// drops the connection silent at 15 s, and sends the release again first on its next connection.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { RUNTIMES, procs, startServer, startAgent, startProxy, ask, untilServer, entryOf, portOf } from './helpers.js'

for (const [name, runtime] of [
  ['Node 24', RUNTIMES.node24],
  ['Bun', RUNTIMES.bun],
]) {
  test(`LOCK-05/LOCK-01: a release lost on a connection gone half-open (${name} client) is sent again on the next connection: the key goes to the next in line within about 15 s, not at the lease's ttl of 60 s`, async t => {
    const own = procs(t)
    const server = await startServer(own)
    const proxy = await startProxy(own, portOf(server.url))
    const holder = await startAgent(own, 'holder', runtime, `ws://127.0.0.1:${proxy.port}`)
    const next = await startAgent(own, 'next', RUNTIMES.node24, server.url)
    await ask(holder, { id: 'h', lock: 'jobs', key: 'k', ttl: 60_000 })
    const held = await holder.next({ ev: 'granted', id: 'h' })
    await ask(next, { id: 'n', lock: 'jobs', key: 'k', ttl: 60_000, wait: 60_000 })
    await untilServer(server, s => entryOf(s, 'jobs', 'k')?.waiting === 1, 5_000, 'next in line')

    // From now on nothing the holder sends on this connection reaches the server: its release is lost.
    proxy.kill('SIGUSR2')
    await proxy.next({ ev: 'swallowing' })
    const releasedAt = Date.now()
    holder.send({ op: 'release', id: 'h' })
    assert.deepEqual(await holder.next({ ev: 'done', id: 'h' }).then(e => [e.ok, e.value]), [true, held.fence])
    const granted = await next.next({ ev: 'granted', id: 'n' }, 25_000)
    const after = granted.t - releasedAt
    assert.ok(after >= 10_000, `granted ${after} ms after the release: the lost release did not reach the server`)
    assert.ok(granted.fence > held.fence)
    assert.ok(!holder.saw({ ev: 'lost' }), 'the holder lost nothing: it had let go')
    assert.ok(!holder.saw({ ev: 'unhandled' }))
  })
}
