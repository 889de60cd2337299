import { test } from 'node:test'
import assert from 'node:assert/strict'
import { EarlyCancels } from '../src/cloudflare/early-cancels.js'

/**
 * LOCK-06 for HoldfastObject's RPC: the cancels that came before their acquire (early-cancels.ts) are
 * remembered for `keepMs` each, the last `max` of them at most, so that an object cancelled many
 * times for requests it never sees keeps a bounded memory.
 */

test('LOCK-06: a cancel that came first is remembered for keepMs, the last max of them at most', () => {
  let now = 1_000
  const early = new EarlyCancels(() => now, 3, 100)
  early.add('a')
  now += 50
  early.add('b')
  assert.ok(early.has('a') && early.has('b'))
  assert.ok(!early.has('c'), 'never cancelled')
  now += 51
  assert.ok(!early.has('a'), 'past its keepMs')
  assert.ok(early.has('b'))
  early.add('c')
  assert.equal(early.size, 2, 'the ones past keepMs are dropped as others come')
  early.add('d')
  early.add('e')
  assert.equal(early.size, 3, 'the oldest dropped past max')
  assert.ok(!early.has('b') && early.has('c') && early.has('d') && early.has('e'))
  early.add('c')
  early.add('f')
  assert.ok(early.has('c') && !early.has('d'), 'a cancel asked again counts from then')
})

test('LOCK-06 across a restart: cancels kept from before are put back with the time they came, forgotten as ever; add and restore answer what they forgot, for the object to delete', () => {
  let now = 1_000
  const early = new EarlyCancels(() => now, 2, 100)
  assert.deepEqual(early.restore('old', 850), ['old'], 'past keepMs already: forgotten at once')
  assert.deepEqual(early.restore('a', 950), [])
  assert.deepEqual(early.restore('b', 990), [])
  assert.ok(early.has('a') && early.has('b') && !early.has('old'))
  assert.deepEqual(early.restore('a', 999), [], 'remembered already: kept as it was')
  now = 1_051
  assert.ok(!early.has('a'), 'its keepMs counts from when it came, before the restart')
  assert.deepEqual(early.add('c'), ['a'], 'past keepMs')
  assert.deepEqual(early.add('d'), ['b'], 'past max')
  assert.ok(early.has('c') && early.has('d'))
})
