import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomId, randomWord } from '../src/util/random.js'

test('#17 randomId: 32 lowercase hex digits, every digit in every place, none drawn twice (across refills of its pool)', () => {
  const seen = new Set<string>()
  const digits = Array.from({ length: 32 }, () => new Set<string>())
  for (let i = 0; i < 3_000; i++) {
    const id = randomId()
    assert.match(id, /^[0-9a-f]{32}$/)
    assert.ok(!seen.has(id), id)
    seen.add(id)
    for (let d = 0; d < 32; d++) digits[d]!.add(id[d]!)
  }
  for (const [d, place] of digits.entries()) assert.equal(place.size, 16, `place ${d}: ${[...place].sort().join('')}`)
})

test('#17 randomWord: 32-bit words, every bit seen set and clear, drawn from the pool randomId draws from (both across refills)', () => {
  let ones = 0
  let zeros = 0
  for (let i = 0; i < 10_000; i++) {
    // Interleaved, so that ids and words share the pool past its refills.
    if (i % 3 === 0) assert.match(randomId(), /^[0-9a-f]{32}$/)
    const w = randomWord()
    assert.ok(Number.isInteger(w) && w >= -(2 ** 31) && w < 2 ** 31, String(w))
    ones |= w
    zeros |= ~w
  }
  assert.equal(ones, -1)
  assert.equal(zeros, -1)
})
