/**
 * `openRedisStore({ redis | url, prefix })`: the lock and semaphore API of a store, kept in Redis, so
 * that every process of every machine that reaches the Redis shares keys, lines and fences. What is
 * kept where, and the invariants of the scripts: `scripts.ts`.
 *
 * # A hold
 * A hold is a request with a random id. Its `acquire` script grants it at once (a free key, nobody
 * waiting), answers busy (a wait of 0), or puts it in line. A waiter is granted by whichever script
 * frees its turn, and woken by a message on this process's channel (`wakeups.ts`). Meanwhile it
 * heartbeats every ttl/3 (the `renew` script), which keeps its place and ends whatever is past its
 * deadline (a dead holder's lease), and sooner when it is at the head and a holder's lease ends before
 * that: so a dead holder's key passes at its ttl, with nobody else asking. A waiter's wait is judged
 * by Redis (the script answers when it ran out); this side gives up on its own only when Redis does not
 * answer within the wait and a grace (`ClosedError`: unreachable).
 *
 * # A lease
 * Held, a lease is renewed every ttl/3 (`renewal.ts`), and lost when a renewal answers it is no longer
 * held or none was answered within its ttl: `lease.signal` aborts and `hold` rejects `LostError`. At
 * `maxHold` it is revoked here and released in Redis, so the next in line is served at once. A release
 * is sent, not awaited (as over a connection): commands of one connection run in order.
 *
 * # Asking again
 * A command that fails without an answer (a dropped connection, a failover) is asked again with the
 * same request id until its wait ends; the scripts never grant one request id twice. A request whose
 * record Redis no longer has (it was unreachable for longer than the ttl, or lost its data) joins the
 * line again under a new id: it never believes in a grant Redis does not know.
 *
 * # LOCK-04
 * A hold of a key inside its own hold is refused at once, tracked in this process's async context, as
 * by a local store (`#heldByCaller`).
 */

import { CancelledError, ClosedError, InUseError, InvalidError, type LostError, StorageError, errorOf, type ErrorCode } from '../errors.js'
import { checkOptions } from '../util/options.js'
import { asyncDispose } from '../util/async-dispose.js'
import { closeOnce } from '../util/close-once.js'
import { toMs } from '../util/duration.js'
import { GrantedLease, type Lease, type LeaseOwner } from '../handle/lease.js'
import { handleOptions, leaseBounds } from '../handle/lock.js'
import { clearTimer, isClock, keepAlive, setTimer, systemClock, type Clock } from '../util/clock.js'
import { randomId } from '../util/random.js'
import { runInLease } from '../handle/run-in-lease.js'
import { TravellingHandle, placeOf } from '../handle/travelling.js'
import type { ContextStorage } from '../handle/context.js'
import type { KeyInfo, LockOptions, Resource as SharedResource, SemaphoreOptions } from '../types.js'

/** A resource as the package's stores keep it (in the local store, a key it granted itself stands as its lease). */
type Resource = SharedResource<Lease>
import {
  adapterForUrl,
  adapterOf,
  ANNOUNCED_WITHIN,
  answeredTransient,
  asReply,
  CLIENT_ENDED,
  ReplyFailure,
  TRANSIENT,
  type Adapter,
  type ClientKind,
} from './adapter.js'
import { constants, keysOf, parseMetaKey, parsePoolKey, poolKeysOf, poolTagOf, scriptsFor, tagOf, type Op, type Scripts } from './scripts.js'
import { Renewal, margin, renewInterval, type Renewed } from '../remote/renewal.js'
import { DueLines, type DueLine } from '../util/due-lines.js'
import { ResourceNames } from '../handle/resource-names.js'
import { Wakeups, type PoolWake, type Wake } from './wakeups.js'
import { BEAT, RedisPools } from './pool.js'
import type { Pool } from '../pool/pool.js'
import type { PoolInfo, PoolOptions } from '../pool/types.js'
import { checkName } from '../util/name.js'
import { retried } from '../util/retry.js'

export interface RedisStoreOptions {
  /**
   * A client the application made: ioredis (`new Redis(…)`, `new Cluster(…)`), node-redis
   * (`createClient(…)`, `createCluster(…)`, `createSentinel(…)`, connected) or, on Bun, Bun's own
   * (`new RedisClient(…)` from 'bun': one server; no Sentinel or Cluster).
   */
  redis?: unknown
  /** Else a URL (`redis://host:6379`): a client is opened with ioredis, or node-redis, whichever is installed (on Bun with neither, Bun's own). */
  url?: string
  /** Every Redis key holdfast writes starts with it (default `'holdfast'`). */
  prefix?: string
  /**
   * How long what holdfast writes for a key outlives its last deadline, at least (at most one and a
   * half times this; default 1 minute). Fences keep growing across a step back of the server's clock
   * shorter than this.
   */
  grace?: number | string
  /** Open even when the server may evict keys (`maxmemory-policy` other than `noeviction`): not safe. */
  allowEviction?: boolean
  /** @internal for tests */
  clock?: Clock
}

const noop = () => {}

/** What `openRedisStore` found on the server. */
export interface RedisServerInfo {
  version: string
  maxmemoryPolicy: string | undefined
  client: ClientKind
  /** What the client reaches: one server, the primary Sentinel names, or a Cluster. */
  topology: 'server' | 'sentinel' | 'cluster'
  /** How waiters are woken: classic pub/sub, or sharded (`SPUBLISH`: a Cluster on Redis 7 whose client can). */
  pubsub: 'classic' | 'sharded'
}

const PREFIX = /^[A-Za-z0-9_.:-]{1,64}$/
/** How long past its wait this side waits for Redis's own answer to a hold. */
const WAIT_GRACE = 1_000
/** How long `inspect()` and opening wait for Redis. */
const PATIENCE = 10_000
/** How long `close()` waits for Redis to take its releases. */
const CLOSE_PATIENCE = 1_000
/** How often commands waited for are checked against their patience (one timer a store, not one a command). */
const SWEEP = 100
/** A heartbeat meant for a deadline is sent this much after it, so that Redis finds it past. */
const SLACK = 5
/** The oldest server the scripts run on. */
const MIN_VERSION = [6, 2]

/** A hold in flight, waiting or held. */
class Request {
  id: string
  lease: Lease | undefined
  readonly local: number
  readonly keys: string[]
  resolve!: (lease: Lease | undefined) => void
  reject!: (error: Error) => void
  readonly promise: Promise<Lease | undefined>
  /** When the wait ends, by this side's clock (Infinity: no limit). */
  readonly waitUntil: number
  beatTimer: unknown
  giveUpTimer: unknown
  renewal: Renewal | undefined
  /**
   * A lease not yet due for its first renewal waits in the store's `#first` (one timer for all: most
   * are let go before it) rather than with a Renewal of its own; when it was granted, on this side's
   * clock, and the lease ms and the revoke ms (0: none) Redis answered, counted from then.
   */
  fresh = false
  /** Its place in `#first` while it waits there (util/due-lines.ts). */
  dueLine: DueLine<Request> | undefined = undefined
  duePrev: Request | undefined = undefined
  dueNext: Request | undefined = undefined
  grantedAt = 0
  leaseMs = 0
  revokeIn = 0
  /**
   * Since when a command of this request has gone unanswered (the first of them; -1: Redis answered
   * all). A give-up says Redis was unreachable only if that is a while ago (half the grace): a heartbeat sent in the
   * same turn as the give-up (an event loop blocked past the wait fires both timers together) says
   * nothing of Redis.
   */
  unansweredSince = -1
  /** Why its last command failed without an answer it could act on (no answer, or a reply like READONLY): what a give-up says. */
  lastFailure: unknown = undefined
  /**
   * When a command was sent that Redis took while this request was still in line (the first acquire,
   * then each answered "waiting"): its grant came after, so a wake-up's lease counts from here (-1:
   * none yet, under this id).
   */
  waitingAsOf = -1
  /** Copies of its acquire sent and not answered yet; `uncertain`: one was given up unanswered. */
  asking = 0
  uncertain = false
  /** How long after its last unanswered command it asks again (0: Redis answered the last; see `#failed`). */
  retryMs = 0
  /**
   * Its questions to Redis (acquire, heartbeat), numbered as sent; and the last of them asked before a
   * wake-up of it may have been lost (`#doubt`): an answer "waiting" to one of those says nothing of a
   * grant published after Redis ran it, and it asks again at once.
   */
  asked = 0
  doubted = 0
  /** The channel that tells of its grant, and what it sends with every call (the handle's constants and that channel). */
  readonly channel: string
  readonly consts: string
  /** Whether it `want`ed its (sharded) channel, and has not released it yet. */
  subscribed = false
  /** Its release or cancel, unanswered, to be asked again (see `#end`): why, and the timer that asks. */
  ending: 'R' | 'C' | undefined = undefined
  endTimer: unknown = undefined

  constructor(
    id: string,
    readonly handle: RedisLock,
    readonly key: string,
    readonly wait: number,
    local: number,
    keys: string[],
    channel: string,
    now: number,
  ) {
    this.id = id
    this.local = local
    this.keys = keys
    this.channel = channel
    this.consts = handle._constantsWith(channel)
    // A wait counts its whole ms, as on a local store (whose engine takes it in whole ms, rounded down).
    this.waitUntil = now + Math.floor(wait)
    this.promise = new Promise((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
  }

  place(): string {
    return placeOf(this.handle.kind, this.handle.name, this.key)
  }
}

/** A transport failure, or a script that took longer than the caller would wait. */
class NoAnswer extends Error {}

/** A command waited for: rejected `NoAnswer` by the sweep once `at` passed without an answer. */
interface Waited {
  at: number
  patience: number
  reject: (error: Error) => void
  /** Called once it is answered or given up, when `close()` waits for it (it was asked before the close). */
  settle?: () => void
}

/** What a command's failure is to the store: an error reply (but those that pass by themselves), or no answer. */
function failureOf(error: unknown): Error {
  const e = asReply(error)
  return e instanceof ReplyFailure && !TRANSIENT.has(e.code) ? e : new NoAnswer(String((e as Error)?.message ?? e), { cause: e })
}

export class RedisStore implements LeaseOwner {
  /** What the store found on the server when it opened. */
  readonly server: RedisServerInfo
  readonly prefix: string
  readonly #adapter: Adapter
  readonly #scripts: Scripts
  readonly #wakeups: Wakeups
  readonly #clock: Clock
  readonly #context: ContextStorage | undefined
  readonly #grace: number
  readonly #requests = new Map<string, Request>()
  readonly #byLocal = new Map<number, Request>()
  readonly #resources = new ResourceNames()
  /** Whether the Function library is loaded (else the scripts run by EVALSHA / EVAL); while it loads again, that load. */
  #functions = false
  #reloading: Promise<void> | undefined
  /**
   * Request ids: a random prefix of this store's (80 bits, drawn once) and a count. Unique across
   * processes and restarts as a random id each would be, without drawing random bytes for every hold,
   * and shorter (every script call and Redis record carries one).
   */
  readonly #idPrefix = randomId().slice(0, 20)
  #idCount = 0
  /** Commands waited for with a patience, and the one timer that checks them (see `#send`). */
  readonly #waited = new Set<Waited>()
  #sweepTimer: unknown = undefined
  /** Leases not yet due for their first renewal (see `Request.fresh`), one timer for all. */
  readonly #first: DueLines<Request>
  #nextLocal = 1
  #closed: ClosedError | undefined
  /** `close()`: `#close()` run once, its promise answered to every call (util/close-once.ts). */
  readonly #closeOnce = closeOnce(() => this.#close())
  /** The pools (issue #16): `pool.ts`. */
  readonly #pools: RedisPools
  /** Requests whose release or cancel went unanswered, to be asked again (see `#end`). */
  readonly #ending = new Set<Request>()
  /** Releases and cancels sent and not answered yet, which `close()` waits for (see `#end`). */
  readonly #sending = new Map<Request, Promise<unknown>>()
  /** When the close's second ends, on this store's clock (undefined: not closing); whether the close is done; its timers. */
  #closeBy: number | undefined = undefined
  #closeDone = false
  readonly #closeTimers = new Set<unknown>()
  /** Operations asked patiently (`#patiently`: an inspect, a pool's release…) under way, settled either way, which `close()` waits for: they were asked before it. */
  readonly #patient = new Set<Promise<void>>()

  /** Redis stores are opened by `openRedisStore()`, never made by hand. */
  protected constructor(...internal: never)
  // The published types keep the overload above alone (see Lease's constructor).
  protected constructor(...[adapter, server, prefix, grace, clock, context]: RedisStoreArgs) {
    this.#adapter = adapter
    this.server = server
    this.prefix = prefix
    this.#grace = grace
    this.#clock = clock
    this.#context = context
    this.#scripts = scriptsFor(Number(server.version.split('.')[0]) >= 7)
    this.#wakeups = new Wakeups(prefix, randomId(), server.pubsub === 'sharded', clock, adapter.keyPrefix)
    this.#first = new DueLines<Request>(
      clock,
      p => p.grantedAt,
      p => this.#renewal(p).renewNow(),
    )
    this.#pools = new RedisPools({
      clock,
      prefix,
      constants: `${grace} ${this.#wakeups.publish} ${BEAT}`,
      run: (keys, args, patience) => this.#run('pool', keys, args, patience),
      channelFor: tag => this.#wakeups.channelFor(tag),
      want: channel => this.#wakeups.want(channel),
      unwant: channel => this.#wakeups.release(channel),
      closed: place => (this.#closed ? new ClosedError(`${place}: ${this.#closed.message}`) : undefined),
      ended: () => this.#adapter.ended(),
      patiently: (place, attempt, unanswered) => this.#patiently(place, attempt, unanswered),
    })
  }

  #newId(): string {
    return this.#idPrefix + (this.#idCount++).toString(36)
  }

  /** @internal Loads the Function library (or the scripts) and subscribes to this process's channel. */
  async _open(): Promise<void> {
    if (Number(this.server.version.split('.')[0]) >= 7) this.#functions = await this.#loadLibrary()
    if (!this.#functions) {
      for (const script of Object.values(this.#scripts.scripts)) await this.#send(['SCRIPT', 'LOAD', script.source], PATIENCE)
    }
    // A command refused in the middle of a script leaves that call's writes and not its counts (see
    // scripts/access.ts): a user that may not run one of them is refused here, before it writes.
    const check = poolKeysOf(this.prefix, 'access-check')
    const lock = keysOf(this.prefix, 'lock', 'access-check', 'k')
    const channel = this.#wakeups.channelFor(poolTagOf('access-check'))
    // The lock's keys go as arguments, which the client does not prefix (its keyPrefix): they get it here.
    const keyPrefix = this.#adapter.keyPrefix
    const refused = await this.#run('access', check, [...lock.map(k => keyPrefix + k), this.#wakeups.publish, channel], PATIENCE)
    if (refused !== '' && refused !== null) {
      throw new StorageError(
        `openRedisStore: the Redis user may not run ${String(refused)} (on keys ${keyPrefix}${this.prefix}:*, channels ${keyPrefix}${this.prefix}:w:*), which holdfast's scripts run: refused inside one, it would leave half of that call's writes. Allow it in the user's ACL`,
      )
    }
    try {
      await this.#wakeups.open(
        this.#adapter,
        wake => this.#woken(wake),
        () => this.#catchUp(),
      )
      this.#adapter.onStale?.(() => this.#distrust())
    } catch (error) {
      // A subscription refused (an ACL without the channel: NOPERM) or not answered: the subscriber
      // connection made for it goes too (the store is never handed out, nobody would close it), and
      // the error is the store's (a refusal, or no answer), not the client's own.
      await this.#wakeups.close()
      throw failureOf(error)
    }
  }

  // ---- talking to Redis ----

  /**
   * Sends a command; rejects `NoAnswer` when there is none within `patience` ms (Infinity: whoever
   * sent it does not wait for it), or after up to a `SWEEP` more: one timer a store checks the commands
   * waited for, rather than a timer set and cleared for each. `fallback`: what answers instead when the
   * server answers that it lacks the Function library (see `#run`).
   */
  #send(
    args: (string | number)[],
    patience: number,
    via: (args: (string | number)[]) => Promise<unknown> = this.#adapter.call,
    fallback?: () => Promise<unknown>,
  ): Promise<unknown> {
    // Nobody waits for the answer (a release): the client's own promise, without one more around it.
    if (patience === Infinity) return via(args).then(undefined, error => this.#recover(error, fallback))
    return new Promise((resolve, reject) => {
      const waited: Waited = { at: this.#clock.now() + patience, patience, reject }
      this.#wait(waited)
      via(args).then(
        value => {
          if (this.#waited.delete(waited)) waited.settle?.()
          resolve(value)
        },
        error => {
          if (this.#waited.delete(waited)) waited.settle?.()
          try {
            resolve(this.#recover(error, fallback))
          } catch (failure) {
            reject(failure)
          }
        },
      )
    })
  }

  /** A command failed: its `fallback` answers when the server lacks the Function library; else throws what it means to the store. */
  #recover(error: unknown, fallback: (() => Promise<unknown>) | undefined): Promise<unknown> {
    const failure = failureOf(error)
    if (fallback && failure instanceof ReplyFailure && /function not found/i.test(failure.message)) {
      this.#reloadLibrary()
      return fallback()
    }
    throw failure
  }

  /** Adds `waited` to what the sweep checks, setting its timer unless set. */
  #wait(waited: Waited): void {
    this.#waited.add(waited)
    if (this.#sweepTimer === undefined) this.#sweepTimer = setTimer(this.#clock, () => this.#sweep(), SWEEP)
  }

  /** Rejects the commands past their patience; checks again while any is waited for. */
  #sweep(): void {
    this.#sweepTimer = undefined
    const now = this.#clock.now()
    for (const w of this.#waited) {
      if (w.at > now) continue
      this.#waited.delete(w)
      w.reject(new NoAnswer(`no answer from Redis within ${w.patience}ms`))
      w.settle?.()
    }
    if (this.#waited.size > 0) this.#sweepTimer = setTimer(this.#clock, () => this.#sweep(), SWEEP)
  }

  /**
   * Loads the Function library on every primary (a library of that name is this very text: its name is
   * a hash of it). Answers false when the server refuses Functions (an ACL without them): the scripts
   * are used then.
   */
  async #loadLibrary(): Promise<boolean> {
    const load = ['FUNCTION', 'LOAD', this.#scripts.library.source]
    try {
      // Not found (a Cluster client not ready): no answer, as a command's, which openRedisStore types.
      const primaries = await this.#adapter.primaries().catch(error => Promise.reject(failureOf(error)))
      await Promise.all(
        primaries.map(via =>
          this.#send(load, PATIENCE, via).catch(error => {
            if (!(error instanceof ReplyFailure && /already exists/i.test(error.message))) throw error
          }),
        ),
      )
      return true
    } catch (error) {
      if (error instanceof ReplyFailure) return false
      throw error
    }
  }

  /**
   * Runs an entry point: by `FCALL` while the library is loaded; as a script otherwise, by its hash, and
   * by its text when the server does not have it (NOSCRIPT). A server without the library (`FUNCTION
   * FLUSH`, a node that never had it) answers that before running anything: the call runs as a script,
   * and the library is loaded again meanwhile. A call that found more deadlines due than one call ends
   * (`REAP` in scripts/common.ts and scripts/pool.ts) ended that many, ran nothing else and answered
   * `{'a'}`: asked again at once, each call a few ms of Redis, other clients' calls between them.
   */
  async #run(op: Op, keys: string[], args: (string | number)[], patience: number): Promise<unknown> {
    for (;;) {
      const answer = await this.#once(op, keys, args, patience)
      if (!(Array.isArray(answer) && answer.length === 1 && answer[0] === 'a')) return answer
    }
  }

  #once(op: Op, keys: string[], args: (string | number)[], patience: number): Promise<unknown> {
    if (!this.#functions) return this.#script(op, keys, args, patience)
    return this.#send(['FCALL', this.#scripts.library.functions[op], keys.length, ...keys, ...args], patience, undefined, () =>
      this.#script(op, keys, args, patience),
    )
  }

  async #script(op: Op, keys: string[], args: (string | number)[], patience: number): Promise<unknown> {
    const script = this.#scripts.scripts[op]
    try {
      return await this.#send(['EVALSHA', script.sha, keys.length, ...keys, ...args], patience)
    } catch (error) {
      if (!(error instanceof ReplyFailure) || error.code !== 'NOSCRIPT') throw error
      return await this.#send(['EVAL', script.source, keys.length, ...keys, ...args], patience)
    }
  }

  /** Loads the library again, once at a time; until then, calls run as scripts. */
  #reloadLibrary(): void {
    if (this.#reloading || this.#closed) return
    this.#reloading = this.#loadLibrary().then(
      loaded => {
        this.#functions = loaded
        this.#reloading = undefined
      },
      () => {
        this.#reloading = undefined
      },
    )
  }

  /**
   * Ends a request in Redis (release or cancel), without waiting for it; nothing is thrown. Redis keeps
   * a tombstone of it only while a copy of its acquire may still come (one is unanswered).
   *
   * One not answered (a connection cut with it unsent or unanswered: node-redis rejects what was in
   * flight, where ioredis sends it again) is asked again, with the same id, until Redis would have
   * ended the request by itself: dropped, it left the key held until its lease's ttl, or a cancelled
   * waiter in line, to be granted the key for nobody. Ending a request twice does nothing more. Two
   * ttls: a waiter's place lasts a ttl from its last heartbeat, and a grant within it a ttl more.
   * Asked again at once (50 ms: a client reconnecting sends it when it is back), then less often, up
   * to every ttl/10 as a heartbeat would.
   *
   * Once the store closes, an end is waited for until the close's second runs out (`#closeBy`), and
   * one not answered is asked again every 50 ms within it: those sent just before the close too (kept
   * in `#sending` until answered), else a release a cut connection lost as the close went on, or whose
   * client the close quit, left the key held until its ttl.
   */
  #end(p: Request, why: 'R' | 'C', until = this.#clock.now() + 2 * p.handle.ttl, delay = 50): Promise<unknown> {
    const tomb = p.asking > 0 || p.uncertain ? 1 : 0
    const closeBy = this.#closeBy
    const patience = closeBy === undefined ? Infinity : Math.max(0, closeBy - this.#clock.now())
    const sent = this.#run('release', p.keys, [p.id, why + tomb, p.consts], patience).then(
      () => {
        if (this.#sending.get(p) === sent) this.#sending.delete(p)
      },
      error => {
        if (this.#sending.get(p) === sent) this.#sending.delete(p)
        if (error instanceof ReplyFailure || this.#clock.now() >= until || this.#adapter.ended()) return
        if (this.#closeBy !== undefined) return this.#endAgainClosing(p, why, until)
        p.ending = why
        p.endTimer = setTimer(
          this.#clock,
          () => {
            p.endTimer = p.ending = undefined
            this.#ending.delete(p)
            void this.#end(p, why, until, Math.min(delay * 2, Math.max(50, Math.floor(p.handle.ttl / 10))))
          },
          delay,
        )
        this.#ending.add(p)
      },
    )
    if (closeBy === undefined) this.#sending.set(p, sent)
    return sent
  }

  /** An end the close waits for went unanswered: asked again 50 ms later, if that is within the close's second. */
  #endAgainClosing(p: Request, why: 'R' | 'C', until: number): Promise<unknown> | undefined {
    if (this.#closeDone || this.#clock.now() + 50 >= this.#closeBy!) return
    return new Promise<void>(resolve => {
      const timer = setTimer(
        this.#clock,
        () => {
          this.#closeTimers.delete(timer)
          resolve()
        },
        50,
      )
      this.#closeTimers.add(timer)
    }).then(() => this.#end(p, why, until, 50))
  }

  /** Resolves once every command waited for now (asked before the close) is answered or given up, or the close's second ran out. */
  #askedBefore(): Promise<void> {
    return new Promise<void>(resolve => {
      let left = this.#waited.size
      const one = () => {
        if (--left === 0) resolve()
      }
      for (const w of this.#waited) w.settle = one
      this.#closeSecond(resolve)
    })
  }

  /** Calls `ranOut` when the close's second ran out (the sweep's check); what to delete from `#waited` to call it off. */
  #closeSecond(ranOut: () => void): Waited {
    const waited: Waited = { at: this.#closeBy!, patience: CLOSE_PATIENCE, reject: () => ranOut() }
    this.#wait(waited)
    return waited
  }

  /** What `sent` (asked before the close: an end, an inspect) settles to, waited for no later than the close's second. */
  #byCloseEnd(sent: Promise<unknown>): Promise<unknown> {
    return new Promise<void>(resolve => {
      const waited = this.#closeSecond(resolve)
      void sent.then(() => {
        this.#waited.delete(waited)
        resolve()
      })
    })
  }

  // ---- holds ----

  /** @internal Asks for a key; resolves to the lease, or `undefined` when busy and `wait` is under 1 ms. */
  _take(handle: RedisLock, key: string, wait: number, signal: AbortSignal | undefined, isTry: boolean): Promise<Lease | undefined> {
    if (this.#closed) return Promise.reject(new ClosedError(`${placeOf(handle.kind, handle.name, key)}: ${this.#closed.message}`))
    if (this.#context && this.#heldByCaller(handle, key)) {
      if (isTry) return Promise.resolve(undefined)
      return Promise.reject(
        new InvalidError(`${placeOf(handle.kind, handle.name, key)}: held by this very hold (a hold inside its own hold would wait for itself)`),
      )
    }
    const p = new Request(
      this.#newId(),
      handle,
      key,
      wait,
      this.#nextLocal++,
      keysOf(this.prefix, handle.kind, handle.name, key),
      this.#wakeups.channelFor(tagOf(handle.kind, handle.name, key)),
      this.#clock.now(),
    )
    this.#requests.set(p.id, p)
    if (signal) {
      const onAbort = () => {
        if (p.lease || this.#requests.get(p.id) !== p) return
        this.#forget(p)
        p.reject(new CancelledError(`${p.place()}: cancelled while waiting`, { cause: signal.reason }))
        void this.#end(p, 'C')
      }
      signal.addEventListener('abort', onAbort, { once: true })
      const off = () => signal.removeEventListener('abort', onAbort)
      void p.promise.then(off, off)
    }
    void this.#acquire(p)
    return p.promise
  }

  /**
   * Redis judges the wait and answers when it ran out; this side gives up on its own only when Redis
   * did not answer within the wait and a grace. Armed once the hold was not granted at once (it waits,
   * or its acquire failed), so that a free key's hold sets no timer for it.
   */
  #armGiveUp(p: Request): void {
    if (p.wait === Infinity || p.giveUpTimer !== undefined) return
    p.giveUpTimer = setTimer(
      this.#clock,
      () => {
        p.giveUpTimer = undefined
        if (p.lease || this.#requests.get(p.id) !== p) return
        this.#forget(p)
        void this.#end(p, 'C')
        // Half the grace: a heartbeat due as the wait ends (plus SLACK) and unanswered since is an outage.
        const unanswered = p.unansweredSince >= 0 && this.#clock.now() - p.unansweredSince >= WAIT_GRACE / 2
        // Redis answering READONLY (a replica, in a failover) or LOADING all along was reached: saying
        // "unreachable" sent users looking at the network.
        const within = `within the wait (${p.wait}ms)`
        p.reject(
          unanswered
            ? new ClosedError(`${p.place()}: ${answeredTransient(p.lastFailure, within) ?? `no answer from Redis ${within}: unreachable`}`, {
                cause: p.lastFailure,
              })
            : new InUseError(`${p.place()}: still held after waiting ${p.wait}ms`),
        )
      },
      Math.max(0, p.waitUntil + WAIT_GRACE - this.#clock.now()),
    )
    // A waiter's timers answer the hold its caller awaits: they keep the process alive (its
    // connection to Redis does too, while open), as a local store's do.
    keepAlive(p.giveUpTimer)
  }

  /** Sends (or sends again) a request's acquire, until it is answered or the request ends. */
  #acquire(p: Request): void {
    const h = p.handle
    const sentAt = this.#clock.now()
    const left = p.wait === Infinity ? -1 : Math.max(0, Math.ceil(p.waitUntil - sentAt))
    // A wait under 1 ms is none, as on a local store; one that ran out while Redis could not be reached
    // (or before the request joined again: #rejoin) asks as a try (Redis still judges the key).
    const wait = p.wait < 1 ? 0 : left
    if (p.unansweredSince < 0) p.unansweredSince = sentAt
    // The first copy of the acquire: Redis took one copy before any grant of this id (a copy sent
    // again later may arrive after it).
    if (p.waitingAsOf < 0) p.waitingAsOf = sentAt
    p.asking++
    const asked = ++p.asked
    this.#run('acquire', p.keys, [p.id, wait, p.consts], left < 0 ? Math.max(WAIT_GRACE, h.ttl) : WAIT_GRACE + left).then(
      answer => {
        p.asking--
        this.#answered(p, answer, sentAt, asked)
      },
      error => {
        p.asking--
        if (!(error instanceof ReplyFailure)) p.uncertain = true
        this.#failed(p, error, () => this.#acquire(p))
      },
    )
  }

  /**
   * A command of a request failed: an error reply ends it, here and in Redis (a copy of its acquire
   * may have put it in line, or a heartbeat found it there: left, it would be granted, and hold the key
   * for nobody until its ttl); no answer is asked again a little later.
   */
  #failed(p: Request, error: unknown, again: () => void): void {
    if (this.#requests.get(p.id) !== p || p.lease) return
    p.lastFailure = error
    this.#armGiveUp(p)
    if (error instanceof ReplyFailure) {
      this.#forget(p)
      void this.#end(p, 'C')
      return p.reject(new StorageError(`${p.place()}: Redis refused the script: ${error.message}`, { cause: error }))
    }
    // No answer will come on a client closed for good: asked again, a hold waited out its wait (with
    // wait: Infinity, until store.close()), and its cancel could not be sent either.
    if (this.#adapter.ended()) {
      this.#forget(p)
      return p.reject(new ClosedError(`${p.place()}: ${CLIENT_ENDED}`, { cause: error }))
    }
    // At once (50 ms: a connection cut and made again is back by then; node-redis rejects what was in
    // flight, where ioredis sends it again), then less often, up to every ttl/10: asked first a ttl/10
    // later, a hold's wait (and its grace) could run out before Redis, back in moments, was asked again.
    p.retryMs = p.retryMs === 0 ? 50 : Math.min(p.retryMs * 2, Math.max(50, Math.floor(p.handle.ttl / 10)))
    this.#beat(p, p.retryMs, again)
  }

  /**
   * Acts on where Redis says a request stands (an answer to acquire or renew, or a wake-up). An acquire
   * that grants at once answers the fence alone: the lease is its ttl, its revoke its maxHold. `asked`:
   * the number of the question answered (see `Request.asked`; a wake-up's is the last sent).
   */
  #answered(p: Request, answer: unknown, sentAt: number, asked = p.asked): void {
    if (this.#requests.get(p.id) !== p || p.lease) return
    p.unansweredSince = -1
    p.retryMs = 0
    if (!Array.isArray(answer)) return this.#granted(p, Number(answer), p.handle.ttl, p.handle._maxHold, sentAt)
    switch (answer[0]) {
      case 'g':
        return this.#granted(p, Number(answer[1]), Number(answer[2]), Number(answer[3]), sentAt)
      case 'w': {
        if (sentAt > p.waitingAsOf) p.waitingAsOf = sentAt
        this.#armGiveUp(p)
        // Heartbeat every ttl/3; sooner when the wait ends or a holder's lease ends first (the head).
        const waitLeft = Number(answer[1])
        const headLeft = Number(answer[2])
        let next = Math.max(1, Math.floor(p.handle.ttl / 3))
        if (waitLeft >= 0) next = Math.min(next, waitLeft + SLACK)
        if (headLeft >= 0) next = Math.min(next, headLeft + SLACK)
        // Asked before a wake-up may have been lost: Redis ran it before that grant, if any.
        if (asked <= p.doubted) next = 0
        this.#beat(p, next, () => void this.#heartbeat(p))
        return this.#want(p)
      }
      case 'b':
        this.#forget(p)
        // Busy, to a try: a hold that would not wait (a wait under 1 ms is none), else one whose wait
        // ran out before this ask (asked again after no answer, or joining again: #rejoin): it waited.
        if (p.wait < 1) return p.resolve(undefined)
        return p.reject(new InUseError(`${p.place()}: still held after waiting ${p.wait}ms`))
      case 'e':
        if (answer[1] === 'T') {
          this.#forget(p)
          return p.reject(new InUseError(`${p.place()}: still held after waiting ${p.wait}ms`))
        }
        return this.#rejoin(p)
      case 'u':
        return this.#rejoin(p)
      case 'x':
        this.#forget(p)
        return p.reject(errorOf(String(answer[1]) as ErrorCode, `${p.place()}: ${String(answer[2])}`))
      default:
        this.#forget(p)
        return p.reject(new StorageError(`${p.place()}: unexpected answer from Redis: ${JSON.stringify(answer)}`))
    }
  }

  /**
   * Redis no longer knows a waiting request (its heartbeats could not reach it within its ttl, or it
   * lost its data): it joins the line again, under a new id, with what is left of its wait.
   */
  #rejoin(p: Request): void {
    this.#requests.delete(p.id)
    p.waitingAsOf = -1
    p.id = this.#newId()
    this.#requests.set(p.id, p)
    void this.#acquire(p)
  }

  /** A request's next heartbeat or ask, while it is not granted (see `#armGiveUp` for why it keeps the process alive). */
  #beat(p: Request, ms: number, fn: () => void): void {
    if (p.beatTimer !== undefined) clearTimer(this.#clock, p.beatTimer)
    p.beatTimer = setTimer(
      this.#clock,
      () => {
        p.beatTimer = undefined
        fn()
      },
      ms,
    )
    keepAlive(p.beatTimer)
  }

  /** A waiter's heartbeat: keeps its place, reaps the line, and answers a grant it was not told of. */
  async #heartbeat(p: Request): Promise<void> {
    if (this.#requests.get(p.id) !== p || p.lease) return
    const sentAt = this.#clock.now()
    if (p.unansweredSince < 0) p.unansweredSince = sentAt
    const asked = ++p.asked
    let answer: unknown
    try {
      answer = await this.#run('renew', p.keys, [p.id, '', p.consts], Math.max(WAIT_GRACE, p.handle.ttl))
    } catch (error) {
      return this.#failed(p, error, () => void this.#heartbeat(p))
    }
    this.#answered(p, answer, sentAt, asked)
  }

  /** A wake-up: a script granted one of this process's waiters. */
  #woken(wake: Wake | PoolWake): void {
    if ('what' in wake) return this.#pools.woken(wake)
    const p = this.#requests.get(wake.id)
    if (!p || p.lease) return
    // The grant came after Redis last answered this request "waiting": its lease is counted from
    // then, not from when the wake-up is read — read late (a process paused, an event loop blocked),
    // the lease may have run out in Redis and the key gone to the next in line meanwhile. Too late to
    // tell, Redis is asked where the request stands first (a renewal of its lease if it still holds it,
    // a place in line again if not) and fn waits for the answer.
    const from = p.waitingAsOf
    if (from >= 0 && this.#clock.now() - from < wake.leaseMs / 2) this.#answered(p, ['g', wake.fence, wake.leaseMs, wake.revokeMs], from)
    else void this.#heartbeat(p)
  }

  /** The subscriber reconnected: wake-ups may have been lost meanwhile; every waiter asks now. */
  #catchUp(): void {
    this.#pools.catchUp()
    for (const p of this.#requests.values()) if (!p.lease) this.#doubt(p)
  }

  /**
   * A wake-up of waiting request `p` may have been lost: it asks Redis where it stands, now, or, with a
   * question of it under way (sent before: Redis may have run it before the grant), once that is
   * answered. Skipped while one was under way, or its timer replaced by that question's answer
   * "waiting", the catch-up after a Cluster's subscription was made again was lost, and the waiter
   * with it until its next heartbeat (a ttl/3 on).
   */
  #doubt(p: Request): void {
    p.doubted = p.asked
    if (p.beatTimer !== undefined) this.#beat(p, 0, () => void this.#heartbeat(p))
  }

  #granted(p: Request, fence: number, leaseMs: number, revokeMs: number, from: number): void {
    this.#unwant(p)
    if (p.beatTimer !== undefined) clearTimer(this.#clock, p.beatTimer)
    if (p.giveUpTimer !== undefined) clearTimer(this.#clock, p.giveUpTimer)
    p.beatTimer = p.giveUpTimer = undefined
    const lease = new GrantedLease(this, { kind: p.handle.kind, name: p.handle.name }, p.key, fence, p.local)
    p.lease = lease
    this.#byLocal.set(p.local, p)
    // One renewal loop for every lease held from afar (remote/renewal.ts): renewed every ttl/3, lost at its
    // deadline as this side counts it or at maxHold (counted from when the acquire was sent), whichever comes first.
    const now = this.#clock.now()
    const elapsed = now - from
    p.grantedAt = now
    p.leaseMs = Math.max(1, leaseMs - elapsed)
    p.revokeIn = revokeMs > 0 ? Math.max(1, revokeMs - elapsed) : 0
    // Most leases are let go before their first renewal: until it is due (ttl/3 after the grant, as
    // for every lease of the handle) they wait in #first, with no timer of their own, their deadline
    // set here as their Renewal would set it. One whose maxHold comes first, or whose answer took a
    // tenth of its ttl (so that its own ttl/3 comes noticeably sooner), gets its Renewal now.
    const every = renewInterval(p.handle.ttl)
    if ((p.revokeIn > 0 && p.revokeIn <= every) || elapsed * 10 > p.handle.ttl) this.#renewal(p)
    else {
      lease._deadline = now + p.leaseMs - margin(p.leaseMs)
      p.fresh = true
      this.#first.add(p, every)
    }
    p.resolve(lease)
  }

  /** `p`'s renewal, made now (as of its grant) if it waited in #first. */
  #renewal(p: Request): Renewal {
    if (p.renewal) return p.renewal
    this.#unfresh(p)
    return (p.renewal = new Renewal(
      this.#clock,
      { renew: () => this.#renew(p), lose: reason => this.#lose(p, reason) },
      p.lease!,
      p.handle.ttl,
      p.leaseMs,
      p.revokeIn,
      p.grantedAt,
      this.#adapter.onStale ? ANNOUNCED_WITHIN : 0,
    ))
  }

  /**
   * The client was found on a node the sentinels no longer name the primary (node-redis's Sentinel
   * client, adapter.ts `PrimaryWatch`): from now on nothing it answers counts, and the renewals it
   * answered within ANNOUNCED_WITHIN before (since the promotion, at most that long ago) may never
   * have reached the new primary. Every lease's deadline goes back to the one its answers before that
   * set (its grant's at the earliest: a lease not yet renewed keeps its own), so that its holder gives
   * it up no later than the new primary, which counts it from no later an answer; lost now if that
   * passed.
   */
  #distrust(): void {
    const since = this.#clock.now() - ANNOUNCED_WITHIN
    const why = `lease lost: Redis's sentinels named another primary while the client was still on the old one, whose renewals of the last ${ANNOUNCED_WITHIN / 1000}s the new one may never have seen`
    for (const p of [...this.#byLocal.values()]) p.renewal?.distrust(since, why)
  }

  #unfresh(p: Request): void {
    if (!p.fresh) return
    p.fresh = false
    this.#first.delete(p)
  }

  async #renew(p: Request): Promise<Renewed> {
    let answer: unknown[]
    try {
      answer = (await this.#run('renew', p.keys, [p.id, '', p.consts], p.handle.ttl)) as unknown[]
    } catch {
      return undefined
    }
    if (answer[0] === 'g') return { ttl: Number(answer[2]) }
    return { refused: `the lease ended in Redis (${describeEnd(answer[0] === 'e' ? String(answer[1]) : 'u')})` }
  }

  /** A lease ends here without a release by its holder: lost, and let go in Redis too (it may still be there). */
  #lose(p: Request, reason: LostError | ClosedError): void {
    if (this.#byLocal.get(p.local) !== p) return
    this.#forget(p)
    void this.#end(p, 'R')
    p.lease?._lose(reason)
  }

  /**
   * A request waits (sharded wake-ups): its key's channel is subscribed to while it waits. When the
   * subscription was not in place as it joined the line, its grant may have been published unheard:
   * it asks Redis at once where it stands.
   */
  #want(p: Request): void {
    if (!this.#wakeups.sharded || p.subscribed) return
    p.subscribed = true
    void this.#wakeups.want(p.channel).then(missed => {
      if (missed && !p.lease && this.#requests.get(p.id) === p) this.#doubt(p)
    })
  }

  /** A request no longer waits: its channel may go. */
  #unwant(p: Request): void {
    if (!p.subscribed) return
    p.subscribed = false
    this.#wakeups.release(p.channel)
  }

  #forget(p: Request): void {
    this.#unwant(p)
    if (this.#requests.get(p.id) === p) this.#requests.delete(p.id)
    this.#byLocal.delete(p.local)
    this.#unfresh(p)
    p.renewal?.stop()
    for (const timer of [p.beatTimer, p.giveUpTimer]) if (timer !== undefined) clearTimer(this.#clock, timer)
    p.beatTimer = p.giveUpTimer = undefined
  }

  /** @internal The clock this store counts its leases' deadlines on. */
  _now(): number {
    return this.#clock.now()
  }

  /** @internal A lease read past its deadline (see lease.ts # Reading checks the clock). */
  _overdue(lease: Lease): void {
    const p = this.#byLocal.get(lease._req)
    if (p?.lease === lease && (p.renewal || p.fresh)) this.#renewal(p).overdue()
  }

  /** @internal Called by a `Lease` once: lets the key go in Redis (sent, not awaited). */
  _release(local: number, _lease?: Lease): void {
    const p = this.#byLocal.get(local)
    if (!p) return
    this.#forget(p)
    void this.#end(p, 'R')
  }

  /** @internal Runs fn inside the lease (as a store's `_run` does). */
  _run<T>(handle: RedisLock, lease: Lease, fn: (lease: Lease) => T | PromiseLike<T>): Promise<Awaited<T>> {
    return runInLease(this.#context, handle._resource, lease, fn)
  }

  #heldByCaller(handle: RedisLock, key: string): boolean {
    for (let held: Lease | undefined = this.#context!.getStore(); held; held = held._parent) {
      if (held._resource === handle._resource && held.key === key && !held.lost && this.#byLocal.get(held._req)?.lease === held) return true
    }
    return false
  }

  // ---- the store API ----

  /** A lock kept in Redis: one holder of a key at a time, across every process that uses this Redis. */
  lock(name: string, options?: LockOptions): RedisLock {
    return this.#handle('lock', name, options)
  }

  /** A semaphore kept in Redis: up to `limit` holders of a key at once. */
  semaphore(name: string, options: SemaphoreOptions): RedisLock {
    return this.#handle('semaphore', name, options)
  }

  #handle(kind: 'lock' | 'semaphore', name: string, options: unknown): RedisLock {
    const place = `${kind} ${String(name)}`
    if (this.#closed) throw new ClosedError(`${place}: ${this.#closed.message}`)
    checkName(kind, name)
    const o = handleOptions(options, place, kind === 'semaphore')
    const { ttl, maxHold } = leaseBounds(o, place)
    const resource = this.#resources.get(kind, name, o.limit)
    const consts = constants(this.#grace, this.#wakeups.publish, ttl, maxHold, o.limit, '')
    return new MadeRedisLock(this, resource, o.limit, ttl, maxHold, o.wait, consts)
  }

  /**
   * A pool kept in Redis: a count of `capacity` units, claimed `n` at a time and never below zero (see
   * `pool.ts`). Without a capacity, a pool Redis has.
   */
  pool(name: string, options?: PoolOptions): Pool {
    return this.#pools.pool(name, options)
  }

  /**
   * The busy keys under this store's prefix, as a local store's `inspect()` lists them, then its pools.
   * One asked before `close()` is answered, as in process and over a connection: the close waits for
   * it (`#patient`), up to its second, before it gives up on what is unanswered and quits a client.
   * Read-only: asked again (`#patiently`), it changes nothing in Redis.
   */
  inspect(): Promise<(KeyInfo | PoolInfo)[]> {
    if (this.#closed) return Promise.reject(new ClosedError(`inspect: ${this.#closed.message}`))
    return this.#patiently('inspect', until => this.#listing(until)).catch(error => {
      throw error instanceof ReplyFailure ? new StorageError(`inspect: Redis refused: ${error.message}`, { cause: error }) : error
    })
  }

  /**
   * What `attempt` answers, asked again after no answer (a connection cut with a command of it in
   * flight, which node-redis and Bun's client reject; a reply that passes by itself, LOADING after a
   * restart, BUSY), as a hold's commands are: 50 ms on, then twice as long (at most a second), within
   * its `PATIENCE` in all (`until`, which each try's commands are given up at), not once the client is
   * closed for good, nor once the close gave up on it. Only for what answers the same asked again as
   * asked once (a read; a pool's release, which Redis knows by its ask id: pool.ts); `unanswered`
   * false: only after a reply that passes by itself, which ran nothing (a cut rejects `ClosedError`).
   * An error reply rejects its `ReplyFailure`, for `place`'s caller to word; no answer, a `ClosedError`
   * naming `place`. The close waits for it (`#patient`): it was asked before.
   */
  #patiently<T>(place: string, attempt: (until: number) => Promise<T>, unanswered = true): Promise<T> {
    const until = this.#clock.now() + PATIENCE
    // The wait was given up: `until` passed, or the close gave up on what was asked before it.
    let givenUp = false
    const answer = retried(
      () => attempt(until),
      { first: 50, most: 1_000 },
      (error, ms) => {
        // What a command rejected is already one (`#send`); a SCAN's, a client's own error.
        const failure = error instanceof NoAnswer ? error : failureOf(error)
        if (failure instanceof ReplyFailure) throw failure
        if (this.#adapter.ended()) throw new ClosedError(`${place}: ${CLIENT_ENDED}`, { cause: error })
        const again = unanswered || answeredTransient(failure) !== undefined
        if (!again || givenUp || this.#closeDone || this.#clock.now() + ms >= until)
          throw new ClosedError(`${place}: ${answeredTransient(failure) ?? `no answer from Redis: ${failure.message}`}`, { cause: error })
      },
      async ms => {
        givenUp = !(await this.#pause(ms, until))
      },
    )
    const settled = answer.then(noop, noop)
    this.#patient.add(settled)
    void settled.then(() => this.#patient.delete(settled))
    return answer
  }

  /**
   * Resolves true `ms` on, by the store's clock; false once `until` passed, or the close gave up on what
   * was asked before it: waited for as a command is (`#send`), so that the close knows of it.
   */
  #pause(ms: number, until: number): Promise<boolean> {
    return new Promise(resolve => {
      const waited: Waited = {
        at: until,
        patience: PATIENCE,
        reject: () => {
          clearTimer(this.#clock, timer)
          resolve(false)
        },
      }
      this.#wait(waited)
      const timer = setTimer(
        this.#clock,
        () => {
          if (this.#waited.delete(waited)) waited.settle?.()
          resolve(true)
        },
        ms,
      )
    })
  }

  /** One try at the listing: its commands given up at `until`. */
  async #listing(until: number): Promise<(KeyInfo | PoolInfo)[]> {
    // Waited for as a command is (`#send`): the sweep gives it up past its patience, and the close
    // answers it once it gave up on it. A timer of its own, which the close knew nothing of, answered
    // it up to 9 s after close() had resolved.
    const metas = await new Promise<string[]>((resolve, reject) => {
      const waited: Waited = { at: until, patience: PATIENCE, reject }
      this.#wait(waited)
      const settled = () => {
        if (this.#waited.delete(waited)) waited.settle?.()
      }
      this.#adapter.scan(`${this.prefix}:{*}:m`).then(
        keys => (settled(), resolve(keys)),
        error => (settled(), reject(error)),
      )
    })
    const out: KeyInfo[] = []
    const pools: { name: string; keys: string[] }[] = []
    const locks: string[] = []
    for (const meta of metas) {
      const pool = parsePoolKey(this.prefix, meta)
      if (pool !== undefined) pools.push({ name: pool, keys: poolKeysOf(this.prefix, pool) })
      else if (parseMetaKey(this.prefix, meta)) locks.push(meta)
    }
    for (let i = 0; i < locks.length; i += 100) {
      const batch = locks.slice(i, i + 100)
      const answers = await Promise.all(
        batch.map(meta => {
          const parsed = parseMetaKey(this.prefix, meta)!
          return this.#run('inspect', keysOf(this.prefix, parsed.kind, parsed.name, parsed.key), [], until - this.#clock.now()).then(a => ({
            parsed,
            a: a as unknown[],
          }))
        }),
      )
      for (const { parsed, a } of answers) {
        const holders = []
        for (let j = 1; j + 1 < a.length; j += 2) holders.push({ fence: Number(a[j]), heldMs: Number(a[j + 1]) })
        // Redis answers them in the order of their deadlines, which holders of different ttls take
        // out of turn; a local store lists them by fence, the order they were granted in.
        holders.sort((x, y) => x.fence - y.fence)
        const waiting = Number(a[0])
        if (holders.length > 0 || waiting > 0) out.push({ ...parsed, holders, waiting })
      }
    }
    out.sort((a, b) => (`${a.kind + a.name}\0${a.key}` < `${b.kind + b.name}\0${b.key}` ? -1 : 1))
    return [...out, ...(await this.#pools.inspect(pools, until))]
  }

  /**
   * Releases this process's leases in Redis (their signals abort with a `ClosedError`), takes its
   * waiting holds out of the line (they reject `ClosedError`), and closes what it opened. It waits for
   * those releases and cancels, for any sent before it still unanswered, and for the answers of what
   * was asked before it (a pool's release), up to a second. A second
   * `close()` answers the first's promise, resolved once all that is done.
   */
  close(): Promise<void> {
    // A second caller (two shutdown hooks, say) must not go on, and exit, before the first close()
    // sent the releases: the keys would stay held until their ttl. One called inside it (the abort
    // listener of a lease it ends) answers its promise too, rather than running the close again over
    // the requests it has yet to end.
    return this.#closeOnce()
  }

  /** `close()`, for `await using`: the store closes at the end of the block. */
  [asyncDispose](): Promise<void> {
    return this.close()
  }

  async #close(): Promise<void> {
    this.#closed = new ClosedError('the store is closed')
    this.#closeBy = this.#clock.now() + CLOSE_PATIENCE
    // The answers of what was asked before (a pool's release, a remaining) are waited for: given up at
    // once, a claim released in Redis was answered ClosedError, as if Redis had not answered.
    const ends: Promise<unknown>[] = this.#waited.size > 0 ? [this.#askedBefore()] : []
    // Ends sent before (a release just before the close): they are owed as much as the close's own.
    for (const sent of this.#sending.values()) ends.push(this.#byCloseEnd(sent))
    this.#sending.clear()
    // So are inspections and pool operations asked before: their commands, sent now or asked again, are answered meanwhile.
    for (const asked of this.#patient) ends.push(this.#byCloseEnd(asked))
    for (const p of [...this.#requests.values()]) {
      const lease = p.lease
      this.#forget(p)
      ends.push(this.#end(p, lease ? 'R' : 'C'))
      if (lease) lease._lose(new ClosedError(`${p.place()}: the store is closed`))
      else p.reject(new ClosedError(`${p.place()}: the store is closed`))
    }
    for (const p of this.#ending) {
      if (p.endTimer !== undefined) clearTimer(this.#clock, p.endTimer)
      if (p.ending) ends.push(this.#end(p, p.ending))
      p.endTimer = p.ending = undefined
    }
    this.#ending.clear()
    ends.push(this.#pools.close(this.#closed))
    // Every request was answered above; a timer left set would keep this store alive until it fired.
    this.#first.clear()
    await Promise.all(ends)
    this.#closeDone = true
    for (const timer of this.#closeTimers) clearTimer(this.#clock, timer)
    this.#closeTimers.clear()
    await this.#wakeups.close()
    await this.#adapter.close()
    // Nothing is sent any more, and nobody waits for what was sent before (a renewal, a heartbeat: every
    // request was ended above): those commands are given up at once, and the sweep's timer goes, rather
    // than run on until the last of them ran out of patience (a ttl, with Redis unreachable).
    for (const w of this.#waited) w.reject(new NoAnswer('the store closed'))
    this.#waited.clear()
    if (this.#sweepTimer !== undefined) {
      clearTimer(this.#clock, this.#sweepTimer)
      this.#sweepTimer = undefined
    }
  }
}

function describeEnd(why: string): string {
  switch (why) {
    case 'L':
      return 'past its ttl or maxHold'
    case 'R':
      return 'released'
    case 'C':
      return 'cancelled'
    case 'u':
      return 'Redis no longer knows it'
    default:
      return why
  }
}

/** A lock or semaphore of a Redis store: the API of `Lock`, kept in Redis. */
export class RedisLock extends TravellingHandle<Lease> {
  readonly store: RedisStore
  /** @internal What every call for this handle sends (see `constants` in scripts.ts) but the channel, which ends it. */
  readonly _constants: string

  /** Locks and semaphores are made by a store's `lock()` and `semaphore()`, never by hand. */
  protected constructor(...internal: never)
  // The published types keep the overload above alone (see Lease's constructor).
  protected constructor(...[store, resource, limit, ttl, maxHold, wait, constants]: RedisLockArgs) {
    super(resource, limit, ttl, maxHold, wait)
    this.store = store
    this._constants = constants
  }

  #channel = ''
  #withChannel = ''

  /** @internal The constants with `channel` at their end; the last one made is kept (with classic pub/sub, every hold's). */
  _constantsWith(channel: string): string {
    if (channel !== this.#channel) {
      this.#channel = channel
      this.#withChannel = this._constants + channel
    }
    return this.#withChannel
  }

  /** @internal */
  protected get _to(): RedisStore {
    return this.store
  }
}

/** The parameters of the constructor `RedisStore` hides (see Lease's constructor). */
type RedisStoreArgs = [adapter: Adapter, server: RedisServerInfo, prefix: string, grace: number, clock: Clock, context: ContextStorage | undefined]
/** The parameters of the constructor `RedisLock` hides. */
type RedisLockArgs = [store: RedisStore, resource: Resource, limit: number, ttl: number, maxHold: number, wait: number, constants: string]

/** Makes a Redis store: `RedisStore` itself, typed with the constructor its published type hides. */
const MadeRedisStore = RedisStore as unknown as new (...args: RedisStoreArgs) => RedisStore
/** Makes a Redis store's lock or semaphore: `RedisLock` itself, typed with the constructor its published type hides. */
const MadeRedisLock = RedisLock as unknown as new (...args: RedisLockArgs) => RedisLock

/** Reads one field of `INFO` text. */
function infoField(info: string, field: string): string | undefined {
  const m = new RegExp(`^${field}:(.*)$`, 'm').exec(info)
  return m?.[1]?.trim()
}

/** Opens a store kept in Redis; see the module doc. */
export async function openRedisStoreOn(context: ContextStorage | undefined, options: unknown): Promise<RedisStore> {
  const place = 'openRedisStore'
  const o = checkOptions(options, place, ['redis', 'url', 'prefix', 'grace', 'allowEviction', 'clock'])
  if (options === undefined || (o.redis === undefined && o.url === undefined))
    throw new InvalidError(`${place}: option redis (a client) or url (redis://…) is required`)
  if (o.redis !== undefined && o.url !== undefined) throw new InvalidError(`${place}: give option redis or option url, not both`)
  if (o.url !== undefined && (typeof o.url !== 'string' || !/^rediss?:\/\//.test(o.url)))
    throw new InvalidError(`${place}: url ${JSON.stringify(o.url)} must start with redis:// or rediss://`)
  const prefix = o.prefix === undefined ? 'holdfast' : o.prefix
  if (typeof prefix !== 'string' || !PREFIX.test(prefix))
    throw new InvalidError(`${place}: prefix ${JSON.stringify(prefix)} must be 1 to 64 of A-Z a-z 0-9 _ . : -`)
  const grace = o.grace === undefined ? 60_000 : toMs(o.grace, `${place}: grace`)
  if (!(grace >= 1_000 && grace <= 86_400_000)) throw new InvalidError(`${place}: grace ${grace}ms must be 1s to 1d`)
  if (o.allowEviction !== undefined && typeof o.allowEviction !== 'boolean') throw new InvalidError(`${place}: option allowEviction must be true or false`)
  if (o.clock !== undefined && !isClock(o.clock)) throw new InvalidError(`${place}: option clock must be a clock`)
  const clock = (o.clock as Clock | undefined) ?? systemClock

  const adapter = o.redis !== undefined ? adapterOf(o.redis, place) : await adapterForUrl(o.url as string, place)
  try {
    await adapter.connected()
    const server = await checkServer(adapter, place, o.allowEviction === true)
    const store = new MadeRedisStore(adapter, server, prefix, Math.round(grace), clock, context)
    await store._open()
    return store
  } catch (error) {
    // Read before the close (which ends a client holdfast opened): an ioredis client the application
    // quit before answers "Connection is closed.", which read as a Redis down.
    const ended = adapter.ended()
    await adapter.close().catch(() => {})
    if (error instanceof ReplyFailure) throw new StorageError(`${place}: Redis refused: ${error.message}`, { cause: error })
    if (error instanceof NoAnswer && ended) throw new ClosedError(`${place}: ${CLIENT_ENDED}`, { cause: error })
    // A reply like READONLY (a replica) was an answer: Redis was reached, and the words say what it is.
    if (error instanceof NoAnswer) throw new ClosedError(`${place}: ${answeredTransient(error) ?? `cannot reach Redis: ${error.message}`}`, { cause: error })
    throw error
  }
}

/** Checks the server: its version, and a `maxmemory-policy` that cannot evict lock state. */
async function checkServer(adapter: Adapter, place: string, allowEviction: boolean): Promise<RedisServerInfo> {
  const ask = (section: string) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new NoAnswer(`no answer to INFO within ${PATIENCE}ms`)), PATIENCE)
      adapter.send(['INFO', section]).then(
        text => (clearTimeout(timer), resolve(String(text))),
        error => (clearTimeout(timer), reject(error instanceof ReplyFailure ? error : new NoAnswer(String(error?.message ?? error), { cause: error }))),
      )
    })
  const info = `${await ask('server')}\n${await ask('memory')}`
  const version = infoField(info, 'redis_version') ?? '0'
  const [major = 0, minor = 0] = version.split('.').map(Number)
  if (major < MIN_VERSION[0]! || (major === MIN_VERSION[0] && minor < MIN_VERSION[1]!)) {
    throw new StorageError(`${place}: Redis ${version} is too old: holdfast needs ${MIN_VERSION.join('.')} or later`)
  }
  // A client of one server given a Cluster node's address reaches the slots of that node alone: a
  // key of another's is answered MOVED, which a Cluster client follows and this one never would.
  if (infoField(info, 'redis_mode') === 'cluster' && adapter.topology !== 'cluster') {
    throw new InvalidError(
      `${place}: Redis ${version} is a node of a Cluster, reached with a client of one server (the keys of other nodes' slots would answer MOVED): pass a Cluster client as option redis, ioredis's new Cluster([…]) or node-redis's createCluster({ rootNodes }), connected`,
    )
  }
  const maxmemoryPolicy = infoField(info, 'maxmemory_policy')
  if (maxmemoryPolicy !== undefined && maxmemoryPolicy !== 'noeviction' && !allowEviction) {
    throw new StorageError(
      `${place}: Redis ${version} has maxmemory-policy ${maxmemoryPolicy}: it may evict lock state (two holders of one key, repeated fences). Set it to noeviction (CONFIG SET maxmemory-policy noeviction), or pass allowEviction: true`,
    )
  }
  // Sharded pub/sub (SPUBLISH) from Redis 7, in a Cluster whose client can.
  const pubsub = adapter.sharded && major >= 7 ? 'sharded' : 'classic'
  return { version, maxmemoryPolicy, client: adapter.client, topology: adapter.topology, pubsub }
}
