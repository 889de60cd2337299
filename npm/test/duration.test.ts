import { test } from 'node:test'
import assert from 'node:assert/strict'
import { toMs } from '../src/util/duration.js'
import { InvalidError } from '../src/errors.js'

test('a number is milliseconds; Infinity only where a wait may be without limit', () => {
  assert.equal(toMs(0, 'wait'), 0)
  assert.equal(toMs(250, 'wait'), 250)
  assert.equal(toMs(Infinity, 'wait', true), Infinity)
  for (const bad of [-1, NaN, Infinity, -Infinity]) assert.throws(() => toMs(bad, 'ttl'), InvalidError, String(bad))
})

test('text is whole numbers with units, largest first, no spaces', () => {
  const cases: [string, number][] = [
    ['250ms', 250],
    ['30s', 30_000],
    ['1m30s', 90_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['1d2h3m4s5ms', 93_784_005],
    ['0s', 0],
  ]
  for (const [text, ms] of cases) assert.equal(toMs(text, 'ttl'), ms, text)
})

test('text without a unit, out of order, repeated, spaced or fractional is refused, naming the place and value', () => {
  for (const bad of ['', '250', '30s1m', '1s1s', '1 s', '1.5s', '-1s', 's', '1w', '1ms1s', '30S']) {
    assert.throws(
      () => toMs(bad, 'lock x: wait'),
      e => e instanceof InvalidError && e.message.startsWith('lock x: wait') && e.message.includes(JSON.stringify(bad)),
      bad,
    )
  }
  assert.throws(() => toMs(`${'9'.repeat(20)}d`, 'maxHold'), InvalidError, 'beyond a safe integer')
  assert.throws(
    () => toMs(null, 'ttl'),
    e => e instanceof InvalidError && /not object/.test(e.message),
  )
})
