// holdfast/cloudflare in the test worker: HoldfastObject (bound as HOLDFAST) hosts a store per lock
// name, and the routes under /cf/ hold its keys with workerStore(env.HOLDFAST), as a user's Worker
// would; a few routes call the object's RPC methods directly (a holder that never renews, a bad
// request over the boundary). Every answer is JSON; a holdfast error is { error: { code, name, message } }.
import { HoldfastObject, workerStore, objectName, fnv1a, durableObjectStorage } from 'holdfast/cloudflare'
import { HoldfastError, openStore, memoryStorage, InvalidError, ClosedError, CancelledError, LostError, InUseError, LimitError } from 'holdfast'
import { callersReport } from './callers.js'
// tests/shared/misuse.js, copied here by tests/workerd/run.sh: the misuse list, on a workerStore().
import { transcript } from './misuse.js'

export { HoldfastObject }

/**
 * HoldfastObject counting its alarms in its own storage: the alarm backstop test reads the count. Its
 * storage refuses the next writes and deletes of kept leases when told (`refuseLeaseWrites`, `refuseLeaseDeletes`), as a storage that
 * fails does, or holds its deletes of kept leases up (`holdLeaseDeletes`, `letLeaseDeletes`), as a
 * slow one does; it refuses the next writes of its pools (`refusePoolWrites`) and the next `setAlarm`
 * calls (`refuseAlarms`) when told, and resets right
 * after the next write of its pools landed when told (`crashAfterPoolWrite`): the object's own
 * `ctx.storage`, its put, delete and setAlarm wrapped in place (a proxy is refused).
 */
export class CountingHoldfast extends HoldfastObject {
  /** Writes of kept leases still to refuse (a closure's, not `this`'s: the store opens within super()). */
  #faults

  constructor(ctx, env) {
    // held: while deletes are held up, `{ gate, arrived }` (the gate they wait at; open once one waits).
    // alarms: setAlarm calls still to refuse; alarmsRefused: how many were. crashAfterPoolWrite: the
    // next write of the pools lands, then the object resets before the call it answers is answered.
    // poolRefusals: writes of the pools still to refuse.
    const faults = { refusals: 0, deletes: 0, held: undefined, alarms: 0, alarmsRefused: 0, crashAfterPoolWrite: false, poolRefusals: 0 }
    const storage = ctx.storage
    const put = storage.put.bind(storage)
    storage.put = async (key, value) => {
      if (faults.refusals > 0 && String(key).startsWith('holdfast.lease.')) {
        faults.refusals--
        throw new Error(`storage.put(${key}): refused by the test`)
      }
      if (faults.poolRefusals > 0 && String(key).startsWith('holdfast.pools')) {
        faults.poolRefusals--
        throw new Error(`storage.put(${key}): refused by the test`)
      }
      const done = await put(key, value)
      if (faults.crashAfterPoolWrite && String(key).startsWith('holdfast.pools')) {
        faults.crashAfterPoolWrite = false
        await storage.sync()
        ctx.abort('crash after a pool write landed')
      }
      return done
    }
    const setAlarm = storage.setAlarm.bind(storage)
    storage.setAlarm = async (...args) => {
      if (faults.alarms > 0) {
        faults.alarms--
        faults.alarmsRefused++
        throw new Error('storage.setAlarm: refused by the test')
      }
      return await setAlarm(...args)
    }
    const del = storage.delete.bind(storage)
    storage.delete = async key => {
      const held = faults.held
      if (held && String(key).startsWith('holdfast.lease.')) {
        held.arrived.open()
        await held.gate.promise
      }
      if (faults.deletes > 0 && String(key).startsWith('holdfast.lease.')) {
        faults.deletes--
        throw new Error(`storage.delete(${key}): refused by the test`)
      }
      return await del(key)
    }
    super(ctx, env)
    this.#faults = faults
  }

  /** The next `n` writes of a kept lease fail (in memory: a restart forgets the count). */
  refuseLeaseWrites(n) {
    this.#faults.refusals = n
    return n
  }

  /** The next `n` calls of `setAlarm` fail (in memory: a restart forgets the count). */
  refuseAlarms(n) {
    this.#faults.alarms = n
    return n
  }

  /** How many `setAlarm` calls `refuseAlarms` refused. */
  alarmsRefused() {
    return this.#faults.alarmsRefused
  }

  /** The next `n` writes of the pools fail (in memory: a restart forgets the count). */
  refusePoolWrites(n) {
    this.#faults.poolRefusals = n
    return n
  }

  /** The next write of the pools lands, then the object resets (`crash`) before answering what it kept. */
  crashAfterPoolWrite() {
    this.#faults.crashAfterPoolWrite = true
    return true
  }

  /** The next `n` deletes of a kept lease fail (in memory: a restart forgets the count). */
  refuseLeaseDeletes(n) {
    this.#faults.deletes = n
    return n
  }

  /** The next deletes of kept leases wait until `letLeaseDeletes()` (in memory: a restart forgets it). */
  holdLeaseDeletes() {
    this.#faults.held = { gate: gate(), arrived: gate() }
    return true
  }

  /** Lets the held deletes through; later ones are not held. */
  letLeaseDeletes() {
    this.#faults.held?.gate.open()
    this.#faults.held = undefined
    return true
  }

  /**
   * Once a delete of a kept lease is held up (`holdLeaseDeletes`), makes the object's store trap, as a
   * bug would (`_trapForTest`), then reopens it as the next call does. The store is the object's own,
   * out of reach here: the trap is put in its class's `inspectKeys` for one call (the store class of
   * `openStore` from 'holdfast', one module in the bundle).
   */
  async trapWhileDeleteHeld() {
    await this.#faults.held.arrived.promise
    const spare = await openStore({ storage: memoryStorage() })
    const proto = Object.getPrototypeOf(spare)
    await spare.close()
    const inspectKeys = proto.inspectKeys
    proto.inspectKeys = function () {
      proto.inspectKeys = inspectKeys
      this._trapForTest()
    }
    const trapped = await this.inspect().then(
      () => false,
      e => e?.code === 'closed',
    )
    await this.inspect()
    return { trapped }
  }

  /**
   * Once a delete of a kept lease is held up (`holdLeaseDeletes`), resets the object (`crash`): that
   * delete never happens, and the call that asked it (a release) fails with the reset.
   */
  async crashWhileDeleteHeld() {
    await this.#faults.held.arrived.promise
    this.ctx.abort('crash while a delete is held')
  }

  async alarm() {
    const n = (await this.ctx.storage.get('test.alarms')) ?? 0
    await this.ctx.storage.put('test.alarms', n + 1)
    return super.alarm()
  }

  /** Ends every lease this object keeps, as if each had lapsed. */
  async dropLeases() {
    const leases = await this.ctx.storage.list({ prefix: 'holdfast.lease.' })
    for (const kept of leases.values()) await this.release(kept.lease)
    return leases.size
  }

  /** The leases this object keeps, as kept: lease id and deadline. */
  async keptLeases() {
    const leases = await this.ctx.storage.list({ prefix: 'holdfast.lease.' })
    return [...leases.values()].map(kept => ({ lease: kept.lease, expiresAt: kept.expiresAt }))
  }

  async alarms() {
    const leases = await this.ctx.storage.list({ prefix: 'holdfast.lease.' })
    return { alarms: (await this.ctx.storage.get('test.alarms')) ?? 0, leases: leases.size }
  }

  /** Resets the object (`ctx.abort()`), as a crash or a code update does: its storage is kept. */
  crash(why) {
    this.ctx.abort(why)
  }
}

/** A promise and what settles it. */
function gate() {
  let open
  const promise = new Promise(resolve => (open = resolve))
  return { promise, open }
}

/** The largest value a Durable Object's storage takes (its key-value storage: 128 KiB). */
const MAX_VALUE = 128 * 1024

/**
 * HoldfastObject on a storage that refuses a value over 128 KiB, as a Durable Object's key-value
 * storage does (the SQLite-backed storage of local workerd takes more): pools must keep within it.
 */
export class LimitedHoldfast extends HoldfastObject {
  constructor(ctx, env) {
    // The runtime's own state and storage objects (a proxy is refused): their put is wrapped in place.
    const storage = ctx.storage
    const put = storage.put.bind(storage)
    storage.put = async (key, value) => {
      const size = typeof value === 'string' ? new TextEncoder().encode(value).length : 0
      if (size > MAX_VALUE) throw new Error(`storage.put(${key}): a value of ${size} bytes is over ${MAX_VALUE}`)
      return await put(key, value)
    }
    super(ctx, env)
  }

  /** The values its pools are kept in, as stored: how many, and the largest (its UTF-8 bytes, its key). */
  async poolValues() {
    const kept = await this.ctx.storage.list({ prefix: 'holdfast.pools' })
    const largest = { bytes: 0, key: undefined }
    for (const [key, value] of kept) {
      const bytes = typeof value === 'string' ? new TextEncoder().encode(value).length : Number.NaN
      if (!(bytes <= largest.bytes)) Object.assign(largest, { bytes, key })
    }
    return { values: kept.size, largest }
  }
}

/** HoldfastObject in a worker whose secret HOLDFAST_TOKEN is not set: it refuses every WebSocket client. */
export class TokenlessHoldfast extends HoldfastObject {
  constructor(ctx, env) {
    super(ctx, { ...env, HOLDFAST_TOKEN: undefined })
  }
}

/**
 * HoldfastObject in a worker whose secret HOLDFAST_TOKEN is longer than a hello carries (1,024 bytes):
 * 513 characters of two bytes each, 1,026 bytes, so that bytes are counted, not characters.
 */
export class LongTokenHoldfast extends HoldfastObject {
  constructor(ctx, env) {
    super(ctx, { ...env, HOLDFAST_TOKEN: '\u00e9'.repeat(513) })
  }
}

/**
 * HoldfastObject with room for 2 WebSocket clients (its `_maxConnections`, for tests), so that a test
 * reaches the limit with a few raw clients; set in the constructor, which runs again at each wake.
 */
export class SmallHoldfast extends HoldfastObject {
  constructor(ctx, env) {
    super(ctx, env)
    this._maxConnections = 2
  }

  /**
   * The object's store, out of reach here otherwise: caught in its class's `inspectKeys` for one call
   * (as `CountingHoldfast.trapWhileDeleteHeld` puts a trap there).
   */
  async #store() {
    const spare = await openStore({ storage: memoryStorage() })
    const proto = Object.getPrototypeOf(spare)
    await spare.close()
    const inspectKeys = proto.inspectKeys
    let store
    proto.inspectKeys = function (...args) {
      proto.inspectKeys = inspectKeys
      store = this
      return inspectKeys.apply(this, args)
    }
    await this.inspect()
    return store
  }

  /** Counts connection numbers on from the last u32, as 2^32 connections later: the next is the smallest free. */
  async wrapConnectionNumbers() {
    ;(await this.#store())._connectionTaken(0xffff_ffff, false)
    return true
  }

  /**
   * The runtime's error event on each socket that came past the limit and said no hello yet, as a
   * socket that fails gets (its close event comes after, when its client goes).
   */
  async failOverLimit() {
    let n = 0
    for (const ws of this.ctx.getWebSockets()) {
      const attached = ws.deserializeAttachment()
      if (attached?.overLimit && !attached.ended) {
        await this.webSocketError(ws, new Error('test: the socket failed'))
        n++
      }
    }
    return n
  }

  /** The numbers of the sockets open, and how many numbers the store counts live. */
  async connectionNumbers() {
    const store = await this.#store()
    return { conns: this.ctx.getWebSockets().map(ws => ws.deserializeAttachment()?.conn), live: store._liveConnections }
  }
}

function errorInfo(e) {
  if (e instanceof HoldfastError) return { error: { code: e.code, name: e.name, message: e.message } }
  return { error: { code: null, name: e?.name ?? typeof e, message: String(e?.message ?? e) } }
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/** 32 hex digits, as a request id. */
function hexId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  return [...bytes].map(b => b.toString(16).padStart(2, '0')).join('')
}

export async function cloudflare(op, q, env) {
  const name = q.get('name') ?? 'jobs'
  // keyUnits: UTF-16 units, comma-separated, for keys a URL cannot carry (a lone surrogate).
  const units = q.get('keyUnits')
  const key = units ? String.fromCharCode(...units.split(',').map(Number)) : (q.get('key') ?? 'k')
  const ms = Number(q.get('ms') ?? 0)
  const shard = q.has('shard') ? Number(q.get('shard')) : undefined
  const namespace = q.get('ns') === 'counting' ? env.COUNTING : q.get('ns') === 'limited' ? env.LIMITED : env.HOLDFAST
  const store = workerStore(namespace, shard === undefined ? undefined : { shard })
  const options = { wait: q.get('wait') ?? '10s' }
  if (q.has('ttl')) options.ttl = q.get('ttl')
  if (q.has('maxHold')) options.maxHold = q.get('maxHold')
  // As numbers of ms, which a URL's text cannot be: fractions of a ms.
  if (q.has('ttlNum')) options.ttl = Number(q.get('ttlNum'))
  if (q.has('maxHoldNum')) options.maxHold = Number(q.get('maxHoldNum'))
  const handle = q.has('limit') ? store.semaphore(name, { ...options, limit: Number(q.get('limit')) }) : store.lock(name, options)
  const stub = () => namespace.get(namespace.idFromName(objectName(name, key, shard === undefined ? undefined : { shard })))
  /** SmallHoldfast named `object`, as /ws/OBJECT?ns=small reaches it. */
  const small = () => env.SMALL.get(env.SMALL.idFromName(q.get('object')))
  switch (op) {
    case 'do-storage-bad': {
      // durableObjectStorage() given what is not a Durable Object's storage: the object's ctx itself,
      // nothing, another object, or an argument past its own. Each answers what it was answered.
      const storageLike = { get: async () => undefined, put: async () => {} }
      const given = {
        ctx: () => durableObjectStorage({ storage: storageLike, id: {} }),
        undefined: () => durableObjectStorage(undefined),
        text: () => durableObjectStorage('ctx.storage'),
        empty: () => durableObjectStorage({}),
        extra: () => durableObjectStorage(storageLike, { prefix: 'x' }),
      }
      const answers = {}
      for (const [label, call] of Object.entries(given)) {
        try {
          call()
          answers[label] = 'accepted'
        } catch (e) {
          answers[label] = errorInfo(e)
        }
      }
      return answers
    }
    case 'misuse': {
      // The misuse list's transcript on this Worker's store (no close(): the steps after it left out).
      const classes = { invalid: InvalidError, closed: ClosedError, cancelled: CancelledError, lost: LostError, in_use: InUseError, limit: LimitError }
      return { lines: await transcript(store, q.get('prefix') ?? 'w', { classes, afterClose: false }) }
    }
    case 'hold':
      return await handle.hold(key, async lease => {
        const start = Date.now()
        await sleep(ms)
        return { fence: lease.fence, start, end: Date.now(), tag: q.get('tag'), lost: lease.lost }
      })
    case 'tryHold':
      return await handle.tryHold(key, lease => ({ fence: lease.fence }))
    case 'two-limits': {
      // A second handle of the semaphore, of another limit, in the same workerStore: idle, then busy.
      const other = () => {
        try {
          return { limit: store.semaphore(name, { limit: handle.limit + 1 }).limit }
        } catch (e) {
          return errorInfo(e)
        }
      }
      const idle = other()
      const lease = await handle.acquire(key)
      const busy = other()
      await lease.release()
      return { idle, busy }
    }
    case 'throwing': {
      // A hold whose fn throws (sync: at once; else: after a turn), its signal aborted once granted.
      const ac = new AbortController()
      let seen
      const answer = await handle
        .hold(key, { signal: ac.signal }, async lease => {
          ac.abort('too late')
          if (q.get('sync') === '1') {
            seen = { lost: lease.lost, aborted: lease.signal.aborted }
            throw new RangeError('fn failed')
          }
          await sleep(ms)
          seen = { lost: lease.lost, aborted: lease.signal.aborted }
          throw new RangeError('fn failed')
        })
        .then(value => ({ value }), e => ({ error: { name: e?.name, message: e?.message } }))
      return { ...answer, seen }
    }
    case 'cancel': {
      // A hold whose signal aborts while it waits.
      const ac = new AbortController()
      setTimeout(() => ac.abort('enough'), ms)
      return await handle.hold(key, { signal: ac.signal }, () => 'ran').catch(e => ({ ...errorInfo(e), cause: e.cause }))
    }
    case 'acquire': {
      // The manual form: held across the request, released before answering.
      const lease = await handle.acquire(key)
      await sleep(ms)
      const answer = { fence: lease.fence, lost: lease.lost }
      await lease.release()
      return answer
    }
    case 'release-unawaited': {
      // The manual form, its release() not awaited: the request answers while the release goes on.
      const lease = await handle.acquire(key)
      void lease.release()
      return { fence: lease.fence }
    }
    case 'counted-hold': {
      // A workerStore hold of `ms` whose calls to the object are counted by kind, and when each renewal
      // was asked (ms from the grant). With `refuse`, the object's storage fails to keep that many
      // renewals once fn started (answered storage).
      const counted = countingCalls(namespace)
      const lock = workerStore(counted.namespace).lock(name, options)
      const asked = await lock.hold(key, async lease => {
        const start = Date.now()
        counted.from = start
        if (q.has('refuse')) await stub().refuseLeaseWrites(Number(q.get('refuse')))
        await sleep(ms)
        return { fence: lease.fence, lost: lease.lost, ran: Date.now() - start }
      })
      return { ...asked, calls: counted.calls, renewedAt: counted.renewedAt }
    }
    case 'nested':
      return await handle.hold(key, async () => {
        const start = Date.now()
        const answer = await handle.hold(key, { wait: '200ms' }, () => 'ran inside its own hold').then(v => ({ value: v }), errorInfo)
        return { ...answer, waitedMs: Date.now() - start }
      })
    case 'stall': {
      // The object ends the lease behind its holder's back (as if it lapsed): the next renewal answers
      // lost, so lease.signal aborts with a LostError and hold rejects LostError after fn settles.
      let seen
      const answer = await handle
        .hold(key, async lease => {
          await stub().dropLeases()
          await sleep(ms)
          seen = { aborted: lease.signal.aborted, reason: lease.signal.reason?.name, lost: lease.lost }
          return 'fn finished'
        })
        .then(value => ({ value }), errorInfo)
      return { ...answer, seen }
    }
    case 'raw-acquire':
      // The object's RPC, as a holder that never renews: a lease of `ttl` ms.
      return await stub().acquire(q.get('kind') ?? 'lock', name, key, {
        limit: Number(q.get('limit') ?? 1),
        ttl: Number(q.get('ttlMs') ?? 1000),
        maxHold: 0,
        // waitMs, not wait: `wait` is workerStore's duration (the handle above), which '5000' is not.
        wait: q.has('waitMs') ? Number(q.get('waitMs')) : 0,
        request: q.get('request') ?? hexId(),
      })
    case 'raw-cancel':
      // The object's RPC cancel of a request id, as workerStore's cancellable sends it.
      return await stub().cancel(q.get('request'))
    case 'raw-pool-claim': {
      // The object's RPC poolClaim, as workerStore's pool sends it (its object named by the pool alone).
      const wait = q.has('waitMs') ? Number(q.get('waitMs')) : 0
      const options = { id: q.get('id'), wait, ttl: 0, ...(q.has('asker') ? { asker: q.get('asker') } : {}) }
      return await env.HOLDFAST.get(env.HOLDFAST.idFromName(name)).poolClaim(name, Number(q.get('capacity') ?? 3), Number(q.get('n') ?? 1), options)
    }
    case 'raw-pool-op':
      // The object's RPC poolOp: a cancel of claim `id` by its `asker`, as workerStore's cancellable sends it.
      return await env.HOLDFAST.get(env.HOLDFAST.idFromName(name)).poolOp(q.get('op'), name, 0, q.get('id') ?? '', 0, q.get('asker') ?? undefined)
    case 'raw-try':
      return await stub().tryAcquire('lock', name, key, { limit: 1, ttl: 30_000, maxHold: 0, wait: 0, request: hexId() })
    case 'raw-renew':
      return await stub().renew(q.get('lease'))
    case 'raw-release':
      return await stub().release(q.get('lease'))
    case 'raw-bad':
      // Bad input sent straight to the object, past workerStore's own checks.
      return await stub().acquire(q.get('kind') ?? 'lock', q.get('badName') ?? name, q.has('badKey') ? q.get('badKey') : key, {
        limit: Number(q.get('limitNum') ?? 1),
        ttl: Number(q.get('ttlMs') ?? 30_000),
        maxHold: Number(q.get('maxHoldMs') ?? 0),
        wait: 0,
        request: q.get('request') ?? hexId(),
      })
    case 'callers':
      // #17: five callers, each in its own AsyncLocalStorage value, hold one key in turn: each fn sees its own.
      return await callersReport(handle, key, q.get('form'))
    case 'paused':
      return await paused(namespace, name)
    case 'inspect':
      return await stub().inspect()
    case 'inspect-pools':
      return await stub().inspectPools()
    case 'pool-values':
      return await stub().poolValues()
    case 'alarms':
      return await stub().alarms()
    case 'kept':
      return await stub().keptLeases()
    case 'refuse-writes':
      return { refused: await stub().refuseLeaseWrites(Number(q.get('n') ?? 1)) }
    case 'refuse-pool-writes':
      return { refused: await stub().refusePoolWrites(Number(q.get('n') ?? 1)) }
    case 'refuse-alarms':
      return { refused: await stub().refuseAlarms(Number(q.get('n') ?? 1)) }
    case 'alarms-refused':
      return { refused: await stub().alarmsRefused() }
    case 'crash-after-pool-write':
      return { armed: await stub().crashAfterPoolWrite() }
    case 'refuse-deletes':
      return { refused: await stub().refuseLeaseDeletes(Number(q.get('n') ?? 1)) }
    case 'hold-deletes':
      return { held: await stub().holdLeaseDeletes() }
    case 'let-deletes':
      return { let: await stub().letLeaseDeletes() }
    case 'trap-while-delete-held':
      return await stub().trapWhileDeleteHeld()
    case 'small-wrap':
      return { wrapped: await small().wrapConnectionNumbers() }
    case 'small-fail-over-limit':
      return { failed: await small().failOverLimit() }
    case 'small-connections':
      return await small().connectionNumbers()
    case 'crash':
      // The call that resets the object fails itself (a reset).
      return await stub()
        .crash('crash!')
        .then(() => ({ value: 'no reset' }), e => ({ reset: e?.durableObjectReset === true, message: String(e?.message ?? e) }))
    case 'crash-while-delete-held':
      return await stub()
        .crashWhileDeleteHeld()
        .then(() => ({ value: 'no reset' }), e => ({ reset: e?.durableObjectReset === true, message: String(e?.message ?? e) }))
    case 'reset-grant':
      return await resetGrant(namespace, name, key, stub)
    case 'abort-at-grant':
      return await abortAtGrant(namespace, name)
    case 'crossed-grant':
      return await crossedGrant(namespace, name, key, stub, Number(q.get('refuse') ?? 0), q.get('early') === '1')
    case 'object':
      return { name: objectName(name, key, shard === undefined ? undefined : { shard }), hash: fnv1a(key) }
    case 'pool':
      return await pools(store, name, q, namespace)
    default:
      return { error: { code: null, name: 'NotFound', message: `no such operation ${op}` } }
  }
}

/**
 * Pools of workerStore (issue #16) kept in the object named by the pool: `step` is one operation, or a
 * scenario run inside one Worker request (concurrent claims, a line of waiting claims).
 */
async function pools(store, name, q, namespace) {
  const capacity = Number(q.get('capacity') ?? 3)
  // capacity=none: the pool named alone (one that exists, whatever its capacity now).
  const pool = q.get('capacity') === 'none' ? store.pool(name) : store.pool(name, { capacity })
  const n = Number(q.get('n') ?? 1)
  const claimOptions = {}
  if (q.has('id')) claimOptions.id = q.get('id')
  if (q.has('wait')) claimOptions.wait = q.get('wait')
  if (q.has('ttl')) claimOptions.ttl = q.get('ttl')
  if (q.has('abortMs')) {
    // A claim whose signal aborts after abortMs.
    const ac = new AbortController()
    setTimeout(() => ac.abort('enough'), Number(q.get('abortMs')))
    claimOptions.signal = ac.signal
  }
  const outcome = r => ({ claimed: r.claimed, remaining: r.remaining, id: r.claim?.id, units: r.claim?.units })
  switch (q.get('step')) {
    case 'claim':
      return outcome(await pool.claim(n, claimOptions))
    case 'try-claim':
      // An answer either way, an error too (claim's answer is thrown through cloudflareRoute's).
      return await pool.claim(n, claimOptions).then(outcome, errorInfo)
    case 'release':
      return { released: await pool.release(q.get('id')) }
    case 'confirm':
      return { confirmed: await pool.confirm(q.get('id')).then(() => true) }
    case 'remaining':
      return { remaining: await pool.remaining() }
    case 'resize':
      await pool.resize(Number(q.get('to')))
      return { remaining: await pool.remaining() }
    case 'many': {
      // `count` concurrent claims of n units each, some with ids asked twice at once.
      const count = Number(q.get('count') ?? 10)
      const claims = Array.from({ length: count }, (_, i) => pool.claim(n, i % 2 ? { id: `twice-${i >> 1}` } : {}))
      const results = (await Promise.all(claims)).map(outcome)
      return { results, remaining: await pool.remaining() }
    }
    case 'bulk': {
      // `count` claims of 1 with 36-character ids, made in one turn: one write keeps them all, far
      // more than one value of the object's storage may hold (128 KiB).
      const ids = Array.from({ length: Number(q.get('count')) }, (_, i) => `${String(i).padStart(8, '0')}-0000-4000-8000-${q.get('tag') ?? 'bulkbulkbulk'}`)
      const results = await Promise.all(ids.map(id => pool.claim(1, { id }).then(r => r.claimed, e => errorInfo(e))))
      return { claimed: results.filter(r => r === true).length, failed: results.find(r => r !== true), remaining: await pool.remaining() }
    }
    case 'line': {
      // Capacity 3: a holder takes 2; A (2 units) waits; B (1 unit, which would fit) waits behind A
      // (head-of-line). The holder lets go: A is served first, then B. Then C waits with a signal that
      // aborts: C leaves the line, and a claim after it is not held up by it.
      const holder = await pool.claim(2)
      const order = []
      const a = pool.claim(2, { wait: '10s' }).then(r => (order.push('a'), outcome(r)))
      await sleep(100)
      const b = pool.claim(1, { wait: '10s' }).then(r => (order.push('b'), outcome(r)))
      await sleep(200)
      const before = { order: [...order], remaining: await pool.remaining() }
      await holder.claim.release()
      const [first, second] = await Promise.all([a, b])
      const ac = new AbortController()
      const c = pool.claim(1, { wait: '10s', signal: ac.signal }).then(outcome, errorInfo)
      await sleep(100)
      ac.abort('enough')
      const third = await c
      await pool.release(second.id)
      const fourth = outcome(await pool.claim(1))
      for (const id of [first.id, fourth.id]) await pool.release(id)
      return { before, order, first, second, third, fourth, after: await pool.remaining() }
    }
    case 'crossed':
      return await crossed(pool, namespace, name, capacity, n, q)
    case 'reset-cancel':
      return await resetCancel(pool, namespace, name, capacity, n)
    default:
      return { error: { code: null, name: 'NotFound', message: `no such pool step ${q.get('step')}` } }
  }
}

/** `namespace`, its stubs holding back `poolClaim`'s answers until `letGo()`, and keeping every `poolOp` asked (`ops`). */
function parking(namespace) {
  const parked = { ops: [] }
  let arrived
  parked.arrived = new Promise(resolve => (arrived = resolve))
  let letGo
  const gate = new Promise(resolve => (letGo = resolve))
  parked.letGo = letGo
  parked.namespace = {
    idFromName: name => namespace.idFromName(name),
    get(id) {
      const stub = namespace.get(id)
      return {
        poolClaim: async (...args) => {
          const answer = await stub.poolClaim(...args)
          arrived(answer)
          await gate
          return answer
        },
        poolOp: (...args) => {
          const answer = stub.poolOp(...args)
          parked.ops.push({ op: args[0], asker: args[5], answer })
          return answer
        },
      }
    },
  }
  return parked
}

/**
 * POOL-01/POOL-03 over Workers RPC: a claim `id` whose `claimed` answer crosses its caller's cancel —
 * its answer held back on its way (`parking`) while its signal aborts — then let through, so that the
 * caller's workerStore lets the claim go (the op it asks is reported). With `line`, the claim first
 * waits in line behind a holder of every unit; with `others`, a second caller (another workerStore)
 * asks the same id meanwhile (joined to it while it waits, or answered the open claim) and is told
 * `claimed` before the cancel. With `drawn`, the claim has no id of the caller's (workerStore draws
 * one); with `reset`, the object resets (`crash`) before the answer is let through, so that what lets
 * the claim go reaches the next instance, which read the claim back; with `refusePool`, the object's
 * next writes of its pools fail then; with `resetOnStorage`, the object resets once the withdraw was
 * answered `storage` (its undo not yet written again). Once the ops settled, the units left tell whether they went back.
 * With `early`, it answers as soon as the claim's answer is let through, as a Worker that returns its
 * response without waiting for what its store lets go (a later request looks at the units).
 */
async function crossed(pool, namespace, name, capacity, n, q) {
  const id = q.get('id') ?? 'crossed'
  const line = q.get('line') === '1'
  const others = q.get('others') === '1'
  const drawn = q.get('drawn') === '1'
  const reset = q.get('reset') === '1'
  const parked = parking(namespace)
  const mine = workerStore(parked.namespace).pool(name, { capacity })
  const object = namespace.get(namespace.idFromName(name))
  const waiting = async () => (await object.inspectPools()).find(p => p.name === name)?.waiting ?? 0
  if (line) assert((await pool.claim(capacity, { id: `${id}-holder` })).claimed, 'the holder took every unit')
  const ac = new AbortController()
  const asked = mine.claim(n, { ...(drawn ? {} : { id }), wait: '10s', signal: ac.signal }).then(
    r => ({ claimed: r.claimed }),
    e => errorInfo(e),
  )
  if (line) await poll(async () => (await waiting()) === 1, 'the claim waits in line')
  const other = others ? pool.claim(n, { id, wait: '10s' }) : undefined
  if (line) {
    // The other caller's ask reaches the object before the units come back, or after: joined to the
    // claim, or answered it open; it is told `claimed` before the cancel either way.
    await sleep(100)
    assert(await pool.release(`${id}-holder`), 'the holder let go')
  }
  const answered = await parked.arrived
  const told = other ? (await other).claimed : undefined
  ac.abort('enough')
  const cancelled = await asked
  if (q.has('refusePool')) await object.refusePoolWrites(Number(q.get('refusePool')))
  if (reset) await object.crash('reset before the crossed claim is let go').catch(() => {})
  parked.letGo()
  if (q.get('early') === '1') return { answered, cancelled }
  const letGo = await poll(() => parked.ops.find(o => o.op !== 'cancel'), 'the crossed claim is let go')
  if (q.get('resetOnStorage') === '1') {
    // The withdraw answered storage (its undo in memory only, written again later): the object resets first.
    await poll(async () => (await letGo.answer)?.error?.code === 'storage', 'the withdraw is answered storage')
    await object.crash('reset before the withdraw is kept').catch(() => {})
  }
  // Settled: every op asked answered, and none more asked for 300 ms (or `settle` ms: a withdraw
  // answered storage is asked again after waits that double).
  const settle = Number(q.get('settle') ?? 300)
  for (let seen = -1; seen !== parked.ops.length; ) {
    seen = parked.ops.length
    await Promise.allSettled(parked.ops.map(o => o.answer))
    await sleep(settle)
  }
  return {
    answered,
    told,
    cancelled,
    ops: parked.ops.map(o => o.op),
    letGo: { op: letGo.op, asker: typeof letGo.asker, answer: await letGo.answer },
    last: { op: parked.ops.at(-1).op, answer: await parked.ops.at(-1).answer },
    remaining: await pool.remaining(),
  }
}

/**
 * A claim with a drawn id and a signal, which the object keeps, then resets before answering
 * (`crashAfterPoolWrite`); its signal aborts as the call fails, before workerStore asks again. The
 * ops asked after are reported; once they settled, the units left tell whether the claim's came back.
 */
async function resetCancel(pool, namespace, name, capacity, n) {
  const ac = new AbortController()
  const ops = []
  const failing = {
    idFromName: id => namespace.idFromName(id),
    get(id) {
      const stub = namespace.get(id)
      return {
        poolClaim: (...args) =>
          stub.poolClaim(...args).catch(error => {
            ac.abort('enough')
            throw error
          }),
        poolOp: (...args) => {
          const answer = stub.poolOp(...args)
          ops.push({ op: args[0], answer })
          return answer
        },
      }
    },
  }
  const object = namespace.get(namespace.idFromName(name))
  await object.crashAfterPoolWrite()
  const asked = await workerStore(failing)
    .pool(name, { capacity })
    .claim(n, { wait: '10s', signal: ac.signal })
    .then(r => ({ claimed: r.claimed }), errorInfo)
  for (let seen = -1; seen !== ops.length; ) {
    seen = ops.length
    await Promise.allSettled(ops.map(o => o.answer))
    await sleep(300)
  }
  const answers = []
  for (const o of ops) answers.push({ op: o.op, answer: await o.answer.catch(e => String(e)) })
  return { asked, ops: answers, remaining: await pool.remaining() }
}

function assert(ok, what) {
  if (!ok) throw new Error(`crossed: ${what} failed`)
}

/** `check()`'s first truthy answer, asked every 20 ms for at most 5 s. */
async function poll(check, what) {
  for (const started = Date.now(); Date.now() - started < 5_000; await sleep(20)) {
    const value = await check()
    if (value) return value
  }
  throw new Error(`crossed: ${what}: not within 5 s`)
}

export async function cloudflareRoute(op, q, env) {
  try {
    return await cloudflare(op, q, env)
  } catch (e) {
    return errorInfo(e)
  }
}

/**
 * LOCK-06: two holds (or tries) of one workerStore asked at once, the first's fn aborting the second's
 * signal, the object's answers to both held back until both came, then let through in one turn (as
 * two answers read together): the second's lease came before the first's fn ran, its own fn not
 * started. Answers, for each form, what the second was answered, whether its fn ran, and whether its
 * key was free after (asked by another workerStore). Two answers of the real namespace came in turns
 * of their own (30 of 30 tries): the first's fn ran before the second's grant was read.
 */
async function abortAtGrant(namespace, name) {
  const answers = {}
  for (const form of ['hold', 'tryHold']) {
    let asked = 0
    let letThrough
    const both = new Promise(resolve => (letThrough = resolve))
    const held = ask => async (...args) => {
      const answer = await ask(...args)
      if (++asked === 2) letThrough()
      await both
      return answer
    }
    const parked = {
      idFromName: n => namespace.idFromName(n),
      get(id) {
        const real = namespace.get(id)
        return {
          acquire: held((...args) => real.acquire(...args)),
          tryAcquire: held((...args) => real.tryAcquire(...args)),
          cancel: request => real.cancel(request),
          release: lease => real.release(lease),
          renew: lease => real.renew(lease),
        }
      },
    }
    const lock = workerStore(parked).lock(name)
    const ac = new AbortController()
    let ran = false
    const first = lock[form](`${form}-first`, () => ac.abort('gave up'))
    const answer = await lock[form](`${form}-second`, { signal: ac.signal }, () => (ran = true)).then(
      value => ({ value }),
      e => ({ ...errorInfo(e), cause: String(e.cause) }),
    )
    await first
    const free = await workerStore(namespace).lock(name).tryHold(`${form}-second`, () => 'free')
    answers[form] = { ...answer, ran, free }
  }
  return answers
}

/**
 * A workerStore hold of `key` with a signal, through stubs of `namespace` that hold the object's grant
 * back on its way until `letGo()` (or `letGo(error)`: the call then fails with `error`, as one a reset
 * of the object cut does), and keep every cancel and release asked (their answers). Once the grant
 * came, `meanwhile()` runs, then the signal aborts. Answers whether it was a grant, what the hold was
 * answered, and those.
 */
async function abortedGrant(namespace, name, key, meanwhile) {
  let arrived
  const answered = new Promise(resolve => (arrived = resolve))
  let letGo
  const gate = new Promise(resolve => (letGo = resolve))
  const cancels = []
  const releases = []
  const kept = (calls, answer) => (calls.push(answer), answer)
  const parked = {
    idFromName: n => namespace.idFromName(n),
    get(id) {
      const real = namespace.get(id)
      return {
        acquire: async (...args) => {
          const answer = await real.acquire(...args)
          arrived(answer)
          const error = await gate
          if (error) throw error
          return answer
        },
        cancel: request => kept(cancels, real.cancel(request)),
        release: lease => kept(releases, real.release(lease)),
        renew: lease => real.renew(lease),
      }
    },
  }
  const ac = new AbortController()
  const asked = workerStore(parked).lock(name).acquire(key, { signal: ac.signal, wait: '10s' }).then(
    lease => ({ fence: lease.fence }),
    e => errorInfo(e),
  )
  const grant = await answered
  await meanwhile()
  ac.abort('enough')
  return { granted: 'ok' in grant, cancelled: await asked, cancels, releases, letGo }
}

/**
 * A workerStore hold whose grant crosses its signal's abort (`abortedGrant`), let through once the
 * cancel was answered, so that the caller lets the grant go (a release). The object's next `refuse`
 * deletes of kept leases fail (the cancel's first: the grant is there when it comes). Answers what
 * each call was answered, and what the object holds once the releases settled; with `early`, answers
 * as soon as the grant is let through, as a Worker that returns its response without waiting for what
 * its store lets go (a later request looks).
 */
async function crossedGrant(namespace, name, key, stub, refuse, early) {
  const { granted, cancelled, cancels, releases, letGo } = await abortedGrant(namespace, name, key, () => stub().refuseLeaseDeletes(refuse))
  await poll(() => cancels.length > 0, 'the cancel is sent')
  const cancel = await cancels[0]
  letGo()
  if (early) return { granted, cancelled, cancel }
  // Settled: a release answered ok, or none more asked for a second.
  for (let seen = -1; seen !== releases.length; ) {
    seen = releases.length
    await sleep(1_000)
    if ((await Promise.all(releases)).some(r => r.ok)) break
  }
  return { granted, cancelled, cancel, releases: await Promise.all(releases), held: await stub().inspect() }
}

/**
 * A workerStore hold granted (the lease kept) whose signal aborts before its answer comes
 * (`abortedGrant`), and whose cancel is lost with a reset of the object (its delete of the kept lease
 * held up, then the object reset: `crashWhileDeleteHeld`); the grant's answer is lost with the reset
 * too (its call fails with the cancel's error, as a call the reset cut does). The next instance took
 * the lease back. Answers what the hold and the cancel were answered, and what the object holds once
 * the calls after settled.
 */
async function resetGrant(namespace, name, key, stub) {
  const { granted, cancelled, cancels, letGo } = await abortedGrant(namespace, name, key, () => stub().holdLeaseDeletes())
  await stub()
    .crashWhileDeleteHeld()
    .catch(() => {})
  const cancel = await cancels[0].then(
    answer => ({ answer }),
    error => ({ reset: error?.durableObjectReset === true, error }),
  )
  letGo(cancel.error ?? new Error('the cancel was answered'))
  // Settled: no cancel more asked for a second.
  for (let seen = -1; seen !== cancels.length; ) {
    seen = cancels.length
    await sleep(1_000)
    await Promise.allSettled(cancels)
  }
  return { granted, cancelled, cancel: { reset: cancel.reset, answer: cancel.answer }, cancels: cancels.length, held: await stub().inspect() }
}

/**
 * A clock for workerStore whose time moves only when told, and whose timers run only when told:
 * `stall(ms)` moves time without running them (a holder paused, or its event loop blocked), `runDue()`
 * runs those whose time came, late, earliest first.
 */
function stallClock() {
  let now = 0
  let seq = 0
  const timers = new Map()
  return {
    now: () => now,
    setTimeout(fn, ms) {
      timers.set(++seq, { at: now + ms, fn })
      return seq
    },
    clearTimeout(handle) {
      timers.delete(handle)
    },
    stall(ms) {
      now += ms
    },
    runDue() {
      for (;;) {
        let due
        for (const entry of timers) if (entry[1].at <= now && (!due || entry[1].at < due[1].at)) due = entry
        if (!due) return
        timers.delete(due[0])
        due[1].fn()
      }
    },
  }
}

/**
 * `namespace`, its stubs counting the calls asked by kind (`counted.calls`), and when each renewal was
 * asked (`counted.renewedAt`, ms from `counted.from`).
 */
function countingCalls(namespace) {
  const counted = { calls: {}, renewedAt: [], from: Date.now() }
  const count = (op, call) => (...args) => {
    counted.calls[op] = (counted.calls[op] ?? 0) + 1
    if (op === 'renew') counted.renewedAt.push(Date.now() - counted.from)
    return call(...args)
  }
  counted.namespace = {
    idFromName: name => namespace.idFromName(name),
    get(id) {
      const stub = namespace.get(id)
      const ops = {}
      for (const op of ['acquire', 'tryAcquire', 'renew', 'release', 'cancel']) ops[op] = count(op, (...args) => stub[op](...args))
      return ops
    },
  }
  return counted
}

/** `namespace`, its stubs counting the renewals asked (`counted.renewals`). */
function countingRenewals(namespace) {
  const counted = { renewals: 0 }
  counted.namespace = {
    idFromName: name => namespace.idFromName(name),
    get(id) {
      const stub = namespace.get(id)
      return {
        acquire: (...args) => stub.acquire(...args),
        tryAcquire: (...args) => stub.tryAcquire(...args),
        renew: lease => (counted.renewals++, stub.renew(lease)),
        release: lease => stub.release(lease),
        cancel: request => stub.cancel(request),
      }
    },
  }
  return counted
}

/**
 * #13 items 10 and 11 in workerd: two workerStore leases (ttl 3 s: a deadline 2.4 s after the grant, as
 * this side counts it) on test clocks moved past their deadlines without running their timers. The
 * first is renewed once, then its renewal timer runs late: it must not renew, and must lose the lease
 * (seen by an abort listener, nothing read). The second is read: a signal kept from before must read
 * aborted, its listener having heard it within the read.
 */
async function paused(namespace, name) {
  const late = stallClock()
  const lateStore = countingRenewals(namespace)
  const first = await workerStore(lateStore.namespace, { clock: late }).lock(name, { ttl: '3s' }).acquire('late')
  let firstLostAt
  first.signal.addEventListener('abort', () => (firstLostAt = late.now()))
  late.stall(1_000)
  late.runDue()
  await sleep(100) // the renewal's answer
  const renewedOnce = lateStore.renewals
  late.stall(3_000) // past the deadline (1,000 + 2,400)
  late.runDue()
  await sleep(100)
  const read = stallClock()
  const readStore = countingRenewals(namespace)
  const second = await workerStore(readStore.namespace, { clock: read }).lock(name, { ttl: '3s' }).acquire('read')
  const signal = second.signal
  let heard = 0
  signal.addEventListener('abort', () => heard++)
  read.stall(2_399)
  const before = signal.aborted
  read.stall(1)
  const after = { aborted: signal.aborted, heard, lost: second.lost, reason: signal.reason?.message }
  read.runDue()
  await sleep(100)
  return {
    late: { renewedOnce, renewals: lateStore.renewals, lostAt: firstLostAt, reason: first.signal.reason?.message },
    read: { before, after, renewals: readStore.renewals },
  }
}
