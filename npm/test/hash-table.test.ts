import { test } from 'node:test'
import assert from 'node:assert/strict'
import { type HashTable, intTable, stringTable } from '../src/util/hash-table.js'
import { SlotKeyIds } from '../src/store/key-ids.js'
import { seeded } from './seeded.js'

/** Checks `table` against `model` entry by entry, and for keys that are not in it. */
function same<K, V>(table: HashTable<K, V>, model: Map<K, V>, absent: K[]): void {
  assert.equal(table.size, model.size)
  for (const [key, value] of model) {
    assert.equal(table.get(key), value, `key ${key}`)
    assert.equal(table.has(key), true, `key ${key}`)
  }
  for (const key of absent)
    if (!model.has(key)) {
      assert.equal(table.get(key), undefined, `absent key ${key}`)
      assert.equal(table.has(key), false, `absent key ${key}`)
    }
  // With the size equal and every key of the model found, the values are the same multiset only if
  // nothing else is in the table.
  assert.deepEqual(table.values().map(String).sort(), [...model.values()].map(String).sort())
  // The load bound that keeps probe runs short and leaves a free slot to end every probe.
  assert.ok(table.size * 2 <= table.capacity, `${table.size} in ${table.capacity}`)
}

test('#17: an integer HashTable keeps what a Map would through long runs of sequential keys, some kept long (frame ids, holds), growing and shrinking', () => {
  for (const seed of [1, 7, 42]) {
    const pick = seeded(seed)
    const table = intTable<string>()
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

test('#17: an integer HashTable keeps random and negative keys (lease words), ones that share their low bits, and keys past 2^32', () => {
  const pick = seeded(3)
  const table = intTable<string>()
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

test('#17: a string HashTable: random sets and deletes on few keys (collisions, backward shift) agree with a Map', () => {
  const pick = seeded(7)
  const names = Array.from({ length: 40 }, (_, i) => `k${i}`)
  const table = stringTable<number>()
  const model = new Map<string, number>()
  for (let op = 0; op < 20_000; op++) {
    const key = names[pick(names.length)]!
    if (pick(2) === 0) {
      assert.equal(table.delete(key), model.delete(key), `delete ${key} at ${op}`)
    } else {
      table.set(key, op)
      model.set(key, op)
    }
    if (op % 97 === 0) same(table, model, names)
  }
  same(table, model, names)
})

test('#17: a string HashTable: keys of one home slot, deleted from the front, middle and back of their run', () => {
  // 40 keys in at most 64 slots: many share a home slot, and runs wrap past the last slot.
  for (const order of ['front', 'middle', 'back'] as const) {
    const table = stringTable<number>()
    const model = new Map<string, number>()
    const names = Array.from({ length: 40 }, (_, i) => `key-${i}`)
    names.forEach((key, i) => {
      table.set(key, i)
      model.set(key, i)
    })
    same(table, model, names)
    while (model.size > 0) {
      const keys = [...model.keys()]
      const key = order === 'front' ? keys[0]! : order === 'back' ? keys[keys.length - 1]! : keys[keys.length >> 1]!
      assert.equal(table.delete(key), true, key)
      model.delete(key)
      assert.equal(table.delete(key), false, `${key} again`)
      same(table, model, names)
    }
  }
})

test('#17: a string HashTable: grows under its load bound, shrinks after most entries left, keeps its arrays under churn', () => {
  const table = stringTable<number>()
  const model = new Map<string, number>()
  const names = Array.from({ length: 5000 }, (_, i) => `name/${i}`)
  for (const [i, key] of names.entries()) {
    table.set(key, i)
    model.set(key, i)
  }
  same(table, model, names.slice(0, 50))
  assert.ok(table.capacity >= 10_000)
  for (const key of names.slice(10)) {
    table.delete(key)
    model.delete(key)
  }
  same(table, model, names)
  assert.ok(table.capacity <= 64, `capacity ${table.capacity} after shrinking to 10`)
  // One key in and out, many times over: no growth (no tombstones fill the table).
  const before = table.capacity
  for (let i = 0; i < 10_000; i++) {
    table.set(`churn ${i}`, i)
    assert.equal(table.get(`churn ${i}`), i)
    assert.equal(table.delete(`churn ${i}`), true)
  }
  assert.equal(table.capacity, before)
  same(table, model, names)
  table.clear()
  same(table, new Map(), names)
  table.set('a', 1)
  assert.equal(table.get('a'), 1)
})

test('#17: SlotKeyIds: the slot and the table together agree with a Map', () => {
  const pick = seeded(11)
  const names = Array.from({ length: 12 }, (_, i) => String(i))
  const keys = new SlotKeyIds()
  const model = new Map<string, number>()
  for (let op = 0; op < 5000; op++) {
    const key = names[pick(names.length)]!
    if (pick(100) < 45) assert.equal(keys.delete(key), model.delete(key))
    else {
      keys.set(key, op)
      model.set(key, op)
    }
    assert.equal(keys.size, model.size)
    for (const name of names) {
      assert.equal(keys.get(name), model.get(name), name)
      assert.equal(keys.has(name), model.has(name), name)
    }
    assert.deepEqual([...keys.values()].sort(), [...model.values()].sort())
  }
  keys.clear()
  assert.equal(keys.size, 0)
  assert.deepEqual([...keys.values()], [])
})
