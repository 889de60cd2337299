import { test } from 'node:test'
import assert from 'node:assert/strict'
import { manualClock } from '../src/testing.js'
import { InvalidError } from '../src/errors.js'

const refused = (place: string, shown: string) => (e: unknown) =>
  e instanceof InvalidError && e.code === 'invalid' && e.message.startsWith(place) && e.message.includes(shown)

test('manualClock(start): a number of ms from 0 to 2^53 − 1; anything else an InvalidError naming the place and the value', () => {
  assert.equal(manualClock().now(), 0)
  assert.equal(manualClock(12.5).now(), 12.5)
  assert.equal(manualClock(1_000_000).now(), 1_000_000)
  assert.equal(manualClock(Number.MAX_SAFE_INTEGER).now(), Number.MAX_SAFE_INTEGER)
  // NaN or Infinity: no wait ever ran out and no maxHold revoked (a timer's `at` never due), or all at once;
  // a string: its time concatenated ('5' + 100); negative: a store that read it trapped and closed.
  const cases: [unknown, string][] = [
    [Number.NaN, 'NaN'],
    [Infinity, 'Infinity'],
    [-1, '-1'],
    [1e300, '1e+300'],
    ['5', '"5"'],
    [null, 'null'],
    [5n, '5'],
  ]
  for (const [bad, shown] of cases) assert.throws(() => manualClock(bad as number), refused('manualClock: start', shown), String(bad))
})

test('manualClock().advance(ms): a number of ms, 0 or more, that keeps the clock within 2^53 − 1; anything else an InvalidError, the clock unmoved', () => {
  const clock = manualClock(100)
  const fired: number[] = []
  clock.setTimeout(() => fired.push(clock.now()), 10)
  clock.advance(0)
  assert.equal(clock.now(), 100)
  // Back in time (a clock is monotonic), NaN, Infinity, text (concatenated: '100' + '10'), past 2^53 − 1.
  const cases: [unknown, string][] = [
    [-1, '-1'],
    [Number.NaN, 'NaN'],
    [Infinity, 'Infinity'],
    ['10', '"10"'],
    [undefined, 'undefined'],
    [Number.MAX_SAFE_INTEGER, String(Number.MAX_SAFE_INTEGER)],
  ]
  for (const [bad, shown] of cases) {
    assert.throws(() => clock.advance(bad as number), refused('manualClock: advance', shown), String(bad))
    assert.equal(clock.now(), 100, `${String(bad)}: the clock did not move`)
    assert.deepEqual(fired, [], `${String(bad)}: no timer ran`)
  }
  clock.advance(10.5)
  assert.equal(clock.now(), 110.5)
  assert.deepEqual(fired, [110])
})
