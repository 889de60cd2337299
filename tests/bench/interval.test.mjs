// The benchmark's ratio intervals (interval.mjs): `node --test tests/bench/interval.test.mjs`.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ratioInterval } from './interval.mjs'

const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y)
  const n = s.length
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2
}

test('fewer than 5 rounds, rounds that do not pair up, or a round without a speed give no interval', () => {
  assert.equal(ratioInterval([1, 2, 3, 4], [1, 2, 3, 4]), undefined)
  assert.equal(ratioInterval([1, 2, 3, 4, 5], [1, 2, 3, 4]), undefined)
  assert.equal(ratioInterval([1, 2, 3, 4, 5], [1, 2, 3, 4, 0]), undefined)
  assert.equal(ratioInterval([1, 2, 3, 4, undefined], [1, 2, 3, 4, 5]), undefined)
})

test('an adapter against itself, round for round, reads exactly 1', () => {
  const a = [5, 9, 7, 6, 8, 7.5, 6.5]
  assert.deepEqual(ratioInterval(a, a), [1, 1])
})

test('rounds of steady speeds give a narrow interval around their ratio', () => {
  const b = [100, 101, 99, 100, 102, 98, 100, 101, 99]
  const a = b.map((x) => 2 * x)
  const [low, high] = ratioInterval(a, b)
  assert.ok(low <= 2 && high >= 2, `${low}..${high}`)
  assert.ok(high - low < 0.05, `${low}..${high}`)
})

test('noisy rounds give a wider interval, which holds the ratio of the medians', () => {
  const b = [100, 140, 80, 120, 90, 130, 70, 110, 100, 95, 125]
  const a = [95, 150, 70, 100, 110, 120, 85, 90, 105, 80, 140]
  const point = median(a) / median(b)
  const [low, high] = ratioInterval(a, b)
  assert.ok(low <= point && point <= high, `${low}..${point}..${high}`)
  assert.ok(high - low > 0.1, `${low}..${high}`)
  const steady = ratioInterval(
    b.map((x) => x * point),
    b,
  )
  assert.ok(steady[1] - steady[0] < high - low)
})

test('the same rounds always give the same interval', () => {
  const a = [3, 5, 4, 6, 5, 4.5, 3.5]
  const b = [4, 4, 5, 5, 4.5, 4, 5.5]
  assert.deepEqual(ratioInterval(a, b), ratioInterval(a, b))
})
