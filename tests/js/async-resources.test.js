// LOCK-04 keeps a hold in its caller's async context. On Node 24 and later holdfast keeps that
// context in `AsyncResource`s of type 'holdfast' (runtime/node/runtime.ts): one a hold, and one for
// every hold that waits (its caller's context, for its fn to run in when it is handed the key). A tool
// that listens with async_hooks (APM, tracing) is told of each at its `init`, and must be told of its
// `destroy` too, or it keeps its record of it for the life of the process. Node destroys a resource
// when it is collected, where a destroy hook listens: so every one of them must be let go, whatever
// became of its hold. On Node 20 and on Deno the context is kept without resources (there the hooks
// see none made), and Bun runs no hooks.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHook } from 'node:async_hooks'
import { openStore, memoryStorage, connect } from 'holdfast'
import { gate } from './helpers.js'
import { fullGc } from './gc.js'

const TOKEN = 'test-token-0123456789'
const bun = typeof process.versions.bun === 'string'
// Deno answers a Node version too (its compatibility layer's), but its entry keeps no resources.
const makesResources = !bun && typeof globalThis.Deno !== 'object' && Number(process.versions.node.split('.')[0]) >= 24

/** The 'holdfast' resources async_hooks saw made and not yet destroyed, while `body` runs and after. */
async function tracked(body) {
  const live = new Set()
  let made = 0
  const hook = createHook({
    init(id, type) {
      if (type !== 'holdfast') return
      made++
      live.add(id)
    },
    destroy(id) {
      live.delete(id)
    },
  }).enable()
  try {
    await body()
    // Destroys come after the collector found a resource unreachable, from the event loop.
    for (let i = 0; i < 100 && live.size > 0; i++) {
      fullGc()
      await new Promise(resolve => setTimeout(resolve, 10))
    }
  } finally {
    hook.disable()
  }
  return { made, left: live.size }
}

/** Holds of one key on `handle`, all waiting behind its holders: handed over in turn; some cancelled. */
async function contended(handle, key) {
  const holders = []
  for (let i = 0; i < (handle.limit ?? 1); i++) holders.push(await handle.acquire(key))
  const controller = new AbortController()
  const holds = []
  for (let i = 0; i < 30; i++) {
    const signal = i % 5 === 4 ? controller.signal : undefined
    holds.push(handle.hold(key, { wait: Infinity, signal }, async () => await undefined).catch(error => error.code))
  }
  await new Promise(resolve => setTimeout(resolve, 20))
  controller.abort()
  for (const holder of holders) await holder.release()
  const outcomes = await Promise.all(holds)
  assert.equal(outcomes.filter(o => o === 'cancelled').length, 6, `${handle.kind}: the six waiters cancelled`)
  assert.equal(outcomes.filter(o => o === undefined).length, 24, `${handle.kind}: the others held the key in turn`)
}

test('LOCK-04: the async resources that keep holds in their callers’ contexts are destroyed (in process: free, handed over, cancelled; lock and semaphore)', { skip: bun && 'Bun runs no async_hooks hooks' }, async () => {
  const store = await openStore({ storage: memoryStorage() })
  const { made, left } = await tracked(async () => {
    const lock = store.lock('resources')
    for (let i = 0; i < 20; i++) await lock.hold('free', async () => {})
    await contended(lock, 'busy')
    await contended(store.semaphore('resources-sem', { limit: 2 }), 'busy')
    // A waiter behind a key the store granted itself, let go by its holder's fn.
    const holding = gate()
    const held = lock.hold('lent', () => holding.promise)
    const behind = lock.hold('lent', { wait: Infinity }, async () => 'after')
    holding.open()
    await held
    assert.equal(await behind, 'after')
  })
  await store.close()
  if (makesResources) assert.ok(made >= 20 + 2 * 30, `resources made on Node ${process.versions.node}: ${made}`)
  assert.equal(left, 0, `${left} of ${made} 'holdfast' resources never destroyed`)
})

test('LOCK-04: the same over a connection: a hold that waits on a server keeps no resource after it', { skip: bun && 'Bun runs no async_hooks hooks' }, async () => {
  const store = await openStore({ storage: memoryStorage() })
  const server = await store.serve({ port: 0, token: TOKEN })
  const remote = await connect(server.url, { token: TOKEN })
  try {
    const { made, left } = await tracked(async () => {
      await contended(remote.lock('resources'), 'busy')
      await contended(remote.semaphore('resources-sem', { limit: 2 }), 'busy')
    })
    if (makesResources) assert.ok(made >= 2 * 30, `resources made on Node ${process.versions.node}: ${made}`)
    assert.equal(left, 0, `${left} of ${made} 'holdfast' resources never destroyed`)
  } finally {
    await remote.close()
    await store.close()
  }
})
