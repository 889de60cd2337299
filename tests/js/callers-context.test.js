// #17: a caller's own AsyncLocalStorage values follow it into its fn, whether the key was free or
// handed over — in process and over a connection, for locks and semaphores, through hold, acquire and
// tryHold (the scenarios: callers.js; workerStore's, in workerd: tests/workerd). A speed-up that ran a
// waiter's fn within the release that hands it the key, in the releaser's context (as async-lock does),
// or where a connection's answer came in, fails here.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { AsyncLocalStorage } from 'node:async_hooks'
import { openStore, memoryStorage, connect } from 'holdfast'
import { openTestStore } from './helpers.js'
import { callersInTurn, forms, wrongContexts } from './callers.js'

const TOKEN = 'test-token-0123456789'

/** Each form on a lock and on a semaphore of 2 of `store`; asserts every caller saw its own value. */
async function everyForm(als, store, where) {
  const handles = [store.lock('callers'), store.semaphore('callers-sem', { limit: 2 })]
  for (const handle of handles) {
    for (const form of forms) {
      const reports = await callersInTurn(als, handle, `${form}-key`, form)
      assert.deepEqual(wrongContexts(reports), [], `${where}, ${handle.kind} ${form}: ${JSON.stringify(reports)}`)
      if (form !== 'tryHold') continue
      const atOnce = reports.slice(0, 5).filter(r => r.acquired).length
      assert.ok(atOnce >= 1 && atOnce <= (handle.limit ?? 1), `${where}, ${handle.kind} tryHold at once: ${atOnce} acquired`)
      assert.ok(reports.slice(5).every(r => r.acquired), `${where}, ${handle.kind} tryHold in turn: each on a free key`)
    }
  }
}

test('#17: five callers, each in its own AsyncLocalStorage value, hold one key in turn in process: each fn sees its own, free or handed over (lock, semaphore; hold, acquire, tryHold)', async () => {
  const als = new AsyncLocalStorage()
  // The store opened in a context of its own: a fn run where the store's work runs would show it.
  const { store } = await als.run('store', () => openTestStore())
  await everyForm(als, store, 'in process')
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('#17: the same over a connection (connect()): each fn sees its caller’s own value, not the connection’s nor the releaser’s', async () => {
  const als = new AsyncLocalStorage()
  const store = await als.run('server', () => openStore({ storage: memoryStorage() }))
  const server = await als.run('server', () => store.serve({ port: 0, token: TOKEN }))
  // The connection made in a context of its own: its socket's events come in that one.
  const remote = await als.run('connection', () => connect(server.url, { token: TOKEN }))
  try {
    await everyForm(als, remote, 'over a connection')
    // And remote callers behind a local holder: handed over by a release in this process's store.
    const local = store.lock('callers')
    const first = await als.run('local', () => local.acquire('mixed'))
    const waiting = callersInTurn(als, remote.lock('callers'), 'mixed', 'hold')
    await new Promise(resolve => setTimeout(resolve, 20))
    await als.run('local', () => first.release())
    assert.deepEqual(wrongContexts(await waiting), [])
    // The last release is one frame on its way: the key goes idle once it reached the server.
    for (let i = 0; i < 200 && store.inspect().length > 0; i++) await new Promise(resolve => setTimeout(resolve, 5))
    assert.deepEqual(store.inspect(), [])
  } finally {
    await remote.close()
    await store.close()
  }
})
