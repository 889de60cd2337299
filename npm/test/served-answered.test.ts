import { test } from 'node:test'
import assert from 'node:assert/strict'
import { encodeClient } from '../src/remote/wire.js'
import { servedSession } from './served.js'

/**
 * POOL-02 over a connection at a store's close (store.ts `close`): once the pools' writes landed, the
 * store waits for `Protocol.answered()` before it closes the connections, so that the answers those
 * writes gave reach their callers. It must resolve only once each pool frame asked was answered on
 * its connection, however many turns its answer takes after its promise settles.
 */
test('POOL-02: Protocol.answered() resolves once the answer of every pool frame asked so far was sent, not before', async () => {
  let settle!: (released: number) => void
  const release = new Promise<number>(resolve => (settle = resolve))
  // A store whose release answers late, through a few more turns than a bare promise.
  const served = { _servedPool: () => ({}), _releaseServed: () => release.then(n => n).then(n => Promise.resolve(n)) }
  const s = await servedSession({ served })
  const tick = () => new Promise(resolve => setImmediate(resolve))
  let answered = false
  void s.protocol.answered().then(() => (answered = true))
  await tick()
  assert.equal(answered, true, 'nothing asked: nothing to wait for')
  s.send(encodeClient(2, { type: 'pool', op: 'release', pool: 'seats', capacity: 0, claim: 'a', value: 0 }))
  answered = false
  let sentFirst: unknown
  void s.protocol.answered().then(() => {
    answered = true
    sentFirst = s.frames().map(f => [f.id, f.type, (f as { value?: number }).value])
  })
  await tick()
  assert.equal(answered, false, 'the release is not answered yet')
  settle(1)
  await tick()
  assert.equal(answered, true)
  assert.deepEqual(sentFirst, [[2, 'count', 1]], 'its answer was sent first')
})

test('POOL-02: an answer that could not be made counts as sent: Protocol.answered() waits for the others, then resolves, never rejects', async () => {
  let settle!: (released: number) => void
  const release = new Promise<number>(resolve => (settle = resolve))
  // A claim the store answers with nothing: making its answer throws (a bug, but one that must not
  // keep a closing store's connections open, nor close them before the other answers were sent).
  const pool = { _claimFor: () => Promise.resolve(undefined) }
  const served = { _servedPool: () => pool, _releaseServed: () => release }
  const s = await servedSession({ served })
  const tick = () => new Promise(resolve => setImmediate(resolve))
  s.send(encodeClient(2, { type: 'claim', pool: 'seats', capacity: 0, claim: 'a', n: 1, wait: 0, ttl: 0 }))
  s.send(encodeClient(3, { type: 'pool', op: 'release', pool: 'seats', capacity: 0, claim: 'b', value: 0 }))
  let answered: string | undefined
  s.protocol.answered().then(
    () => (answered = 'resolved'),
    () => (answered = 'rejected'),
  )
  await tick()
  assert.equal(answered, undefined, 'the release is not answered yet')
  settle(1)
  await tick()
  assert.equal(answered, 'resolved')
  assert.deepEqual(
    s.frames().map(f => [f.id, f.type]),
    [[3, 'count']],
  )
})
