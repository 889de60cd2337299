// LOCK-06, what a store lets go of when it ends: a closed store gives the engine's memory back at once,
// and a store nobody refers to any more, closed or not (a Durable Object's, when the object is
// evicted), is collected with everything it kept. The engine keeps the store's fence writer (a JS
// function, held by wasm-bindgen's table, a root) for as long as it lives: a writer that held the
// store kept the store and its engine alive for the life of the process, ~14 KB a store.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ClosedError, connect, memoryStorage, openStore } from 'holdfast'
import { STRAY, collectUntil, isSettled, settle } from './helpers.js'
import { useEveryWayAndEnd } from './every-use.js'

/**
 * Holds keys every way a store grants them: by itself, handed over, a semaphore's (by the engine), and
 * with `deadlines` a maxHold (by the engine, with a timer at its deadline, which keeps its store
 * until it fires, closed or not).
 */
async function use(store, deadlines = true) {
  await store.lock('self').hold('a', async () => {})
  if (deadlines) await store.lock('engine', { maxHold: '1h' }).hold('a', async () => {})
  const line = store.lock('line')
  await Promise.all([0, 1, 2].map(() => line.hold('k', { wait: Infinity }, async () => {})))
  await store.semaphore('permits', { limit: 2 }).hold('k', async () => {})
  return store
}

test('LOCK-06: close() gives the engine memory back: 300 stores opened, used and closed leave wasm memory as the first 20 left it', async () => {
  let after20 = 0
  for (let i = 0; i < 300; i++) {
    const store = await use(await openStore({ storage: memoryStorage() }))
    await store.close()
    if (i === 19) after20 = store._memoryBytes()
  }
  const store = await openStore({ storage: memoryStorage() })
  const grown = store._memoryBytes() - after20
  await store.close()
  // Each store kept ~10 KB of wasm memory when its engine was never freed: 2.7 MB over 280 stores.
  assert.ok(grown <= 2 * 65536, `wasm memory grew ${grown} bytes over 280 stores opened and closed`)
})

test('LOCK-06: a closed store answers ClosedError, its engine freed: a hold, a try, a lock of a new name, inspect', async () => {
  const store = await use(await openStore({ storage: memoryStorage() }))
  const lock = store.lock('self')
  await store.close()
  await assert.rejects(lock.hold('a', () => {}), ClosedError)
  await assert.rejects(lock.tryHold('a', () => {}), ClosedError)
  await assert.rejects(lock.acquire('b'), ClosedError)
  assert.throws(() => store.lock('new name'), ClosedError)
  assert.throws(() => store.inspect(), ClosedError)
  await store.close()
})

test('LOCK-06: a store nobody refers to any more is collected with its engine, closed or not: 300 dropped leave wasm memory as the first 20 left it', async () => {
  // Counted by a FinalizationRegistry: a WeakRef read would keep its store alive through the job
  // that read it, which is the job that collects.
  const collected = []
  const registry = new FinalizationRegistry(i => collected.push(i))
  // Each store made, used and dropped in a call of its own, so that no frame of this test holds one.
  const drop = async i => {
    const closing = i % 2 === 0
    const store = await use(await openStore({ storage: memoryStorage() }), closing)
    if (closing) await store.close()
    registry.register(store, i)
  }
  const memory = async () => (await openStore({ storage: memoryStorage() }))._memoryBytes()
  let after20 = 0
  for (let i = 0; i < 300; i++) {
    await drop(i)
    // An engine unclosed goes back when wasm-bindgen's finalizer runs, after its store was collected.
    // (Under Bun, a store or two may stay a while longer: a stale stack word still held it, STRAY.)
    if (i % 20 === 19) assert.ok(await collectUntil(() => collected.length >= i + 1 - STRAY), `stores collected: ${collected.length} of ${i + 1}`)
    if (i === 19) after20 = await memory()
  }
  const grown = (await memory()) - after20
  assert.ok(grown <= 2 * 65536, `wasm memory grew ${grown} bytes over 280 stores dropped`)
})

test('LOCK-06: a hold waiting for a fence write keeps its store, even once nobody else refers to it, and is answered when the write lands', { timeout: 120_000 }, async () => {
  // Storage whose writes after the open's land only when the test says so.
  const values = new Map()
  let opened = false
  let land
  const landed = new Promise(resolve => (land = resolve))
  const storage = {
    get: key => values.get(key),
    set: (key, value) => {
      if (!opened) return void values.set(key, value)
      return landed.then(() => void values.set(key, value))
    },
  }
  // In a call of its own, so that only the waiting hold's promise is left: the store, its handle and
  // every lease are dropped.
  const waitForWrite = async () => {
    const store = await openStore({ storage })
    opened = true
    const lock = store.lock('fences')
    // A ceiling covers a million fences and the next is asked for at half of it: past the first
    // million, a grant waits for that write.
    let fence = await lock.hold('k', lease => lease.fence)
    const last = fence + 1_000_000 - 1
    while (fence < last) fence = await lock.hold('k', lease => lease.fence)
    // Without a time limit: a wait's timer would keep the store alive by itself.
    const waiting = lock.hold('k', { wait: Infinity }, lease => lease.fence)
    assert.equal(await isSettled(waiting), false, 'a hold past the ceiling waits for the write')
    return { waiting, last }
  }
  const { waiting, last } = await waitForWrite()
  // Collections, and their finalizers run: a store held only weakly would be gone with its waiter.
  await collectUntil(() => false, 10)
  land()
  for (let i = 0; i < 5 && !(await isSettled(waiting)); i++) await settle()
  assert.equal(await isSettled(waiting), true, 'the hold that waited for the fence write was answered once it landed')
  assert.equal(await waiting, last + 1)
})

for (const [how, end] of [
  ['closed', remote => remote.close()],
  // A client that does not reconnect ends with its connection.
  ['whose connection dropped', remote => remote._dropConnectionForTest()],
]) {
  test(`LOCK-06: a remote client ${how} is collected at once, whatever it did: holds free, handed over, a semaphore, a pool claim, a lease and waiters at its end`, async t => {
    const token = 'test-token-0123456789'
    const store = await openStore({ storage: memoryStorage() })
    const server = await store.serve({ port: 0, host: '127.0.0.1', token })
    t.after(async () => {
      await server.close()
      await store.close()
    })
    const collected = []
    const registry = new FinalizationRegistry(i => collected.push(i))
    // Each client made, used and ended in a call of its own, so that no frame of this test holds one.
    const useAndEnd = async i => {
      const remote = await connect(server.url, { token, reconnect: false })
      await useEveryWayAndEnd(remote, i, () => end(remote))
      registry.register(remote, i)
    }
    for (let i = 0; i < 40; i++) await useAndEnd(i)
    // Timers left set at its end (a first renewal, a wait's end, the goodbye's patience) kept each
    // client until they fired, up to 30 s later.
    assert.ok(await collectUntil(() => collected.length >= 40 - STRAY, 200), `clients collected right after their end: ${collected.length} of 40`)
  })
}
