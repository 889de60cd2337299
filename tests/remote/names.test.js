// #13 item 5: every distinct name a client holds costs the server nothing once idle. A client holds
// many names one after another (locks and semaphores, granted at once or after waiting), and the
// server's engine and store keep no entry for any of them after; names still in use are kept.
// The client keeps none either, once their handles were collected. HOLDFAST_NAMES sets how many
// (default 20,000; the figure, with names-rss.js: 300,000).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect } from 'holdfast'
import { TOKEN, procs, startServer, fullGc, sleep } from './helpers.js'

const NAMES = Number(process.env.HOLDFAST_NAMES ?? 20_000)

/**
 * The server's footprint: `[keys, requests, key places, request places, timers, engine resources,
 * store names]`, RSS, heap and wasm memory, once it has read everything `remote` sent before (a
 * release asks for no answer: an inspection over the same connection comes after it).
 */
async function footprint(server, remote, gc = false) {
  await remote.inspect()
  const since = server.events.length
  server.send({ op: 'footprint', gc })
  return server.next({ ev: 'footprint' }, 30_000, { since })
}

test(`#13 item 5: a client holds ${NAMES} distinct names one after another, and the server keeps none of them after`, { timeout: 600_000 }, async t => {
  const own = procs(t)
  const server = await startServer(own)
  const remote = await connect(server.url, { token: TOKEN })
  t.after(() => remote.close())
  // A name still in use is kept: a lease held all along, and a semaphore with a waiter.
  const kept = await remote.lock('kept').acquire('k')
  const before = await footprint(server, remote, true)
  assert.deepEqual(before.footprint.slice(5), [1, 1], 'the name in use')
  for (let i = 0; i < NAMES; i++) {
    if (i % 3 === 0) await remote.semaphore(`sem-${i}`, { limit: 2 }).hold('k', () => {})
    else await remote.lock(`name-${i}`).hold(`key-${i % 7}`, () => {})
  }
  // A name waited for, then let go; and one whose hold is refused (wait 0) while busy.
  const held = await remote.lock('waited').acquire('k')
  const waiter = remote.lock('waited').hold('k', { wait: 60_000 }, lease => lease.fence)
  assert.equal((await remote.lock('waited').tryHold('k', () => {})).acquired, false)
  await held.release()
  assert.ok((await waiter) > held.fence)
  const after = await footprint(server, remote, true)
  assert.deepEqual(after.footprint.slice(0, 2), [1, 1], 'one key and one lease: the kept one')
  assert.deepEqual(after.footprint.slice(5), [1, 1], `engine resources and store names after ${NAMES} names`)
  const mb = bytes => `${(bytes / 1e6).toFixed(1)} MB`
  t.diagnostic(`server after ${NAMES} names: RSS ${mb(before.rss)} -> ${mb(after.rss)}, JS heap ${mb(before.heap)} -> ${mb(after.heap)}, wasm ${mb(before.wasm)} -> ${mb(after.wasm)}`)
  // Nor does the client keep them (it keeps an entry per name while a handle or a lease holds it).
  for (let i = 0; i < 50 && remote._names() > 2; i++) {
    fullGc()
    await sleep(1)
  }
  assert.ok(remote._names() <= 2, `the client keeps ${remote._names()} names`)
  // The name in use was never forgotten: its lease still holds, and nobody else gets its key.
  assert.equal((await remote.lock('kept').tryHold('k', () => {})).acquired, false)
  await kept.release()
  const end = await footprint(server, remote)
  assert.deepEqual(end.footprint.slice(5), [0, 0], 'nothing once the last lease is released')
})
