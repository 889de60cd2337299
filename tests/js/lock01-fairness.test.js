// LOCK-01: one holder of a key at a time (limit for a semaphore), waiters served strictly in the
// order they came, no barging, semaphores head-of-line.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openTestStore, settle, gate, isSettled } from './helpers.js'

test('LOCK-01: a key has one holder at a time and waiters are served in the order they came', async () => {
  const { store } = await openTestStore()
  const summaries = store.lock('summaries', { wait: Infinity })
  let inside = 0
  let most = 0
  const order = []
  const holds = Array.from({ length: 50 }, (_, i) =>
    summaries.hold('chat-1', async () => {
      inside++
      most = Math.max(most, inside)
      order.push(i)
      await settle()
      inside--
    }),
  )
  await Promise.all(holds)
  assert.equal(most, 1)
  assert.deepEqual(order, Array.from({ length: 50 }, (_, i) => i))
  await store.close()
})

test('LOCK-01: distinct keys do not wait for each other', async () => {
  const { store } = await openTestStore()
  const l = store.lock('summaries')
  const g = gate()
  const a = l.hold('a', () => g.promise)
  const b = await l.tryHold('b', () => 'b ran')
  assert.deepEqual(b, { acquired: true, value: 'b ran' })
  g.open()
  await a
  await store.close()
})

test('LOCK-01: no barging — while anyone waits, a new hold or tryHold does not jump the line, not even at the handover', async () => {
  const { store } = await openTestStore()
  const l = store.lock('summaries', { wait: Infinity })
  const first = await l.acquire('k')
  const order = []
  // The waiter keeps the key a turn: its fn may start within release() itself (handed the key there).
  const waiting = l.hold('k', async () => {
    order.push('waiter')
    await settle()
  })
  await settle()
  // The key is released and, in the same instant, tried and held again by newcomers.
  await first.release()
  const tried = await l.tryHold('k', () => order.push('barger'))
  assert.deepEqual(tried, { acquired: false })
  const late = l.hold('k', () => order.push('late'))
  await Promise.all([waiting, late])
  assert.deepEqual(order, ['waiter', 'late'])
  await store.close()
})

test('LOCK-01: a semaphore admits its limit and serves its waiters first come first served (head-of-line)', async () => {
  const { store } = await openTestStore()
  const uploads = store.semaphore('uploads', { limit: 3, wait: Infinity })
  let inside = 0
  let most = 0
  const entered = []
  const gates = Array.from({ length: 10 }, () => gate())
  const holds = gates.map((g, i) =>
    uploads.hold('user-1', async permit => {
      inside++
      most = Math.max(most, inside)
      entered.push(i)
      assert.ok(permit.fence >= 1)
      await g.promise
      inside--
    }),
  )
  await settle()
  assert.deepEqual(entered, [0, 1, 2])
  assert.equal((await uploads.tryHold('user-1', () => 1)).acquired, false, 'full: a try is refused')
  // Let them go out of order: the freed permits still go to the head of the line.
  gates[2].open()
  await settle()
  assert.deepEqual(entered, [0, 1, 2, 3])
  gates[0].open()
  await settle()
  assert.deepEqual(entered, [0, 1, 2, 3, 4])
  for (const g of gates) g.open()
  await Promise.all(holds)
  assert.equal(most, 3)
  assert.deepEqual(entered, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
  await store.close()
})

test('LOCK-01: a lock and a semaphore of one name are different things', async () => {
  const { store } = await openTestStore()
  const lock = store.lock('jobs')
  const sem = store.semaphore('jobs', { limit: 1 })
  const held = await lock.acquire('nightly')
  const other = await sem.tryHold('nightly', () => 'ran')
  assert.deepEqual(other, { acquired: true, value: 'ran' })
  await held.release()
  await store.close()
})

test('LOCK-01: handles of one name share keys, whatever their ttl, maxHold and wait', async () => {
  const { store } = await openTestStore()
  const a = store.lock('summaries', { ttl: '10s' })
  const b = store.lock('summaries', { ttl: '1m', maxHold: '5m', wait: 0 })
  const held = await a.acquire('chat')
  assert.equal((await b.tryHold('chat', () => 1)).acquired, false)
  await held.release()
  assert.equal((await b.tryHold('chat', () => 1)).acquired, true)
  await store.close()
})

test('LOCK-01: holds without wait limit queue and hand over in order without deadlines, and a wait limit still runs out', async () => {
  // With no deadline set anywhere, holds of a busy key and releases to the next are answered without
  // reading the clock: the line must stay FIFO with one holder, and a hold with a wait limit that
  // joins it must still time out from the time it asked.
  const { store, clock } = await openTestStore()
  const l = store.lock('x', { wait: Infinity })
  const order = []
  let inside = 0
  const first = await l.acquire('k')
  const holds = []
  for (let i = 0; i < 5; i++) {
    holds.push(
      l.hold('k', async () => {
        assert.equal(++inside, 1, 'one holder at a time')
        order.push(i)
        await settle()
        inside--
      }),
    )
  }
  clock.advance(50)
  const limited = l.hold('k', { wait: 100 }, () => 'never')
  clock.advance(99)
  assert.equal(await isSettled(limited), false, 'still waiting 99 ms after it asked')
  clock.advance(1)
  await assert.rejects(limited, { code: 'in_use' })
  await first.release()
  await Promise.all(holds)
  assert.deepEqual(order, [0, 1, 2, 3, 4])
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('LOCK-01: keys busy at the same time stay exclusive whichever lets go first, and idle keys are forgotten', async () => {
  // The store keeps its first busy key of a resource apart from the others: exclusion and tryHold
  // must not depend on which of them became busy first or went idle first.
  const { store } = await openTestStore()
  const l = store.lock('x', { wait: Infinity })
  const leases = {}
  for (const k of ['a', 'b', 'c']) leases[k] = await l.acquire(k)
  for (const order of [['a', 'b', 'c'], ['c', 'a', 'b']]) {
    for (const k of ['a', 'b', 'c']) assert.deepEqual(await l.tryHold(k, () => 'ran'), { acquired: false }, `${k} is held`)
    const waiting = order.map(k => l.acquire(k))
    for (const k of order) {
      await leases[k].release()
      leases[k] = await waiting[order.indexOf(k)]
      for (const other of ['a', 'b', 'c']) assert.deepEqual(await l.tryHold(other, () => 'ran'), { acquired: false }, `${other} is held after ${k} changed hands`)
    }
  }
  for (const k of ['b', 'a', 'c']) await leases[k].release()
  assert.deepEqual(store.inspect(), [])
  for (const k of ['c', 'b', 'a']) assert.deepEqual(await l.tryHold(k, () => k), { acquired: true, value: k })
  await store.close()
})

test('LOCK-01: waiters whose fns answer at once are handed the key one after another, in order, however many', async () => {
  // Where a waiter's fn runs within the release that hands it the key, a fn that answers at once
  // releases again at once: each such grant must wait its turn behind the fn running, not run deeper in
  // the stack (9,000 of them would overflow it), and in the order the engine granted them.
  const { store } = await openTestStore()
  const l = store.lock('handover', { wait: Infinity })
  const s = store.semaphore('handover', { limit: 3 })
  for (const handle of [l, s]) {
    const gates = Array.from({ length: handle === l ? 1 : 3 }, () => gate())
    const first = gates.map(g => handle.hold('k', () => g.promise))
    await settle()
    const order = []
    let inside = 0
    let most = 0
    const waiters = Array.from({ length: 9_000 }, (_, i) =>
      handle.hold('k', () => {
        most = Math.max(most, ++inside)
        order.push(i)
        inside--
        return i
      }),
    )
    for (const g of gates) g.open()
    await Promise.all(first)
    const answers = await Promise.all(waiters)
    assert.equal(order.length, 9_000)
    assert.ok(order.every((v, i) => v === i), 'served in the order they came')
    assert.ok(answers.every((v, i) => v === i), 'each hold answers its own fn')
    assert.equal(most, 1)
  }
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('LOCK-01: the next holder never starts inside another caller\'s call — lease.release(), the clock', async () => {
  // A waiter may be handed the key within the release of a hold whose fn settled (nothing of anyone's
  // is on the stack then); any other call that lets a key go returns before the next fn starts, on
  // every runtime alike.
  const { store, clock } = await openTestStore()
  const l = store.lock('calls', { wait: Infinity })
  const order = []

  // lease.release()
  const lease = await l.acquire('k')
  const next = l.hold('k', () => order.push('next fn'))
  await settle()
  lease.release()
  order.push('release returned')
  await next
  assert.deepEqual(order.splice(0), ['release returned', 'next fn'])

  // The clock: maxHold revokes the holder and hands the key to the waiter within advance().
  const timed = store.lock('timed', { wait: Infinity, maxHold: '1s' })
  const stuck = timed.hold('k', () => new Promise(() => {})) // never settles: revoked at maxHold
  const after = timed.hold('k', () => order.push('waiter fn'))
  await settle()
  clock.advance(1_000)
  order.push('advance returned')
  await after
  assert.deepEqual(order.splice(0), ['advance returned', 'waiter fn'])
  void stuck.catch(() => {})
  await store.close()
})
