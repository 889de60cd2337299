/**
 * Pools kept in Redis (issue #16): `store.pool(name, { capacity })` on a store of `holdfast/redis`, the
 * same `Pool` and `Claim` handles as a local store's (`../pool/pool.ts`), whose operations run the
 * `pool` entry point of the Lua (`scripts/pool.ts`, which keeps the invariants and documents the
 * layout). Every count is changed only inside Redis, one script at a time, and every deadline (a
 * wait, a claim's ttl, the 24 hours of an id, a waiter's heartbeat) is judged there by the server's
 * clock.
 *
 * # A claim
 * A claim has an id: the caller's (remembered for 24 hours after it took its units: POOL-03), or one
 * drawn here (nobody can ask with it again, so Redis forgets it once it holds nothing). It is asked once
 * (`f`): Redis takes the units, answers that they are not there, or puts it in line. A claim in line is
 * served by the script that freed the units, which tells this process on its channel (`wakeups.ts`);
 * the claim then asks for its answer, which acknowledges it to Redis (units served to a process that
 * died meanwhile come back a `BEAT` later, nobody told of them); meanwhile it asks where it stands (`b`) every `BEAT`/3 (a heartbeat: a claim whose
 * process died leaves the line `BEAT` after its last one), and when its wait ends (Redis answers whether
 * it ran out: its clock judges it).
 *
 * # Callers of one claim
 * An id asked again here while its claim is unanswered joins it (the same `n`, else `InvalidError`):
 * one claim in Redis, answered to every caller still waiting for it, each of which is also answered by
 * its own signal (`CancelledError`) and its own wait (`claimed: false`). The claim waits in Redis for
 * the longest wait of its callers (a longer one that joins is sent to Redis, `e`), whose end Redis
 * judges; a shorter one ends here, by this side's clock. It stays in line while one caller still waits
 * for it: the last to go takes it out (a cancel). A claim that joined another process's (Redis said
 * so) is that process's: its wait is never made longer from here, and its callers' endings never take
 * it out.
 *
 * # Asking again
 * A claim that got no answer (a dropped connection, a failover) is asked again with the same id (`r`)
 * until its wait and a grace are over: Redis never takes units twice for one id. Given up on, it is
 * cancelled in Redis (sent whenever Redis is back, asked again if a cut connection lost it: `#cancel`),
 * which undoes it if it took units nobody was told of; so is a claim whose signal aborts or whose store
 * closes. Its asks and its cancel carry its own
 * ask id (`Pending.ask`), kept with the claim by the ask that put it in Redis: a cancel takes out only
 * that claim, never one of its id that another process (or an earlier claim here) put there, whose ask
 * may never have reached Redis. A claim answered to an ask of another, or confirmed (`seen`), is never
 * undone: it stands, and its id releases it.
 *
 * A release, confirm, resize or remaining that got no answer (a cut connection, which node-redis and
 * Bun's client reject with what was in flight; BUSY, LOADING) is asked again, as an inspect is
 * (`PoolHost.patiently`), and answers as asked once would have. A remaining only reads (it makes a pool
 * Redis forgot, the same each time). A confirm asked again finds the claim confirmed and answers done:
 * only a release of its id between the two tries makes it answer `LostError`, as it would asked after
 * that release. A resize asked again sets the same capacity: only another resize between, and claims
 * past it, make it refused, as it would be asked after them (and see `_resize`). A release carries an
 * ask id of its own, which the tombstone it leaves keeps (scripts/pool.ts): asked again after it ran, it
 * answers released, not "held nothing". Not a release of an id drawn here: Redis forgets it once it
 * holds nothing (a tombstone each would cost every such release a write, and keep an idle pool), so
 * that asked again after it ran it would answer `false`; it is asked again only after a reply that ran
 * nothing (BUSY, LOADING), and one with no answer rejects `ClosedError` (it may have released: its
 * `claim.release()` asked again says).
 *
 * # Capacity
 * A handle's calls carry its capacity. Until one was answered, Redis refuses them when the pool has
 * another (`InvalidError` naming both, as `store.pool()` is on a local store: the check needs Redis, so
 * it comes with the first call); after, they carry it only to make the pool again should Redis have
 * forgotten it (nothing claimed, nobody waiting, no remembered id: see scripts/pool.ts), so that a
 * resize by another process does not make the handle's calls invalid. A resize by the handle is its
 * capacity from then on. A handle made without a capacity (`pool(name)`, as over a connection) names a
 * pool Redis has: its calls are refused (`InvalidError`) when Redis has none.
 */

import { CancelledError, ClosedError, InvalidError, LostError, StorageError, errorOf, type ErrorCode } from '../errors.js'
import { MadeClaim, MAX_ID_BYTES, MadePool, checkUnits, type Pool, type ClaimRequest, type ClaimResult, type PoolStore } from '../pool/pool.js'
import type { PoolInfo } from '../pool/types.js'
import { clearTimer, setTimer, type Clock } from '../util/clock.js'
import { checkOptions } from '../util/options.js'
import { randomId } from '../util/random.js'
import { answeredTransient, CLIENT_ENDED, ReplyFailure } from './adapter.js'
import { poolKeysOf, poolTagOf } from './scripts.js'
import type { PoolWake } from './wakeups.js'
import { checkName } from '../util/name.js'

/** How long a waiting claim keeps its place without a heartbeat (it sends one every third of it). */
export const BEAT = 10_000
/** How long past its wait a claim waits for Redis's own answer. */
const WAIT_GRACE = 1_000
/** How long an operation waits for Redis. */
const PATIENCE = 10_000
/** How long `close()` waits for Redis to take its cancels. */
const CLOSE_PATIENCE = 1_000
/** A claim asked again after no answer, this long after. */
const AGAIN_MS = 100
/** A question meant for a deadline is sent this much after it, so that Redis finds it past. */
const SLACK = 5

/** What the pools need of their store. */
export interface PoolHost {
  readonly clock: Clock
  readonly prefix: string
  /** `'grace publish beat'`: what every call sends (see scripts/pool.ts). */
  readonly constants: string
  /** Runs the `pool` entry point (asked again while it answers `{'a'}`); rejects `ReplyFailure` for an error reply, anything else for no answer. */
  run(keys: string[], args: (string | number)[], patience: number): Promise<unknown>
  /** The channel that tells this process of a claim of the pool whose hash tag is `tag`. */
  channelFor(tag: string): string
  /** Sharded wake-ups: subscribes while a claim waits (resolves true when a grant may have been missed). */
  want(channel: string): Promise<boolean>
  unwant(channel: string): void
  /** The store's `ClosedError` for `place`, if it is closed. */
  closed(place: string): ClosedError | undefined
  /** Whether the client is closed for good: nothing sent is answered any more (adapter.ts, `ended`). */
  ended(): boolean
  /**
   * What `attempt` answers, asked again after no answer (a cut, BUSY, LOADING) within a `PATIENCE`,
   * each try's commands given up at `until` (store.ts, `#patiently`); rejects `ReplyFailure` for an
   * error reply, `ClosedError` naming `place` for no answer. `unanswered` false: asked again only
   * after a reply that passes by itself (BUSY: it ran nothing), not after no answer at all.
   */
  patiently<T>(place: string, attempt: (until: number) => Promise<T>, unanswered?: boolean): Promise<T>
}

/** A handle's capacity, and whether a call of it was answered (see # Capacity). */
interface HandleState {
  capacity: number
  checked: boolean
  keys: string[]
  channel: string
}

/** One caller waiting for the answer of a claim (the first to ask it here, or one that joined it). */
interface Asker {
  resolve: (result: ClaimResult) => void
  reject: (error: Error) => void
  /** When its own wait ends, by this side's clock (Infinity: no limit). */
  readonly waitUntil: number
  timer: unknown
  off: (() => void) | undefined
}

/** A claim asked and not answered yet. */
class Pending {
  readonly key: string
  readonly place: string
  /** The callers it answers: it stays in Redis's line while one of them still waits. */
  readonly askers = new Set<Asker>()
  /** When its wait ends, by this side's clock (Infinity: no limit): the longest of its askers'. */
  waitUntil: number
  /** When this side stops asking Redis again (a wait and a grace). */
  giveUpAt: number
  /** A joined asker's wait was longer: Redis is to be asked with it once the claim is in line. */
  extend = false
  timer: unknown = undefined
  /** Whether it waits in line (its channel wanted, heartbeats under way). */
  waiting = false
  /**
   * Its asks, numbered as sent; and the last of them sent before a wake-up of it may have been lost
   * (`#doubt`): an answer "in line" to one of those says nothing of a grant published after Redis ran
   * it, and it asks again at once.
   */
  asked = 0
  doubted = 0
  subscribed = false
  done = false
  /** Whether its first ask joined a claim another caller had in line (it never takes that claim out). */
  joined = false

  constructor(
    readonly pool: Pool,
    readonly state: HandleState,
    readonly id: string,
    /** Its ask id, sent with every ask and its cancel: Redis lets a cancel undo only the claim this one put there. */
    readonly ask: string,
    readonly n: number,
    readonly remember: boolean,
    readonly ttl: number,
  ) {
    this.key = `${state.keys[0]} ${id}`
    this.place = remember ? `pool ${pool.name}: claim ${JSON.stringify(id)}` : `pool ${pool.name}`
    this.waitUntil = -Infinity
    this.giveUpAt = -Infinity
  }
}

export class RedisPools implements PoolStore {
  readonly #host: PoolHost
  readonly #handles = new WeakMap<Pool, HandleState>()
  /** Claims asked and not answered, by `hash id`. */
  readonly #pending = new Map<string, Pending>()
  /** Claim ids drawn here: a random prefix of this store's and a count (as request ids, store.ts). */
  readonly #idPrefix = randomId().slice(0, 20)
  #idCount = 0
  /** Ask ids (see `Pending.ask`): a random prefix of this store's and a count; unique among the asks of one claim id. */
  readonly #askPrefix = randomId().slice(0, 12)
  #askCount = 0
  /** Cancels sent with no patience and not answered yet (see `#cancel`), which `close()` waits for. */
  readonly #sending = new Map<Pending, Promise<unknown>>()
  /** Cancels a cut connection lost, to be asked again: the timer that asks, and until when they are asked. */
  readonly #again = new Map<Pending, { timer: unknown; until: number }>()
  /** When the close's second ends (undefined: not closing); whether the close is done; the timers it set. */
  #closeBy: number | undefined = undefined
  #closeDone = false
  readonly #timers = new Set<unknown>()

  constructor(host: PoolHost) {
    this.#host = host
  }

  /** `store.pool(name, { capacity })`; without a capacity, a pool Redis has (its calls are refused when it has none). */
  pool(name: unknown, options: unknown): Pool {
    const place = `pool ${String(name)}`
    const closed = this.#host.closed(place)
    if (closed) throw closed
    checkName('pool', name)
    const o = checkOptions(options, place, ['capacity'])
    const capacity = o.capacity === undefined ? 0 : checkUnits(o.capacity, `${place}: capacity`)
    const pool = new MadePool(this, name, 0)
    const tag = poolTagOf(name)
    this.#handles.set(pool, { capacity, checked: false, keys: poolKeysOf(this.#host.prefix, name), channel: this.#host.channelFor(tag) })
    return pool
  }

  #state(pool: Pool): HandleState {
    const state = this.#handles.get(pool)
    if (!state) throw new InvalidError(`pool ${pool.name}: not a pool of this store`)
    return state
  }

  /** Runs an operation of `pool`; an answer (but a refused capacity) means the handle's capacity was checked. */
  async #call(state: HandleState, op: string, rest: (string | number)[], patience: number): Promise<unknown> {
    const capacity = state.capacity === 0 ? '-' : `${state.checked ? 'c' : 'C'}${state.capacity}`
    const answer = await this.#run(state.keys, [op, capacity, this.#host.constants, ...rest], patience)
    if (!(Array.isArray(answer) && answer[0] === 'x' && /^capacity \d+ differs/.test(String(answer[2])))) state.checked = true
    return answer
  }

  /** Runs the `pool` entry point (the host asks again while it answers `{'a'}`: see scripts/pool.ts, `REAP`). */
  #run(keys: string[], args: (string | number)[], patience: number): Promise<unknown> {
    return this.#host.run(keys, args, patience)
  }

  /** An error answer (`{'x', code, message}`), or undefined. */
  #refusal(answer: unknown, place: string): Error | undefined {
    if (Array.isArray(answer) && answer[0] === 'x') return errorOf(String(answer[1]) as ErrorCode, `${place}: ${String(answer[2])}`)
    return undefined
  }

  /**
   * A simple operation (see # Asking again), asked again after no answer within its `PATIENCE`
   * (`PoolHost.patiently`): given up, a `ClosedError`; an error reply, a `StorageError`; a refusal of
   * the script, its error. `read` reads the answer first (see `_resize`).
   */
  async #patient(
    pool: Pool,
    place: string,
    op: string,
    rest: (string | number)[],
    read?: (answer: unknown) => unknown,
    unanswered?: boolean,
  ): Promise<unknown> {
    const closed = this.#host.closed(place)
    if (closed) throw closed
    return this.#patiently(this.#state(pool), place, op, rest, read, unanswered)
  }

  #patiently(
    state: HandleState,
    place: string,
    op: string,
    rest: (string | number)[],
    read = (answer: unknown) => answer,
    unanswered = true,
  ): Promise<unknown> {
    return this.#host
      .patiently(place, until => this.#call(state, op, rest, until - this.#host.clock.now()), unanswered)
      .then(read)
      .then(
        answer => {
          const refused = this.#refusal(answer, place)
          if (refused) throw refused
          return answer
        },
        error => Promise.reject(this.#failure(error, place)),
      )
  }

  #failure(error: unknown, place: string): Error {
    if (error instanceof ClosedError) return error
    if (error instanceof ReplyFailure) return new StorageError(`${place}: Redis refused the script: ${error.message}`, { cause: error })
    return new ClosedError(`${place}: ${answeredTransient(error) ?? `no answer from Redis: ${(error as Error)?.message ?? String(error)}`}`, { cause: error })
  }

  // ---- claims ----

  /** @internal */
  _claim(pool: Pool, asked: ClaimRequest): Promise<ClaimResult> {
    const state = this.#state(pool)
    // A wait counts its whole ms, as on a local store (whose engine takes it in whole ms, rounded
    // down): 1.5 ms is 1; one under 1 ms is none, so the claim asks as a try, never put in line.
    const wait = Math.floor(asked.wait)
    const request = wait === asked.wait ? asked : { ...asked, wait }
    let place = `pool ${pool.name}`
    const closed = this.#host.closed(place)
    if (closed) return Promise.reject(closed)
    const id = request.id ?? this.#idPrefix + (this.#idCount++).toString(36)
    if (request.id !== undefined) {
      place = `${place}: claim ${JSON.stringify(id)}`
      const bytes = new TextEncoder().encode(id).length
      if (bytes > MAX_ID_BYTES) return Promise.reject(new InvalidError(`${place}: claim id of ${bytes} bytes must be 1 to ${MAX_ID_BYTES} bytes`))
    }
    const joined = this.#pending.get(`${state.keys[0]} ${id}`)
    if (joined) {
      // The same id asked again in this process while its claim is unanswered: the same claim, the
      // same answer, but its own signal and wait (the claim waits for the longest, Redis told so).
      // Refused in the words of the script, and of a store in process.
      if (joined.n !== request.n)
        return Promise.reject(new InvalidError(`pool ${pool.name}: claim id ${JSON.stringify(id)} took ${joined.n} units; asked again for ${request.n}`))
      const answer = this.#addAsker(joined, request)
      if (joined.extend && joined.waiting && !joined.joined) this.#ask(joined, 'e')
      return answer
    }
    const p = new Pending(pool, state, id, this.#askPrefix + (this.#askCount++).toString(36), request.n, request.id !== undefined, request.ttl)
    this.#pending.set(p.key, p)
    const answer = this.#addAsker(p, request)
    p.extend = false
    this.#ask(p, 'f')
    return answer
  }

  /**
   * A caller of claim `p`, answered by the claim, or before: by its own signal (`CancelledError`), or
   * by its own wait when the claim waits longer for another (`claimed: false`, by this side's clock).
   */
  #addAsker(p: Pending, request: ClaimRequest): Promise<ClaimResult> {
    const now = this.#host.clock.now()
    return new Promise<ClaimResult>((resolve, reject) => {
      const asker: Asker = { resolve, reject, waitUntil: now + request.wait, timer: undefined, off: undefined }
      p.askers.add(asker)
      const signal = request.signal
      if (signal) {
        const onAbort = () => this.#leave(p, asker, new CancelledError(`${p.place}: cancelled while waiting`, { cause: signal.reason }))
        signal.addEventListener('abort', onAbort, { once: true })
        asker.off = () => signal.removeEventListener('abort', onAbort)
      }
      if (asker.waitUntil > p.waitUntil) {
        p.waitUntil = asker.waitUntil
        p.giveUpAt = asker.waitUntil + WAIT_GRACE
        p.extend = true
      }
      this.#judgeHere(p)
    })
  }

  /**
   * The claim's wait (the longest of its callers') is judged by Redis; a shorter one of a caller, and
   * every caller's of a claim joined to another process's (whose wait is that process's), here.
   */
  #judgeHere(p: Pending): void {
    const now = this.#host.clock.now()
    for (const asker of p.askers) {
      if (asker.timer !== undefined || asker.waitUntil === Infinity || (asker.waitUntil >= p.waitUntil && !p.joined)) continue
      asker.timer = setTimer(
        this.#host.clock,
        () => {
          asker.timer = undefined
          this.#leave(p, asker, undefined)
        },
        Math.max(0, asker.waitUntil - now),
      )
    }
  }

  /**
   * Caller `asker` of claim `p` is answered before the claim (`error`, or its wait ran out:
   * `claimed: false`). The last to go takes the claim out of Redis (see `#cancel`).
   */
  #leave(p: Pending, asker: Asker, error: Error | undefined): void {
    if (p.done || !p.askers.delete(asker)) return
    this.#quiet(asker)
    const last = p.askers.size === 0
    if (last) this.#finish(p)
    const cancelled = last ? this.#cancel(p, Infinity) : Promise.resolve()
    if (error) return asker.reject(error)
    void cancelled
      .then(() => this.#patiently(p.state, p.place, 'remaining', []))
      .then(
        remaining => asker.resolve({ claimed: false, remaining: Number(remaining) }),
        failure => asker.reject(failure),
      )
  }

  /** Caller `asker` hears nothing more of its signal or its wait. */
  #quiet(asker: Asker): void {
    if (asker.timer !== undefined) clearTimer(this.#host.clock, asker.timer)
    asker.timer = undefined
    asker.off?.()
  }

  /**
   * Asks Redis about claim `p`: `f` first, `r` again after no answer, `b` where it stands (`B` when it
   * joined another's claim), `e` the same with the longer wait of a caller that joined it here.
   */
  #ask(p: Pending, mode: 'f' | 'r' | 'b' | 'e'): void {
    if (p.done) return
    const sent = mode === 'b' && p.joined ? 'B' : mode
    const now = this.#host.clock.now()
    const wait = p.waitUntil === Infinity ? -1 : Math.max(0, Math.ceil(p.waitUntil - now))
    if (mode === 'e') p.extend = false
    const patience = Math.min(PATIENCE, p.giveUpAt - now)
    const asked = ++p.asked
    this.#call(p.state, 'claim', [p.id, p.n, wait, p.ttl, p.remember ? 1 : 0, sent, p.state.channel, p.ask], Math.max(WAIT_GRACE, patience)).then(
      answer => this.#answered(p, answer, asked),
      error => {
        if (p.done) return
        if (mode === 'e') p.extend = true
        if (error instanceof ReplyFailure) {
          // An error reply ends the claim, in Redis too when it may be in line there as this process's
          // (Redis said it waits, or an ask of it went unanswered): left, it would stand in the way of
          // the claims behind it until its heartbeat's deadline, and be served units held for nobody
          // until its ack deadline. (A cancel never takes out a claim of its id another ask put there.)
          this.#end(p, this.#failure(error, p.place))
          if (p.waiting || mode === 'r') void this.#cancel(p, Infinity)
          return
        }
        // No answer will come on a client closed for good (a claim waiting without limit waited until
        // store.close()), nor can its cancel be sent.
        if (this.#host.ended()) return this.#end(p, new ClosedError(`${p.place}: ${CLIENT_ENDED}`, { cause: error }))
        if (this.#host.clock.now() + AGAIN_MS >= p.giveUpAt) {
          // Redis answering READONLY (a failover) all along was reached: not "unreachable".
          this.#end(
            p,
            new ClosedError(`${p.place}: ${answeredTransient(error, 'within the wait') ?? 'no answer from Redis within the wait: unreachable'}`, {
              cause: error,
            }),
          )
          return void this.#cancel(p, Infinity)
        }
        // Asked again with its id: never taken twice. One that waited asks where it stands.
        this.#later(p, AGAIN_MS, () => this.#ask(p, p.waiting ? 'b' : 'r'))
      },
    )
  }

  /** Acts on where Redis says claim `p` stands (an answer to ask number `asked`, or a wake-up). */
  #answered(p: Pending, answer: unknown, asked = p.asked): void {
    if (p.done) return
    if (!Array.isArray(answer)) return this.#end(p, new StorageError(`${p.place}: unexpected answer from Redis: ${JSON.stringify(answer)}`))
    switch (answer[0]) {
      case 'c':
        return this.#end(p, { claimed: true, remaining: Number(answer[1]), claim: new MadeClaim(p.pool, p.id, p.n) })
      case 'k':
        return this.#end(p, { claimed: true, remaining: Number(answer[1]), claim: new MadeClaim(p.pool, p.id, p.n) })
      case 'n':
      case 'g':
        // Not there at once, its wait ran out, it left the line (a resize), or (g) Redis no longer has
        // it in line (its heartbeats did not reach Redis for a BEAT): it took nothing.
        return this.#end(p, { claimed: false, remaining: Number(answer[1]) })
      case 'w': {
        // In line: a heartbeat every BEAT/3, and a question when the wait ends (Redis judges it).
        // At the head, sooner when units of a claim's ttl come back first (Redis hands them over when asked).
        if (answer[3] === 1 && !p.joined) {
          // Joined to another process's claim: its wait is that process's, never made longer from
          // here; each caller's own wait is judged here.
          p.joined = true
          p.extend = false
          this.#judgeHere(p)
        }
        const waitLeft = Number(answer[1])
        const hint = Number(answer[2])
        let next = Math.floor(BEAT / 3)
        if (waitLeft >= 0) next = Math.min(next, waitLeft + SLACK)
        if (hint >= 0) next = Math.min(next, hint + SLACK)
        // A caller that joined with a longer wait than the claim had: Redis is told it now. An ask sent
        // before a wake-up may have been lost: Redis ran it before that grant, if any.
        if (p.extend || asked <= p.doubted) next = 0
        this.#later(p, next, () => this.#ask(p, p.extend ? 'e' : 'b'))
        if (!p.waiting) {
          p.waiting = true
          this.#want(p)
        }
        return
      }
      case 'x':
        // An id asked again for another n reads as in process, the id inside the sentence; every other
        // refusal (a capacity refused, n past the capacity, a bound) is the pool's, whatever claim
        // asked, as the engine words it (in process, store.pool() refuses a capacity).
        if (/^took \d+ units; asked again for \d+$/.test(String(answer[2])))
          return this.#end(p, new InvalidError(`pool ${p.pool.name}: claim id ${JSON.stringify(p.id)} ${String(answer[2])}`))
        return this.#end(p, this.#refusal(answer, `pool ${p.pool.name}`)!)
      default:
        return this.#end(p, new StorageError(`${p.place}: unexpected answer from Redis: ${JSON.stringify(answer)}`))
    }
  }

  /** Claim `p` is answered: every caller still waiting for it gets `outcome`. */
  #end(p: Pending, outcome: ClaimResult | Error): void {
    this.#finish(p)
    for (const asker of p.askers) {
      this.#quiet(asker)
      if (outcome instanceof Error) asker.reject(outcome)
      else asker.resolve(outcome)
    }
    p.askers.clear()
  }

  /** Claim `p` is answered (or given up): nothing of it runs here any more. */
  #finish(p: Pending): void {
    p.done = true
    if (this.#pending.get(p.key) === p) this.#pending.delete(p.key)
    if (p.timer !== undefined) clearTimer(this.#host.clock, p.timer)
    p.timer = undefined
    if (p.subscribed) {
      p.subscribed = false
      this.#host.unwant(p.state.channel)
    }
  }

  #later(p: Pending, ms: number, fn: () => void): void {
    if (p.timer !== undefined) clearTimer(this.#host.clock, p.timer)
    p.timer = setTimer(
      this.#host.clock,
      () => {
        p.timer = undefined
        fn()
      },
      ms,
    )
  }

  /** Sharded wake-ups: the pool's channel, while the claim waits; a grant that may have been missed is asked for. */
  #want(p: Pending): void {
    p.subscribed = true
    void this.#host.want(p.state.channel).then(missed => {
      if (missed && !p.done) this.#doubt(p)
    })
  }

  /**
   * Takes claim `p` out of Redis: out of the line, or undone if it took units nobody was told of. Not
   * one that joined another caller's claim in line: that claim is the other's too.
   *
   * One not answered (a connection cut with it unsent or unanswered: node-redis rejects what was in
   * flight, where ioredis sends it again) is asked again, with the same ask id, as a lock's release is
   * (store.ts, `#end`): dropped, the claim stood in the way of those behind it until its heartbeat's
   * deadline, and was served units held for nobody until its ack's. At once (`AGAIN_MS`), then less
   * often, up to every BEAT/10, until Redis would have ended the claim by itself (`#cancelUntil`).
   * Cancelling twice does nothing more. While the store closes, within the close's second: those
   * sent before it too (`#sending`), which `close()` waits for.
   */
  #cancel(p: Pending, patience: number, until = this.#cancelUntil(p), delay = AGAIN_MS): Promise<unknown> {
    if (p.joined) return Promise.resolve()
    const closing = this.#closeBy !== undefined
    if (closing) patience = Math.min(patience, Math.max(0, this.#closeBy! - this.#host.clock.now()))
    const sent: Promise<unknown> = this.#call(p.state, 'cancel', [p.id, p.ask], patience).then(
      () => {
        if (this.#sending.get(p) === sent) this.#sending.delete(p)
      },
      error => {
        if (this.#sending.get(p) === sent) this.#sending.delete(p)
        const now = this.#host.clock.now()
        if (error instanceof ReplyFailure || now >= until || this.#host.ended()) return
        if (this.#closeBy !== undefined) {
          if (this.#closeDone || now + AGAIN_MS >= this.#closeBy) return
          return new Promise<void>(resolve => {
            const timer = setTimer(this.#host.clock, () => (this.#timers.delete(timer), resolve()), AGAIN_MS)
            this.#timers.add(timer)
          }).then(() => this.#cancel(p, Infinity, until))
        }
        const timer = setTimer(
          this.#host.clock,
          () => {
            this.#again.delete(p)
            void this.#cancel(p, Infinity, until, Math.min(delay * 2, BEAT / 10))
          },
          delay,
        )
        this.#again.set(p, { timer, until })
      },
    )
    if (!closing && patience === Infinity) this.#sending.set(p, sent)
    return sent
  }

  /**
   * Until when claim `p`'s cancel is asked again. A place in line lasts a BEAT, a grant from it a BEAT
   * more (its ack); but an ask whose answer was lost may have taken units at once, which only the
   * claim's ttl gives back, and without one nothing does: that claim's cancel is asked until its ttl,
   * and without one for as long as the store is open (its close asks once more). Dropped after two
   * BEATs (a failover, a Redis answering READONLY or LOADING that long), it held them for good, its
   * caller told ClosedError, and its drawn id known to nobody.
   */
  #cancelUntil(p: Pending): number {
    if (p.ttl === 0) return Infinity
    return this.#host.clock.now() + Math.max(2 * BEAT, p.ttl)
  }

  /** A wake-up on this process's channel. */
  woken(wake: PoolWake): void {
    const p = this.#pending.get(`${wake.key} ${wake.id}`)
    if (!p || p.done) return
    // Served: asking for the answer acknowledges it (units served to a process that died come back).
    if (wake.what === 'p') this.#ask(p, 'b')
    else this.#answered(p, ['n', wake.remaining])
  }

  /** The subscriber reconnected: wake-ups may have been lost; every waiting claim asks where it stands. */
  catchUp(): void {
    for (const p of this.#pending.values()) if (!p.done) this.#doubt(p)
  }

  /**
   * A wake-up of claim `p` may have been lost: one in line asks where it stands, now; an ask of it under
   * way (sent before: Redis may have run it before the grant) is asked again once it is answered "in
   * line". Without that, an answer to an ask sent before the subscription was made again put its next
   * ask a BEAT/3 on, in place of the catch-up's: the wake-up was lost, and the claim waited that long.
   */
  #doubt(p: Pending): void {
    p.doubted = p.asked
    if (p.waiting) this.#later(p, 0, () => this.#ask(p, 'b'))
  }

  // ---- the other operations ----

  /**
   * @internal Carries an ask id of its own: asked again after its answer was lost, the release that
   * ran finds the id's tombstone marked with it and answers released again (scripts/pool.ts). An id
   * drawn here leaves no tombstone: asked again only after a reply that ran nothing (# Asking again).
   */
  async _releaseClaim(pool: Pool, id: string): Promise<boolean> {
    const ask = this.#askPrefix + (this.#askCount++).toString(36)
    const drawn = id.startsWith(this.#idPrefix)
    return Number(await this.#patient(pool, `pool ${pool.name}: claim ${JSON.stringify(id)}`, 'release', [id, ask], undefined, !drawn)) === 1
  }

  /** @internal */
  async _confirmClaim(pool: Pool, id: string): Promise<void> {
    const place = `pool ${pool.name}: claim ${JSON.stringify(id)}`
    if ((await this.#patient(pool, place, 'confirm', [id])) === 'l')
      throw new LostError(`${place}: holds no units to confirm (released, its ttl ran out, or it never took any: never claimed, or still waiting in line)`)
  }

  /** @internal */
  async _remaining(pool: Pool): Promise<number> {
    return Number(await this.#patient(pool, `pool ${pool.name}`, 'remaining', []))
  }

  /**
   * @internal A handle none of whose calls was answered yet carries the capacity it had (see #
   * Capacity): asked again after a try that got no answer and ran (by the store, or by ioredis itself,
   * which sends again what a cut left unanswered), Redis refused it for the capacity that try set.
   * Refused for having just the capacity asked, it is done: the pool has it.
   */
  async _resize(pool: Pool, capacity: number): Promise<void> {
    const resized = (answer: unknown) =>
      Array.isArray(answer) && answer[0] === 'x' && String(answer[2]).endsWith(`differs from its capacity ${capacity} (resize changes it)`) ? 'ok' : answer
    await this.#patient(pool, `pool ${pool.name}`, 'resize', [capacity], resized)
    const state = this.#state(pool)
    state.capacity = capacity
    state.checked = true
  }

  /** The pools whose hashes `keys` are (with their names), as `inspect()` lists them, given up at `until`; those Redis forgot meanwhile are left out. */
  async inspect(pools: { name: string; keys: string[] }[], until: number): Promise<PoolInfo[]> {
    const out: PoolInfo[] = []
    for (let i = 0; i < pools.length; i += 100) {
      const answers = await Promise.all(
        pools
          .slice(i, i + 100)
          .map(p =>
            this.#run(p.keys, ['inspect', 'c1', this.#host.constants], until - this.#host.clock.now()).then(a => ({ name: p.name, a: a as unknown[] })),
          ),
      )
      for (const { name, a } of answers) {
        if (a.length < 4) continue
        out.push({ kind: 'pool', name, capacity: Number(a[0]), remaining: Number(a[1]), claims: Number(a[2]), waiting: Number(a[3]) })
      }
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  /**
   * The store closes: every claim still unanswered rejects `ClosedError` and leaves Redis's line (or is
   * undone); cancels sent before, still unanswered, are waited for too, and those to be asked again are
   * asked now: all within the close's second (see `#cancel`).
   */
  async close(closed: ClosedError): Promise<void> {
    const clock = this.#host.clock
    this.#closeBy = clock.now() + CLOSE_PATIENCE
    const ends: Promise<unknown>[] = []
    if (this.#sending.size > 0) {
      // Sent with no patience (nobody waited): waited for here until the second ends.
      const sending = [...this.#sending.values()]
      this.#sending.clear()
      ends.push(
        new Promise<void>(resolve => {
          const timer = setTimer(clock, () => (this.#timers.delete(timer), resolve()), CLOSE_PATIENCE)
          this.#timers.add(timer)
          void Promise.all(sending).then(() => resolve())
        }),
      )
    }
    for (const [p, { timer, until }] of this.#again) {
      clearTimer(clock, timer)
      ends.push(this.#cancel(p, CLOSE_PATIENCE, until))
    }
    this.#again.clear()
    for (const p of [...this.#pending.values()]) {
      this.#end(p, new ClosedError(`${p.place}: ${closed.message}`))
      ends.push(this.#cancel(p, CLOSE_PATIENCE))
    }
    await Promise.all(ends)
    this.#closeDone = true
    // Every timer of the close goes with it (a store's closed, nothing it set may keep the process alive).
    for (const timer of this.#timers) clearTimer(clock, timer)
    this.#timers.clear()
  }
}
