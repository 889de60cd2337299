// The differential check's random scenarios (beside the hand-written one of differential.js): from a
// seed, a sequence of calls on a few lock and semaphore names, keys and pools — holds whose fn runs
// until a later step lets it end, tryHold, acquire and release, claims (with ids, waits, ttls), their
// releases and confirms, remaining, resize, signals aborted before a call or while it waits, bad inputs
// drawn from a list — run on the in-process store, then replayed on another store, step by step.
//
// Each step's line is what every call made so far has answered (or that it waits, or that its fn runs)
// and what `inspect()` lists of this run's names, once the store is quiet. The sequence is drawn while
// it runs on the in-process store, from what that store answered (a release only of a lease it
// granted, an abort only of a call still waiting), so that each step is one the state allows; the other
// store replays the same calls, and is read until it lists what the in-process store did after that
// step (real sockets and Redis take a few ms), or for at most STEP_MS, then its line is written down.
//
// Nothing in a scenario waits on time: every wait is 0 or unbounded (or an hour), every ttl and
// maxHold outlives the run, and a step starts only once the one before it settled, so that the order
// of calls is the order of steps on every store.
//
// A suite runs its seeds through everySeedAnswersAlike (at the end), saying how to open its store.
import assert from 'node:assert/strict'
import { inspect, isDeepStrictEqual } from 'node:util'
import { aborted, failure, outcome, shape } from './differential.js'
import { mulberry32 } from './random.js'

/** How long the other store has to settle as the in-process store did after a step. */
const STEP_MS = 3000
/** Steps in one scenario, before its close. */
const STEPS = 40

/** The seeds to run: HOLDFAST_DIFF_SEED (one, or a comma list), else 1..HOLDFAST_DIFF_SEEDS (default `count`). */
function seeds(count = 30) {
  const chosen = process.env.HOLDFAST_DIFF_SEED
  if (chosen) return chosen.split(',').map(s => Number(s.trim()))
  const n = Number(process.env.HOLDFAST_DIFF_SEEDS || count)
  return Array.from({ length: n }, (_, i) => i + 1)
}

const tick = () => new Promise(r => setTimeout(r, 0))

/**
 * One run of a scenario on one store: its handles (one object per handle the scenario names, as a user
 * keeps them) and its calls, each with what it answered so far.
 */
class Run {
  constructor(store, prefix, idlePools) {
    this.store = store
    this.prefix = prefix
    this.idlePools = idlePools
    this.handles = new Map()
    this.ops = []
  }

  name(n) {
    return `${this.prefix}${n}`
  }

  /** The handle a scenario names as `[kind, name, options]`, made at its first use. */
  handle([kind, name, options]) {
    const id = JSON.stringify([kind, name, options])
    if (!this.handles.has(id)) this.handles.set(id, this.store[kind](this.name(name), options === undefined ? undefined : revive(options)))
    return this.handles.get(id)
  }

  /** Starts a call: its promise is watched, its answer kept (`state`), its lease or claim kept for later steps. */
  start(call, extra = {}) {
    const op = { state: 'waiting', ...extra }
    this.ops.push(op)
    let p
    try {
      p = Promise.resolve(call(op))
    } catch (e) {
      p = Promise.reject(e)
    }
    op.done = p.then(
      value => {
        if (value && typeof value.fence === 'number') op.lease = value
        if (value?.claim) op.claim = value.claim
        op.state = { ok: shape(value) }
      },
      e => {
        op.state = this.failure(e)
      },
    )
    return op
  }

  /** A refusal: its code and message, the id a store drew for a claim written `<drawn id>` (ids differ by run and by store). */
  failure(e) {
    const answer = failure(e)
    for (const op of this.ops) if (op.drawn && op.claim) answer.message = answer.message?.replaceAll(JSON.stringify(op.claim.id), '"<drawn id>"')
    return answer
  }

  /** What every call answered so far, and what inspect() lists of this run's names (ordered). */
  async snapshot() {
    const ops = this.ops.map(op => op.state)
    const used = usedPools(this.ops)
    let listed
    try {
      // A pool whose handle is made but that no call answered is listed in process only (see draw).
      listed = (await this.store.inspect())
        .filter(e => e.name.startsWith(this.prefix) && (e.kind !== 'pool' || used.has(e.name.slice(this.prefix.length))))
        .filter(e => this.idlePools || e.kind !== 'pool' || e.claims > 0 || e.waiting > 0)
        .map(shape)
        .sort((x, y) => (JSON.stringify(x) < JSON.stringify(y) ? -1 : 1))
    } catch (e) {
      listed = this.failure(e)
    }
    return { ops, listed }
  }
}

/** Options are written down as JSON (`Infinity` as the string 'Infinity'), so that a failure prints them. */
function revive(options) {
  const out = {}
  for (const [k, v] of Object.entries(options)) out[k] = v === 'Infinity' ? Infinity : v
  return out
}

/** A gate fn: runs until step `finish` tells it how to end (return, throw, or a call inside its hold). */
function gated(run, op, handle, key) {
  return async lease => {
    op.state = 'running'
    const how = await new Promise(resolve => {
      op.finish = resolve
    })
    if (how === 'return') return `fn of call ${run.ops.indexOf(op)}`
    if (how === 'throw') throw new Error('own')
    if (how === 'lost') return lease.lost
    // LOCK-04: a hold of its own key inside its hold is refused; a tryHold there answers not acquired.
    if (how === 'hold same key') return { nested: await outcome(() => handle.hold(key, () => 'inner')) }
    if (how === 'tryHold same key') return { nested: await outcome(() => handle.tryHold(key, () => 'inner')) }
    return { nested: await outcome(() => handle.hold(how.key, { wait: 0 }, () => 'inner')) }
  }
}

// What a scenario draws from: names (lock a, b; semaphore s; pools p, q), keys, options.
const KEYS = ['k1', 'k2', 7, '7']
const LOCK_OPTIONS = [{ wait: '1h' }, { ttl: '1m', wait: 'Infinity' }, { wait: 0, maxHold: '1h' }, { ttl: '10s', wait: '1h' }]
const HOLD_OPTIONS = [
  undefined,
  { wait: 0 },
  { wait: 'Infinity' },
  { wait: '1h', signal: 'controller' },
  { signal: 'aborted' },
  { wait: 'Infinity', signal: 'controller' },
]
const CLAIM_IDS = ['o1', 'o2', 'o3']
const FINISH = ['return', 'return', 'throw', 'lost', 'hold same key', 'tryHold same key', 'other key']

/** Bad inputs, each a call on `run` refused by every store (README: The API, Pools). */
const BAD = {
  'lock bad name': run => run.store.lock('Bad Name'),
  'lock ttl under 1s': run => run.store.lock(run.name('a'), { ttl: '500ms' }).hold('k1', () => 1),
  'lock ttl no unit': run => run.store.lock(run.name('a'), { ttl: '250' }).hold('k1', () => 1),
  'lock unknown option': run => run.store.lock(run.name('a'), { tll: '1s' }).hold('k1', () => 1),
  'semaphore no limit': run => run.store.semaphore(run.name('s'), {}).hold('k1', () => 1),
  'semaphore limit 0': run => run.store.semaphore(run.name('s'), { limit: 0 }).hold('k1', () => 1),
  'hold empty key': run => run.handle(['lock', 'a', LOCK_OPTIONS[0]]).hold('', () => 1),
  'hold lone surrogate key': run => run.handle(['lock', 'a', LOCK_OPTIONS[0]]).hold('\ud83d', () => 1),
  'hold fractional key': run => run.handle(['lock', 'a', LOCK_OPTIONS[0]]).hold(1.5, () => 1),
  'hold options after fn': run => run.handle(['lock', 'a', LOCK_OPTIONS[0]]).hold('k1', () => 1, { wait: 0 }),
  'hold bad wait': run => run.handle(['lock', 'b', LOCK_OPTIONS[0]]).hold('k1', { wait: -1 }, () => 1),
  'hold bad signal': run => run.handle(['lock', 'b', LOCK_OPTIONS[0]]).hold('k1', { signal: 'no' }, () => 1),
  'tryHold wait': run => run.handle(['lock', 'b', LOCK_OPTIONS[0]]).tryHold('k1', { wait: 0 }, () => 1),
  'acquire no key': run => run.handle(['lock', 'b', LOCK_OPTIONS[0]]).acquire(),
  'pool capacity 0': run => run.store.pool(run.name('p'), { capacity: 0 }).remaining(),
  'pool unknown, no capacity': run => run.store.pool(run.name('nowhere')).remaining(),
  'claim 0': run => run.handle(['pool', 'p', { capacity: 4 }]).claim(0),
  'claim over capacity': run => run.handle(['pool', 'q', { capacity: 2 }]).claim(3),
  'claim empty id': run => run.handle(['pool', 'p', { capacity: 4 }]).claim(1, { id: '' }),
  'claim ttl 0': run => run.handle(['pool', 'p', { capacity: 4 }]).claim(1, { ttl: 0 }),
  'claim bad wait': run => run.handle(['pool', 'q', { capacity: 2 }]).claim(1, { wait: 'soon' }),
  'resize 0': run => run.handle(['pool', 'p', { capacity: 4 }]).resize(0),
  'confirm unknown id': run => run.handle(['pool', 'p', { capacity: 4 }]).confirm('no-such-claim'),
}

/** The pools (as the scenario names them) that a call through a handle with a capacity was answered on. */
const usedPools = ops => new Set(ops.filter(op => op.pool && typeof op.state === 'object' && !('code' in op.state)).map(op => op.pool))

/**
 * Draws the next step from `random`, given the in-process run so far (`ref`). A step is plain data
 * (printed when a seed fails); `act` does it on a run.
 */
function draw(random, ref, limit) {
  const pick = list => list[Math.floor(random() * list.length)]
  const lockHandle = () => (random() < 0.3 ? ['semaphore', 's', { limit, ...pick(LOCK_OPTIONS) }] : ['lock', pick(['a', 'b']), pick(LOCK_OPTIONS)])
  const ops = ref.ops.map((op, i) => ({ ...op, i }))
  // A pool is made on a server, a Durable Object or Redis at its handle's first call that reaches
  // it, and in process when its handle is made (README, Pools: "at once in process; at the handle's
  // first call over a connection"): a handle without capacity names only a pool a call answered.
  // Redis keeps no idle pool (README, Pools: "where an idle pool is forgotten with its capacity"):
  // there, a pool exists for sure only while a claim is open or waits.
  const listed = Array.isArray(ref.last?.listed) ? ref.last.listed : []
  const busyPools = new Set(listed.filter(e => e.kind === 'pool' && (e.claims > 0 || e.waiting > 0)).map(e => e.name.slice(ref.prefix.length)))
  const used = new Set([...usedPools(ops)].filter(name => ref.idlePools || busyPools.has(name)))
  const poolHandle = () => {
    const r = random()
    if (r < 0.2 && used.has('p')) return ['pool', 'p']
    return r < 0.6 ? ['pool', 'p', { capacity: 4 }] : ['pool', 'q', { capacity: 2 }]
  }
  const claimOptions = () => {
    const options = {}
    if (random() < 0.6) options.id = pick(CLAIM_IDS)
    if (random() < 0.4) options.wait = 'Infinity'
    if (options.wait && random() < 0.6) options.signal = 'controller'
    else if (random() < 0.1) options.signal = 'aborted'
    if (random() < 0.3) options.ttl = '1h'
    return options
  }
  const running = ops.filter(op => op.state === 'running')
  const waiting = ops.filter(op => op.controller && (op.state === 'waiting' || op.state === 'running'))
  const leases = ops.filter(op => op.lease)
  const claims = ops.filter(op => op.claim)
  const busy = listed.filter(e => e.kind === 'semaphore').map(e => e.key)
  const choices = [
    [5, () => ({ do: 'hold', handle: lockHandle(), key: pick(KEYS), options: pick(HOLD_OPTIONS) })],
    [2, () => ({ do: 'tryHold', handle: lockHandle(), key: pick(KEYS), signal: pick([undefined, 'aborted', 'controller']) })],
    [2, () => ({ do: 'acquire', handle: lockHandle(), key: pick(KEYS), options: pick(HOLD_OPTIONS) })],
    [running.length ? 6 : 0, () => ({ do: 'finish', call: pick(running).i, how: pick(FINISH), key: pick(KEYS) })],
    [waiting.length ? 3 : 0, () => ({ do: 'abort', call: pick(waiting).i })],
    // Another limit is refused in process while a handle of the name lives, by a server while a key
    // of the name is busy, by Redis while that key is busy (README, Handles): asked of a busy key.
    [busy.length ? 1 : 0, () => ({ do: 'limit mismatch', key: pick(busy) })],
    [leases.length ? 3 : 0, () => ({ do: pick(['release', 'release', 'lost']), call: pick(leases).i })],
    [5, () => ({ do: 'claim', handle: poolHandle(), n: pick([1, 1, 2, 3]), options: claimOptions() })],
    [claims.length ? 3 : 0, () => ({ do: pick(['claim release', 'claim release', 'claim confirm']), call: pick(claims).i })],
    [2, () => ({ do: pick(['pool release', 'pool release', 'pool confirm']), handle: poolHandle(), id: pick(CLAIM_IDS) })],
    [1, () => ({ do: 'remaining', handle: poolHandle() })],
    [1, () => ({ do: 'resize', handle: poolHandle(), n: pick([1, 2, 3, 4, 5]) })],
    [used.size ? 1 : 0, () => ({ do: 'pool capacity mismatch', name: pick([...used]) })],
    [2, () => ({ do: 'bad', what: pick(Object.keys(BAD)) })],
  ]
  let r = random() * choices.reduce((sum, [w]) => sum + w, 0)
  for (const [w, make] of choices) {
    r -= w
    if (r < 0) return make()
  }
  return choices[0][1]()
}

/** Does `step` on `run`. */
function act(run, step) {
  const signalOf = (op, kind) => {
    if (kind === 'aborted') return aborted()
    if (kind !== 'controller') return undefined
    op.controller = new AbortController()
    return op.controller.signal
  }
  switch (step.do) {
    case 'hold':
      return run.start(op => {
        const handle = run.handle(step.handle)
        if (step.options === undefined) return handle.hold(step.key, gated(run, op, handle, step.key))
        const { signal, ...options } = step.options
        const all = revive(options)
        if (signal) all.signal = signalOf(op, signal)
        return handle.hold(step.key, all, gated(run, op, handle, step.key))
      })
    case 'tryHold':
      return run.start(op => {
        const handle = run.handle(step.handle)
        const fn = gated(run, op, handle, step.key)
        return step.signal ? handle.tryHold(step.key, { signal: signalOf(op, step.signal) }, fn) : handle.tryHold(step.key, fn)
      })
    case 'acquire':
      return run.start(op => {
        const { signal, ...options } = step.options ?? {}
        const all = revive(options)
        if (signal) all.signal = signalOf(op, signal)
        return run.handle(step.handle).acquire(step.key, all)
      })
    case 'finish':
      return run.ops[step.call].finish?.(step.how === 'other key' ? { key: step.key } : step.how)
    case 'abort':
      return run.ops[step.call].controller?.abort(new Error('gone'))
    case 'release':
      return run.start(() => run.ops[step.call].lease.release())
    case 'lost':
      return run.start(() => run.ops[step.call].lease.lost)
    case 'claim':
      return run.start(op => {
        op.pool = step.handle[2] && step.handle[1]
        op.drawn = step.options.id === undefined
        const { signal, ...options } = step.options
        const all = revive(options)
        if (signal) all.signal = signalOf(op, signal)
        return run.handle(step.handle).claim(step.n, all)
      })
    case 'claim release':
      return run.start(() => run.ops[step.call].claim.release())
    case 'claim confirm':
      return run.start(() => run.ops[step.call].claim.confirm())
    case 'pool release':
      return run.start(() => run.handle(step.handle).release(step.id), { pool: step.handle[2] && step.handle[1] })
    case 'pool confirm':
      return run.start(() => run.handle(step.handle).confirm(step.id), { pool: step.handle[2] && step.handle[1] })
    case 'remaining':
      return run.start(() => run.handle(step.handle).remaining(), { pool: step.handle[2] && step.handle[1] })
    case 'resize':
      return run.start(() => run.handle(step.handle).resize(step.n), { pool: step.handle[2] && step.handle[1] })
    case 'pool capacity mismatch':
      return run.start(() => run.store.pool(run.name(step.name), { capacity: 3 }).remaining())
    case 'limit mismatch':
      return run.start(() => run.store.semaphore(run.name('s'), { limit: 10 }).hold(step.key, { wait: 0 }, () => 'ran'))
    case 'bad':
      return run.start(() => BAD[step.what](run))
    case 'close':
      return run.start(() => run.store.close())
    case 'finish all':
      for (const op of run.ops) op.finish?.('return')
      return
  }
  throw new Error(`no such step ${step.do}`)
}

/** Waits until the in-process run is quiet: three ticks in a row with the same snapshot. */
async function quiet(run) {
  let last = await run.snapshot()
  for (let same = 0; same < 3; ) {
    await tick()
    const now = await run.snapshot()
    same = isDeepStrictEqual(now, last) ? same + 1 : 0
    last = now
  }
  return last
}

/** Reads the other run until it matches `want`, or STEP_MS passed: its snapshot then. */
async function settle(run, want, words) {
  const deadline = Date.now() + STEP_MS
  for (;;) {
    const got = reword(await run.snapshot(), words)
    if (Date.now() > deadline) return got
    if (isDeepStrictEqual(got, want)) return got
    await new Promise(r => setTimeout(r, 3))
  }
}

const show = value => inspect(value, { depth: Infinity, breakLength: Infinity })

function reword(snapshot, words) {
  const fix = answer => (answer?.message === undefined ? answer : { ...answer, message: words(answer.message) })
  return { ops: snapshot.ops.map(fix), listed: Array.isArray(snapshot.listed) ? snapshot.listed : fix(snapshot.listed) }
}

/**
 * Draws seed `seed`'s scenario on `reference` (an in-process store) and replays it on `other`, both
 * opened for this seed, each run's names prefixed `d<seed>-`. Options: `words` maps the other's
 * messages where their words differ by design; `idlePools: false` leaves out of both inspections a
 * pool with no claim open and none waiting, which Redis does not keep (README, Pools: "Redis forgets
 * an idle one"; docs/redis.md, What persists). Throws naming the seed, its steps and the first line
 * that differs.
 */
async function sameRandomAnswers(seed, reference, other, { words = m => m, idlePools = true } = {}) {
  const random = mulberry32(seed)
  const prefix = `d${seed}-`
  const limit = 1 + Math.floor(random() * 3)
  const ref = new Run(reference, prefix, idlePools)
  const steps = []
  const want = []
  for (let i = 0; i < STEPS; i++) {
    const step = draw(random, ref, limit)
    steps.push(step)
    act(ref, step)
    want.push((ref.last = await quiet(ref)))
  }
  for (const step of [{ do: 'close' }, { do: 'finish all' }]) {
    steps.push(step)
    act(ref, step)
    want.push(await quiet(ref))
  }
  const run = new Run(other, prefix, idlePools)
  for (const [i, step] of steps.entries()) {
    act(run, step)
    const got = await settle(run, want[i], words)
    if (!isDeepStrictEqual(got, want[i])) {
      const lines = steps.map((s, j) => `  ${j}: ${JSON.stringify(s)}`).slice(0, i + 1)
      const ops = got.ops.map((answer, j) => [j, answer, want[i].ops[j]]).filter(([, a, b]) => !isDeepStrictEqual(a, b))
      assert.fail(
        `seed ${seed} (HOLDFAST_DIFF_SEED=${seed} runs it alone): step ${i} differs\nsteps:\n${lines.join('\n')}\n` +
          ops.map(([j, a, b]) => `call ${j}:\n  in process: ${show(b)}\n  here:       ${show(a)}`).join('\n') +
          (isDeepStrictEqual(got.listed, want[i].listed) ? '' : `\ninspect:\n  in process: ${show(want[i].listed)}\n  here:       ${show(got.listed)}`),
      )
    }
  }
}

/**
 * Runs `sameRandomAnswers` for each seed of `seeds(count)`, each on stores of its own (a scenario ends
 * with close()): `reference()` opens the in-process one, `other()` the one under test, and
 * `options(other)` is sameRandomAnswers' options for it. Both are closed after their seed, whether it
 * passed or not, and every seed runs; then one failure names each seed that differs, with the first
 * one's message (its steps, and how to run it alone).
 */
export async function everySeedAnswersAlike({ count, reference, other, options = () => ({}) }) {
  const failed = []
  for (const seed of seeds(count)) {
    const inProcess = await reference()
    const store = await other()
    try {
      await sameRandomAnswers(seed, inProcess, store, options(store))
    } catch (e) {
      failed.push([seed, e.message])
    } finally {
      await inProcess.close()
      await store.close()
    }
  }
  assert.equal(failed.length, 0, `seeds ${failed.map(([seed]) => seed).join(', ')} differ; the first:\n${failed[0]?.[1]}`)
}
