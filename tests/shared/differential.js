// Shared by the suites that check another store answers as the in-process one does (tests/js for a
// client over a connection, tests/redis for `holdfast/redis`): one scenario of calls, bad inputs among
// them, run on each store, written down as a transcript of outcomes: what a call answered (its shape,
// fences and random ids left out), or the `code` and message it was refused with. Users switch stores
// and expect the same answers: a line that differs is a defect unless the README says why. The random
// scenarios (differential-random.js) write their answers down with the same helpers (shape, outcome).
import assert from 'node:assert/strict'

/** What a call answered, with what differs by run (fences, ids, times) left out. */
export function shape(value) {
  if (value === undefined || value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map(shape)
  if (typeof value.hold === 'function') return 'a handle'
  if (typeof value.claim === 'function') return 'a pool'
  if (typeof value.fence === 'number' && 'signal' in value) return { lease: `${value.kind} ${value.name} ${value.key}`, lost: value.lost }
  const out = {}
  for (const [k, v] of Object.entries(value)) {
    if (k === 'fence' || k === 'heldMs' || k === 'id') out[k] = typeof v
    else if (k === 'claim') out[k] = v && { id: typeof v.id, units: v.units }
    else out[k] = shape(v)
  }
  return out
}

/** What a call was refused with: its `code` (or the value thrown, said), and its message. */
export const failure = e => ({ code: e?.code ?? String(e), message: e?.message })

/** Runs `call`, thrown at once or rejected alike: `{ ok }` or `{ code, message }`. */
export async function outcome(call) {
  try {
    return { ok: shape(await call()) }
  } catch (e) {
    return failure(e)
  }
}

/** Polls `store.inspect()` (real sockets and Redis take a few ms) until an entry matches. */
async function until(store, match) {
  for (let i = 0; i < 500; i++) {
    if ((await store.inspect()).some(match)) return
    await new Promise(r => setTimeout(r, 5))
  }
  throw new Error('the hold never waited')
}

/** A signal aborted already, as a caller passes one whose work was called off. */
export const aborted = () => AbortSignal.abort(new Error('gone'))

/**
 * The scenario, on `store` (a store, a client or a Redis store), each step named: its transcript, one
 * `[step, outcome]` a line. Nothing in it waits on time (a hold in line is awaited by inspect()).
 */
export async function scenario(store) {
  const lines = []
  const step = async (name, call) => lines.push([name, await outcome(call)])
  const fn = () => 'ran'

  // Handles: bad names, bad options.
  await step('lock bad name', () => store.lock('Bad Name'))
  await step('lock empty name', () => store.lock(''))
  await step('lock ttl 0', () => store.lock('jobs', { ttl: 0 }).hold('k', fn))
  await step('lock ttl under 1s', () => store.lock('jobs', { ttl: '500ms' }).hold('k', fn))
  await step('lock ttl over 1h', () => store.lock('jobs', { ttl: '2h' }).hold('k', fn))
  await step('lock ttl no unit', () => store.lock('jobs', { ttl: '250' }).hold('k', fn))
  await step('lock ttl negative', () => store.lock('jobs', { ttl: -5 }).hold('k', fn))
  await step('lock maxHold 0', () => store.lock('jobs', { maxHold: 0 }).hold('k', fn))
  await step('lock wait bad', () => store.lock('jobs', { wait: 'soon' }).hold('k', fn))
  await step('lock unknown option', () => store.lock('jobs', { tll: '1s' }).hold('k', fn))
  await step('semaphore no limit', () => store.semaphore('slots', {}).hold('k', fn))
  await step('semaphore limit 0', () => store.semaphore('slots', { limit: 0 }).hold('k', fn))
  await step('semaphore limit over', () => store.semaphore('slots', { limit: 10_001 }).hold('k', fn))
  await step('semaphore limit not whole', () => store.semaphore('slots', { limit: 1.5 }).hold('k', fn))
  await step('semaphore bad name', () => store.semaphore('-slots', { limit: 2 }))

  // Keys and hold's arguments.
  const jobs = store.lock('jobs')
  await step('hold free key', () => jobs.hold('k', fn))
  await step('hold number key', () => jobs.hold(42, lease => lease.key))
  await step('hold empty key', () => jobs.hold('', fn))
  await step('hold lone surrogate key', () => jobs.hold('\ud83d', fn))
  await step('hold key too long', () => jobs.hold('x'.repeat(1025), fn))
  await step('hold fractional key', () => jobs.hold(1.5, fn))
  await step('hold object key', () => jobs.hold({}, fn))
  await step('hold no fn', () => jobs.hold('k'))
  await step('hold options after fn', () => jobs.hold('k', fn, { wait: 0 }))
  await step('hold unknown option', () => jobs.hold('k', { wiat: 0 }, fn))
  await step('hold bad wait', () => jobs.hold('k', { wait: -1 }, fn))
  await step('hold fn throws', () => jobs.hold('k', () => { throw new Error('own') }))
  await step('hold aborted signal, free key', () => jobs.hold('k', { signal: aborted() }, fn))
  await step('tryHold aborted signal, free key', () => jobs.tryHold('k', { signal: aborted() }, fn))
  await step('acquire aborted signal', () => jobs.acquire('k', { signal: aborted() }))

  // A busy key.
  const lease = await jobs.acquire('busy')
  await step('tryHold busy key', () => jobs.tryHold('busy', fn))
  await step('hold busy key wait 0', () => jobs.hold('busy', { wait: 0 }, fn))
  await step('acquire busy key wait 0', () => jobs.acquire('busy', { wait: 0 }))
  await step('hold busy key aborted signal', () => jobs.hold('busy', { signal: aborted() }, fn))
  await step('hold waiting, then aborted', async () => {
    const stop = new AbortController()
    const waiting = jobs.hold('busy', { wait: Infinity, signal: stop.signal }, fn)
    await until(store, e => e.name === 'jobs' && e.key === 'busy' && e.waiting === 1)
    stop.abort(new Error('gone'))
    return await waiting
  })
  await step('inspect busy key', async () => (await store.inspect()).filter(e => e.name === 'jobs'))
  await step('inspect unknown key', async () => (await store.inspect()).find(e => e.key === 'nobody'))
  await step('release', () => lease.release())
  await step('release twice', () => lease.release())
  await step('lease lost after release', () => lease.lost)
  await step('tryHold freed key', () => jobs.tryHold('busy', fn))

  await step('hold inside its own hold', () => jobs.hold('inner', () => jobs.hold('inner', fn)))
  await step('tryHold inside its own hold', () => jobs.hold('inner', () => jobs.tryHold('inner', fn)))
  await step('hold key 2^53', () => jobs.hold(2 ** 53, fn))
  await step('hold key -0', () => jobs.hold(-0, lease => lease.key))
  await step('hold bad signal', () => jobs.hold('k', { signal: 'no' }, fn))
  await step('tryHold unknown option', () => jobs.tryHold('k', { wait: 0 }, fn))
  await step('acquire then hold it elsewhere, wait 0', async () => {
    const held = await jobs.acquire('pair')
    try {
      return await store.lock('jobs', { ttl: '1m' }).hold('pair', { wait: 0 }, fn)
    } finally {
      await held.release()
    }
  })

  // Semaphores: the limit must agree while a handle lives.
  const slots = store.semaphore('slots', { limit: 2 })
  await step('semaphore hold', () => slots.hold('k', permit => permit.kind))
  await step('semaphore limit mismatch', () => store.semaphore('slots', { limit: 3 }).hold('k', fn))
  await step('semaphore limit mismatch, a key busy', async () => {
    const permit = await slots.acquire('k')
    try {
      return await store.semaphore('slots', { limit: 3 }).hold('k', fn)
    } finally {
      await permit.release()
    }
  })
  await step('semaphore full, tryHold', async () => {
    const permits = [await slots.acquire('full'), await slots.acquire('full')]
    try {
      return [await slots.tryHold('full', fn), (await store.inspect()).filter(e => e.name === 'slots')]
    } finally {
      for (const permit of permits) await permit.release()
    }
  })
  await step('semaphore same limit', () => store.semaphore('slots', { limit: 2 }).tryHold('k', fn))

  // Pools.
  await step('pool bad name', () => store.pool('Seats!', { capacity: 3 }))
  await step('pool capacity 0', () => store.pool('seats', { capacity: 0 }).remaining())
  await step('pool capacity not whole', () => store.pool('seats', { capacity: 2.5 }).remaining())
  await step('pool unknown option', () => store.pool('seats', { capacity: 3, size: 3 }).remaining())
  await step('pool unknown, no capacity', () => store.pool('nowhere').remaining())
  const seats = store.pool('seats', { capacity: 3 })
  await step('pool remaining', () => seats.remaining())
  await step('pool capacity mismatch', () => store.pool('seats', { capacity: 4 }).remaining())
  await step('pool capacity mismatch, claim with id', () => store.pool('seats', { capacity: 4 }).claim(1, { id: 'order-0' }))
  await step('pool existing, no capacity', () => store.pool('seats').remaining())
  await step('claim 0', () => seats.claim(0))
  await step('claim negative', () => seats.claim(-1))
  await step('claim not whole', () => seats.claim(1.5))
  await step('claim over capacity', () => seats.claim(4))
  await step('claim ttl 0', () => seats.claim(1, { ttl: 0 }))
  await step('claim ttl over 30d', () => seats.claim(1, { ttl: '31d' }))
  await step('claim empty id', () => seats.claim(1, { id: '' }))
  await step('claim id too long', () => seats.claim(1, { id: 'x'.repeat(129) }))
  await step('claim unknown option', () => seats.claim(1, { idd: 'a' }))
  await step('claim aborted signal', () => seats.claim(1, { signal: aborted() }))
  await step('claim with id', () => seats.claim(2, { id: 'order-1' }))
  await step('claim same id again', () => seats.claim(2, { id: 'order-1' }))
  await step('claim same id, other n', () => seats.claim(1, { id: 'order-1' }))
  await step('claim more than left', () => seats.claim(2))
  await step('resize below claimed', () => seats.resize(1))
  await step('resize 0', () => seats.resize(0))
  await step('resize not whole', () => seats.resize(2.5))
  await step('confirm unknown id', () => seats.confirm('no-such-claim'))
  await step('confirm claim without ttl', () => seats.confirm('order-1'))
  await step('release unknown id', () => seats.release('no-such-claim'))
  await step('release by id', () => seats.release('order-1'))
  await step('release by id twice', () => seats.release('order-1'))
  const ttlClaim = await seats.claim(1, { ttl: '1h', id: 'order-2' })
  await step('confirm ttl claim', () => ttlClaim.claim.confirm())
  await step('confirm ttl claim twice', () => ttlClaim.claim.confirm())
  await step('claim release', () => ttlClaim.claim.release())
  await step('claim release twice', () => ttlClaim.claim.release())
  await step('confirm after release', () => ttlClaim.claim.confirm())
  await step('resize up', () => seats.resize(5))
  await step('claim past the old capacity', () => seats.claim(4))
  await step('claim bad wait', () => seats.claim(1, { wait: 'soon' }))
  await step('claim bad signal', () => seats.claim(1, { signal: 'no' }))
  await step('resize same capacity', () => seats.resize(5))
  await step('claim without id, release twice', async () => {
    const c = await seats.claim(1)
    return [c.claimed, await c.claim.release(), await c.claim.release()]
  })
  await step('claim id asked again while it waits, other n', async () => {
    const stop = new AbortController()
    const waiting = seats.claim(5, { id: 'order-w', wait: Infinity, signal: stop.signal }).catch(e => e.code)
    try {
      return await seats.claim(4, { id: 'order-w' })
    } finally {
      stop.abort()
      await waiting
    }
  })
  await step('inspect pool', async () => (await store.inspect()).filter(e => e.kind === 'pool'))

  // Close, then every call; a lease and a hold waiting for it are ended.
  const open = await jobs.acquire('last')
  const waiter = jobs.hold('last', { wait: Infinity }, fn)
  waiter.catch(() => {})
  await until(store, e => e.name === 'jobs' && e.key === 'last' && e.waiting === 1)
  await step('close', () => store.close())
  await step('closed: the waiting hold', () => waiter)
  await step('closed: the lease, lost', () => {
    if (open.lost) throw open.signal.reason
    return 'not lost'
  })
  await step('closed: hold', () => jobs.hold('k', fn))
  await step('closed: tryHold', () => jobs.tryHold('k', fn))
  await step('closed: acquire', () => jobs.acquire('k'))
  await step('closed: new lock', () => store.lock('later'))
  await step('closed: new semaphore', () => store.semaphore('later', { limit: 1 }))
  await step('closed: new pool', () => store.pool('later', { capacity: 1 }))
  await step('closed: claim', () => seats.claim(1))
  await step('closed: pool release', () => seats.release('order-3'))
  await step('closed: remaining', () => seats.remaining())
  await step('closed: resize', () => seats.resize(6))
  await step('closed: inspect', () => store.inspect())
  await step('closed: close again', () => store.close())
  return lines
}

/**
 * Runs the scenario on `reference` (an in-process store) and on `other`, and checks each line alike;
 * `differs` names the steps left out of the comparison, and `words` maps the other's messages where
 * their words differ by design. All differing lines are reported at once.
 */
export async function sameAnswers(reference, other, differs = [], words = m => m) {
  const want = await scenario(reference)
  const got = (await scenario(other)).map(([name, answer]) => [name, answer.message === undefined ? answer : { ...answer, message: words(answer.message) }])
  assert.deepEqual(got.map(([name]) => name), want.map(([name]) => name))
  const diffs = []
  for (const [i, [name, answer]] of want.entries()) {
    if (differs.includes(name)) continue
    try {
      assert.deepEqual(got[i][1], answer)
    } catch {
      diffs.push(`${name}:\n  in process: ${JSON.stringify(answer)}\n  here:       ${JSON.stringify(got[i][1])}`)
    }
  }
  assert.equal(diffs.length, 0, `${diffs.length} steps differ:\n${diffs.join('\n')}`)
}
