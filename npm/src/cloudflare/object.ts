/**
 * `HoldfastObject`: a Durable Object that hosts one store, for Workers to hold its keys over Workers
 * RPC (`workerStore(env.HOLDFAST)` is the client), and for WebSocket clients of the wire protocol
 * (`connect('wss://…')`, through a Worker that forwards the upgrade to `fetch`).
 *
 * # State
 * - The store is opened in `blockConcurrencyWhile`, its fence ceiling kept in the object's storage
 *   (`durableObjectStorage`): fences keep growing across restarts (LOCK-02).
 * - Every granted lease is kept there too (`holdfast.lease.<id>`: its key, fence, ttl and deadline),
 *   written at its grant and at each renewal, deleted when it ends. A grant is answered only once its
 *   write resolved (the object's output gate alone holds a reply until the writes before it are
 *   durable, but a write the storage refuses would not stop it): if the write fails, the lease is let
 *   go (the next in line moves up) and its caller is answered a `StorageError`, so no holder is told
 *   of a lease a restart would forget. A renewal too is answered once kept; one whose write fails is
 *   answered a `StorageError`, which its holder takes as no answer and asks again (see `#renewedFor`).
 *   A release (and `cancel` of a granted hold), over RPC and from a WebSocket client alike, deletes the
 *   kept lease before it lets the key go and is answered; a delete that fails lets nothing go and
 *   answers a `StorageError` (see `#unkeep`). A WebSocket client's frames that come after its release
 *   act once the release did (the protocol holds them back: session.ts `Session.queue`); a release of
 *   frame id 0 (as `connect()` sends) is answered nothing, so one whose delete failed leaves the lease
 *   to its ttl, its client no longer renewing it. A goodbye too deletes the client's kept leases before
 *   it lets them go; one whose delete failed stays held to its ttl (the goodbye then ends the
 *   connection as a drop does: `#leaving`).
 * - A restarted object (evicted, moved, or reset) takes its leases back before it answers anything:
 *   each is held again with the same lease and request ids, so renewals and a repeated `acquire` find
 *   it, and it ends at the deadline it had unless renewed. Its holder keeps the fence it was told; the
 *   engine gives the restored lease a new, larger fence, which only `inspect()` shows. Waiting holds
 *   are not kept: their calls fail with the restart, and `workerStore` asks again (a new place in line).
 * - Leases of WebSocket clients are kept and taken back the same way (the protocol's hooks, see
 *   protocol-session.ts): a client renews by lease id on a connection that outlived the restart, or
 *   reconnects and asks again with its request id and gets the same lease and fence; one that ended
 *   answers `lost`.
 *
 * # Pools (issue #16)
 * - The store's pools are kept by the store itself in the object's storage (the pools' keys, each
 *   value within 60 KiB, under the object's 128 KiB: see the engine's pool/log.rs): a claim is answered
 *   only once its write resolved, and a restarted object reads them back (POOL-02).
 * - Workers reach them over RPC (`poolClaim`, `poolOp`, `inspectPools`: `workerStore(...).pool()`, worker-pools.ts),
 *   WebSocket clients with the frames of revision 4 (`connect(url).pool()`), as from `holdfast serve`.
 * - The store keeps whom it answered `claimed` for each open claim (pool/room.ts # Withdrawn claims):
 *   a WebSocket client's session, or an RPC call's `asker` id. A claim whose `claimed` answer crossed
 *   its asker's cancel is withdrawn (`poolOp('withdraw')`, the `withdraw` frame of revision 6) and
 *   undone only if that asker alone was told: another caller told `claimed` keeps it. A withdraw
 *   whose write the storage failed stands in memory until the pools' next write: its asker asks
 *   again, answered `storage` until that write landed (a restart before it brings the claim back,
 *   which a drawn id's asker then releases: `#withdraw`).
 * - A claim not yet answered lives in memory only: an RPC claim's call fails with the restart and is
 *   asked again with its claim id; a WebSocket client with one is closed 1012 after a restart (as one
 *   with holds in line), and asks again with its claim ids. Either way the first outcome if the claim
 *   was kept, a claim anew if not: never units nobody was told of.
 * - A `poolOp('cancel')` naming an asker that finds no call of it (its `poolClaim`, on another stub,
 *   not come yet) is remembered for a while, by pool, claim id and asker: that call is answered
 *   `cancelled` when it comes (early-cancels.ts), another asker of the claim id is served as ever;
 *   kept in the object's storage too, as an acquire's early cancel is (see # Calls).
 *
 * # WebSocket clients and hibernation
 * - `fetch` accepts an upgrade with `ctx.acceptWebSocket` (hibernatable) and answers 101; anything else
 *   426. Frames go through the same `Protocol` as `store.serve()`: hello with the token first, then
 *   hold, renew, release, cancel, inspect, goodbye, the pool frames and ping.
 * - The token is `env.HOLDFAST_TOKEN` (a secret of the Worker). Without it, or with one past the 1,024
 *   bytes a hello carries, every client is refused at its hello (`closed`, saying which); a wrong one
 *   is refused `permission` and closed 4401, as by serve().
 * - What a connection must keep while the object is out of memory lives in its socket's attachment:
 *   its connection number, whether it said a good hello, whether it has holds in line, whether its
 *   session ended, and whether it came past the limit with no hello yet. After a wake (the
 *   constructor runs again) sessions are rebuilt from `ctx.getWebSockets()` and the attachments
 *   (one past the limit only at its frame: see below); so they are when the object reopens its store
 *   after an internal error, the old sessions let go. A client whose frames wait behind its release
 *   (or goodbye) then is closed 1012 (as one with holds in line): its old session ends, its waiting
 *   frames dropped, and no new one is made for its socket, so that none of them acts after frames the
 *   client sent later (see `#open`).
 * - A session that ended (goodbye, a dropped connection, superseded, or refused and closing) stays
 *   ended, as from `serve()`: its attachment says so (`ended`), and a frame that still comes on its
 *   socket (its close is not instant; a client may send after its goodbye) acts on nothing, whether
 *   the object kept it in memory or lost it since; it is never rebuilt (see `#resume`).
 * - A client's newer connection supersedes its older one (its party, kept in the attachment: remote/
 *   session.ts `Protocol.resumed`): at the newer hello, and when sessions are rebuilt after a wake,
 *   the older is ended as a dropped connection and closed 4409.
 * - 1,000 WebSocket clients at once (`MAX_CONNECTIONS`), counted from the upgrade. One past them is
 *   not refused at its upgrade, nor yet a session (its attachment says `overLimit`, after a wake
 *   too): its hello is admitted if there is room by then, or if it names a party (revision 6) that
 *   has a live connection here, as `serve()` admits at `maxConnections` (`Protocol.admits`). That
 *   older connection — its client's, gone half-open, still open and counted here: a hibernating
 *   object never drops an idle one — is superseded (4409) in the same turn, so the count never stays
 *   above the limit and the client gets back in at once. Any other hello past the limit is refused
 *   `limit` (4429), with its id.
 * - Hibernation keeps idle connections cheap: an object whose clients are quiet leaves memory while
 *   their sockets stay open. It does not make holding cheap: each renewal (every ttl/3 per lease) is a
 *   frame that wakes the object. Holds in line live in memory only, so a client that had some when the
 *   object (re)started is closed with 1012; `connect()` reconnects and asks again (a new place in line).
 * - A dropped connection (no goodbye) ends its waiting holds at once (their place kept "away" for
 *   their ttl, as the engine does); its leases live until their ttl (LOCK-05). Goodbye ends all at once.
 * - Deadlines of WebSocket clients come from the alarm like any other; a client's frame, like an RPC
 *   call, first acts on the deadlines that came.
 * - A client of revision 5 silent for 30 s with a hold in line or a claim awaited (its host gone
 *   without a close) is closed 4408 and ended as a dropped connection, as by `serve()`; the object
 *   looks when a call, a frame or the alarm comes, 10 s or more after it last looked, before acting
 *   on it, never on a timer of its own (silent-clients.ts).
 *
 * # Time
 * The store runs on a clock of `Date.now()` whose deadlines (ttls, waits, maxHold) are driven by the
 * object's alarm, set at the earliest one (see `AlarmClock`): an alarm outlives an eviction, a
 * `setTimeout` does not. Every request also acts first on the deadlines whose time came, since alarms
 * are not exact (they fire at or after their time) and `Date.now()` only moves across I/O. A
 * `setAlarm` the storage fails is asked again with backoff by a `setTimeout`, which acts on the
 * deadlines meanwhile, so that they do not wait for the next request.
 *
 * # Calls
 * `acquire`, `tryAcquire`, `renew`, `release` and `cancel` answer plain values, `{ ok }` or
 * `{ error: { code, message } }` (see `types.ts`); they never throw. A waiting `acquire` stays pending
 * for at most its `wait`. A grant whose caller vanished is never renewed, and ends after its ttl.
 * A `cancel` of a request the object does not know (its acquire, on another stub, not come yet) is
 * remembered for a while, in the object's storage too (`holdfast.cancel.<request>`: when it came), so
 * that an object restarted before the acquire comes still knows it: that acquire is answered
 * `cancelled` when it comes (early-cancels.ts). A cancel whose write fails is remembered in memory
 * only, and answered a `StorageError` saying so.
 */

import { DurableObject } from 'cloudflare:workers'
import { openStore } from '../entry/workerd.js'
import { RemoteRequest, type RemoteSink } from '../remote/request.js'
import { MAX_FRAME, Protocol, Session, type Refusal } from '../remote/session.js'
import { MAX_ANSWER } from '../remote/inspect-pages.js'
import { REVISION } from '../remote/wire.js'
import { SilentClients } from '../remote/silent-clients.js'
import { UnkeptWithdraws, withdrawKey } from '../remote/unkept-withdraws.js'
import { attachmentOf, closeQuietly, socketOf, type Attachment } from './hibernatable-socket.js'
import { checkMaxHold, checkTtl } from '../../wasm/holdfast_wasm.js'
import { CancelledError, HoldfastError, InvalidError, LostError, StorageError, fromEngine, type ErrorCode } from '../errors.js'
import { EarlyCancels } from './early-cancels.js'
import { toKey } from '../util/key.js'
import { checkNoMore, checkOptions } from '../util/options.js'
import { randomId } from '../util/random.js'
import type { Clock } from '../util/clock.js'
import { shown } from '../util/shown.js'
import type { Storage } from '../storage/storage.js'
import type { Store } from '../store/store.js'
import type { KeyInfo } from '../types.js'
import { checkId, type Pool } from '../pool/pool.js'
import type { PoolInfo } from '../pool/types.js'
import type {
  AcquireAnswer,
  AcquireOptions,
  DoneAnswer,
  PoolClaimAnswer,
  PoolClaimOptions,
  PoolOp,
  PoolOpAnswer,
  DurableObjectStateLike,
  DurableObjectStorageLike,
  ErrorAnswer,
  HibernatableWebSocketLike,
  HoldfastObjectRpc,
  RenewAnswer,
  TryAcquireAnswer,
} from './types.js'

const LEASE_PREFIX = 'holdfast.lease.'
/** Cancels that came before their acquire (`#earlyCancels`), and before their pool claim (`#earlyClaimCancels`). */
const CANCEL_PREFIX = 'holdfast.cancel.'
const CLAIM_CANCEL_PREFIX = 'holdfast.cancel-claim.'
const HEX32 = /^[0-9a-f]{32}$/

/**
 * A storage over a Durable Object's storage (`ctx.storage`), for a store hosted in an object of your
 * own: `openStore({ storage: durableObjectStorage(ctx.storage) })`. A `put` is durable once its
 * promise resolves (and the output gate holds replies until then). Anything without `get` and `put`
 * (the object's `ctx` itself, the commonest slip) is an `InvalidError` here, not a `StorageError` of
 * a `get` that is not a function at `openStore`.
 */
export function durableObjectStorage(storage: DurableObjectStorageLike): Storage
/** The published signature takes `storage` alone (TypeScript refuses more); plain JavaScript is refused at run time. */
export function durableObjectStorage(storage: DurableObjectStorageLike, ...extra: unknown[]): Storage {
  // Bad input, as a bad option anywhere: an InvalidError (a StorageError says a storage failed).
  const s = storage as Partial<DurableObjectStorageLike> | null
  if (typeof s !== 'object' || s === null || typeof s.get !== 'function' || typeof s.put !== 'function') {
    const ctx = typeof s === 'object' && s !== null && typeof (s as { storage?: { get?: unknown } }).storage?.get === 'function'
    const what = ctx
      ? "the object's ctx: pass ctx.storage"
      : s === undefined || s === null
        ? String(s)
        : typeof s === 'object'
          ? 'an object without get and put'
          : `a ${typeof s}`
    throw new InvalidError(`durableObjectStorage: storage must be a Durable Object's storage (ctx.storage), not ${what}`)
  }
  checkNoMore(extra, 'durableObjectStorage', 'storage')
  return {
    get: async key => {
      const value = await storage.get(key)
      return value === undefined || value === null ? undefined : String(value)
    },
    set: (key, value) => storage.put(key, value),
  }
}

/** The wait before a `setAlarm` the storage failed is asked again (ms), doubled while it keeps failing (see `AlarmClock`). */
const FIRST_ALARM_RETRY = 10
/** The longest such wait (ms): a deadline is acted on at most this late while `setAlarm` always fails. */
const LAST_ALARM_RETRY = 5_000

/** A timer of the object's clock. */
interface Timer {
  fn: () => void
  at: number
  /** A `setTimeout` for a 0 ms timer ("after this turn"); deadlines ahead have none (see AlarmClock). */
  real: ReturnType<typeof setTimeout> | undefined
  done: boolean
}

/**
 * `Date.now()`, and timers driven by the object's alarm: a deadline ahead is acted on when the alarm
 * set for the earliest one fires, or at the first request after it, whichever comes first. No
 * `setTimeout` is left pending for a deadline: an evicted object's timers die with it (the alarm wakes
 * it again), and a pending timer keeps an idle object from being evicted (workerd waits for it). Only
 * 0 ms timers (the store's "after this turn") use `setTimeout`.
 *
 * A `setAlarm` the storage fails leaves the clock unarmed (the failure is nobody's to answer: the
 * timer's setter asked for a deadline, not for an alarm), so that the next timer set, or the next
 * request (`fireDue`), arms it again for the earliest deadline; counted as set, no later timer would
 * arm it, and the deadlines would wait for a request after them. Nor would they with no request
 * after them: so a failed `setAlarm` is also asked again by a `setTimeout` of its own (`#retryLater`),
 * which wakes the object as its alarm would (`wake`: deadlines due acted on, the alarm set for the
 * next), after a wait doubling from `FIRST_ALARM_RETRY` to `LAST_ALARM_RETRY` while `setAlarm` keeps
 * failing, and never later than the earliest deadline. While that timer is pending the object stays
 * in memory, which is what its deadlines need with no alarm to wake it; once one is set, or no timer
 * is left to arm it for, nothing is pending.
 */
class AlarmClock implements Clock {
  readonly #storage: DurableObjectStorageLike
  /** Wakes the object as its alarm does (see `HoldfastObject.#woken`). */
  readonly #wake: () => void
  readonly #timers = new Set<Timer>()
  /** The alarm as last set (or found), or null. */
  #alarmAt: number | null = null
  /** The `setTimeout` that asks a failed `setAlarm` again, and its wait (0: none failed since one was set). */
  #retry: ReturnType<typeof setTimeout> | undefined = undefined
  #retryWait = 0

  constructor(storage: DurableObjectStorageLike, wake: () => void) {
    this.#storage = storage
    this.#wake = wake
  }

  async load(): Promise<void> {
    this.#alarmAt = await this.#storage.getAlarm()
  }

  now(): number {
    return Date.now()
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const timer: Timer = { fn, at: Date.now() + ms, real: undefined, done: false }
    this.#timers.add(timer)
    if (ms <= 0) timer.real = setTimeout(() => this.#fire(timer), 0)
    else this.#arm(timer.at)
    return timer
  }

  clearTimeout(handle: unknown): void {
    const timer = handle as Timer
    if (timer.done) return
    timer.done = true
    if (timer.real !== undefined) clearTimeout(timer.real)
    this.#timers.delete(timer)
  }

  #fire(timer: Timer): void {
    if (timer.done) return
    this.clearTimeout(timer)
    timer.fn()
  }

  /**
   * Runs every timer whose time came, earliest first (and those they set that are due too); then, if
   * no alarm is set (it fired, or its `setAlarm` failed), sets it for the earliest timer left.
   */
  fireDue(): void {
    for (let round = 0; round < 100; round++) {
      const now = Date.now()
      const due = [...this.#timers].filter(t => t.at <= now && t.real === undefined).sort((a, b) => a.at - b.at)
      if (due.length === 0) break
      for (const timer of due) this.#fire(timer)
    }
    if (this.#alarmAt === null) this.#armEarliest()
  }

  /** The alarm fired: runs what is due, and sets the alarm for what is left. */
  alarmed(): void {
    this.#alarmAt = null
    this.fireDue()
  }

  /** Stops every timer (the object opens its store anew), and the retry of a failed `setAlarm`: the new store's timers arm it. */
  reset(): void {
    for (const t of [...this.#timers]) this.clearTimeout(t)
    if (this.#retry !== undefined) clearTimeout(this.#retry)
    this.#retry = undefined
    this.#retryWait = 0
  }

  #arm(at: number): void {
    // An alarm already set at or before `at` fires first, and sets the next one then. None set (its
    // `setAlarm` failed): an earlier timer may be waiting for one too.
    if (this.#alarmAt === null) return this.#armEarliest()
    if (this.#alarmAt <= at) return
    this.#set(at)
  }

  /** Sets the alarm for the earliest timer, if any. */
  #armEarliest(): void {
    const next = this.#earliest()
    if (next !== Infinity) this.#set(next)
  }

  /** The time of the earliest timer that waits for the alarm (Infinity: none). */
  #earliest(): number {
    let next = Infinity
    for (const t of this.#timers) if (t.real === undefined && t.at < next) next = t.at
    return next
  }

  #set(at: number): void {
    this.#alarmAt = at
    this.#storage.setAlarm(at).then(
      () => {
        if (this.#alarmAt === at) this.#retryWait = 0
      },
      () => {
        // Not set: unarmed, for the next timer or request to arm again, or the retry if none comes
        // (unless a later call set it since).
        if (this.#alarmAt !== at) return
        this.#alarmAt = null
        this.#retryLater()
      },
    )
  }

  /** Asks a failed `setAlarm` again, unless a call set the alarm first (see the class's doc). */
  #retryLater(): void {
    if (this.#retry !== undefined) return
    this.#retryWait = this.#retryWait === 0 ? FIRST_ALARM_RETRY : Math.min(LAST_ALARM_RETRY, this.#retryWait * 2)
    const wait = Math.max(0, Math.min(this.#retryWait, this.#earliest() - Date.now()))
    this.#retry = setTimeout(() => {
      this.#retry = undefined
      if (this.#alarmAt === null) this.#wake()
    }, wait)
  }
}

/** A granted lease as the object keeps it (in memory and in storage). */
interface KeptLease {
  kind: 'lock' | 'semaphore'
  name: string
  key: string
  limit: number
  request: string
  lease: string
  /** The fence its holder was told. */
  fence: number
  ttl: number
  maxHold: number
  /** `Date.now()` of the grant, and of the end of its ttl (moved by each renewal). */
  grantedAt: number
  expiresAt: number
  /**
   * The connection number of the WebSocket client that holds it (or of the call, over RPC): taken
   * back under it when that client is still connected after a restart, so that its goodbye (or its
   * drop) ends it as any of its leases. Absent in what an older version kept.
   */
  conn?: number
}

function isKept(value: unknown): value is KeptLease {
  const l = value as KeptLease | null
  return (
    typeof l === 'object' &&
    l !== null &&
    (l.kind === 'lock' || l.kind === 'semaphore') &&
    typeof l.name === 'string' &&
    typeof l.key === 'string' &&
    typeof l.request === 'string' &&
    HEX32.test(l.request) &&
    typeof l.lease === 'string' &&
    HEX32.test(l.lease) &&
    Number.isSafeInteger(l.fence) &&
    typeof l.ttl === 'number' &&
    typeof l.maxHold === 'number' &&
    typeof l.grantedAt === 'number' &&
    typeof l.expiresAt === 'number' &&
    Number.isInteger(l.limit) &&
    (l.conn === undefined || Number.isInteger(l.conn))
  )
}

/** Whom the store answers for one call: resolves the call's promise, once. */
class Call implements RemoteSink {
  #answer: ((answer: AcquireAnswer | TryAcquireAnswer) => void) | undefined

  constructor(
    readonly object: { granted(record: RemoteRequest, fence: number): number | Promise<number>; ended(lease: string): void },
    answer: (answer: AcquireAnswer | TryAcquireAnswer) => void,
    readonly isTry: boolean,
  ) {
    this.#answer = answer
  }

  #send(answer: AcquireAnswer | TryAcquireAnswer): void {
    const send = this.#answer
    this.#answer = undefined
    send?.(answer)
  }

  get pending(): boolean {
    return this.#answer !== undefined
  }

  granted(record: RemoteRequest, fence: number, revokeIn: number): void {
    const told = this.object.granted(record, fence)
    const answer = (fence: number) => this.#send({ ok: { lease: record.lease, fence, ttl: record.ttl, revokeIn: Math.max(0, revokeIn) } })
    // A number when nothing is written (a lease taken back after a restart): answered at once.
    if (typeof told === 'number') answer(told)
    else told.then(answer, error => this.#send(errorAnswer(error)))
  }

  busy(record: RemoteRequest): void {
    this.#send(this.isTry ? { ok: null } : { error: { code: 'in_use', message: `${record.place()}: held by another (wait 0)` } })
  }

  failed(_record: RemoteRequest, code: ErrorCode, message: string): void {
    this.#send({ error: { code, message } })
  }

  lost(record: RemoteRequest): void {
    this.object.ended(record.lease)
  }

  /** The same hold was asked again by a newer call, which answers from now on. */
  supersede(record: RemoteRequest): void {
    this.#send({ error: { code: 'cancelled', message: `${record.place()}: asked again by a newer call` } })
  }
}

/** Why every WebSocket client is refused when the object has no token. */
const NO_TOKEN =
  'holdfast object: no token is set, so WebSocket clients are refused: set the secret HOLDFAST_TOKEN (wrangler secret put HOLDFAST_TOKEN; in development, .dev.vars)'

/** The most bytes of a token, as a hello carries it (docs/protocol.md; serve() and connect() check it too). */
const MAX_TOKEN = 1024

/**
 * Why every WebSocket client is refused when the object's token is longer than a hello carries: no
 * client could present it (connect() refuses it, a hello of it does not decode), and every shorter
 * one was refused `permission`, which sent its user to look for a wrong token.
 */
function tokenTooLong(bytes: number): string {
  return `holdfast object: the secret HOLDFAST_TOKEN is ${bytes} bytes, and a client's hello carries at most ${MAX_TOKEN}, so WebSocket clients are refused: set a shorter one (wrangler secret put HOLDFAST_TOKEN)`
}

/**
 * WebSocket clients at once per object, counted from the upgrade; one more is refused `limit` at its
 * hello, save one that takes its party's place (see `#admit`). The platform allows 32,768.
 */
const MAX_CONNECTIONS = 1_000

/** Where a kept lease is, as errors name it: `lock NAME: key "KEY"`. */
function placeOf(kept: KeptLease): string {
  return `${kept.kind} ${kept.name}: key ${JSON.stringify(kept.key)}`
}

/** A write of the object's storage failed: a `StorageError` saying what was not done, and the storage's own error. */
function storageFailed(what: string, error: unknown): StorageError {
  const cause = error as { message?: unknown } | null
  return new StorageError(`${what}: ${String(cause?.message ?? error)}`, { cause: error })
}

function errorAnswer(error: unknown): ErrorAnswer {
  if (error instanceof HoldfastError) return { error: { code: error.code, message: error.message } }
  return { error: { code: 'closed', message: `holdfast object: ${(error as Error)?.message ?? String(error)}` } }
}

/**
 * A Durable Object hosting one store; export it from your worker and bind it (see the README):
 *
 * ```ts
 * export { HoldfastObject } from 'holdfast/cloudflare'
 * // wrangler.jsonc: "durable_objects": { "bindings": [{ "name": "HOLDFAST", "class_name": "HoldfastObject" }] },
 * //                 "migrations": [{ "tag": "v1", "new_sqlite_classes": ["HoldfastObject"] }]
 * ```
 */
export class HoldfastObject extends DurableObject implements HoldfastObjectRpc {
  readonly #state: DurableObjectStateLike
  readonly #clock: AlarmClock
  #store!: Store
  /** The wire protocol of WebSocket clients; its handles serve RPC calls too. */
  readonly #protocol: Protocol
  /**
   * WebSocket clients' sessions by connection number (kept in each socket's attachment): those counted
   * against `_maxConnections`, from their upgrade (or their hello, for one that came past it: #admit).
   */
  readonly #sessions = new Map<number, Session>()
  readonly #sockets = new WeakMap<Session, HibernatableWebSocketLike>()
  /** Closes clients gone silent with holds in line, swept as events come (no timer: see silent-clients.ts). */
  readonly #silent: SilentClients
  /** Granted leases by lease id. */
  readonly #leases = new Map<string, KeptLease>()
  /** Restored leases not renewed since: the timer that ends them at their old deadline. */
  readonly #restored = new Map<string, unknown>()
  /**
   * Calls of `poolClaim` not yet answered, by pool and claim id, each with its caller's asker id (see
   * `PoolClaimOptions`): `poolOp('cancel')` aborts the asker's, or all of them.
   */
  readonly #claims = new Map<string, Set<{ asker: string | undefined; controller: AbortController }>>()
  /** Request ids whose cancel came before their acquire (over another stub): see early-cancels.ts. */
  readonly #earlyCancels = new EarlyCancels(() => Date.now())
  /** The same for pool claims, by pool, claim id and asker (`earlyClaim`): a claim id may be reused, an asker is one call's. */
  readonly #earlyClaimCancels = new EarlyCancels(() => Date.now())
  /**
   * Withdraws answered `StorageError`, whose undo the store writes again: until it is kept, a restart
   * would bring the claim back (`#withdraw`). The same record `serve()` keeps for its clients.
   */
  readonly #unkept = new UnkeptWithdraws()
  /** While leases kept before a restart are taken back. */
  #restoring = false
  /**
   * @internal for tests: WebSocket clients at once (`MAX_CONNECTIONS`). A test's subclass sets fewer
   * in its constructor, so that the limit is reached with a few clients, after a wake too.
   */
  _maxConnections = MAX_CONNECTIONS
  readonly #sink = {
    granted: (record: RemoteRequest, fence: number): number | Promise<number> => this.#granted(record, fence),
    ended: (lease: string) => this.#ended(lease),
  }

  constructor(ctx: unknown, env: unknown) {
    super(ctx, env)
    this.#state = ctx as DurableObjectStateLike
    this.#clock = new AlarmClock(this.#state.storage, () => this.#woken(false).catch(() => {}))
    const secret = (env as { HOLDFAST_TOKEN?: unknown } | null)?.HOLDFAST_TOKEN
    const given = typeof secret === 'string' && secret.length > 0 ? secret : undefined
    // A token no hello can carry is none: every client is refused at its hello, saying why, as with
    // none. Not thrown here: the object's RPC callers (workerStore) need no token, and are served.
    const bytes = given === undefined ? 0 : new TextEncoder().encode(given).length
    const token = bytes > MAX_TOKEN ? undefined : given
    this.#protocol = new Protocol(
      () => this.#store,
      token,
      {
        granted: (record, fence) => this.#granted(record, fence),
        renewed: (lease, ttl) => this.#renewedFor(lease, ttl),
        ended: lease => this.#ended(lease),
        // Its kept lease deleted first, as an RPC release does (the protocol holds the client's next frames back meanwhile).
        releasing: lease => (this.#leases.has(lease) ? this.#unkeep(lease) : undefined),
        leaving: session => this.#leaving(session.conn),
        admit: session => this.#admit(session),
        welcomed: session => this.#attach(session),
        waiting: session => this.#attach(session),
        closed: (session, goodbye) => this.#closed(session, goodbye),
      },
      bytes > MAX_TOKEN ? tokenTooLong(bytes) : NO_TOKEN,
      MAX_ANSWER,
      REVISION,
    )
    this.#silent = new SilentClients(
      this.#clock,
      () => this.#sessions.values(),
      this.#protocol,
      () => this.#store,
    )
    void this.#state.blockConcurrencyWhile(() => this.#open())
  }

  /** Opens the store and takes back the leases kept before a restart. */
  async #open(): Promise<void> {
    const storage = this.#state.storage
    // Reopened after an internal error: a session whose frames wait behind a release (or goodbye)
    // whose delete is under way ends here, its frames dropped, and its client is closed 1012 to ask
    // again. Its socket gets no new session (its attachment says it ended: #resume): were the old
    // one still to drain its queue, the frames sent before the client's next ones would act after
    // them. The release's own delete still lets its key go once done (in the store open then:
    // session.ts #released).
    for (const session of [...this.#sessions.values()]) {
      if (session.queue === undefined) continue
      this.#protocol.dropped(session, false)
      const ws = this.#sockets.get(session)
      if (ws) closeQuietly(ws, 1012, 'holdfast object restarted: ask again')
    }
    this.#clock.reset()
    this.#leases.clear()
    this.#restored.clear()
    this.#sessions.clear()
    // (Undefined at the first open, in the constructor.)
    const before = this.#store as Store | undefined
    await this.#clock.load()
    this.#store = await openStore({ storage: durableObjectStorage(storage), clock: this.#clock })
    // Connections are numbered by the store (`_nextConnection`: one per WebSocket client and per call,
    // so that none's requests count against another's; never one in use, even past a wrap: see
    // remote-holds.ts). Reopened after an internal error, the new store counts from past the old
    // one's numbers, as the object always did (that number is no connection's: not live).
    if (before) this.#store._connectionTaken(before._nextConnection(false), false)
    const kept = [...(await storage.list({ prefix: LEASE_PREFIX })).values()].filter(isKept).sort((a, b) => a.fence - b.fence)
    const sockets = this.#state.getWebSockets()
    // Connection numbers of clients still connected stay theirs: new ones are counted from past them,
    // and skip them while they are live. A socket whose session ended is no session any more
    // (#resume): its number is not live (no `_connectionEnded` would free it). One that came past the
    // limit and has said no hello is no session yet, but its number is live (see `fetch`).
    const connected = new Set<number>()
    for (const ws of sockets) {
      const attached = attachmentOf(ws)
      const conn = attached?.conn ?? 0
      connected.add(conn)
      this.#store._connectionTaken(conn, attached !== undefined && attached.ended !== true)
    }
    const now = Date.now()
    this.#restoring = true
    try {
      this.#restore(kept, now, connected)
    } finally {
      this.#restoring = false
    }
    for (const ws of sockets) this.#resume(ws)
    await this.#restoreCancels(this.#earlyCancels, CANCEL_PREFIX)
    await this.#restoreCancels(this.#earlyClaimCancels, CLAIM_CANCEL_PREFIX)
  }

  /**
   * Puts back the early cancels kept under `prefix` before a restart (see early-cancels.ts), oldest
   * first, and deletes those too old to matter now.
   */
  async #restoreCancels(early: EarlyCancels, prefix: string): Promise<void> {
    const storage = this.#state.storage
    const kept: [string, number][] = []
    for (const [key, at] of await storage.list({ prefix })) {
      const id = cancelIdOf(key.slice(prefix.length))
      if (id !== undefined && typeof at === 'number') kept.push([id, at])
      else storage.delete(key).catch(() => {})
    }
    kept.sort((a, b) => a[1] - b[1])
    for (const [id, at] of kept) this.#forgetCancels(prefix, early.restore(id, at))
  }

  /**
   * A cancel that found nothing: remembered, in memory and in the object's storage, so that its call
   * is answered `cancelled` when it comes, after a restart too. A write that fails leaves it in memory
   * only, and rejects a `StorageError`.
   */
  async #cancelledEarly(early: EarlyCancels, prefix: string, id: string, place: string): Promise<void> {
    this.#forgetCancels(prefix, early.add(id))
    // (An id that is not text UTF-8 can carry, a lone surrogate, is refused by its call anyway.)
    const key = cancelKeyOf(prefix, id)
    if (key === undefined) return
    try {
      await this.#state.storage.put(key, Date.now())
    } catch (error) {
      throw storageFailed(`${place}: its cancel came before it, and the object's storage did not keep it (kept until the object restarts only)`, error)
    }
  }

  /** Deletes the kept early cancels that `early` forgot. */
  #forgetCancels(prefix: string, forgotten: string[]): void {
    for (const id of forgotten) {
      const key = cancelKeyOf(prefix, id)
      if (key !== undefined) this.#state.storage.delete(key).catch(() => {})
    }
  }

  /**
   * A client still connected when the object (re)started, or whose frame came while its session is
   * not in memory: its session again, from the socket's attachment. Its leases were taken back with
   * the others; holds it had in line were not kept anywhere, so such a client is closed (1012) to
   * reconnect and ask again with its request ids. A session that ended is never rebuilt: nothing of
   * its socket acts any more (answers `undefined`, and its frame is ignored, as from `serve()`). A
   * socket that came past the limit is no session until its hello is admitted (#admit): `framed`
   * (its frame came), a session not counted, for that hello; else none.
   */
  #resume(ws: HibernatableWebSocketLike, framed = false): Session | undefined {
    const attached = attachmentOf(ws)
    if (!attached) {
      closeQuietly(ws, 1011, 'holdfast object: a socket without its session')
      return undefined
    }
    if (attached.overLimit) return framed ? this.#session(ws, attached.conn, false) : undefined
    if (attached.ended) {
      // Closed (again): every way a session ends closes its socket or finds it closed already
      // (goodbye 1000, superseded 4409, silent 4408, refused 44xx, sent to ask again 1012: #open), so
      // this close is a no-op (closeQuietly) where that close was sent. A socket still open here is
      // one whose close did not complete, or was lost with the object's memory: it answers nothing
      // any more, so it is closed, for its client to learn so rather than wait on it.
      closeQuietly(ws, 1000, 'holdfast object: this connection ended')
      return undefined
    }
    const session = this.#session(ws, attached.conn)
    session.authed = attached.authed
    session.revision = attached.revision ?? session.revision
    if (attached.party !== undefined) session.party = attached.party
    if (attached.waiting) {
      this.#protocol.dropped(session)
      closeQuietly(ws, 1012, 'holdfast object restarted: ask again')
      return undefined
    }
    // Its client's newest connection stands; an older one of the same party is ended and closed (4409).
    if (session.authed && !this.#protocol.resumed(session)) return undefined
    return session
  }

  /**
   * Takes back the leases kept: each under its client's connection number while that client is still
   * connected (`connected`), else under a new one.
   */
  #restore(kept: KeptLease[], now: number, connected: Set<number>): void {
    const storage = this.#state.storage
    for (const l of kept) {
      const left = l.expiresAt - now
      const revokeLeft = l.maxHold > 0 ? l.grantedAt + l.maxHold - now : 0
      if (left <= 0 || (l.maxHold > 0 && revokeLeft <= 0)) {
        storage.delete(LEASE_PREFIX + l.lease).catch(() => {})
        continue
      }
      this.#leases.set(l.lease, l)
      let granted = false
      const sink = new Call(this.#sink, answer => (granted = 'ok' in answer && answer.ok !== null), true)
      // (A number of its own, not live: no goodbye ends it; in use while the lease is.)
      const conn = l.conn !== undefined && connected.has(l.conn) ? l.conn : this.#store._nextConnection(false)
      const record = new RemoteRequest(l.kind, l.name, l.key, l.request, l.lease, l.ttl, l.maxHold > 0 ? revokeLeft : 0, conn, 0, sink, l.limit)
      try {
        const handle = this.#protocol.handle(l.kind, l.name, l.limit)
        this.#store._remoteHold(handle, record, 0)
        this.#store._letGo(handle)
      } catch {
        granted = false
      }
      if (!granted) {
        this.#ended(l.lease)
        continue
      }
      this.#restored.set(
        l.lease,
        this.#clock.setTimeout(() => this.#expireRestored(l.lease), left),
      )
    }
  }

  /**
   * Before every call: reopen after an internal error, look for clients gone silent, and act on
   * deadlines that came. The look comes first, so that neither the call nor a deadline hands a key
   * to a client gone (silent-clients.ts); `from`, the connection whose frame this is, is heard before
   * it, so that a client is never closed at its own frame.
   */
  async #begin(from?: number): Promise<void> {
    if (this.#store.closed) await this.#state.blockConcurrencyWhile(() => this.#open())
    const sender = from === undefined ? undefined : this.#sessions.get(from)
    if (sender) sender.heard = true
    this.#silent.poke()
    this.#clock.fireDue()
  }

  /**
   * A lease was granted (or granted again to a call that asked again): keep it. Answers the fence its
   * holder is told: at once for a lease taken back after a restart (kept already), else once kept.
   */
  #granted(record: RemoteRequest, fence: number): number | Promise<number> {
    const now = Date.now()
    let kept = this.#leases.get(record.lease)
    // Taken back after a restart: it keeps its old deadline (see #open).
    if (kept && this.#restoring) return kept.fence
    if (!kept) {
      kept = {
        kind: record.kind,
        name: record.name,
        key: record.key,
        limit: record.limit,
        request: record.request,
        lease: record.lease,
        fence,
        ttl: record.ttl,
        maxHold: record.maxHold,
        grantedAt: now,
        expiresAt: now + record.ttl,
        conn: record.conn,
      }
      this.#leases.set(record.lease, kept)
    } else {
      // Asked again, perhaps by its client on a new connection.
      kept.expiresAt = now + record.ttl
      kept.conn = record.conn
      this.#renewed(record.lease)
    }
    return this.#kept(record, kept)
  }

  /**
   * Answers the fence of a granted lease once its write resolved. A write that fails lets the lease go
   * (the next in line moves up: a lease nobody was told of must not hold its key until its ttl) and
   * rejects with a `StorageError`. A lease that ended while its write was under way (released or
   * cancelled by its request id, or another write of it failed) rejects `lost`: it holds nothing.
   */
  async #kept(record: RemoteRequest, kept: KeptLease): Promise<number> {
    try {
      await this.#keep(kept)
    } catch (error) {
      // Only the lease as this write kept it: an object reopened since has its own (or none).
      if (this.#leases.get(kept.lease) === kept) {
        this.#store._releaseRemote(kept.lease)
        this.#ended(kept.lease)
      }
      throw storageFailed(`${record.place()}: the object's storage did not keep the lease, so it was not granted`, error)
    }
    if (this.#leases.get(kept.lease) !== kept)
      throw new LostError(`${record.place()}: the lease ended while it was being kept (released, cancelled, or a write of it failed)`)
    return kept.fence
  }

  /**
   * A lease was renewed for `ttl` from now: its new deadline is kept. Resolves once it is, rejects a
   * `StorageError` if the write failed. Such a renewal must not be answered: the storage keeps the
   * deadline of the last renewal answered, and a restart would end the lease there, before the new
   * one. Unanswered, its holder asks again, counting its deadline from the last one answered (renewal.ts),
   * so it gives up first; the engine's lease, renewed in memory, outlives that by at most a ttl.
   */
  async #renewedFor(lease: string, ttl: number): Promise<void> {
    const kept = this.#leases.get(lease)
    if (!kept) return
    kept.expiresAt = Date.now() + ttl
    this.#renewed(lease)
    try {
      await this.#keep(kept)
    } catch (error) {
      throw storageFailed(`${placeOf(kept)}: the object's storage did not keep the renewal, so it was not renewed`, error)
    }
  }

  /** Writes a lease to storage; a `put` that throws is a write that failed, as one that rejects. */
  async #keep(kept: KeptLease): Promise<void> {
    await this.#state.storage.put(LEASE_PREFIX + kept.lease, kept)
  }

  /**
   * Deletes a lease's kept record before its release (`release`, or `cancel` of a granted hold, over RPC
   * or a WebSocket client's frame; a goodbye's, `#leaving`) lets the key go and is answered. A release
   * answered while the record stays would be undone by a restart: the lease taken back would hold its
   * key with no holder until its old deadline. So a delete that fails lets nothing go: the lease stays
   * held and kept, and the call rejects a `StorageError`, which its holder asks again (workerStore
   * does) — as for a renewal whose write failed.
   */
  async #unkeep(lease: string): Promise<void> {
    const kept = this.#leases.get(lease)
    if (!kept) return
    // Out of the map while the delete is under way: no write of it (a renewal's) may land after it.
    // Nor does a renewal of it act meanwhile, to be answered with no deadline written: workerd delivers
    // no call or frame while a storage operation is outstanding (the input gate), and a WebSocket
    // client's frames after its release wait for it (session.ts `Session.queue`).
    this.#leases.delete(lease)
    try {
      await this.#state.storage.delete(LEASE_PREFIX + lease)
    } catch (error) {
      // Still held (nothing was let go), so still kept, at the deadline its last write kept.
      if (this.#store._remoteLease(lease) && !this.#leases.has(lease)) this.#leases.set(lease, kept)
      throw storageFailed(`${placeOf(kept)}: the object's storage did not delete the lease, so it was not released (ask again)`, error)
    }
  }

  /**
   * A WebSocket client's goodbye: the kept leases of its connection are deleted before they are let
   * go, each as a release deletes it (`#unkeep`), and each whose delete was done is let go here.
   * Answers whether all were (`undefined` when it holds none): if not, the goodbye ends the
   * connection as a drop does, and a lease whose delete failed stays held, to its ttl.
   */
  #leaving(conn: number): Promise<boolean> | undefined {
    const leases = [...this.#leases.keys()].filter(lease => this.#store._remoteLease(lease)?.conn === conn)
    if (leases.length === 0) return undefined
    const forget = (lease: string) =>
      this.#unkeep(lease).then(
        () => {
          this.#store._releaseRemote(lease)
          this.#ended(lease)
          return true
        },
        () => false,
      )
    return Promise.all(leases.map(forget)).then(done => done.every(Boolean))
  }

  /** A lease ended (released, lost, expired, revoked): forget it. */
  #ended(lease: string): void {
    this.#renewed(lease)
    if (this.#leases.delete(lease)) this.#state.storage.delete(LEASE_PREFIX + lease).catch(() => {})
  }

  /** A restored lease was renewed (or asked again): its old deadline no longer applies. */
  #renewed(lease: string): void {
    const timer = this.#restored.get(lease)
    if (timer === undefined) return
    this.#restored.delete(lease)
    this.#clock.clearTimeout(timer)
  }

  #expireRestored(lease: string): void {
    if (!this.#restored.delete(lease)) return
    this.#store._releaseRemote(lease)
    this.#ended(lease)
  }

  // ---- RPC ----

  /** Waits (at most `options.wait`; `null`: no limit) for the key, and answers the lease. */
  async acquire(kind: 'lock' | 'semaphore', name: string, key: string, options: AcquireOptions): Promise<AcquireAnswer> {
    return (await this.#acquire(kind, name, key, options, false)) as AcquireAnswer
  }

  /** Takes the key only if it is free and nobody waits: `{ ok: null }` otherwise. */
  async tryAcquire(kind: 'lock' | 'semaphore', name: string, key: string, options: AcquireOptions): Promise<TryAcquireAnswer> {
    return (await this.#acquire(kind, name, key, options, true)) as TryAcquireAnswer
  }

  async #acquire(kind: unknown, name: unknown, key: unknown, options: unknown, isTry: boolean): Promise<AcquireAnswer | TryAcquireAnswer> {
    try {
      await this.#begin()
      if (kind !== 'lock' && kind !== 'semaphore') throw new InvalidError(`kind ${JSON.stringify(kind)} must be "lock" or "semaphore"`)
      if (typeof name !== 'string') throw new InvalidError(`${kind}: name must be a string, not ${typeof name}`)
      const place = `${kind} ${name}`
      const k = toKey(key, place)
      const o = checkOptions(options, `${place}: key ${JSON.stringify(k)}`, ['limit', 'ttl', 'maxHold', 'wait', 'request'])
      const limit = kind === 'lock' ? 1 : o.limit
      if (typeof limit !== 'number' || !Number.isInteger(limit))
        throw new InvalidError(`${place}: limit ${shown(limit)} must be a whole number from 1 to 10000`)
      if (typeof o.request !== 'string' || !HEX32.test(o.request)) throw new InvalidError(`${place}: request must be 32 hex digits`)
      for (const n of ['ttl', 'maxHold'] as const) {
        if (typeof o[n] !== 'number' || !Number.isFinite(o[n]) || (o[n] as number) < 0) throw new InvalidError(`${place}: ${n} must be a number of ms`)
      }
      // The engine checks the ttl of a hold over a connection too, but as whole ms: checked here, a bad
      // one is named as given (0.5, 1e+20). maxHold is checked where handles are made.
      try {
        checkTtl(o.ttl as number)
        if (o.maxHold !== 0) checkMaxHold(o.maxHold as number)
      } catch (error) {
        throw fromEngine(error, `${place}: key ${JSON.stringify(k)}`)
      }
      const wait = isTry || o.wait === 0 ? 0 : o.wait === null || o.wait === undefined ? Infinity : (o.wait as number)
      if (typeof wait !== 'number' || Number.isNaN(wait) || wait < 0) throw new InvalidError(`${place}: wait must be a number of ms, or null`)
      const handle = this.#protocol.handle(kind, name, limit)
      const request = o.request
      // Its cancel came first: its caller gave up already, and nobody would take its grant.
      if (this.#earlyCancels.has(request)) throw new CancelledError(`${place}: key ${JSON.stringify(k)}: cancelled before it came`)
      // Asked again (a retry after a failed call): an earlier call still waiting here is answered, and this one goes on.
      const earlier = this.#store._remoteRequest(request)
      if (earlier && earlier.sink instanceof Call && earlier.sink.pending) earlier.sink.supersede(earlier)
      return await new Promise<AcquireAnswer | TryAcquireAnswer>(resolve => {
        const call = new Call(this.#sink, resolve, isTry)
        // A call is no connection that says goodbye: its number is in use while its request is, never live.
        const conn = this.#store._nextConnection(false)
        const record = new RemoteRequest(kind, name, k, request, randomId(), o.ttl as number, o.maxHold as number, conn, 0, call, limit)
        this.#store._remoteHold(handle, record, wait)
        this.#store._letGo(handle)
      })
    } catch (error) {
      return errorAnswer(error)
    }
  }

  /** Renews a lease for its ttl from now; `lost` if it ran out, was revoked, released, or never was. */
  async renew(lease: string): Promise<RenewAnswer> {
    try {
      await this.#begin()
      if (typeof lease !== 'string' || !HEX32.test(lease)) throw new InvalidError('renew: lease must be 32 hex digits')
      const renewed = this.#store._renew(lease)
      if (!renewed) {
        this.#ended(lease)
        return { error: { code: 'lost', message: 'lease lost: past its ttl, revoked, released, or never granted' } }
      }
      await this.#renewedFor(lease, renewed.ttl)
      return { ok: { ttl: renewed.ttl, revokeIn: Math.max(0, renewed.revokeIn) } }
    } catch (error) {
      return errorAnswer(error)
    }
  }

  /** Lets a lease go (the next in line gets the key at once). Releasing one that ended does nothing. */
  async release(lease: string): Promise<DoneAnswer> {
    try {
      await this.#begin()
      if (typeof lease !== 'string' || !HEX32.test(lease)) throw new InvalidError('release: lease must be 32 hex digits')
      await this.#unkeep(lease)
      this.#store._releaseRemote(lease)
      this.#ended(lease)
      return { ok: true }
    } catch (error) {
      return errorAnswer(error)
    }
  }

  /** Ends a hold by its request id: a waiting one leaves the line (its call answers `cancelled`); a granted one is released. */
  async cancel(request: string): Promise<DoneAnswer> {
    try {
      await this.#begin()
      if (typeof request !== 'string' || !HEX32.test(request)) throw new InvalidError('cancel: request must be 32 hex digits')
      const record = this.#store._remoteRequest(request)
      // A granted one is released: its kept lease deleted first, as by `release`.
      if (record?.holding) await this.#unkeep(record.lease)
      if (record) {
        const waiting = !record.holding
        this.#store._endRemote(record)
        if (waiting) record.sink.failed(record, 'cancelled', `${record.place()}: cancelled while waiting`)
        else this.#ended(record.lease)
      } else {
        // Its acquire may still come (it travels on another stub): it is answered cancelled then.
        await this.#cancelledEarly(this.#earlyCancels, CANCEL_PREFIX, request, `request ${request}`)
      }
      return { ok: true }
    } catch (error) {
      return errorAnswer(error)
    }
  }

  // ---- pools (issue #16): kept by the store in the object's storage, as any store keeps them ----

  /** The pool of a call: made with `capacity` if new (0: it must exist), as a served client's frame names it. */
  #pool(name: unknown, capacity: unknown): Pool {
    if (typeof name !== 'string') throw new InvalidError(`pool: name must be a string, not ${typeof name}`)
    if (typeof capacity !== 'number' || !Number.isInteger(capacity) || capacity < 0)
      throw new InvalidError(`pool ${name}: capacity ${String(capacity)} must be a whole number (0: the pool as it is)`)
    return this.#store._servedPool(name, capacity)
  }

  /**
   * Claims `n` units of pool `name` for a Worker (`workerStore(...).pool(name).claim()`): answered
   * once the object's storage kept the claim. The claim id is always the caller's, so that a call
   * asked again after a failure (the object restarted) answers the first claim's outcome.
   */
  async poolClaim(name: string, capacity: number, n: number, options: PoolClaimOptions): Promise<PoolClaimAnswer> {
    try {
      await this.#begin()
      const pool = this.#pool(name, capacity)
      const o = checkOptions(options, `pool ${pool.name}: claim`, ['id', 'wait', 'ttl', 'asker'])
      if (typeof o.id !== 'string') throw new InvalidError(`pool ${pool.name}: claim id must be a string`)
      if (o.asker !== undefined && typeof o.asker !== 'string') throw new InvalidError(`pool ${pool.name}: claim asker must be a string`)
      if (o.wait !== null && typeof o.wait !== 'number') throw new InvalidError(`pool ${pool.name}: wait must be a number of ms, or null`)
      if (typeof o.ttl !== 'number') throw new InvalidError(`pool ${pool.name}: ttl must be a number of ms (0: none)`)
      // Its cancel came first: its caller gave up already, and nobody would take the units it claims.
      if (o.asker !== undefined && this.#earlyClaimCancels.has(earlyClaim(pool.name, o.id, o.asker as string)))
        throw new CancelledError(`pool ${pool.name}: claim ${JSON.stringify(o.id)}: cancelled before it came`)
      const key = `${pool.name}\0${o.id}`
      // Asked again while an earlier call still waits (a retry, or a second caller of the same id):
      // this call joins the claim, which keeps its place in line, and each call is answered by its own
      // wait and cancel (POOL-04, as in process: room.ts #ask). Aborting the earlier call instead
      // cancelled the claim (its only asker gone) and put it back at the end of the line.
      const call = { asker: o.asker as string | undefined, controller: new AbortController() }
      let calls = this.#claims.get(key)
      if (!calls) this.#claims.set(key, (calls = new Set()))
      calls.add(call)
      try {
        const options = {
          id: o.id,
          wait: o.wait === null ? Infinity : (o.wait as number),
          signal: call.controller.signal,
          ...(o.ttl === 0 ? {} : { ttl: o.ttl as number }),
        }
        // The store keeps whom it answered `claimed`: the asker id (a string, so the same caller whichever
        // call carries it; pool/room.ts # Withdrawn claims), which a withdraw names (`poolOp('withdraw')`).
        const result = await (call.asker === undefined ? pool.claim(n, options) : pool._claimFor(n, options, rpcParty(call.asker)))
        return { ok: { claimed: result.claimed, remaining: result.remaining } }
      } finally {
        calls.delete(call)
        if (calls.size === 0 && this.#claims.get(key) === calls) this.#claims.delete(key)
      }
    } catch (error) {
      return errorAnswer(error)
    }
  }

  /** The other pool operations of a Worker (see `PoolOp`). */
  async poolOp(op: PoolOp, name: string, capacity: number, claim: string, value: number, asker?: string): Promise<PoolOpAnswer> {
    try {
      await this.#begin()
      // Before the pool is looked up: the claim it cancels may be the pool's first use, not come yet.
      if (op === 'cancel') return await this.#poolCancel(name, claim, asker)
      const pool = this.#pool(name, capacity)
      switch (op) {
        case 'release':
          // 2 when the claim held nothing, having given its units back before (released, or its ttl
          // ran out; its id remembered), as a connection's release of revision 6 is answered: a
          // workerStore asking again a release whose call failed (the object reset after keeping it)
          // learns that its units are back. An older workerStore reads 2 as 0, as it was answered.
          return { ok: await this.#store._releaseServed(pool, checkId(claim, `pool ${pool.name}`)) }
        case 'confirm':
          await pool.confirm(claim)
          return { ok: 0 }
        case 'remaining':
          return { ok: await pool.remaining() }
        case 'resize':
          await pool.resize(value)
          return { ok: 0 }
        case 'withdraw':
          // A `claimed` answer that crossed its caller's cancel: undone (1) only if no caller but this
          // asker was answered `claimed` for it; else (0) it is theirs, and this caller lets it be.
          if (typeof asker !== 'string') throw new InvalidError(`pool ${pool.name}: withdraw names its asker`)
          return { ok: await this.#withdraw(pool, claim, asker) }
        default:
          throw new InvalidError(`pool ${pool.name}: op ${JSON.stringify(op)} must be release, confirm, remaining, resize, cancel or withdraw`)
      }
    } catch (error) {
      return errorAnswer(error)
    }
  }

  /**
   * `poolOp('withdraw')`. One whose write the storage failed is answered `StorageError`, its undo
   * standing in memory only until the pools' next write lands: a restart before then reads the claim
   * back, which nobody then knows was withdrawn. So its asker asks again (worker-pools.ts `#withdraw`),
   * and is answered from `#unkept` (remote/unkept-withdraws.ts): `StorageError` again while that write is owed, 1 once it
   * landed. An object restarted meanwhile knows neither, and answers as it answers any claim read
   * back: kept (0), which a claim id drawn by workerStore follows with a release.
   */
  async #withdraw(pool: Pool, claim: string, asker: string): Promise<0 | 1> {
    // Keyed as a revision-6 client's withdraw (no claim frame named): an asker is one call's.
    const party = rpcParty(asker)
    const key = withdrawKey(pool.name, claim, 0)
    const store = this.#store
    // A new store (after a reset) read the pools as storage kept them: `#unkept` forgets the old one's.
    const again = this.#unkept.again(store, party, key, `pool ${pool.name}: claim ${JSON.stringify(claim)}`)
    if (again) return (await again) ? 1 : 0
    try {
      return (await store._withdrawServed(pool, claim, party)) ? 1 : 0
    } catch (error) {
      // Undone in memory all the same (room.ts: a change stands, written again with the next write).
      this.#unkept.failed(store, party, key, error)
      throw error
    }
  }

  /** `poolOp('cancel')`: ends the asker's calls of claim `claim` (its retries too); with none named, every call of the claim. */
  async #poolCancel(name: unknown, claim: unknown, asker: unknown): Promise<PoolOpAnswer> {
    if (typeof name !== 'string') throw new InvalidError(`pool: name must be a string, not ${typeof name}`)
    if (typeof claim !== 'string') throw new InvalidError(`pool ${name}: claim id must be a string`)
    if (asker !== undefined && typeof asker !== 'string') throw new InvalidError(`pool ${name}: cancel asker must be a string`)
    let found = false
    for (const call of this.#claims.get(`${name}\0${claim}`) ?? [])
      if (asker === undefined || call.asker === asker) {
        call.controller.abort()
        found = true
      }
    // Its call may still come (it travels on another stub): it is answered cancelled then. Only an
    // asker's: without one, a later call of the claim id may be anyone's.
    if (!found && asker !== undefined)
      await this.#cancelledEarly(this.#earlyClaimCancels, CLAIM_CANCEL_PREFIX, earlyClaim(name, claim, asker), `pool ${name}: claim ${JSON.stringify(claim)}`)
    return { ok: 0 }
  }

  /** The busy keys of this object's store (a restored lease shows the engine's new fence). */
  async inspect(): Promise<KeyInfo[]> {
    await this.#begin()
    return this.#store.inspectKeys()
  }

  /** The pools of this object's store: capacity, remaining, open claims and claims waiting in line. */
  async inspectPools(): Promise<PoolInfo[]> {
    await this.#begin()
    return this.#store.inspectPools()
  }

  /** The alarm: the backstop for deadlines whose timers an eviction took away. */
  async alarm(): Promise<void> {
    await this.#woken(true)
  }

  /**
   * The alarm fired (`alarmed`), or the retry of a `setAlarm` the storage failed stands in for it
   * (see `AlarmClock`): acts on the deadlines that came, and sets the alarm for the next.
   */
  async #woken(alarmed: boolean): Promise<void> {
    if (this.#store.closed) await this.#state.blockConcurrencyWhile(() => this.#open())
    this.#silent.poke()
    if (alarmed) this.#clock.alarmed()
    else this.#clock.fireDue()
  }

  // ---- WebSocket clients (the wire protocol of store.serve(), with hibernation) ----

  /**
   * A WebSocket upgrade, forwarded by a Worker (`env.HOLDFAST.get(id).fetch(request)`): accepted with
   * hibernation and answered 101. Anything else is answered 426.
   */
  async fetch(request: Request): Promise<Response> {
    if (request.headers.get('Upgrade')?.toLowerCase() !== 'websocket') {
      return new Response('holdfast object: only WebSocket upgrades (Upgrade: websocket) are served here; Workers hold keys with workerStore(env.HOLDFAST)\n', {
        status: 426,
        headers: { Upgrade: 'websocket', 'Content-Type': 'text/plain; charset=utf-8' },
      })
    }
    await this.#begin()
    const Pair = (globalThis as unknown as { WebSocketPair: new () => Record<0 | 1, HibernatableWebSocketLike> }).WebSocketPair
    const pair = new Pair()
    const client = pair[0]
    const server = pair[1]
    this.#state.acceptWebSocket(server)
    // Past the limit: not refused here, for its hello may take its party's place (#admit), nor yet a
    // session. Its number is live all the same, so that no other takes it before that hello: until it
    // is refused (#refused) or closes first (#drop), as a session's until it ends (#closed).
    const over = this.#sessions.size >= this._maxConnections
    const attached: Attachment = { conn: this.#store._nextConnection(), authed: false, waiting: false }
    if (over) attached.overLimit = true
    else this.#session(server, attached.conn)
    server.serializeAttachment(attached)
    return new Response(null, { status: 101, webSocket: client } as ResponseInit)
  }

  /** A frame from a WebSocket client (also the first event after a wake from hibernation). */
  async webSocketMessage(ws: HibernatableWebSocketLike, message: ArrayBuffer | string): Promise<void> {
    // Read once: the attachment is a copy made anew at each read.
    const attached = attachmentOf(ws)
    await this.#begin(attached?.conn)
    // (Not in memory: the object hibernated since, the session ended, which #resume then ignores, or
    // the socket came past the limit, its hello judged now: #admit.)
    const session = (attached && this.#sessions.get(attached.conn)) ?? this.#resume(ws, true)
    if (!session) return
    if (typeof message === 'string' || message.byteLength > MAX_FRAME) {
      session.refuse(
        0,
        'protocol',
        typeof message === 'string'
          ? 'server: text messages are not frames (send binary)'
          : `server: a frame of ${message.byteLength} bytes is over ${MAX_FRAME}`,
      )
      // Refused: its late frames act on nothing after a wake either (see Attachment.ended).
      return this.#refused(session)
    }
    // Frames behind a release wait for its kept lease's delete (see #unkeep): the socket says so
    // meanwhile (see #waitingOf), and the attachment is looked at again once they acted.
    const ran = this.#protocol.frame(session, new Uint8Array(message))
    if (ran !== undefined) {
      if (attachmentOf(ws)?.waiting !== true && !session.ended) this.#attach(session)
      await ran
    }
    // (An ended session's attachment was written as it ended: #closed.)
    if (session.ended) return
    // A claim unanswered lives in memory only, as a hold in line does: the socket says so (see #attach).
    // A session refused by its frame (closing) is kept ended there, as one that ended.
    const now = attachmentOf(ws)
    if (session.closing && now?.ended !== true) this.#refused(session)
    else if (now?.waiting !== this.#waitingOf(session)) this.#attach(session)
  }

  /**
   * `session` was refused (its connection closing): its attachment says it ended, so that its late
   * frames act on nothing, after a wake either. One that came past the limit (not counted: a hello
   * not admitted, or no hello) ends here, its number let go: no close event would find it (#drop).
   */
  #refused(session: Session): void {
    if (this.#sessions.get(session.conn) === session) this.#attach(session)
    else this.#protocol.dropped(session)
  }

  /** A client's connection closed without goodbye: its waiting holds step aside, its leases live until their ttl (LOCK-05). */
  async webSocketClose(ws: HibernatableWebSocketLike, code: number, _reason: string, _wasClean: boolean): Promise<void> {
    await this.#drop(ws)
    // Completes the closing handshake where the runtime does not answer a close by itself.
    closeQuietly(ws, code === 1005 || code === 1006 || code === 1015 ? 1000 : code, 'closed')
  }

  async webSocketError(ws: HibernatableWebSocketLike, _error: unknown): Promise<void> {
    await this.#drop(ws)
  }

  async #drop(ws: HibernatableWebSocketLike): Promise<void> {
    await this.#begin()
    const attached = attachmentOf(ws)
    const session = attached && this.#sessions.get(attached.conn)
    if (session) this.#protocol.dropped(session)
    // Came past the limit and went before its hello: its number, live since the upgrade, is let go,
    // once. Its error and its close both come here: the attachment says it ended first, so that the
    // second finds nothing to let go. Let go twice, a number given again since (past a wrap of the
    // count) would no longer be live for the socket that has it, and would be given to a third.
    else if (attached?.overLimit) {
      try {
        ws.serializeAttachment({ conn: attached.conn, authed: false, waiting: false, ended: true } satisfies Attachment)
      } catch {
        // its socket is gone: no event comes on it any more
      }
      this.#store._connectionEnded(attached.conn, false)
    }
  }

  /** A session for a client's socket; `counted`: one of `#sessions` (one past the limit is not, until #admit). */
  #session(ws: HibernatableWebSocketLike, conn: number, counted = true): Session {
    const session = new Session(conn, socketOf(ws), this.#protocol)
    if (counted) this.#sessions.set(conn, session)
    this.#sockets.set(session, ws)
    return session
  }

  /**
   * A hello with the token: a session counted from its upgrade is welcomed. One that came past the
   * limit is counted from here if there is room now, or if it takes its party's place, as in
   * `serve()` (`Protocol.admits`): a client whose older connection went half-open, still open and
   * counted here (a hibernating object never drops an idle one), gets back in, and that connection
   * is superseded (4409) in the same turn (`Protocol.resumed`), so the count is back at the limit
   * before anything else runs. Any other is refused `limit` (4429), with its hello's id.
   */
  #admit(session: Session): Refusal | undefined {
    if (this.#sessions.get(session.conn) === session) return undefined
    if (!this.#protocol.admits(session, this.#sessions.size, this._maxConnections)) {
      return { code: 'limit', message: `holdfast object: ${this._maxConnections} WebSocket clients is the most` }
    }
    this.#sessions.set(session.conn, session)
    return undefined
  }

  /**
   * Keeps what a client's session must keep through hibernation in its socket's attachment. A
   * session that ended (or is closing) is written `ended`, whatever writes it after: never undone.
   */
  #attach(session: Session): void {
    this.#sockets.get(session)?.serializeAttachment({
      conn: session.conn,
      authed: session.authed,
      waiting: this.#waitingOf(session),
      revision: session.revision,
      ...(typeof session.party === 'string' ? { party: session.party } : {}),
      ...(session.ended || session.closing ? { ended: true } : {}),
    } satisfies Attachment)
  }

  /**
   * Whether a session has what a restart loses: holds in line, pool claims not yet answered (in
   * line, or being written), or frames waiting behind a release or goodbye whose delete is under way
   * (`Session.queue`). Such a client is closed 1012 after a restart, or a reopen of the store after
   * an internal error (#open), to ask again: a claim with its claim id, which answers the first
   * outcome if it was kept (POOL-03). The flag is set after the frame that made a claim; it is
   * cleared at a later frame, so a client may be closed once for nothing, which costs it a reconnect.
   * (Frames waiting behind a delete meet only the reopen: workerd evicts an object only once the
   * event awaiting the delete ended, and an object reset, `ctx.abort()`, disconnects its sockets.)
   */
  #waitingOf(session: Session): boolean {
    return session.waiting || session.claims.size > 0 || session.queue !== undefined
  }

  /**
   * A client's session ended; with goodbye, the engine ended its leases, which are forgotten here too.
   * It is forgotten while its socket may still bring a frame (a client that sends after its goodbye,
   * or before it read the close of a superseded connection): its attachment says it ended
   * (`session.ended` is set before this hook runs), so that such a frame, now or after a wake,
   * rebuilds nothing (#resume), and is ignored as `Protocol.frame` ignores an ended session's.
   */
  #closed(session: Session, goodbye: boolean): void {
    this.#sessions.delete(session.conn)
    try {
      this.#attach(session)
    } catch {
      // its socket is gone: no frame comes on it any more
    }
    if (!goodbye) return
    for (const lease of [...this.#leases.keys()]) if (!this.#store._remoteLease(lease)) this.#ended(lease)
  }
}

/**
 * The party an RPC caller's asker id stands for in the pools (pool/pool.ts `Party`): marked so that it
 * never names the same party as a WebSocket client's hello (whose party has no `:`).
 */
function rpcParty(asker: string): string {
  return `rpc:${asker}`
}

/**
 * The storage key of an early cancel: its id as `encodeURIComponent` writes it (a claim's has `\0`s:
 * see `earlyClaim`), or `undefined` for one it cannot (a lone surrogate).
 */
function cancelKeyOf(prefix: string, id: string): string | undefined {
  try {
    return prefix + encodeURIComponent(id)
  } catch {
    return undefined
  }
}

/** An early cancel's id from its storage key (see `cancelKeyOf`), or `undefined` if none. */
function cancelIdOf(encoded: string): string | undefined {
  try {
    return decodeURIComponent(encoded)
  } catch {
    return undefined
  }
}

/** What `#earlyClaimCancels` remembers of a claim's call: its pool, its claim id and its asker. */
function earlyClaim(pool: string, claim: string, asker: string): string {
  return `${pool}\0${claim}\0${asker}`
}
