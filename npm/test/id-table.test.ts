import { test } from 'node:test'
import assert from 'node:assert/strict'
import { IdTable } from '../src/store/id-table.js'
import { randomId } from '../src/util/random.js'

test('#17 IdTable: agrees with a Map over random sets and deletes, through growth, shrinking and back-shifted runs', () => {
  const table = new IdTable<number>()
  const model = new Map<string, number>()
  let live: string[] = []
  // A small pool of ids, so that deletes and sets of ids already there are frequent; then a large one.
  for (const [rounds, pool] of [
    [20_000, 40],
    [20_000, 3_000],
    [20_000, 10],
  ] as const) {
    const ids = Array.from({ length: pool }, () => randomId())
    for (let r = 0; r < rounds; r++) {
      const id = ids[(Math.random() * pool) | 0]!
      if (Math.random() < 0.5) {
        assert.equal(table.set(id, r), true)
        model.set(id, r)
      } else assert.equal(table.delete(id), model.delete(id))
      if (r % 97 === 0) {
        assert.equal(table.size, model.size)
        for (const k of ids) assert.equal(table.get(k), model.get(k), k)
      }
    }
    live = [...model.keys()]
  }
  for (const k of live) assert.equal(table.has(k), true)
  for (const k of live) table.delete(k)
  assert.equal(table.size, 0)
})

test('#17 IdTable: only 32-hex-digit ids are set or found; case is kept as given', () => {
  const table = new IdTable<string>()
  const id = 'ABCDEF0123456789abcdef0123456789'
  assert.equal(table.set(id, 'a'), true)
  assert.equal(table.get(id), 'a')
  assert.equal(table.get(id.toLowerCase()), undefined)
  for (const bad of ['', 'abc', `${id}0`, `${id.slice(0, 31)}g`, `${id.slice(0, 31)}\u00e9`]) {
    assert.equal(table.set(bad, 'x'), false, bad)
    assert.equal(table.get(bad), undefined, bad)
    assert.equal(table.delete(bad), false, bad)
  }
  assert.equal(table.size, 1)
})
