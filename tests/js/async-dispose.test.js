// `await using` closes what a user opens and must close: the store of `openStore()`, a server of
// `serve()`, and the client of `connect()` each have `[Symbol.asyncDispose]()`, which is their
// `close()`. Where the runtime parses `await using` (Node 24 and later, Bun) the tests write it so;
// Node 20 cannot parse it, so there they call the same method, as its lowering by TypeScript does
// (`Symbol.asyncDispose`, or `Symbol.for('Symbol.asyncDispose')` on a runtime without the symbol).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStore, fileStorage, memoryStorage, connect, ClosedError, StorageError } from 'holdfast'

const TOKEN = 'test-token-0123456789'
const dispose = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')

/** Runs `await using` of `resource` in a block of its own, where the runtime parses it; else disposes of it as that would. */
const usingBlock = (() => {
  try {
    const AsyncFunction = (async () => {}).constructor
    return new AsyncFunction('resource', '{ await using held = resource }')
  } catch {
    return async resource => await resource[dispose]()
  }
})()

function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-dispose-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

test('LOCK-06: await using an openStore() store closes it at the end of the block: its fileStorage directory opens again', async t => {
  const dir = tempDir(t)
  const store = await openStore({ storage: fileStorage(dir) })
  assert.equal(typeof store[dispose], 'function')
  await assert.rejects(openStore({ storage: fileStorage(dir) }), StorageError, 'a second live store on the directory is refused')
  await store.lock('a').hold('k', () => {})
  await usingBlock(store)
  assert.equal(store.closed, true)
  assert.throws(() => store.lock('a'), ClosedError)
  const again = await openStore({ storage: fileStorage(dir) })
  await again.close()
})

test('remote: await using a server of serve() closes it at the end of the block: its port refuses a client', async t => {
  const store = await openStore({ storage: memoryStorage() })
  t.after(() => store.close())
  const server = await store.serve({ port: 0, token: TOKEN })
  assert.equal(typeof server[dispose], 'function')
  const client = await connect(server.url, { token: TOKEN, reconnect: false })
  await client.close()
  await usingBlock(server)
  await assert.rejects(connect(server.url, { token: TOKEN, reconnect: false }), ClosedError)
})

test('remote: await using a connect() client closes it at the end of the block: its leases are let go at once, its calls answer ClosedError', async t => {
  const store = await openStore({ storage: memoryStorage() })
  t.after(() => store.close())
  const server = await store.serve({ port: 0, token: TOKEN })
  const client = await connect(server.url, { token: TOKEN })
  assert.equal(typeof client[dispose], 'function')
  const lease = await client.lock('a', { ttl: '1h' }).acquire('k')
  await usingBlock(client)
  assert.ok(lease.lost || lease.signal.aborted, 'the lease ended with the client')
  assert.deepEqual(await store.lock('a').tryHold('k', () => 'free'), { acquired: true, value: 'free' }, 'released, not left to its ttl')
  assert.throws(() => client.lock('a'), ClosedError)
})
