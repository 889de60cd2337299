// Keys granted without the engine, hand-over to it, and back, under a seeded random mix of holds,
// tries, releases, aborts and maxHold deadlines on a test clock, for a lock and for semaphores (whose
// permits the store grants itself too). After every step the store must agree with a model kept here:
// at most `limit` holders a key, waiters served in the order they asked, fences growing in grant order,
// and inspect() listing exactly the held keys with their fences and waiters.
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

async function run(seed, steps, limit = 1) {
  const pick = random(seed)
  const { store, clock } = await openTestStore()
  const named = options => (limit === 1 ? store.lock('mix', options) : store.semaphore('mix', { ...options, limit }))
  const plain = named({ wait: Infinity })
  const capped = named({ wait: Infinity, maxHold: '50ms' })
  const holders = new Map(KEYS.map(k => [k, []])) // key -> the leases the model says hold it, in grant order
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
    const before = holders.get(key).filter(held => !held.lost)
    assert.ok(before.length < limit, `${where(step)}: ${key} granted while ${before.map(held => held.fence)} held it`)
    holders.get(key).push(lease)
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
      const held = holders.get(key)
      if (held.length !== 0) await held.splice(pick(held.length), 1)[0].release()
    } else if (op < 7) {
      const r = await plain.tryHold(key, lease => lease.fence)
      const free = holders.get(key).length < limit && lines.get(key).length === 0
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
    const forgetLost = () => {
      for (const [k, held] of holders) {
        for (const lease of held) if (lease.lost) assert.ok(lease.signal.reason instanceof LostError)
        holders.set(k, held.filter(lease => !lease.lost))
      }
    }
    forgetLost()
    // Leases lost above may have handed their keys to waiters only now.
    await settle()
    forgetLost()
    const seen = new Map(store.inspect().map(info => [info.key, info]))
    for (const k of KEYS) {
      const fences = holders.get(k).map(lease => lease.fence)
      const waiting = lines.get(k).length
      const info = seen.get(k)
      if (fences.length === 0 && waiting === 0) {
        assert.equal(info, undefined, `${where(step)}: ${k} listed though idle`)
        continue
      }
      assert.ok(info, `${where(step)}: ${k} not listed (holders ${fences}, ${waiting} waiting)`)
      const byFence = (a, b) => a - b
      assert.deepEqual(info.holders.map(h => h.fence).sort(byFence), fences.sort(byFence), `${where(step)}: holders of ${k}`)
      assert.equal(info.waiting, waiting, `${where(step)}: waiters of ${k}`)
    }
  }
  for (let i = 1; i < grants.length; i++) assert.ok(grants[i] > grants[i - 1], `seed ${seed}: fence ${grants[i]} after ${grants[i - 1]}`)
  closing = true
  await store.close()
  await settle()
  if (problems.length) throw problems[0]
  for (const k of KEYS) assert.equal(lines.get(k).length, 0, `seed ${seed}: every waiter of ${k} answered at close`)
  for (const held of holders.values()) for (const lease of held) assert.ok(lease.lost && lease.signal.reason instanceof ClosedError)
  return grants.length
}

test('LOCK-01/02/03/06: a random mix of holds, tries, releases, aborts and maxHold agrees with the model, keys granted by the store itself or by the engine', async () => {
  let total = 0
  for (let seed = 1; seed <= 40; seed++) total += await run(seed, 300)
  assert.ok(total > 1000, `${total} grants`)
})

test('#17 LOCK-01/02/03/06: the same random mix on semaphores of 2 and 3 (their permits granted by the store itself, or by the engine) agrees with the model: never more holders than the limit', async () => {
  let total = 0
  for (let seed = 1; seed <= 30; seed++) total += await run(seed, 300, 2 + (seed % 2))
  assert.ok(total > 1000, `${total} grants`)
})
