import { test } from 'node:test'
import assert from 'node:assert/strict'
import { IntTable } from '../src/util/int-table.js'
import { seeded } from './seeded.js'

/** Checks `table` against `model` entry by entry, and for keys that are not in it. */
function same(table: IntTable<string>, model: Map<number, string>, absent: number[]): void {
  assert.equal(table.size, model.size)
  for (const [key, value] of model) assert.equal(table.get(key), value, `key ${key}`)
  for (const key of absent) if (!model.has(key)) assert.equal(table.get(key), undefined, `absent key ${key}`)
  assert.deepEqual(table.values().sort(), [...model.values()].sort())
}

test('#17: an IntTable keeps what a Map would through long runs of sequential keys, some kept long (frame ids, holds), growing and shrinking', () => {
  for (const seed of [1, 7, 42]) {
    const pick = seeded(seed)
    const table = new IntTable<string>()
    const model = new Map<number, string>()
    let next = 1
    for (let step = 0; step < 20_000; step++) {
      const r = pick(100)
      if (r < 45 || model.size === 0) {
        // A run of new keys (a burst makes the table grow; emptied, it shrinks).
        const n = r < 2 ? 200 : 1
        for (let k = 0; k < n; k++, next++) {
          table.set(next, `v${next}`)
          model.set(next, `v${next}`)
        }
      } else {
        // Mostly the oldest few go (answered in order), now and then one anywhere.
        const keys = [...model.keys()]
        const key = r < 95 ? keys[pick(Math.min(3, keys.length))]! : keys[pick(keys.length)]!
        assert.equal(table.take(key), model.get(key))
        model.delete(key)
        assert.equal(table.take(key), undefined)
      }
      if (step % 97 === 0) same(table, model, [next, next + 1, next - 1, 0, -1])
    }
    same(table, model, [next])
  }
})

test('#17: an IntTable keeps random and negative keys (lease words), ones that share their low bits, and keys past 2^32', () => {
  const pick = seeded(3)
  const table = new IntTable<string>()
  const model = new Map<number, string>()
  const keys: number[] = []
  for (let i = 0; i < 400; i++) {
    // Keys that share their home slot force long probes and shifts on delete.
    const key = i % 3 === 0 ? (pick(0x1_0000) << 16) | 0 : i % 3 === 1 ? (pick(0x7fff_ffff) - 0x4000_0000) | 0 : 2 ** 32 + pick(1000) * 64
    keys.push(key)
    table.set(key, `v${key}`)
    model.set(key, `v${key}`)
  }
  same(table, model, [1, 2, 3])
  for (let i = 0; i < keys.length; i += 2) {
    table.delete(keys[i]!)
    model.delete(keys[i]!)
    same(table, model, keys)
  }
  // A key set again keeps one entry, with the new value.
  const key = keys[1]!
  table.set(key, 'again')
  model.set(key, 'again')
  same(table, model, keys)
  const { keys: drained, values } = table.drain()
  assert.deepEqual(drained.map((k, i) => [k, values[i]]).sort(), [...model.entries()].sort())
  assert.equal(table.size, 0)
  assert.equal(table.get(key), undefined)
})
