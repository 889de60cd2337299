// #13 item 5: every distinct name used to cost memory forever. A name nothing refers to (no busy key,
// no live handle) now costs nothing, in the engine or the store; a name in use is kept, with its
// semaphore limit, its keys and its fences.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { InvalidError } from 'holdfast'
import { openTestStore, collectUntil } from './helpers.js'

/** What the store keeps: engine resources and store names (see `Store._footprint`), and busy keys. */
function names(store) {
  const f = store._footprint()
  return { keys: f[0], requests: f[1], engine: f[5], store: f[6] }
}

const none = store => () => {
  const n = names(store)
  return n.engine === 0 && n.store === 0
}

// (100,000 names twice, some through the engine: longer than Bun's default 5 s a test.)
test('#13 item 5: 100,000 distinct names held once and released leave no entry in the engine or the store, and a second run grows no wasm memory', { timeout: 300_000 }, async () => {
  const { store } = await openTestStore()
  const N = 100_000
  const run = async prefix => {
    for (let i = 0; i < N; i++) {
      // Every way a key is held: granted by the store itself (a lock), by the engine (maxHold, a semaphore).
      if (i % 3 === 0) await store.lock(`${prefix}-${i}`).hold('k', () => {})
      else if (i % 3 === 1) await store.lock(`${prefix}-${i}`, { maxHold: '1m' }).hold('k', () => {})
      else await store.semaphore(`${prefix}-${i}`, { limit: 2 }).hold('k', () => {})
      // Names come and go: each run keeps at most as many at once (their handles not yet collected).
      if (i % 10_000 === 9_999) assert.ok(await collectUntil(none(store)), `${prefix}: names kept at ${i}: ${JSON.stringify(names(store))}`)
    }
  }
  await run('first')
  assert.ok(await collectUntil(none(store)), `names kept: ${JSON.stringify(names(store))}`)
  assert.deepEqual(names(store), { keys: 0, requests: 0, engine: 0, store: 0 })
  const bytes = store._memoryBytes()
  await run('second')
  assert.ok(await collectUntil(none(store)), `names kept: ${JSON.stringify(names(store))}`)
  assert.equal(store._memoryBytes(), bytes, 'wasm memory did not grow on the second run')
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('#13 item 5: a name with a live handle is kept, and its semaphore limit with it; once its handles are collected it is forgotten, and any limit is its limit', async () => {
  const { store } = await openTestStore()
  const uploads = store.semaphore('uploads', { limit: 2 })
  store.semaphore('dropped', { limit: 2 }) // no one keeps it
  assert.ok(await collectUntil(() => names(store).store === 1), JSON.stringify(names(store)))
  assert.deepEqual(names(store), { keys: 0, requests: 0, engine: 1, store: 1 })
  // Held and released with no other handle: the live one keeps the name.
  await store.semaphore('uploads', { limit: 2 }).hold('k', () => {})
  // The whole message: its place once (it said "semaphore uploads: semaphore uploads: ...").
  assert.throws(() => store.semaphore('uploads', { limit: 3 }), e => e instanceof InvalidError && e.message === 'semaphore uploads: limit 3 differs from its limit 2')
  assert.equal(uploads.limit, 2)
  // 'dropped' was forgotten: asked for again, it is a new name, whatever its limit.
  assert.equal(store.semaphore('dropped', { limit: 5 }).limit, 5)
  await store.close()
})

test('#13 item 5: a lease that outlives its handle keeps its name: the key stays held (no second grant), and the name goes once it is released', async () => {
  const { store } = await openTestStore()
  // Leases granted by the store itself (a lock), by the engine (maxHold), and a waiter of a semaphore: their handles
  // are dropped at once.
  const here = await store.lock('here').acquire('k')
  const engine = await store.lock('engine', { maxHold: '1h' }).acquire('k')
  const full = await store.semaphore('full', { limit: 1 }).acquire('k')
  // With a time limit to its wait, the waiter is the engine's (without one, it would wait in the store's own line: #17).
  const waiting = store.semaphore('full', { limit: 1 }).acquire('k', { wait: '1h' })
  await collectUntil(() => false, 5) // every handle collected, and their finalizers run
  assert.deepEqual(names(store), { keys: 2, requests: 3, engine: 3, store: 3 }, 'the names in use are kept')
  for (const name of ['here', 'engine']) {
    const tried = await store.lock(name).tryHold('k', () => {})
    assert.equal(tried.acquired, false, `${name}: a new handle finds the key held`)
  }
  assert.equal((await store.semaphore('full', { limit: 1 }).tryHold('k', () => {})).acquired, false)
  assert.throws(() => store.semaphore('full', { limit: 2 }), InvalidError)
  await here.release()
  await engine.release()
  await full.release()
  const next = await waiting
  assert.ok(next.fence > full.fence)
  await next.release()
  assert.ok(await collectUntil(none(store)), JSON.stringify(names(store)))
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('#13 item 5, LOCK-02: a name forgotten and held again gets fences larger than before', async () => {
  const { store } = await openTestStore()
  const last = {}
  for (const [name, options] of [['here', {}], ['engine', { maxHold: '1m' }]]) {
    last[name] = await store.lock(name, options).hold('k', lease => lease.fence)
  }
  const semaphore = await store.semaphore('sem', { limit: 3 }).hold('k', lease => lease.fence)
  assert.ok(await collectUntil(none(store)), JSON.stringify(names(store)))
  for (const [name, options] of [['here', {}], ['engine', { maxHold: '1m' }]]) {
    const fence = await store.lock(name, options).hold('k', lease => lease.fence)
    assert.ok(fence > last[name] && fence > semaphore, `${name}: fence ${fence} after ${last[name]} and ${semaphore}`)
  }
  const again = await store.semaphore('sem', { limit: 1 }).hold('k', lease => lease.fence)
  assert.ok(again > semaphore)
  await store.close()
})
