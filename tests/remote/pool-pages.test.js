// An inspection of pools over a connection, bounded as one of keys is (protocol revision 8): a store
// with more pools than one frame of the server carries answers them page by page, in order of name,
// each page asked after the last name of the one before; a client of revision 7 is answered whole
// when that fits, else refused `limit` (never a cut connection), and a client of revision 8 asks an
// older server the old way. The server's budget is made small (maxBuffered 64 KiB: pages of 32 KiB)
// so that 3,000 pools take several pages, rather than the 100,000 pools 4 MiB would need.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { WebSocketServer } from 'ws'
import { openStore, connect, memoryStorage, ClosedError } from 'holdfast'
import { encode, encodeServer, CLIENT } from './frames.js'
import { TOKEN, rawClient } from './helpers.js'

/** The largest page a server of `maxBuffered` 64 KiB sends: half of it (remote/server.ts). */
const BUDGET = 32 * 1024

/**
 * A store of `count` pools (made in an order other than their names', of names of many lengths, a
 * claim in some), served on a loopback port with `options`; closed after the test.
 */
async function servedPools(t, count, options = {}) {
  const store = await openStore({ storage: memoryStorage() })
  t.after(() => store.close())
  const names = []
  for (let i = 0; i < count; i++) {
    const n = (i * 1237) % count
    names.push(`p${n}-${'x'.repeat(n % 50)}`)
  }
  for (const name of names) store.pool(name, { capacity: 10 })
  for (let i = 0; i < count; i += 97) await store.pool(names[i], { capacity: 10 }).claim(1 + (i % 3))
  const server = await store.serve({ port: 0, token: TOKEN, ...options })
  return { store, server, names: [...names].sort() }
}

/** The pools `store` has, as a client lists them, in order of name. */
function poolsOf(store) {
  return store
    .inspect()
    .filter(e => e.kind === 'pool')
    .sort((a, b) => (a.name < b.name ? -1 : 1))
}

/** A raw client of `server` welcomed at `revision`; closed when the test ends. */
async function welcomedAt(t, server, revision) {
  const raw = await rawClient(server.url)
  t.after(() => raw.close())
  raw.send(encode.hello3(1, TOKEN, revision))
  const welcome = await raw.answer(1)
  assert.deepEqual([welcome.type, welcome.revision], ['welcome', revision])
  return raw
}

test('revision 8: 3,000 pools past one frame (pages of 32 KiB): connect().inspect() answers every pool once, in order of name, as the store has them, over one connection never cut', async t => {
  const { store, server, names } = await servedPools(t, 3_000, { maxBuffered: 64 * 1024 })
  // No reconnection: a connection cut for an answer too large fails the inspection at once.
  const client = await connect(server.url, { token: TOKEN, reconnect: false })
  t.after(() => client.close())
  const pools = (await client.inspect()).filter(e => e.kind === 'pool')
  assert.equal(pools.length, 3_000)
  assert.deepEqual(
    pools.map(p => p.name),
    names,
  )
  assert.deepEqual(pools, poolsOf(store))
  assert.ok(
    pools.some(p => p.remaining < 10),
    'claims are counted',
  )
})

test('revision 8: each page of pools holds at least one pool and fits the budget, to the byte as the codec counts; it starts after the name asked (the server keeps nothing between pages: a page asked again answers the same); after the last name, an empty last page', async t => {
  const { server, names } = await servedPools(t, 3_000, { maxBuffered: 64 * 1024 })
  const raw = await welcomedAt(t, server, 8)
  const seen = []
  let id = 2
  let after = ''
  const pages = []
  for (;;) {
    raw.send(encode.inspectPoolsPage(id, after))
    const page = await raw.answer(id++)
    assert.equal(page.type, 'poolsPage', JSON.stringify(page).slice(0, 300))
    assert.ok(page.count >= 1, 'a page holds a pool')
    assert.ok(page.bytes <= BUDGET, `a page of ${page.bytes} bytes`)
    // Filled to its budget: the next pool (at most 2 + 55 + 24 bytes) would not have fit.
    if (page.more) assert.ok(page.bytes > BUDGET - 81, `a page of ${page.bytes} bytes, more to come`)
    for (const p of page.pools) assert.ok(p.name > after, `${p.name} after ${after}`)
    seen.push(...page.pools.map(p => p.name))
    pages.push(page)
    if (!page.more) break
    after = page.pools.at(-1).name
  }
  assert.ok(pages.length >= 4, `${pages.length} pages`)
  assert.deepEqual(seen, names, 'every pool once, in order of name')
  // The same page asked again; a page after a name no pool has starts at the next one.
  raw.send(encode.inspectPoolsPage(id, pages[0].pools.at(-1).name))
  assert.deepEqual((await raw.answer(id++)).pools, pages[1].pools)
  raw.send(encode.inspectPoolsPage(id, 'p2'))
  assert.equal((await raw.answer(id++)).pools[0].name, names.find(n => n > 'p2'))
  raw.send(encode.inspectPoolsPage(id, names.at(-1)))
  const last = await raw.answer(id++)
  assert.deepEqual([last.type, last.more, last.count], ['poolsPage', false, 0])
  assert.equal(raw.closed, undefined)
})

test('revision 8, a client of revision 7 (no pages of pools): its inspect pools is answered whole when it fits, else refused limit naming the count of pools and the size, its connection kept rather than cut; a page of pools from it is refused protocol (closed 4400)', async t => {
  const { server } = await servedPools(t, 3_000, { maxBuffered: 64 * 1024 })
  const raw = await welcomedAt(t, server, 7)
  raw.send(encode.inspectPools(2))
  const refused = await raw.answer(2)
  assert.deepEqual([refused.type, refused.code], ['error', 'limit'])
  assert.match(refused.message, /^inspect pools: the answer is 1\d\d KiB \(3000 pools\), more than the 32 KiB a frame of this server carries/)
  raw.send(encode.ping(3))
  assert.equal((await raw.answer(3)).type, 'done', 'the connection is kept')
  assert.equal(raw.closed, undefined)

  const small = await servedPools(t, 40)
  const old = await welcomedAt(t, small.server, 7)
  old.send(encode.inspectPools(2))
  const whole = await old.answer(2)
  assert.equal(whole.type, 'pools')
  assert.deepEqual(
    whole.pools.map(p => p.name).sort(),
    small.names,
  )
  old.send(encode.inspectPoolsPage(3))
  const page = await old.answer(3)
  assert.deepEqual([page.type, page.code], ['error', 'protocol'])
  assert.match(page.message, /a page of pools from a client of revision 7 \(pages of pools need revision 8, said in hello\)/)
  assert.equal((await old.whenClosed).code, 4400)
})

/** A fake server of revision 7: answers an inspection with no keys and two pools, whole; closes on a frame it does not know, as a server of revision 7 does. */
async function revision7Server() {
  const received = []
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
  await new Promise(resolve => wss.once('listening', resolve))
  const pools = [
    { name: 'licences', capacity: 50, remaining: 48, claims: 1, waiting: 0 },
    { name: 'seats', capacity: 180, remaining: 0, claims: 90, waiting: 2 },
  ]
  wss.on('connection', ws =>
    ws.on('message', data => {
      const bytes = Buffer.from(data)
      const id = bytes.readUInt32LE(2)
      received.push(bytes[1])
      if (bytes[1] === CLIENT.hello3) ws.send(encodeServer.welcome(id, 7))
      else if (bytes[1] === CLIENT.inspect) ws.send(encodeServer.inspectedNone(id))
      else if (bytes[1] === CLIENT.inspectPools) ws.send(encodeServer.pools(id, pools))
      else if (bytes[1] === CLIENT.goodbye) (ws.send(encodeServer.done(id)), ws.close(1000))
      else {
        ws.send(encodeServer.error(id, 9, `bad frame: unknown client message type 0x${bytes[1].toString(16)}`))
        ws.close(4400, 'unknown frame')
      }
    }),
  )
  return {
    url: `ws://127.0.0.1:${wss.address().port}`,
    received,
    pools,
    close: () => {
      for (const ws of wss.clients) ws.terminate()
      wss.close()
    },
  }
}

test('revision 8 against a server of revision 7: connect().inspect() asks the pools the old way (inspect pools, answered whole), and sends no page of pools', async t => {
  const server = await revision7Server()
  t.after(() => server.close())
  const client = await connect(server.url, { token: TOKEN, reconnect: false })
  const pools = (await client.inspect()).filter(e => e.kind === 'pool')
  assert.deepEqual(
    pools,
    server.pools.map(p => ({ kind: 'pool', ...p })),
  )
  await client.close()
  assert.ok(server.received.includes(CLIENT.inspectPools))
  assert.ok(!server.received.includes(CLIENT.inspectPoolsPage), `frames ${server.received}`)
})

test('a wrong server answering a page empty with more to come (of keys, or of pools) fails connect().inspect() with ClosedError rather than asking again forever', async t => {
  for (const what of ['keys', 'pools']) {
    const asked = []
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
    await new Promise(resolve => wss.once('listening', resolve))
    t.after(() => {
      for (const ws of wss.clients) ws.terminate()
      wss.close()
    })
    wss.on('connection', ws =>
      ws.on('message', data => {
        const bytes = Buffer.from(data)
        const id = bytes.readUInt32LE(2)
        const type = bytes[1]
        asked.push(type)
        if (type === CLIENT.hello3) ws.send(encodeServer.welcome(id, 8))
        else if (type === CLIENT.inspect) ws.send(what === 'keys' ? encodeServer.error(id, 5, 'inspect: too large for one frame') : encodeServer.inspectedNone(id))
        else if (type === CLIENT.inspectPage) ws.send(encodeServer.inspectedPageNone(id, true))
        else if (type === CLIENT.inspectPoolsPage) ws.send(encodeServer.poolsPageNone(id, true))
        else if (type === CLIENT.goodbye) (ws.send(encodeServer.done(id)), ws.close(1000))
      }),
    )
    const client = await connect(`ws://127.0.0.1:${wss.address().port}`, { token: TOKEN, reconnect: false })
    await assert.rejects(
      client.inspect(),
      e => e instanceof ClosedError && new RegExp(`unexpected answer ${what === 'keys' ? 'inspectedPage' : 'poolsPage'}, empty with more to come`).test(e.message),
      what,
    )
    const pages = asked.filter(type => type === (what === 'keys' ? CLIENT.inspectPage : CLIENT.inspectPoolsPage)).length
    assert.equal(pages, 1, `${what}: pages asked`)
    await client.close()
  }
})
