import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Line } from '../src/util/line.js'
import { seeded } from './seeded.js'

test('#17: a Line answers its things first in, first out, less those removed, through long runs (its front dropped as it grows)', () => {
  for (const seed of [1, 7, 42]) {
    const pick = seeded(seed)
    const line = new Line<number>()
    const model: number[] = []
    let next = 0
    for (let step = 0; step < 20_000; step++) {
      const r = pick(10)
      if (r < 5) {
        line.push(next)
        model.push(next++)
      } else if (r < 9) {
        assert.equal(line.shift(), model.shift(), `seed ${seed} step ${step}`)
      } else if (model.length > 0) {
        const thing = model[pick(model.length)]!
        assert.equal(line.remove(thing), true)
        model.splice(model.indexOf(thing), 1)
        assert.equal(line.remove(thing), false, 'a thing removed is no longer in line')
      }
      assert.equal(line.size, model.length)
    }
    assert.deepEqual(line.drain(), model)
    assert.equal(line.size, 0)
    assert.equal(line.shift(), undefined)
  }
})

test('#17: a Line of 5,000 mostly taken from its front (past where its front is dropped) answers the rest in order', () => {
  const line = new Line<object>()
  for (let i = 0; i < 5_000; i++) line.push({ i })
  for (let i = 0; i < 4_000; i++) assert.deepEqual(line.shift(), { i })
  assert.equal(line.size, 1_000)
  assert.deepEqual(
    line.drain().map(t => (t as { i: number }).i),
    Array.from({ length: 1_000 }, (_, i) => 4_000 + i),
  )
})
