import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openStore } from '../src/entry/node.js'
import { memoryStorage } from '../src/storage/storage.js'

/**
 * LOCK-05: the engine knows a connection by its number alone, so the store numbers every connection
 * to it (store/remote-holds.ts `nextConnection`), whichever server or Durable Object took it: u32,
 * never 0 (a Durable Object's socket without its attachment), and past every number a restarted
 * Durable Object's clients kept (`_connectionTaken`).
 */
test('LOCK-05: a store numbers its connections, past the numbers taken already, wrapping as u32 and skipping 0', async () => {
  const store = await openStore({ storage: memoryStorage() })
  assert.equal(store._nextConnection(), 1)
  assert.equal(store._nextConnection(), 2)
  store._connectionTaken(41)
  assert.equal(store._nextConnection(), 42)
  store._connectionTaken(7)
  assert.equal(store._nextConnection(), 43, 'a number below the last one changes nothing')
  store._connectionTaken(0xffff_ffff)
  assert.equal(store._nextConnection(), 1, 'past the last u32 it wraps, to 1')
  await store.close()
})
