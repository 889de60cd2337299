import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomId } from '../src/util/random.js'

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
