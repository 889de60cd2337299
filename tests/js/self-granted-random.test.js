// Keys granted without the engine, hand-over to it, and back, under a seeded random mix of holds,
// tries, releases, aborts and maxHold deadlines on a test clock. After every step the store must agree
// with a model kept here: one holder a key, waiters served in the order they asked, fences growing in
// grant order, and inspect() listing exactly the held keys with their fences and waiters.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CancelledError, ClosedError, LostError } from 'holdfast'
import { openTestStore, settle } from './helpers.js'

/** xorshift32: the same steps for a seed on every runtime. */
function random(seed) {
  let x = seed | 0 || 1
  return n => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) % n
  }
}

const KEYS = ['a', 'b', 'c']

async function run(seed, steps) {
  const pick = random(seed)
  const { store, clock } = await openTestStore()
  const plain = store.lock('mix', { wait: Infinity })
  const capped = store.lock('mix', { wait: Infinity, maxHold: '50ms' })
  const holders = new Map() // key -> the lease the model says holds it
  const lines = new Map(KEYS.map(k => [k, []])) // key -> waiters in the order they asked
  const grants = [] // fences in grant order
  const where = step => `seed ${seed}, step ${step}`
  let closing = false
  // What the store answers comes in promise callbacks: a failed check there is kept for the step to throw.
  const problems = []
  const checked = fn => value => {
    try {
      fn(value)
    } catch (error) {
      problems.push(error)
    }
  }

  // `step`: when the hold was asked for. A holder revoked at maxHold (lost) no longer holds its key.
  const granted = (key, lease, step) => {
    const before = holders.get(key)
    assert.ok(before === undefined || before.lost, `${where(step)}: ${key} granted while ${before?.fence} held it`)
    holders.set(key, lease)
    grants.push(lease.fence)
  }

  for (let step = 0; step < steps; step++) {
    const key = KEYS[pick(KEYS.length)]
    const op = pick(10)
    if (op < 4) {
      // A hold that may wait; a third of them can be aborted later.
      const handle = pick(3) === 0 ? capped : plain
      const controller = pick(3) === 0 ? new AbortController() : undefined
      const waiter = { key, controller, answered: false }
      lines.get(key).push(waiter)
      handle.acquire(key, { signal: controller?.signal }).then(
        checked(lease => {
          waiter.answered = true
          const line = lines.get(key)
          assert.equal(line[0], waiter, `${where(step)}: ${key} granted out of line`)
          line.shift()
          granted(key, lease, step)
        }),
        checked(error => {
          waiter.answered = true
          const line = lines.get(key)
          line.splice(line.indexOf(waiter), 1)
          assert.ok(closing ? error instanceof ClosedError : error instanceof CancelledError, `${where(step)}: ${error}`)
        }),
      )
    } else if (op < 6) {
      const lease = holders.get(key)
      if (lease) {
        holders.delete(key)
        await lease.release()
      }
    } else if (op < 7) {
      const r = await plain.tryHold(key, lease => lease.fence)
      const free = holders.get(key) === undefined && lines.get(key).length === 0
      assert.equal(r.acquired, free, `${where(step)}: tryHold of ${key} acquired ${r.acquired}, the model says free ${free}`)
      if (r.acquired) grants.push(r.value)
    } else if (op < 8) {
      const waiter = lines.get(key).find(w => w.controller && !w.controller.signal.aborted)
      waiter?.controller.abort()
    } else if (op < 9) {
      clock.advance(pick(40))
    } else {
      await settle()
    }
    await settle()
    if (problems.length) throw problems[0]
    // maxHold: a lease the store revoked is lost, and its key went on.
    for (const [k, lease] of holders) if (lease.lost) holders.delete(k)
    // Leases lost above may have handed their keys to waiters only now.
    await settle()
    for (const [k, lease] of holders) {
      if (lease.lost) {
        assert.ok(lease.signal.reason instanceof LostError)
        holders.delete(k)
      }
    }
    const seen = new Map(store.inspect().map(info => [info.key, info]))
    for (const k of KEYS) {
      const lease = holders.get(k)
      const waiting = lines.get(k).length
      const info = seen.get(k)
      if (!lease && waiting === 0) {
        assert.equal(info, undefined, `${where(step)}: ${k} listed though idle`)
        continue
      }
      assert.ok(info, `${where(step)}: ${k} not listed (holder ${lease?.fence}, ${waiting} waiting)`)
      assert.deepEqual(info.holders.map(h => h.fence), lease ? [lease.fence] : [], `${where(step)}: holders of ${k}`)
      assert.equal(info.waiting, waiting, `${where(step)}: waiters of ${k}`)
    }
  }
  for (let i = 1; i < grants.length; i++) assert.ok(grants[i] > grants[i - 1], `seed ${seed}: fence ${grants[i]} after ${grants[i - 1]}`)
  closing = true
  await store.close()
  await settle()
  if (problems.length) throw problems[0]
  for (const k of KEYS) assert.equal(lines.get(k).length, 0, `seed ${seed}: every waiter of ${k} answered at close`)
  for (const lease of holders.values()) assert.ok(lease.lost && lease.signal.reason instanceof ClosedError)
  return grants.length
}

test('LOCK-01/02/03/06: a random mix of holds, tries, releases, aborts and maxHold agrees with the model, keys granted by the store itself or by the engine', async () => {
  let total = 0
  for (let seed = 1; seed <= 40; seed++) total += await run(seed, 300)
  assert.ok(total > 1000, `${total} grants`)
})
