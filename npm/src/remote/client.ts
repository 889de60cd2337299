/**
 * `connect(url, { token })`: the same lock and semaphore API as a store in this process, over a
 * connection to a store's server (`store.serve()` or `holdfast serve`).
 *
 * # Leases over a connection (LOCK-05)
 * A lease lasts its ttl from its grant and from each renewal. While fn runs, the client renews every
 * ttl/3 (renewal.ts, the loop shared with `workerStore`). It counts its own deadline from when each
 * renewal was *sent* (from when the grant arrived, for the first), minus a margin, so that it always
 * gives up before the server does: when the deadline passes with no answered renewal, when a renewal
 * answers lost, or at maxHold, `lease.signal` aborts with a `LostError` and `hold` rejects `LostError`
 * after fn settles. A failed renewal is retried until the deadline, never after it; nothing in the
 * renewal machinery ever throws into the program.
 *
 * # A hold's fn
 * Where the caller's async context can be kept (`ContextStorage.capture`: Node 24 and later, Bun), a
 * `hold` keeps fn and that context, and runs fn from the call that reads its grant — as the in-process
 * store hands a key over (store/waiters.ts), with no promise of the lease between the two. The first
 * deadline of every grant of one message counts from the message's arrival, so that a long fn of one
 * grant does not move the deadline of the next. Elsewhere (Node 20, Deno), and for `acquire` and
 * `tryHold`, the hold's promise resolves to the lease and fn runs in the job that resumes it.
 *
 * # Ids
 * A hold's request id (128 random bits) and its lease's id are kept as four 32-bit words and written
 * into frames from them (wire.ts `encodeHoldOf`, `encodeReleaseOf`, `eachGranted`): hex is made only
 * for a cancel, a renewal and a `lost` frame.
 *
 * # Connections drop
 * The client reconnects by itself, with backoff, and asks again for every hold it has (the same
 * request id): a held key answers with the same lease and fence, a waiting hold keeps its place.
 * A lease released, or a hold given up (its signal, its wait), while the connection is down is
 * released or cancelled first on the next connection (`#unsent`), rather than held there until its ttl;
 * so is a release that went on a connection that dropped before the server answered a frame sent
 * after it (`#unconfirmed`, unconfirmed-releases.ts: a release is not answered).
 * `close()` says goodbye, which releases its leases at once (while the connection is down, on one it
 * dials at once if it has leases to let go, given a second). The server answers a pool release,
 * confirm or resize asked before the goodbye (once storage kept it) before it answers the goodbye,
 * which `close()` awaits (`GOODBYE_PATIENCE`): so it is answered what the server did, not `ClosedError`. A connection not open and welcomed
 * within `CONNECT_PATIENCE` is cut: `connect()` rejects `ClosedError`, a reconnect dials again. A
 * connection that goes silent while an answer is awaited on it (a server stopped, a connection that
 * died without a close) is pinged, and dropped after `SILENCE_LIMIT` (heartbeat.ts; a server of
 * revision 5 or later), and so reconnected as any drop.
 *
 * # Revisions
 * The client says the highest revision it speaks in its hello (3: batches); the server's welcome says
 * the conversation's. From revision 3 the frames a turn sends go as one message (`Socket.pack`) and
 * the server's may come so. A server older than revision 3 refuses the new hello as an unknown frame
 * (`protocol`): the client then connects again at once and says the old hello, and keeps saying it to
 * that server (revision 2, a frame a message). Pools need revision 4 (`POOLS`): to an older server
 * every pool operation is refused at once with an `InvalidError` naming its revision (pool/client.ts).
 * The heartbeat's `ping` needs revision 5 (`HEARTBEAT`): a connection to an older server has none.
 * Pools are inspected page by page from revision 8 (`POOL_PAGES`), whole before (pool/client.ts).
 */

import { checkTtl, checkMaxHold } from '../../wasm/holdfast_wasm.js'
import { RemotePools } from '../pool/client.js'
import type { Pool } from '../pool/pool.js'
import type { PoolInfo, PoolOptions } from '../pool/types.js'
import {
  BATCHES,
  HEARTBEAT,
  REVISION,
  batchOf,
  decodeServerAll,
  eachGranted,
  encodeClient,
  encodeHoldOf,
  encodeReleaseOf,
  type ClientMessage,
  type OnGranted,
  type ServerFrame as WireFrame,
} from './wire.js'
import { hexOfWords, idWords } from '../util/hex.js'
import { CancelledError, ClosedError, InUseError, InvalidError, LostError, PermissionError, errorOf, fromEngine, placed, type ErrorCode } from '../errors.js'
import { checkOptions } from '../util/options.js'
import { asyncDispose } from '../util/async-dispose.js'
import { closeOnce } from '../util/close-once.js'
import { GrantedLease, type Lease, followLeaseShape, type LeaseOwner } from '../handle/lease.js'
import { handleOptions } from '../handle/lock.js'
import type { KeyInfo, LockOptions, Resource as SharedResource, SemaphoreOptions } from '../types.js'
import { isClock, keepAlive, settledWithin, systemClock, type Clock } from '../util/clock.js'
import { Renewal, margin, renewInterval, type Renewed } from './renewal.js'
import { DueLines, type DueLine } from '../util/due-lines.js'
import { Heartbeat } from './heartbeat.js'
import { UnconfirmedReleases } from './unconfirmed-releases.js'
import { type HashTable, intTable } from '../util/hash-table.js'
import { randomId, randomWord } from '../util/random.js'
import { keepSettlers, settlers } from '../util/settlers.js'
import { keepShapes } from '../util/shapes.js'
import { handOverIn, runInLease } from '../handle/run-in-lease.js'
import { TravellingHandle, placeOf, type TravellingStore } from '../handle/travelling.js'
import type { ContextStorage, Scope } from '../handle/context.js'
import { ResourceNames } from '../handle/resource-names.js'
import type { Socket, Transport } from '../runtime/transport.js'
import { checkName } from '../util/name.js'
import { masked } from '../util/masked-url.js'

/** A resource as this package's stores keep it: a key granted without the engine stands as its lease. */
type Resource = SharedResource<Lease>

export interface ConnectOptions {
  /** The server's token (else the environment variable HOLDFAST_TOKEN, where there is one). */
  token?: string
  /** Reconnect after a dropped connection (default true). */
  reconnect?: boolean
  /** For `wss://`: PEM certificates to trust besides the system's (a server's self-signed one). With a `ws://` url, an `InvalidError`. */
  ca?: string | Uint8Array
  /** @internal for tests */
  clock?: Clock
}

/** A release or a cancel, kept while it cannot go (see `RemoteStore.#unsent`). */
type LetGo = Extract<ClientMessage, { type: 'release' | 'cancel' }>

/** A server's answer, or `dropped`: the connection ended before it came. */
type ServerFrame = WireFrame | { id: number; type: 'dropped' }

const MAX_FRAME = 16 * 1024 * 1024
/** The last frame id: ids count 1, 2, ... LAST_FRAME, then 1 again (0 asks for no answer). */
const LAST_FRAME = 0xffff_fffe
/** How long past its wait a client waits for the server's own answer to a hold. */
const WAIT_GRACE = 1_000
/** How long `close()` waits for its goodbye's answer, and first for a connection back if it has leases to let go. */
const GOODBYE_PATIENCE = 1_000
/** How long `inspect()` waits for a connection back, once the one it asked on dropped. */
const INSPECT_PATIENCE = 10_000
/**
 * How long a connection may take to open and be welcomed (the WebSocket upgrade, then the hello):
 * past it the connection is cut and `connect()` rejects, or a reconnect dials again. Without it, an
 * address that takes the TCP connection and never answers (a stopped server's backlog, a balancer
 * without a backend) would keep `connect()`, or every reconnect after, waiting for good.
 */
const CONNECT_PATIENCE = 10_000

/**
 * A hold in flight or held, as the client tracks it across reconnects. Without `fn` (`acquire`,
 * `tryHold`, or where no context can be kept) its promise resolves to the lease, or `undefined` when
 * the key was busy and the hold would not wait; with one (a `hold`, see `RemoteStore._hold`), to what
 * the hold answers, fn run in `scope` when the grant arrives.
 */
class Pending {
  lease: Lease | undefined
  /**
   * Once granted: the lease id as four words, most significant first (see wire.ts `eachGranted`): no
   * string is made of it but for a renewal (`leaseId`).
   */
  l0 = 0
  l1 = 0
  l2 = 0
  l3 = 0
  /**
   * Taken out of `RemoteStore.#pending` (`#forget`): released, lost, cancelled, refused, or its wait
   * ran out. A grant that finds it so was raced by that end, and is let go.
   */
  forgotten = false
  /** Our local number for the hold, and its lease (what `Lease` passes back to release). */
  readonly local: number
  /** The request id: 128 random bits as four words, most significant first (`request`: as hex). */
  readonly r0: number
  readonly r1: number
  readonly r2: number
  readonly r3: number
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
  readonly promise: Promise<unknown>
  /**
   * Once granted: the lease's renewal (stopped when it is forgotten), made when its first renewal is
   * due while the lease waits in `RemoteStore.#first` (see `#grantAnswered`).
   */
  renewal: Renewal | undefined
  /** Once granted: when the grant arrived, the ttl it answered, and ms to its maxHold (0: none). */
  grantedAt = 0
  ttl = 0
  revokeIn = 0
  /** Waiting in `RemoteStore.#first` for its first renewal, `renewal` not made yet. */
  fresh = false
  /** When it was asked for, and whether it is in `RemoteStore.#waits` (a wait the server may not answer). */
  askedAt = 0
  guarded = false
  /**
   * Its place in `#first` (while `fresh`) or `#waits` (while `guarded`; never both: a hold leaves
   * `#waits` when answered, before its lease joins `#first`), kept by util/due-lines.ts.
   */
  dueLine: DueLine<Pending> | undefined = undefined
  duePrev: Pending | undefined = undefined
  dueNext: Pending | undefined = undefined
  /**
   * When its hold was last sent (first, again after a reconnect, or to confirm a grant read late):
   * the server granted it after, so a grant's ttl never counts from before then (see `#grantAnswered`).
   */
  sentAt = 0
  /**
   * A grant read late was asked again (see `#grantAnswered`); the answer to that is taken as it is.
   * Only on the connection it was asked on: a hold asked again after a reconnect is asked anew.
   */
  confirming = false
  cancelled = false
  /** Its hold frame went on a connection: the server may know it, and a cancel must reach it (see `#cancel`). */
  sent = false

  constructor(
    readonly handle: RemoteLock,
    readonly key: string,
    readonly wait: number | null,
    local: number,
    /** A `hold`'s fn, its caller's context and the hold its caller was inside of (see `HandedOver`). */
    readonly fn: ((lease: Lease) => unknown) | undefined,
    readonly scope: Scope | undefined,
    readonly parent: Lease | undefined,
  ) {
    this.local = local
    this.r0 = randomWord()
    this.r1 = randomWord()
    this.r2 = randomWord()
    this.r3 = randomWord()
    this.promise = new Promise(keepSettlers)
    this.resolve = settlers.resolve!
    this.reject = settlers.reject!
    settlers.resolve = settlers.reject = undefined
  }

  place(): string {
    return `${this.handle.kind} ${this.handle.name}: key ${JSON.stringify(this.key)}`
  }

  /** The request id as 32 hex digits (for a `cancel`). */
  get request(): string {
    return hexOfWords(this.r0, this.r1, this.r2, this.r3)
  }

  /** The lease id as 32 hex digits (for a `renew`). */
  get leaseId(): string {
    return hexOfWords(this.l0, this.l1, this.l2, this.l3)
  }
}

/** Moves the kept holds along (see `keepHoldShapes`): made by the first client. */
let followHoldShape: (() => void) | undefined

/**
 * A hold's shape, kept (util/shapes.ts): both kinds of wait (none, and a time), and as doubles the
 * times a clock gives and the `revokeIn` a grant's frame gives (a u64 read as a double, 0 included:
 * a small integer there first was the shape V8 left behind, `--trace-generalization`); moved along
 * as the last hold of a client ends (`#forget`), for the kinds of values this does not foresee.
 * Without it, a full collection while the client had no hold in flight freed the shape, and R1's
 * client ran its hold's path unoptimized for most of its timed part (Node 26: its collection comes
 * between its warm-up and the timed part). Made by the first client, not when the module loads: a
 * hold draws its random id, which a Worker may not do in its global scope.
 */
function keepHoldShapes(): void {
  followHoldShape ??= keepShapes(
    [null, 1_000].map(wait => {
      const shaped = new Pending({} as RemoteLock, '', wait, 0, undefined, undefined, undefined)
      shaped.grantedAt = shaped.askedAt = shaped.sentAt = shaped.revokeIn = 0.5
      return shaped
    }),
    shaped => {
      shaped.cancelled = false
    },
  )
}

export class RemoteStore implements LeaseOwner {
  readonly url: string
  /**
   * The url as errors say it: its password, if it has one (basic auth at a reverse proxy), as `***`.
   * Errors go to logs, and from `holdfast` to stderr.
   */
  readonly #said: string
  readonly #transport: Transport
  readonly #token: string
  readonly #reconnect: boolean
  readonly #ca: string | Uint8Array | undefined
  readonly #clock: Clock
  readonly #context: ContextStorage | undefined
  #socket: Socket | undefined
  #nextFrame = 1
  #nextLocal = 1
  /**
   * Answers awaited, by frame id: a hold's (its `Pending`, answered by `#holdAnswered`), or a callback.
   * These two gain and lose an entry on every hold: hash tables, not `Map`s (see util/hash-table.ts).
   */
  readonly #answers: HashTable<number, Pending | ((frame: ServerFrame) => void)> = intTable()
  /** Holds waiting or held, by local number. */
  readonly #pending: HashTable<number, Pending> = intTable()
  /**
   * Held ones by their lease id (as hex), for the server's `lost` frames: made by the first `lost`
   * frame after a grant, from `#pending`, and dropped by the next grant. A hold's path pays one write
   * for it, not four operations on a hash table; a storm of `lost` frames (the server's store closed)
   * makes it once. An entry of a hold forgotten since is stale, and not taken (see `#leaseOf`).
   */
  #byLease: Map<string, Pending> | undefined
  /** Every `granted` frame of a message of them only, read with nothing made (wire.ts `eachGranted`). */
  readonly #onGranted: OnGranted = (id, fence, ttl, revokeIn, l0, l1, l2, l3) => {
    const p = this.#answers.take(id)
    if (p === undefined) return
    if (this.#unconfirmed.any) this.#unconfirmed.answered(id, this.#nextFrame)
    if (p instanceof Pending) this.#grantAnswered(p, fence, ttl, revokeIn, l0, l1, l2, l3)
    else p({ id, type: 'granted', request: '', lease: hexOfWords(l0, l1, l2, l3), fence, ttl, revokeIn })
  }
  #closed: ClosedError | undefined
  /** `close()`: `#close()` run once, its promise answered to every call (util/close-once.ts). */
  readonly #closeOnce = closeOnce(() => this.#close())
  /** When the message being read arrived (what a grant's first deadline counts from). */
  #receivedAt = 0
  /** An error the server sent unasked (id 0) on the current connection: why it closes, if it does. */
  #refusal: Extract<WireFrame, { type: 'error' }> | undefined
  /** Whether the current connection was welcomed. */
  #welcomed = false
  #backoff = 50
  /** The reconnect's timer while it waits out `#backoff`: a hold in line keeps the process alive by it. */
  #backoffTimer: unknown
  #reconnecting: Promise<void> | undefined
  /** Ends the reconnect loop's backoff at once (set while it sleeps). */
  #wakeReconnect: (() => void) | undefined
  /**
   * Abandons the dial under way (set while `_open` awaits it): the client ending cuts it at once,
   * rather than keep the connection being dialed, and the patience's timer, after it ended.
   */
  #abandonDial: AbortController | undefined
  /** The server refused the hello of revision 3 (it is older): say the old one. */
  #oldServer = false
  /** The revision of the conversation on the last connection, as its welcome said (2 for the old welcome). */
  #revision = 2
  /** Pools over this connection (see pool/client.ts). */
  readonly #pools: RemotePools
  /**
   * Named in every hello of this client (`party=`): a server of revision 6 takes all its connections
   * for one client when it tells who was answered a claim (remote/session.ts `partyOf`), and ends an
   * older connection of it, still open there, at the newer one's hello (`Protocol.resumed`).
   */
  readonly #party = randomId()
  /**
   * Leases not yet due for their first renewal, and holds whose wait (and a grace) may pass without
   * the server's answer: one timer for each kind, for all of them (util/due-lines.ts).
   */
  readonly #first: DueLines<Pending>
  readonly #waits: DueLines<Pending>
  /** Pings a connection quiet while an answer is awaited, and drops one that stays silent. */
  readonly #heartbeat: Heartbeat
  /**
   * Releases and cancels that could not go (the connection down, or dropped before a cancel was
   * answered): sent first on the next connection (`#reconnectLoop`). A lease released, or a hold
   * given up, while the client reconnects would otherwise keep its key on the server, held by
   * nobody, until its ttl: a lease held from before the drop, or one granted as the connection
   * dropped (its grant lost with it) or on a connection the server had not yet seen drop. Only holds
   * whose frame went are cancelled, so this holds no more than the holds the server was sent.
   */
  #unsent: LetGo[] = []
  /**
   * Releases sent on this connection (unanswered: frame id 0) before any frame the server answered:
   * they may be lost with it, and go to `#unsent` if it drops (see unconfirmed-releases.ts). The
   * heartbeat counts them as answers awaited, so that a connection gone half-open after a release
   * is found silent and dropped, and the release sent again on the next, well within most ttls.
   */
  readonly #unconfirmed = new UnconfirmedReleases(LAST_FRAME)

  /** Remote stores are opened by `connect()`, never made by hand. */
  protected constructor(...internal: never)
  // The published types keep the overload above alone (see Lease's constructor).
  protected constructor(...[url, transport, token, reconnect, clock, context, ca]: RemoteStoreArgs) {
    this.url = url
    this.#said = masked(url)
    this.#ca = ca
    this.#transport = transport
    this.#token = token
    this.#reconnect = reconnect
    this.#clock = clock
    this.#context = context
    keepHoldShapes()
    this._hold = context?.capture !== undefined && context.enterInJob !== undefined ? (h, k, w, s, fn) => this.#holdDirect(h, k, w, s, fn) : undefined
    this.#first = new DueLines<Pending>(
      clock,
      p => p.grantedAt,
      p => this.#renewal(p).renewNow(),
    )
    this.#waits = new DueLines<Pending>(
      clock,
      p => p.askedAt,
      p => this.#waitRanOut(p),
    )
    this.#heartbeat = new Heartbeat(clock, {
      heard: () => this.#receivedAt,
      awaiting: () => this.#welcomed && this.#socket !== undefined && this.#revision >= HEARTBEAT && (this.#answers.size > 0 || this.#unconfirmed.any),
      ping: () => this.#send({ type: 'ping' }, () => {}),
      silent: () => {
        const socket = this.#socket!
        // Let go of it as a drop does (every answer awaited on it asked again), then cut it.
        this.#dropped(socket)
        socket.close(4408, 'server silent')
      },
    })
    this.#pools = new RemotePools({
      url,
      clock,
      send: (message, answered) => this.#send(message, answered),
      revision: () => this.#revision,
      closed: () => this.#closed,
      reconnected: (until, prefix) => this.#back(until, prefix),
    })
  }

  /**
   * Resolves once a connection is back (reconnecting if needed); `ClosedError` when none is by
   * `until`, its message after `prefix`.
   */
  async #back(until: number, prefix = ''): Promise<void> {
    if (!this.#closed && this.#reconnect && !this.#socket) {
      // The caller awaits what only a connection back can answer, and a server refusing each dial at
      // once leaves nothing else alive between them: the patience keeps the process alive, or on
      // Node it ends there (exit 13) with the caller unanswered.
      await settledWithin(this.#clock, this.#reconnectLoop(), until - this.#clock.now(), true)
    }
    // (The error the client ended with names its URL already.)
    if (this.#closed) throw new ClosedError(`${prefix}${this.#closed.message}`)
    if (!this.#socket) throw new ClosedError(`${prefix}${this.#said}: connection closed`)
  }

  /** @internal Dials and says hello; rejects when the server cannot be reached or refuses the token. */
  async _open(): Promise<void> {
    const deadline = this.#clock.now() + CONNECT_PATIENCE
    const abandon = (this.#abandonDial = new AbortController())
    let dialing: Promise<Socket>
    try {
      dialing = this.#transport.dial(this.url, { maxPayload: MAX_FRAME, signal: abandon.signal, ...(this.#ca ? { ca: this.#ca } : {}) })
    } catch (error) {
      dialing = Promise.reject(error)
    }
    let socket: Socket | undefined
    try {
      socket = await settledWithin(this.#clock, dialing, CONNECT_PATIENCE)
    } catch (error) {
      throw new ClosedError(`connect ${this.#said}: cannot reach the server: ${(error as Error)?.message ?? error}`, { cause: error })
    } finally {
      this.#abandonDial = undefined
    }
    if (socket === undefined) {
      abandon.abort()
      // Opened all the same, in the turn the patience ran out: nobody will use it.
      dialing.then(
        late => late.close(1000, 'goodbye'),
        () => {},
      )
      throw new ClosedError(`connect ${this.#said}: no answer to the WebSocket upgrade within ${CONNECT_PATIENCE}ms`)
    }
    // Closed while it dialed (a reconnect under way): the connection would outlive the client.
    if (this.#closed) {
      socket.close(1000, 'goodbye')
      throw new ClosedError(`connect ${this.#said}: ${this.#closed.message}`)
    }
    this.#refusal = undefined
    this.#welcomed = false
    this.#attach(socket)
    const revision = this.#oldServer ? 2 : REVISION
    const welcome = await settledWithin(
      this.#clock,
      this.#ask({ type: 'hello', revision, token: this.#token, client: `holdfast-js party=${this.#party}` }),
      deadline - this.#clock.now(),
    )
    if (welcome === undefined) {
      // Let go of it now, as a drop does (its hello answered `dropped`, to nobody), then cut it.
      this.#dropped(socket)
      socket.close(4408, 'no welcome')
      throw new ClosedError(`connect ${this.#said}: no welcome within ${CONNECT_PATIENCE}ms of dialing`)
    }
    if (welcome.type !== 'welcome') {
      // Let go of it as a drop does: what was asked on it while its hello was in flight (a reconnect's:
      // an inspection, a pool operation, a renewal) is answered `dropped`, and asked again on the next
      // connection. Its close event, read after this answer, would find it let go already.
      this.#dropped(socket)
      socket.close()
      // Refused before its hello was read (a server at a limit closes at once): that error says why.
      const error = welcome.type === 'error' ? welcome : this.#refusal
      const code = error ? String(error.code) : 'closed'
      // A server older than revision 3 cannot read the new hello: say the old one (see # Revisions).
      if (code === 'protocol' && revision >= BATCHES) {
        this.#oldServer = true
        return this._open()
      }
      const message = `connect ${this.#said}: ${error ? String(error.message) : 'connection closed during hello'}`
      throw code === 'permission' ? new PermissionError(message) : errorOf(code, message)
    }
    if (welcome.revision >= BATCHES) socket.pack = packClient
    this.#revision = welcome.revision
    this.#welcomed = true
  }

  #attach(socket: Socket): void {
    this.#socket = socket
    socket.onMessage = bytes => this.#receive(bytes)
    socket.onClose = () => this.#dropped(socket)
  }

  #receive(bytes: Uint8Array): void {
    // Every grant of the message counts from its arrival, even one read after the fn of a grant
    // before it ran (a hold's fn runs as its grant is read, and may take long).
    this.#receivedAt = this.#clock.now()
    if (eachGranted(bytes, this.#onGranted)) return
    let frames: ServerFrame[]
    try {
      frames = decodeServerAll(bytes)
    } catch {
      this.#socket?.close(4400, 'bad frame from server')
      return
    }
    for (const frame of frames) this.#answer(frame)
  }

  #answer(frame: ServerFrame): void {
    if (frame.type === 'lost') {
      const p = this.#leaseOf(frame.lease)
      if (p)
        this.#lose(
          p,
          frame.code === 'closed'
            ? new ClosedError(`${p.place()}: the server's store closed`)
            : new LostError(`${p.place()}: lease lost on the server (past its ttl or revoked)`),
        )
      return
    }
    if (frame.id === 0 && frame.type === 'error') this.#refusal = frame
    const answer = this.#answers.take(frame.id)
    if (answer) {
      // An answer to a frame sent after a release proves the release was read (frames act in order).
      if (this.#unconfirmed.any) this.#unconfirmed.answered(frame.id, this.#nextFrame)
      if (answer instanceof Pending) this.#holdAnswered(answer, frame)
      else answer(frame)
    }
  }

  /** The lease held of id `hex` (a `lost` frame's). */
  #leaseOf(hex: string): Pending | undefined {
    if (!idWords(hex, scratch, 0)) return undefined
    let byLease = this.#byLease
    if (byLease === undefined) {
      byLease = this.#byLease = new Map()
      for (const p of this.#pending.values()) if (p.lease) byLease.set(p.leaseId, p)
    }
    const p = byLease.get(hexOfWords(scratch[0]! | 0, scratch[1]! | 0, scratch[2]! | 0, scratch[3]! | 0))
    return p && !p.forgotten ? p : undefined
  }

  /** Sends a frame and waits for its answer (or for the connection to drop: `{ type: 'dropped' }`). */
  #ask(message: ClientMessage): Promise<ServerFrame> {
    return new Promise(resolve => this.#send(message, resolve))
  }

  /**
   * Sends a frame; `answered` is called with its answer, or `dropped` when the connection ends first,
   * or an `invalid` error when the frame cannot be encoded. (A hold's answer is taken this way, in
   * the call that delivers it: no promise of its own.)
   */
  #send(message: ClientMessage | Pending, answered: Pending | ((frame: ServerFrame) => void)): void {
    const id = this.#nextFrame
    this.#nextFrame = (this.#nextFrame % LAST_FRAME) + 1
    const socket = this.#socket
    // (Id 0: no frame went, so none can have been read: see pool/client.ts # Claims across dropped connections.)
    if (!socket) {
      if (this.#awaitsConnection()) keepAlive(this.#backoffTimer)
      return this.#answered(answered, { id: 0, type: 'dropped' })
    }
    this.#answers.set(id, answered)
    this.#heartbeat.awaited()
    try {
      if (message instanceof Pending) {
        socket.send(holdFrameOf(id, message))
        message.sent = true
      } else socket.send(encodeClient(id, message))
    } catch (error) {
      this.#answers.take(id)
      this.#answered(answered, { id, type: 'error', code: 'invalid', message: String((error as Error)?.message ?? error) })
    }
  }

  #answered(who: Pending | ((frame: ServerFrame) => void), frame: ServerFrame): void {
    if (who instanceof Pending) this.#holdAnswered(who, frame)
    else who(frame)
  }

  #dropped(socket: Socket): void {
    if (this.#socket !== socket) return
    this.#socket = undefined
    // A new connection's silence counts from its own first frame.
    this.#heartbeat.stop()
    // Releases it carried that may not have been read go first on the next connection, as if they
    // had been made while it was down.
    if (this.#unconfirmed.any) this.#unconfirmed.take((l0, l1, l2, l3) => this.#unsent.push({ type: 'release', lease: hexOfWords(l0, l1, l2, l3) }))
    // Every answer awaited on this connection is lost with it; their askers ask again.
    // (In the order they were asked: frame ids count up from the oldest, wrapping past LAST_FRAME.)
    const { keys, values } = this.#answers.drain()
    const next = this.#nextFrame
    const order = keys.map((_, i) => i).sort((a, b) => ((keys[a]! - next + LAST_FRAME) % LAST_FRAME) - ((keys[b]! - next + LAST_FRAME) % LAST_FRAME))
    for (const i of order) this.#answered(values[i]!, { id: keys[i]!, type: 'dropped' })
    // Closed before its welcome (refused at once): `_open` answers for it, and whoever called it
    // decides what comes next — a refused connect() leaves nothing behind that reconnects.
    if (!this.#welcomed) return
    if (!this.#closed && this.#reconnect) void this.#reconnectLoop()
    else if (!this.#closed) this.#fail(new ClosedError(`${this.#said}: connection closed`))
  }

  async #reconnectLoop(): Promise<void> {
    if (this.#reconnecting) return this.#reconnecting
    this.#reconnecting = (async () => {
      while (!this.#closed && !this.#socket) {
        // The client ending wakes it at once (see #fail), rather than keep the client until the backoff ends.
        await new Promise<void>(resolve => {
          const timer = this.#clock.setTimeout(resolve, this.#backoff * (0.5 + Math.random() / 2))
          this.#backoffTimer = timer
          if (this.#awaitsConnection()) keepAlive(timer)
          this.#wakeReconnect = () => {
            this.#clock.clearTimeout(timer)
            resolve()
          }
        })
        this.#wakeReconnect = undefined
        this.#backoffTimer = undefined
        this.#backoff = Math.min(this.#backoff * 2, 5_000)
        if (this.#closed) return
        try {
          await this._open()
          this.#backoff = 50
        } catch (error) {
          if (error instanceof PermissionError) return this.#fail(error)
          continue
        }
        // Let go what could not be let go while it was down, before a hold asked again finds its key.
        const unsent = this.#unsent
        this.#unsent = []
        for (const message of unsent) this.#letGo(message)
        // Ask again for every hold, waiting or held, with its request id; and every claim unanswered.
        const now = this.#clock.now()
        for (const p of this.#pendingInOrder()) {
          p.sentAt = now
          // A new ask: a grant of it read late is asked again, whatever was asked on the old connection.
          p.confirming = false
          this.#send(p, p)
        }
        this.#pools.reconnected()
      }
    })().finally(() => (this.#reconnecting = undefined))
    return this.#reconnecting
  }

  /**
   * Whether a caller awaits what only a connection back answers: a hold in line or a pool's claim
   * (each answered at its wait and grace, `ClosedError`, if none comes). Their connection's socket
   * kept the process alive; while it is down the reconnect's backoff does, or on Node a process with
   * nothing else alive ended there (exit 13), unanswered. A lease held alone keeps nothing alive:
   * its fn is the caller's own work.
   */
  #awaitsConnection(): boolean {
    return this.#pending.values().some(p => p.lease === undefined) || this.#pools.awaiting()
  }

  /** Every hold waiting or held, in the order they were asked (a copy). */
  #pendingInOrder(): Pending[] {
    return this.#pending.values().sort((a, b) => a.local - b.local)
  }

  /** Ends everything: every waiting hold rejects, every lease is lost, with `error`. */
  #fail(error: ClosedError | PermissionError): void {
    if (!this.#closed) this.#closed = error instanceof ClosedError ? error : new ClosedError(error.message, { cause: error })
    this.#pools.fail(this.#closed)
    const { message, cause } = this.#closed
    for (const p of this.#pendingInOrder()) {
      // Each hold is told its own place: several end at once, and a bare "connection closed" names none.
      const closed = new ClosedError(placed(p.place(), message), cause === undefined ? undefined : { cause })
      if (p.lease) this.#lose(p, closed)
      else {
        this.#forget(p)
        p.reject(closed)
      }
    }
    this.#unsent = []
    this.#unconfirmed.clear()
    // Every hold was answered: timers left set would keep this client alive until they fired.
    this.#first.clear()
    this.#waits.clear()
    this.#heartbeat.stop()
    this.#wakeReconnect?.()
    this.#abandonDial?.abort()
  }

  // ---- holds ----

  /** @internal Asks for a key; resolves to the lease, or `undefined` when busy and `wait` is 0. */
  _take(handle: RemoteLock, key: string, wait: number, signal: AbortSignal | undefined, isTry: boolean): Promise<Lease | undefined> {
    const refused = this.#refused(handle, key, isTry)
    if (refused !== undefined) return refused as Promise<undefined>
    const p = new Pending(handle, key, wait === Infinity ? null : wait, this.#nextLocal++, undefined, undefined, undefined)
    return this.#request(p, signal) as Promise<Lease | undefined>
  }

  /**
   * @internal The whole of a `hold` where the caller's context can be kept (see TravellingStore._hold):
   * fn runs in that context as the grant arrives, from the call that reads it, and the hold's promise
   * is fn's outcome — no promise of the lease, no job between the grant and fn.
   */
  readonly _hold: TravellingStore<RemoteLock, Lease>['_hold']

  #holdDirect<T>(
    handle: RemoteLock,
    key: string,
    wait: number,
    signal: AbortSignal | undefined,
    fn: (lease: Lease) => T | PromiseLike<T>,
  ): Promise<Awaited<T>> {
    const refused = this.#refused(handle, key, false)
    if (refused !== undefined) return refused as Promise<never>
    const context = this.#context!
    const p = new Pending(handle, key, wait === Infinity ? null : wait, this.#nextLocal++, fn, context.capture!(), context.getStore())
    return this.#request(p, signal) as Promise<Awaited<T>>
  }

  /** A hold refused before it is asked: the client closed, or the caller holds the key (LOCK-04). */
  #refused(handle: RemoteLock, key: string, isTry: boolean): Promise<undefined> | undefined {
    if (this.#closed) return Promise.reject(new ClosedError(`${placeOf(handle.kind, handle.name, key)}: ${this.#closed.message}`))
    if (this.#context && this.#heldByCaller(handle, key)) {
      if (isTry) return Promise.resolve(undefined)
      return Promise.reject(
        new InvalidError(`${placeOf(handle.kind, handle.name, key)}: held by this very hold (a hold inside its own hold would wait for itself)`),
      )
    }
    return undefined
  }

  /** Asks the server for `p`'s key (see `_take`, `_hold`); answers `p`'s promise. */
  #request(p: Pending, signal: AbortSignal | undefined): Promise<unknown> {
    this.#pending.set(p.local, p)
    if (signal) {
      const onAbort = () => {
        if (p.lease || p.cancelled || p.forgotten) return
        p.cancelled = true
        this.#forget(p)
        p.reject(new CancelledError(`${p.place()}: cancelled while waiting`, { cause: signal.reason }))
        this.#cancel(p)
      }
      signal.addEventListener('abort', onAbort, { once: true })
      void p.promise.then(
        () => signal.removeEventListener('abort', onAbort),
        () => signal.removeEventListener('abort', onAbort),
      )
    }
    // Sent as its hold frame; its answer comes to `#holdAnswered` (or `#grantAnswered`).
    const now = this.#clock.now()
    p.sentAt = now
    this.#send(p, p)
    if (p.wait !== null && p.wait > 0) {
      // The server answers a wait that ran out; but if it cannot be reached, this side must: past
      // the wait and a grace for the server's own answer, a hold still unanswered gives up. Until its
      // answer (any: it then leaves #waits), it waits in #waits, with no timer of its own.
      p.askedAt = now
      p.guarded = true
      this.#waits.add(p, p.wait + WAIT_GRACE)
    }
    return p.promise
  }

  /**
   * A hold's wait and its grace passed with no answer from the server. Heard from since the hold was
   * asked, the server is there and its answer is late (its clock is behind this one's): the key was
   * held. Heard from not once since, it is unreachable — stopped, or its connection died without a
   * close — and nothing says who holds the key.
   */
  #waitRanOut(p: Pending): void {
    p.guarded = false
    if (p.lease || p.forgotten) return
    this.#forget(p)
    this.#cancel(p)
    if (this.#socket && this.#receivedAt > p.askedAt) {
      p.reject(new InUseError(`${p.place()}: still held after waiting ${p.wait}ms`))
    } else {
      p.reject(new ClosedError(`${p.place()}: no answer from the server within the wait (${this.#said} unreachable)`))
    }
  }

  /**
   * Cancels `p`'s hold on the server, given up here (its signal, its wait): a waiting hold leaves the
   * line, a granted one (its grant crossing the cancel, or lost with a dropped connection) is
   * released. Not sent if its hold never went: the server knows nothing of it.
   */
  #cancel(p: Pending): void {
    if (p.sent) this.#letGo({ type: 'cancel', request: p.request })
  }

  /** Sends a release or a cancel; kept for the next connection if it cannot go, or its connection drops unanswered. */
  #letGo(message: LetGo): void {
    this.#send(message, answer => {
      if (answer.type === 'dropped') this.#unsent.push(message)
    })
  }

  /**
   * `p`, a guarded hold, was answered: its wait is the server's to end. Its callers check `p.guarded`
   * (a hold without a time limit never is).
   */
  #unguard(p: Pending): void {
    p.guarded = false
    this.#waits.delete(p)
  }

  #holdAnswered(p: Pending, answer: ServerFrame): void {
    if (answer.type === 'granted') {
      if (!idWords(answer.lease, scratch, 0)) return
      return this.#grantAnswered(p, answer.fence, answer.ttl, answer.revokeIn, scratch[0]! | 0, scratch[1]! | 0, scratch[2]! | 0, scratch[3]! | 0)
    }
    if (p.forgotten) return
    switch (answer.type) {
      case 'busy':
        // Asked again after a reconnect, a lease held with wait 0 finds its key busy: the server no
        // longer knew it (it restarted) and another took the key. The lease is lost, and says so.
        if (p.lease) return this.#lose(p, new LostError(`${p.place()}: lease lost: the server no longer knew it (it restarted) and another holds the key`))
        this.#forget(p)
        if (p.fn) return p.reject(new InUseError(`${p.place()}: held by another (wait 0)`))
        return p.resolve(undefined)
      case 'dropped':
        return // asked again on reconnect
      case 'error':
        if (p.lease) return this.#lose(p, new LostError(`${p.place()}: ${answer.message}`))
        this.#forget(p)
        return p.reject(errorOf(answer.code as ErrorCode, answer.message))
    }
  }

  /** `p`'s hold was granted the lease of id `l0`-`l3` (most significant first). */
  #grantAnswered(p: Pending, fence: number, ttl: number, revokeIn: number, l0: number, l1: number, l2: number, l3: number): void {
    if (p.forgotten) {
      // Cancelled (or lost) meanwhile: a grant that raced it is let go.
      return this.#releaseLease(l0, l1, l2, l3)
    }
    if (!p.lease) {
      const now = this.#receivedAt
      // The server granted it after its hold was sent, and counts the ttl from then: read late (a
      // long wait, or this process paused, or its event loop blocked, with the grant in flight), the
      // lease may have run out there, the key gone to the next in line, and the server's word of it
      // right behind. So a grant read half a ttl or more after its hold was sent is asked again first
      // (the same request id): the server answers the same lease, its ttl counted anew, if it is
      // still ours, and otherwise a new grant, a place in line, or busy. fn waits for that answer.
      const late = now - p.sentAt
      if (late >= ttl / 2 && !p.confirming && this.#socket) {
        p.confirming = true
        p.sentAt = this.#clock.now()
        this.#send(p, p)
        return
      }
      p.confirming = false
      if (p.guarded) this.#unguard(p)
      p.l0 = l0
      p.l1 = l1
      p.l2 = l2
      p.l3 = l3
      const lease = (p.lease = new GrantedLease(this, p.handle, p.key, fence, p.local))
      this.#byLease = undefined
      // The first deadline counts from the grant's arrival, when that is within half the margin of
      // when its hold was sent (the margin covers it); else from the send. Most leases are let go
      // before their first renewal: until it is due they wait in #first, with no timer of their own,
      // the deadline set here as their Renewal would set it; one whose maxHold comes first, or whose
      // grant came later than that, gets its Renewal now.
      p.ttl = ttl
      p.revokeIn = revokeIn
      const every = renewInterval(ttl)
      const slow = late * 2 > margin(ttl)
      if ((revokeIn > 0 && revokeIn <= every) || slow) {
        p.grantedAt = slow ? p.sentAt : now
        this.#renewal(p)
      } else {
        p.grantedAt = now
        lease._deadline = now + ttl - margin(ttl)
        p.fresh = true
        this.#first.add(p, every)
      }
      // A hold's fn runs now, in its caller's context; it lets the key go and answers the hold.
      if (p.fn) handOverIn(p.scope!, p, lease, this.#context!)
      else p.resolve(lease)
    } else if (l0 !== p.l0 || l1 !== p.l1 || l2 !== p.l2 || l3 !== p.l3) {
      // Asked again, the server granted a *new* lease: it no longer knew ours (it restarted). Ours is
      // lost — someone may have held the key meanwhile — and the new one, which nobody holds, goes.
      this.#lose(p, new LostError(`${p.place()}: lease lost: the server no longer knew it (it restarted)`))
      this.#releaseLease(l0, l1, l2, l3)
    } else {
      // Asked again after a reconnect: the same lease, its ttl counted from this answer.
      this.#renewal(p).extend(p.sentAt, ttl)
    }
  }

  /** `p`'s renewal, made now (as of its grant) if it waited in #first. */
  #renewal(p: Pending): Renewal {
    if (p.renewal) return p.renewal
    if (p.fresh) {
      p.fresh = false
      this.#first.delete(p)
    }
    return (p.renewal = new Renewal(
      this.#clock,
      { renew: () => this.#renewOf(p), lose: reason => this.#lose(p, reason) },
      p.lease!,
      p.handle.ttl,
      p.ttl,
      p.revokeIn,
      p.grantedAt,
    ))
  }

  /** Asks the server to renew `p`'s lease (see renewal.ts): no answer while the connection is down. */
  async #renewOf(p: Pending): Promise<Renewed> {
    const answer = await this.#ask({ type: 'renew', lease: p.leaseId })
    if (answer.type === 'renewed') return { ttl: answer.ttl }
    if (answer.type === 'error' && answer.code === 'lost') return { refused: answer.message }
    return undefined
  }

  #lose(p: Pending, reason: LostError | ClosedError): void {
    this.#forget(p)
    p.lease?._lose(reason)
  }

  #forget(p: Pending): void {
    const pending = this.#pending
    pending.take(p.local)
    p.forgotten = true
    if (p.guarded) this.#unguard(p)
    if (p.fresh) {
      p.fresh = false
      this.#first.delete(p)
    }
    p.renewal?.stop()
    // The kept hold and lease are moved along once this client has none left, when a full collection
    // would free their shapes (see `keepHoldShapes`); while holds live, they keep them.
    if (pending.size === 0) {
      followHoldShape?.()
      followLeaseShape()
    }
  }

  /**
   * Lets a lease go on the server. Frame id 0: no answer wanted. Frames of one connection arrive in
   * order, so a hold sent after this release finds the key released. With the connection down it
   * goes first on the next one (`#unsent`); sent, it is kept unconfirmed until the server answers a
   * frame sent after it, and goes first on the next connection if this one drops before that
   * (`#unconfirmed`).
   */
  #releaseLease(l0: number, l1: number, l2: number, l3: number): void {
    const socket = this.#socket
    try {
      if (socket) {
        socket.send(encodeReleaseOf(0, l0, l1, l2, l3))
        this.#unconfirmed.sent(this.#nextFrame, l0, l1, l2, l3)
        this.#heartbeat.awaited()
        return
      }
    } catch {
      // the connection is gone: as if it were down
    }
    this.#unsent.push({ type: 'release', lease: hexOfWords(l0, l1, l2, l3) })
  }

  /** @internal The clock a lease's deadline is counted on. */
  _now(): number {
    return this.#clock.now()
  }

  /** @internal A lease read past its deadline (see lease.ts # Reading checks the clock). */
  _overdue(lease: Lease): void {
    const p = this.#pending.get(lease._req)
    if (p?.lease === lease && (p.renewal || p.fresh)) this.#renewal(p).overdue()
  }

  /** @internal Called by a `Lease` once: lets the key go on the server. */
  _release(local: number, lease: Lease): void {
    const p = this.#pending.get(local)
    if (p === undefined || p.lease !== lease) return
    this.#forget(p)
    this.#releaseLease(p.l0, p.l1, p.l2, p.l3)
  }

  /** @internal Runs fn inside the lease (as a store's `_run` does). */
  _run<T>(handle: RemoteLock, lease: Lease, fn: (lease: Lease) => T | PromiseLike<T>): Promise<Awaited<T>> {
    return runInLease(this.#context, handle._resource, lease, fn)
  }

  #heldByCaller(handle: RemoteLock, key: string): boolean {
    for (let held: Lease | undefined = this.#context!.getStore(); held; held = held._parent) {
      if (held._resource === handle._resource && held.key === key && !held.lost && this.#pending.get(held._req)?.lease === held) return true
    }
    return false
  }

  // ---- the store API ----

  /** A lock on the server's store. */
  lock(name: string, options?: LockOptions): RemoteLock {
    return this.#handle('lock', name, options)
  }

  /** A semaphore on the server's store. */
  semaphore(name: string, options: SemaphoreOptions): RemoteLock {
    return this.#handle('semaphore', name, options)
  }

  #handle(kind: 'lock' | 'semaphore', name: string, options: unknown): RemoteLock {
    const place = `${kind} ${String(name)}`
    if (this.#closed) throw new ClosedError(`${place}: ${this.#closed.message}`)
    // The name before the options, as on every store. The server checks them too; checking here
    // answers before anything is sent.
    checkName(kind, name)
    const o = handleOptions(options, place, kind === 'semaphore')
    try {
      checkTtl(o.ttl)
      if (o.hasMaxHold) checkMaxHold(o.maxHold)
    } catch (error) {
      throw fromEngine(error, place)
    }
    return new MadeRemoteLock(this, kind, name, o.limit, o.ttl, o.maxHold, o.wait)
  }

  /** A pool of the server's store (see pool/client.ts); without a capacity, an existing pool. */
  pool(name: string, options?: PoolOptions): Pool {
    return this.#pools.pool(name, options)
  }

  /**
   * The busy keys of the server's store, and its pools (`kind: 'pool'`; from a server of protocol
   * revision 4 or later).
   */
  async inspect(): Promise<(KeyInfo | PoolInfo)[]> {
    const keys: (KeyInfo | PoolInfo)[] = await this.#inspectKeys()
    for (const pool of await this.#pools.inspect()) keys.push(pool)
    return keys
  }

  /**
   * The busy keys of the server's store. Asked whole first (what every server answers); a server
   * whose answer would be too large for one frame refuses it `limit`, and is then asked page by page
   * (protocol revision 2), each page after the last key of the one before. An ask whose connection
   * drops is asked again once the client is back, within `INSPECT_PATIENCE` of the drop (a connection
   * dropped for its silence is dropped 15 s into it: see heartbeat.ts).
   */
  async #inspectKeys(): Promise<KeyInfo[]> {
    if (this.#closed) throw new ClosedError(`inspect: ${this.#closed.message}`)
    let paged = false
    const entries: KeyInfo[] = []
    for (;;) {
      const last = entries[entries.length - 1]
      const answer = await this.#ask(
        paged ? { type: 'inspectPage', kind: last?.kind ?? 'lock', name: last?.name ?? '', key: last?.key ?? '' } : { type: 'inspect' },
      )
      if (answer.type === 'inspected') return answer.entries as KeyInfo[]
      if (answer.type === 'inspectedPage') {
        for (const e of answer.entries) entries.push(e as KeyInfo)
        if (!answer.more) return entries
        // A page holds an entry at least: one empty with more to come would be asked again forever.
        if (answer.entries.length === 0) throw new ClosedError(`inspect: ${this.#said}: unexpected answer inspectedPage, empty with more to come`)
        continue
      }
      if (answer.type === 'error' && answer.code === 'limit' && !paged) {
        paged = true
        continue
      }
      if (answer.type === 'error') throw errorOf(answer.code, `inspect: ${answer.message}`)
      if (answer.type !== 'dropped') throw new ClosedError(`inspect: ${this.#said}: unexpected answer ${answer.type}`)
      await this.#back(this.#clock.now() + INSPECT_PATIENCE, 'inspect: ')
    }
  }

  /** @internal For tests: how many names this client keeps an entry for (see `ResourceNames`). */
  _names(): number {
    return resources.get(this)?.size ?? 0
  }

  /** @internal For tests: closes the socket as a network failure would; the client reconnects. */
  _dropConnectionForTest(): void {
    this.#socket?.close(4000, 'dropped by a test')
  }

  /**
   * @internal For tests: whether the client saw its connection drop and waits to dial again (its
   * backoff timer set). A test on a manual clock awaits this before it advances past the backoff:
   * the server can see the connection end before the client does.
   */
  get _redialingForTest(): boolean {
    return this.#reconnecting !== undefined
  }

  /**
   * Says goodbye (the server releases this client's leases at once) and closes the connection. A
   * second `close()` answers the first's promise.
   */
  close(): Promise<void> {
    // One goodbye, and every caller's close() (one inside it too: the abort listener of a lease it
    // ends) resolves only once it was answered (or given up on).
    return this.#closeOnce()
  }

  /** `close()`, for `await using`: the client closes at the end of the block. */
  [asyncDispose](): Promise<void> {
    return this.close()
  }

  async #close(): Promise<void> {
    if (this.#closed) return
    // Down with something to let go: the goodbye goes on the connection the reconnect makes, dialed
    // at once and given `GOODBYE_PATIENCE`; else the leases held from before the drop, and what waits
    // in `#unsent`, would stay held on the server, by nobody, until their ttl. With nothing to let
    // go, it ends at once.
    if (!this.#socket && this.#reconnect && (this.#unsent.length > 0 || this.#pending.values().some(p => p.lease !== undefined))) {
      const back = this.#reconnectLoop()
      this.#wakeReconnect?.()
      // The caller awaits this close, and the connection being dialed may be all that is alive (a
      // server refusing at once leaves nothing): the wait keeps the process alive, or on Node it ends
      // there (exit 13) with close() unanswered.
      await settledWithin(this.#clock, back, GOODBYE_PATIENCE, true)
    }
    const socket = this.#socket
    if (socket) await settledWithin(this.#clock, this.#ask({ type: 'goodbye' }), GOODBYE_PATIENCE)
    this.#fail(new ClosedError(`${this.#said}: the client closed`))
    const current = this.#socket
    if (current === undefined) return
    // Whatever is still awaited on it (a server that did not answer the goodbye either) is answered
    // `dropped` now, and finds the client closed: its close event would come too late, ignored.
    this.#dropped(current)
    current.close(1000, 'goodbye')
  }
}

/** Where a `lost` frame's lease id is read into (see `#leaseOf`). */
const scratch = new Uint32Array(4)

/** `p`'s `hold` frame, under correlation id `id`. */
function holdFrameOf(id: number, p: Pending): Uint8Array {
  const h = p.handle
  return encodeHoldOf(id, h.kind === 'semaphore', h.limit, h.name, p.key, h.ttl, h._maxHold, p.wait, p.r0, p.r1, p.r2, p.r3)
}

/** A client's batch of `frames` (for `Socket.pack`). */
const packClient = (frames: Uint8Array[]): Uint8Array => batchOf(frames, false)

/** A lock or semaphore of a remote store: the API of `Lock`, over the connection. */
export class RemoteLock extends TravellingHandle<Lease> {
  readonly store: RemoteStore

  /** Locks and semaphores are made by a store's `lock()` and `semaphore()`, never by hand. */
  protected constructor(...internal: never)
  // The published types keep the overload above alone (see Lease's constructor).
  protected constructor(...[store, kind, name, limit, ttl, maxHold, wait]: RemoteLockArgs) {
    // An identity for LOCK-04 checks: every handle of one name shares it.
    super(resourceOf(store, kind, name, limit), limit, ttl, maxHold, wait)
    this.store = store
  }

  /** @internal */
  protected get _to(): RemoteStore {
    return this.store
  }
}

/** The parameters of the constructor `RemoteStore` hides (see Lease's constructor). */
type RemoteStoreArgs = [
  url: string,
  transport: Transport,
  token: string,
  reconnect: boolean,
  clock: Clock,
  context: ContextStorage | undefined,
  ca?: string | Uint8Array,
]
/** The parameters of the constructor `RemoteLock` hides. */
type RemoteLockArgs = [store: RemoteStore, kind: 'lock' | 'semaphore', name: string, limit: number, ttl: number, maxHold: number, wait: number]

/** Makes a remote store: `RemoteStore` itself, typed with the constructor its published type hides. */
const MadeRemoteStore = RemoteStore as unknown as new (...args: RemoteStoreArgs) => RemoteStore
/** Makes a remote store's lock or semaphore: `RemoteLock` itself, typed with the constructor its published type hides. */
const MadeRemoteLock = RemoteLock as unknown as new (...args: RemoteLockArgs) => RemoteLock

const resources = new WeakMap<RemoteStore, ResourceNames>()

function resourceOf(store: RemoteStore, kind: 'lock' | 'semaphore', name: string, limit: number): Resource {
  let names = resources.get(store)
  if (!names) resources.set(store, (names = new ResourceNames()))
  return names.get(kind, name, limit)
}

/** Connects to a store's server over `transport`. */
export async function connectOn(
  transport: Transport | undefined,
  context: ContextStorage | undefined,
  url: unknown,
  options?: ConnectOptions,
): Promise<RemoteStore> {
  const o = checkOptions(options, 'connect', ['token', 'reconnect', 'clock', 'ca'])
  if (!transport) throw new InvalidError('connect: this runtime has no client transport')
  if (typeof url !== 'string' || !/^(wss?:\/\/|wss?\+unix:\/\/)/.test(url)) {
    throw new InvalidError(`connect: url ${JSON.stringify(typeof url === 'string' ? masked(url) : url)} must start with ws://, wss:// or ws+unix://`)
  }
  // A url no WebSocket can dial is the caller's mistake, not a server out of reach: the transport
  // would fail it as ClosedError, which callers retry as a passing outage.
  if (/\+unix:\/\/$/.test(url) || (!url.includes('+unix://') && !canParse(url))) {
    throw new InvalidError(`connect: url ${masked(url)} is not a WebSocket address (ws://HOST:PORT, wss://HOST:PORT or ws+unix://PATH)`)
  }
  const token = o.token ?? envToken()
  if (typeof token !== 'string' || token.length === 0) {
    throw new InvalidError('connect: a token is required (option token, or the environment variable HOLDFAST_TOKEN)')
  }
  if (new TextEncoder().encode(token).length > 1024) throw new InvalidError('connect: a token is at most 1024 bytes')
  if (o.ca !== undefined && typeof o.ca !== 'string' && !(o.ca instanceof Uint8Array)) throw new InvalidError('connect: option ca must be PEM text or bytes')
  // An empty one (a file read empty) was taken as none, the system's certificates trusted alone: a
  // server with its own was then refused as unreachable (ClosedError), which callers retry.
  if (o.ca !== undefined && (o.ca as string | Uint8Array).length === 0) throw new InvalidError('connect: option ca must be PEM text or bytes: it is empty')
  // A ca is trust for a TLS certificate: with a ws:// or ws+unix:// url there is none to check, and it
  // went unheard, the connection made in the clear by a caller who asked for TLS.
  if (o.ca !== undefined && !url.startsWith('wss')) {
    const scheme = url.startsWith('ws+unix://') ? 'ws+unix://' : 'ws://'
    throw new InvalidError(
      `connect: option ca trusts a TLS certificate, and url ${masked(url)} is ${scheme} (no TLS): use wss:// (or wss+unix://), or leave ca out`,
    )
  }
  // A ca that is no certificate (junk, a file's path for its text) was handed to the runtime's TLS,
  // which skipped it or refused the handshake: the server refused as unreachable (ClosedError).
  if (o.ca !== undefined) await transport.checkCa?.(o.ca as string | Uint8Array)
  // Checked as openStore() checks them: a clock that is not one failed later as a TypeError, and any
  // reconnect but `false` (`'no'`, `0`) reconnected.
  if (o.clock !== undefined && !isClock(o.clock)) throw new InvalidError('connect: option clock must have now(), setTimeout(fn, ms) and clearTimeout(handle)')
  if (o.reconnect !== undefined && typeof o.reconnect !== 'boolean') {
    throw new InvalidError(`connect: option reconnect must be true or false, not ${JSON.stringify(o.reconnect) ?? String(o.reconnect)}`)
  }
  const store = new MadeRemoteStore(
    url,
    transport,
    token,
    o.reconnect !== false,
    (o.clock as Clock | undefined) ?? systemClock,
    context,
    o.ca as string | Uint8Array | undefined,
  )
  await store._open()
  return store
}

/**
 * `HOLDFAST_TOKEN`, read only when no token was given. Deno refuses the read without `--allow-env`
 * (NotCapable): that is connect() with no token, an `InvalidError` naming the flag, not Deno's error.
 */
function envToken(): string | undefined {
  try {
    return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.HOLDFAST_TOKEN
  } catch (error) {
    throw new InvalidError(
      'connect: a token is required (option token, or the environment variable HOLDFAST_TOKEN, which this process may not read: on Deno, --allow-env=HOLDFAST_TOKEN)',
      { cause: error },
    )
  }
}

/** Whether the WHATWG URL parser takes `url` (with a host for ws:// and wss://: `ws://` alone it refuses). */
function canParse(url: string): boolean {
  try {
    new URL(url)
    return true
  } catch {
    return false
  }
}
