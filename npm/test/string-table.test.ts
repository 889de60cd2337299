import { test } from 'node:test'
import assert from 'node:assert/strict'
import { StringTable } from '../src/util/string-table.js'
import { SlotKeyIds } from '../src/store/key-ids.js'

/** A small deterministic generator (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function same(table: StringTable<number>, model: Map<string, number>, absent: string[]): void {
  assert.equal(table.size, model.size)
  for (const [key, value] of model) {
    assert.equal(table.get(key), value, key)
    assert.equal(table.has(key), true, key)
  }
  for (const key of absent)
    if (!model.has(key)) {
      assert.equal(table.get(key), undefined, key)
      assert.equal(table.has(key), false, key)
    }
  assert.deepEqual([...table.entries()].sort(), [...model.entries()].sort())
  assert.deepEqual([...table.values()].sort(), [...model.values()].sort())
  // The load bound that keeps probe runs short and leaves a free slot to end every probe.
  assert.ok(table.size * 2 <= table.capacity, `${table.size} in ${table.capacity}`)
}

test('#17 StringTable: random sets and deletes on few keys (collisions, backward shift) agree with a Map', () => {
  const next = random(7)
  const names = Array.from({ length: 40 }, (_, i) => `k${i}`)
  const table = new StringTable<number>()
  const model = new Map<string, number>()
  for (let op = 0; op < 20_000; op++) {
    const key = names[Math.floor(next() * names.length)]!
    if (next() < 0.5) {
      assert.equal(table.delete(key), model.delete(key), `delete ${key} at ${op}`)
    } else {
      table.set(key, op)
      model.set(key, op)
    }
    if (op % 97 === 0) same(table, model, names)
  }
  same(table, model, names)
})

test('#17 StringTable: keys of one home slot, deleted from the front, middle and back of their run', () => {
  // 40 keys in at most 64 slots: many share a home slot, and runs wrap past the last slot.
  for (const order of ['front', 'middle', 'back'] as const) {
    const table = new StringTable<number>()
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

test('#17 StringTable: grows under its load bound, shrinks after most entries left, keeps its arrays under churn', () => {
  const table = new StringTable<number>()
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

test('#17 SlotKeyIds: the slot and the table together agree with a Map', () => {
  const next = random(11)
  const names = Array.from({ length: 12 }, (_, i) => String(i))
  const keys = new SlotKeyIds()
  const model = new Map<string, number>()
  for (let op = 0; op < 5000; op++) {
    const key = names[Math.floor(next() * names.length)]!
    if (next() < 0.45) assert.equal(keys.delete(key), model.delete(key))
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
