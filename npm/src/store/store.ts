/**
 * The store: the public API of an in-process store — handles (`lock`, `semaphore`), `serve`, `inspect`,
 * `close` — and the entry points its handles and servers call (`LockStore`, `ServedStore`), each
 * handing over to the part that does the work:
 *
 * - engine-host.ts: the calls into wasm, reading their events, time and timers, the records of every
 *   request, traps;
 * - lent-fences.ts: the keys the store grants itself, with no call into wasm (a lock's free key);
 * - waiters.ts: holds waiting in line, and handing their keys over;
 * - remote-holds.ts: the holds over connections;
 * - names.ts and key-ids.ts: the names in use and their busy keys;
 * - ../pool/: the pools (issue #16), a room of their own (`room.ts`), and their writes (`writes.ts`).
 *
 * # The path of a hold
 * `_hold` (from `Lock.hold`) takes the key (`_take`) and runs fn in its lease (handle/run-in-lease.ts),
 * or, for a hold that waits where the caller's context can be kept, hands fn to the waiter, which runs
 * it when granted (waiters.ts # Handing a key over). A lock's key without maxHold, free or granted by
 * the store itself, is taken by `_hold` without `_take` (the uncontended hold and the contended
 * hand-over, the two hot paths). A lock's free key without maxHold is granted by
 * `LentFences.grant`, and a hold that waits for it without a time limit joins the line the store keeps
 * for it (`LentFences.waitBehind`); any other goes through `EngineHost.take`. When fn settled the
 * lease lets its key go through the part that granted it, its owner (`LeaseOwner._release`): a delete
 * (or a grant to the first of the store's own line) for a key the store granted itself
 * (`LentFences`), else the engine's release (`EngineHost`); not through the store.
 * `_take` stays small, and the work of each path is in one function of one part: V8 and
 * JSC tier a function up after a number of runs scaled by its whole size, so a small hot path reached
 * through a large function stays in the slow tiers for tens of thousands of holds.
 */

import { type Core, fenceKey, openCore } from '../../wasm/holdfast_wasm.js'
import type { RemoteRequest } from '../remote/request.js'
import { runInLease, runLease } from '../handle/run-in-lease.js'
import { ClosedError, InvalidError, StorageError, fromEngine } from '../errors.js'
import { checkName } from '../util/name.js'
import { Lease } from '../handle/lease.js'
import { MadeLock, MadeSemaphore, type Lock, type Semaphore, handleOptions, type LockStore } from '../handle/lock.js'
import type { ContextStorage } from '../handle/context.js'
import type { ServedStore } from '../remote/host.js'
import type { KeyInfo, LockOptions, SemaphoreOptions } from '../types.js'
import { checkOptions } from '../util/options.js'
import { asyncDispose } from '../util/async-dispose.js'
import { closeOnce } from '../util/close-once.js'
import { claimStorage, isStorage, releaseStorage, type Storage } from '../storage/storage.js'
import { isClock, systemClock, type Clock } from '../util/clock.js'
import type { Id } from '../util/hex.js'
import { serveOn, type HoldfastServer, type ServeOptions, type Server } from '../remote/server.js'
import type { Transport } from '../runtime/transport.js'
import { EngineHost } from './engine-host.js'
import { FenceWrites } from './fence-writes.js'
import { LentFences, TO_ENGINE } from './lent-fences.js'
import { RemoteHolds } from './remote-holds.js'
import { PoolRoom } from '../pool/room.js'
import { PoolWrites, readPools } from '../pool/writes.js'
import type { Party, Pool } from '../pool/pool.js'
import type { PoolInfo, PoolOptions } from '../pool/types.js'

/**
 * @internal What a runtime's entry gives the store (not published: its `WebAssembly.Memory` would
 * need the DOM's declarations of a Node project that has none).
 */
export interface Platform {
  /** Instantiates the wasm once and answers its memory: at once, or once the wasm is read (a bundled entry). */
  init(): WebAssembly.Memory | Promise<WebAssembly.Memory>
  /** Tracks the holds an async context is inside of, to refuse a hold of a key inside its own hold. */
  context?: ContextStorage
  /** The storage of `openStore()` without one. */
  defaultStorage(): Storage
  /** How servers listen and clients connect (`ws` on Node and Bun). */
  transport?: Transport
}

export interface StoreOptions {
  /** Where fences are kept (default on Node and Bun: `fileStorage('./.holdfast')`). */
  storage?: Storage
  /** The clock (default: `performance.now()` and real timers; tests pass `manualClock()`). */
  clock?: Clock
}

export class Store implements LockStore, ServedStore {
  readonly #host: EngineHost
  readonly #lent: LentFences
  readonly #remote: RemoteHolds
  readonly #clock: Clock
  readonly #context: ContextStorage | undefined
  /** Whether a hold that waits hands fn to its waiter, which runs it in the caller's kept context. */
  readonly #direct: boolean
  readonly #transport: Transport | undefined
  readonly #servers = new Set<HoldfastServer>()
  /**
   * The `serve()` calls not yet settled, each as a promise that resolves when it settles (never
   * rejects): one beginning to listen when the store closes closes its server itself.
   */
  readonly #serving = new Set<Promise<void>>()
  /** Set by a trap: resolves once what it ended is closed, its servers and storage (never rejects). */
  #trapped: Promise<void> | undefined = undefined
  /** What `_whenTrapped()` answers: the trap's error, once `#trapped` resolved (or `close()` closed all). */
  readonly #trapEnded: Promise<ClosedError>
  #endTrap!: (closed: ClosedError) => void
  /** `close()`: `#close()` run once, its promise answered to every call (util/close-once.ts). */
  readonly #closeOnce = closeOnce(() => this.#close())
  readonly #pools: PoolRoom
  readonly #poolWrites: PoolWrites

  /** Stores are opened by `openStore()`, never made by hand. */
  protected constructor(...internal: never)
  // The published types keep the overload above alone (see Lease's constructor).
  protected constructor(...[core, memory, storage, writes, clock, context, transport]: StoreArgs) {
    this.#host = new EngineHost(core, memory, storage, writes, clock, context)
    this.#lent = new LentFences(this.#host, context)
    this.#remote = new RemoteHolds(this.#host)
    const host = this.#host
    this.#poolWrites = new PoolWrites(host, storage)
    const poolWrites = this.#poolWrites
    this.#pools = new PoolRoom({
      core,
      view: () => host.view(),
      clock,
      now: () => clock.now(),
      drain: (n, now) => host.drain(n, now),
      schedule: at => host.schedule(at),
      awaits: promise => host.awaits(promise),
      closed: place =>
        host.closed
          ? new ClosedError(`${place}: ${host.closed.message}`, host.closed.cause === undefined ? undefined : { cause: host.closed.cause })
          : undefined,
      trap: error => host.trap(error),
      poke: () => poolWrites.poke(),
      storageError: () => poolWrites.storageError(),
    })
    const pools = this.#pools
    this.#trapEnded = new Promise(resolve => (this.#endTrap = resolve))
    host.attach(
      this.#lent,
      this.#remote,
      {
        event: (kind, id, a) => pools.event(kind, id, a),
        poke: () => poolWrites.poke(),
        trap: closed => {
          poolWrites.stop()
          pools.trap(closed)
        },
        stored: () => poolWrites.stored(),
      },
      (closed, storageClosed) => {
        // The store closed itself: its servers stop listening, and their connections close once the
        // answers the trap gave were sent, as at `close()` (which awaits this).
        this.#trapped = Promise.all([this.#closeServers(), storageClosed]).then(() => this.#endTrap(closed))
      },
    )
    this.#clock = clock
    this.#context = context
    this.#direct = context?.capture !== undefined
    this.#transport = transport
  }

  /** A lock: one holder of a key at a time. */
  lock(name: string, options?: LockOptions): Lock {
    this.#named('lock', name)
    const o = handleOptions(options, `lock ${String(name)}`, false)
    const resource = this.#host.resource('lock', name, 1, o.ttl, o.hasMaxHold ? o.maxHold : undefined)
    return new MadeLock(this, resource, o.ttl, o.maxHold, o.wait, this.#host.names.pin(resource))
  }

  /** A semaphore: up to `limit` holders of a key at a time. */
  semaphore(name: string, options: SemaphoreOptions): Semaphore {
    this.#named('semaphore', name)
    const o = handleOptions(options, `semaphore ${String(name)}`, true)
    const resource = this.#host.resource('semaphore', name, o.limit, o.ttl, o.hasMaxHold ? o.maxHold : undefined)
    return new MadeSemaphore(this, resource, o.ttl, o.maxHold, o.wait, this.#host.names.pin(resource))
  }

  /**
   * A handle's checks before its options, in the order of every store: a closed store, then the name
   * (so that `lock(7, { ttl: -1 })` is refused for its name, not as a lock named 7 with a bad ttl).
   */
  #named(kind: 'lock' | 'semaphore', name: unknown): void {
    if (this.#host.closed) this.#host.checkOpen(`${kind} ${String(name)}`)
    checkName(kind, name)
  }

  /**
   * A pool: a count of `capacity` units, claimed `n` at a time and never below zero (see `pool/`).
   * Without a capacity, a pool this store has (whatever a resize made it); one it has not is an
   * `InvalidError` at once.
   */
  pool(name: string, options?: PoolOptions): Pool {
    return this.#pools.pool(name, options)
  }

  /**
   * Serves this store to other processes over WebSocket: `{ port, host, token }` (host defaults to
   * 127.0.0.1) or `{ path, token }` for a Unix socket. Clients `connect()` with the same token.
   * Rejects `ClosedError` when the store closed (or closed itself) before it listened; it then
   * listens no more, and `close()` resolves only once it settled.
   */
  serve(options: ServeOptions): Promise<Server> {
    const serving = this.#serve(options)
    // Kept until settled: a close (or trap) meanwhile waits for it (`#closeServers`).
    const done = (): void => void this.#serving.delete(settled)
    const settled = serving.then(done, done)
    this.#serving.add(settled)
    // The caller's promise is one of its own: `settled` handles `serving`'s rejection, and a rejection
    // nobody handles (a serve() that could not listen, its promise ignored) must still be reported.
    return serving.then(server => server)
  }

  async #serve(options: ServeOptions): Promise<Server> {
    const host = this.#host
    host.checkOpen('serve')
    const server = await serveOn(this, this.#transport, options, this.#clock)
    if (host.closed) {
      // Closed while it began to listen: the close (or the trap) closed only the servers it knew.
      await server.close().catch(() => {})
      host.checkOpen('serve')
    }
    this.#servers.add(server)
    return server
  }

  /**
   * Every busy key with its holders and how many wait, as a snapshot, and every pool (`kind: 'pool'`).
   * Idle keys are not listed.
   */
  inspect(): (KeyInfo | PoolInfo)[] {
    const keys: (KeyInfo | PoolInfo)[] = this.inspectKeys()
    for (const pool of this.inspectPools()) keys.push(pool)
    return keys
  }

  /** @internal The pools only (what a served store lists over the wire). */
  inspectPools(): PoolInfo[] {
    this.#host.checkOpen('inspect')
    return this.#pools.inspect()
  }

  /** @internal A pool for a client's frame: made with `capacity` if new; 0: the pool as it is. */
  _servedPool(name: string, capacity: number): Pool {
    return this.#pools.servedPool(name, capacity)
  }

  /** @internal */
  _releaseServed(pool: Pool, id: string): Promise<0 | 1 | 2> {
    return this.#pools.releaseServed(pool, id)
  }

  /** @internal */
  _withdrawServed(pool: Pool, id: string, party: Party, ask?: number): Promise<boolean> {
    return this.#pools.withdrawServed(pool, id, party, ask)
  }

  /** @internal Whether a change of the pools may not be in storage yet (see writes.ts `owed`). */
  _poolsOwed(): boolean {
    return this.#poolWrites.owed()
  }

  /** @internal */
  _claimOpen(name: string, id: string): boolean {
    return this.#pools.claimOpen(name, id)
  }

  /** @internal The busy keys only (what a served store lists over the wire). */
  inspectKeys(): KeyInfo[] {
    this.#host.checkOpen('inspect')
    const now = this.#clock.now()
    // And the keys the store granted itself, which the engine does not know.
    return [...this.#host.busyKeys(now), ...this.#lent.busyKeys(now)]
  }

  /**
   * Closes the store: every lease ends (its signal aborts with a `ClosedError`), every waiter is
   * answered `ClosedError`, and later calls fail `ClosedError`. Does not wait for running fns; a hold
   * whose fn is still running rejects `ClosedError` when fn settles. A pool claim not yet answered is
   * answered `ClosedError` and takes nothing; a release, confirm or resize already asked is written,
   * and answered by that write, before `close()` resolves — asked over a connection to this store's
   * `serve()`, it is answered over that connection, which closes only then. Every server of `serve()`
   * stops listening, and its connections close, before `close()` resolves.
   *
   * After an internal error (the store closed itself: a trap), or when one happens inside `close()`,
   * every request was answered `ClosedError` by the trap, which closes the servers (after those answers
   * were sent) and the storage once its writes under way landed (a pools' write too); `close()` resolves once they are
   * closed. A trap once `close()` closed the engine (every lease ended, every waiter answered) answers
   * the pool requests still waiting on the engine (a release in the pools' last write) `ClosedError`,
   * and `close()` goes on closing the servers and the storage, and resolves. Either way `close()`
   * resolves, as the store is closed all the same: the trap is told to the requests it answered (and
   * to `holdfast serve`, by `_whenTrapped()`), not by `close()`. A second `close()` does nothing more:
   * it answers the first's promise, resolved once the store is closed.
   */
  close(): Promise<void> {
    // A close() under way or done: the same, so that every caller's close() resolves once the store
    // is closed (a second one used to resolve at once, before the first had let its storage go), one
    // called inside it too (the abort listener of a lease it ends), which would otherwise find the
    // store closed and resolve at once.
    return this.#closeOnce()
  }

  /** `close()`, for `await using`: the store closes at the end of the block. */
  [asyncDispose](): Promise<void> {
    return this.close()
  }

  async #close(): Promise<void> {
    const host = this.#host
    // Closed already by a trap: its closing (the servers, the storage once its writes landed).
    if (host.closed) {
      // Called inside the trap (a lease it ended, whose abort listener closes the store): the trap
      // tells the store its closing (`#trapped`) only once it answered every request, before it
      // returns. Without waiting for that, this close() (and every later one, answering its promise)
      // resolved at once, the storage not let go, a fence write possibly under way (LOCK-02).
      if (this.#trapped === undefined) await Promise.resolve()
      return this.#trapped
    }
    if (!host.close()) return this.#trapped
    this.#lent.loseAll()
    // The pools' last write keeps what changed before the close, and answers the releases, confirms
    // and resizes it carries: over a connection too, so the connections stay open until those answers
    // (and the claims' the close ended) were sent. Then every pool answer is settled, so waiting for
    // them adds no wait to the writes' own; frames that come meanwhile find the store closed. (A
    // storage whose write never lands holds close() here, as it did before.)
    await this.#poolWrites.landed()
    await this.#closeServers()
    // A fence write still under way must land before the storage is let go, and so must a pools' write
    // that a trap inside this close stopped waiting for.
    await host.writesLanded()
    try {
      await host.closeStorage()
    } finally {
      // Nothing asks the engine anything more: its memory goes back now, not when the store is collected.
      host.free()
      // A trap while this close closed what the store started (its pools' last write told back, say)
      // is told as one before it, now that all is closed: before this close resolves, so that its
      // caller (`holdfast serve`) knows the store did not close cleanly. None can come after `free()`.
      if (host.trappedClosing !== undefined) this.#endTrap(host.trappedClosing)
    }
  }

  /**
   * Closes every server once the answers of the pool frames asked over it were sent (`_answered()`):
   * remote holders and waiters were answered by the close's drain or the trap, so the connections can
   * go then. Never rejects.
   */
  async #closeServers(): Promise<void> {
    // A serve() still beginning to listen finds the store closed and closes its server: awaited, so
    // that nothing listens once the close resolves (each was called before the store closed).
    await Promise.all(this.#serving)
    const servers = [...this.#servers]
    // (A send that failed counts as sent: it was its connection's to lose, and `_answered()` never rejects.)
    await Promise.all(servers.map(server => server._answered()))
    await Promise.all(servers.map(server => server.close().catch(() => {})))
  }

  /** Whether the store was closed (by `close()`, or after an internal error). */
  get closed(): boolean {
    return this.#host.closed !== undefined
  }

  /**
   * @internal For `holdfast serve`: resolves to a trap's `ClosedError` (its `cause` the internal error)
   * once the store is closed after it — its servers, after the answers were sent over their
   * connections, and its storage. A trap before `close()` (the store closed itself) or in the engine's
   * own close (or as the close read its events), once the trap closed those; one once `close()` closed the engine, while it waits for
   * what it closes, once the close closed those, before its promise settles. So a caller that awaited
   * `close()` finds it settled if the engine trapped during that close. Never settles when nothing traps
   * before `close()` frees the engine: after, a call into it fails as the closed store does, and no
   * trap comes. Never rejects.
   */
  _whenTrapped(): Promise<ClosedError> {
    return this.#trapEnded
  }

  // ---- what handles call (LockStore) ----

  /**
   * @internal Asks for a key: answers the lease when granted at once, the waiter's promise when it
   * waits, or `undefined` when it would wait and `wait` is 0 (or, for a try, when the key is held in
   * the caller's own context). With `fn` (and a context to keep), a waiter runs fn when handed the key
   * and its promise is the hold's answer.
   */
  _take(
    handle: Lock,
    key: string,
    wait: number,
    signal: AbortSignal | undefined,
    isTry: boolean,
    fn?: (lease: Lease) => unknown,
  ): Lease | Promise<unknown> | undefined {
    const host = this.#host
    if (host.closed) throw host.closedError(handle, key)
    const resource = handle._resource
    const known = resource.keys.get(key)
    if (resource.limit === 1 && handle._maxHold === 0) {
      if (known === undefined) {
        const lease = this.#lent.grant(handle, resource, key)
        if (lease !== undefined) return lease
      } else if (wait === Infinity && typeof known === 'object' && !isTry) {
        // Held by a lease the store granted itself: the line the store keeps for the key.
        const waiting = this.#lent.waitBehind(handle, resource, key, known as Lease, signal, fn)
        if (waiting !== undefined) return waiting
      }
    } else if (handle._maxHold === 0) {
      // A semaphore's key, its permits granted by the store itself where it can (lent-fences.ts # Semaphores).
      const taken = this.#lent.permit(handle, resource, key, known, wait, signal, isTry, fn)
      if (taken !== TO_ENGINE) return taken
    }
    return host.take(handle, resource, key, known, wait, signal, isTry, fn)
  }

  /**
   * @internal Runs fn inside the lease (once granted, for a waiter's promise, unless `signal` aborted
   * meanwhile: `CancelledError`), lets the key go when fn settles, and answers as `hold` does: fn's
   * value, fn's error, or the loss of the lease (even if fn succeeded).
   */
  _run<T>(handle: Lock, taken: Lease | Promise<Lease>, fn: (lease: Lease) => T | PromiseLike<T>, signal?: AbortSignal): Promise<Awaited<T>> {
    return this.#underMaxHold(handle, runInLease(this.#context, handle._resource, taken, fn, undefined, signal))
  }

  /**
   * A hold of a handle with a `maxHold`: its fn may await `lease.signal`, which the store's timer
   * aborts, so that timer keeps the process alive until the hold settles (engine-host.ts # Timers keep
   * the process alive while awaited).
   */
  #underMaxHold<T>(handle: Lock, held: Promise<T>): Promise<T> {
    if (handle._maxHold > 0) this.#host.awaits(held)
    return held
  }

  /**
   * @internal `hold`: takes the key and runs fn in its lease, as `_take` and `_run`; a waiter is handed
   * the key directly where the context can be kept. `undefined` when the key is busy and wait is 0.
   */
  _hold<T>(
    handle: Lock,
    key: string,
    wait: number,
    signal: AbortSignal | undefined,
    fn: (lease: Lease) => T | PromiseLike<T>,
  ): Promise<Awaited<T>> | undefined {
    const direct = this.#direct
    const resource = handle._resource
    if (resource.limit === 1 && handle._maxHold === 0) {
      // A lock's key without maxHold, without `_take`'s frame (see `_take`): a wait in the line the
      // store keeps for a key it granted itself (the contended hand-over, W3), or a free key granted by
      // the store itself and fn run in its lease (the uncontended hold, W1).
      const known = resource.keys.get(key)
      if (direct && wait === Infinity && typeof known === 'object' && !this.#host.closed) {
        const waiting = this.#lent.waitBehind(handle, resource, key, known as Lease, signal, fn)
        if (waiting !== undefined) return waiting as Promise<Awaited<T>>
      } else if (known === undefined && !this.#host.closed) {
        const lease = this.#lent.grant(handle, resource, key)
        if (lease !== undefined) return runLease(this.#context, resource, lease, fn)
      }
    }
    const taken = this._take(handle, key, wait, signal, false, direct ? fn : undefined)
    if (taken === undefined) return undefined
    if (taken instanceof Lease || !direct)
      return this.#underMaxHold(handle, runInLease(this.#context, resource, taken as Lease | Promise<Lease>, fn, undefined, signal))
    return this.#underMaxHold(handle, taken as Promise<Awaited<T>>)
  }

  // ---- what serving calls (ServedStore: remote/session.ts, remote/server.ts, cloudflare/object.ts) ----

  /**
   * @internal A handle for holds over a connection (the server's, one per hold): checked as `lock`
   * and `semaphore` check theirs, but it pins nothing, so that a name only clients use is forgotten
   * as soon as it is idle. The caller hands it to `_letGo` once the hold was asked.
   */
  _serverHandle(kind: 'lock' | 'semaphore', name: string, limit: number): Lock {
    const last = this.#remote.lastHandle(kind, name, limit)
    if (last !== undefined) return last
    const semaphore = kind === 'semaphore'
    const o = handleOptions(semaphore ? { limit } : undefined, `${kind} ${String(name)}`, semaphore)
    const resource = this.#host.resource(kind, name, o.limit, o.ttl, undefined)
    return this.#remote.keepHandle(new (semaphore ? MadeSemaphore : MadeLock)(this, resource, o.ttl, o.maxHold, o.wait, undefined))
  }

  /** @internal The server's handle was used (see `_serverHandle`): its name is forgotten if nothing else uses it. */
  _letGo(handle: Lock): void {
    if (handle._resource.pin === undefined) this.#host.names.forgetIfUnused(handle._resource)
  }

  /** @internal A hold over a connection; answers through `record.sink` (see remote-holds.ts). */
  _remoteHold(handle: Lock, record: RemoteRequest, wait: number): void {
    this.#remote.hold(handle, record, wait)
  }

  /** @internal Renews a lease over a connection: its ttl and maxHold remaining, or `undefined` if lost. */
  _renew(lease: string): { ttl: number; revokeIn: number } | undefined {
    return this.#remote.renew(lease)
  }

  /** @internal Releases (or, if still waiting, cancels) a request over a connection. */
  _endRemote(record: RemoteRequest): void {
    this.#remote.end(record)
  }

  /** @internal Releases (or, if still waiting, cancels) the request over a connection holding this lease id, if any. */
  _releaseRemote(lease: Id): void {
    this.#remote.release(lease)
  }

  /** @internal The live request of a connection with this request id. */
  _remoteRequest(request: Id): RemoteRequest | undefined {
    return this.#remote.byRequest(request)
  }

  /** @internal The live request of a connection with this lease id. */
  _remoteLease(lease: Id): RemoteRequest | undefined {
    return this.#remote.byLease(lease)
  }

  /**
   * @internal The number of a new connection, unique in the store across its servers (u32, never 0,
   * never one in use): live until `_connectionEnded` unless `live` is false (see remote-holds.ts).
   */
  _nextConnection(live = true): number {
    return this.#remote.nextConnection(live)
  }

  /**
   * @internal A live connection has number `conn` already (live until `_connectionEnded`; with
   * `live` false, a number only to count past): new ones are counted from past it.
   */
  _connectionTaken(conn: number, live = true): void {
    this.#remote.connectionTaken(conn, live)
  }

  /** @internal For tests: how many connection numbers are live (given and not ended). */
  get _liveConnections(): number {
    return this.#remote.liveConnections
  }

  /** @internal A connection ended: its waiters leave their lines; with `goodbye`, its leases end too. */
  _connectionEnded(conn: number, goodbye: boolean): void {
    this.#remote.connectionEnded(conn, goodbye)
  }

  /** @internal How many holds of a connection wait in line (not away). */
  _connectionWaiting(conn: number): number {
    return this.#remote.connectionWaiting(conn)
  }

  /** @internal How many requests one connection may have. */
  _setConnectionLimit(limit: number): void {
    this.#remote.setConnectionLimit(limit)
  }

  /** @internal How many requests over connections the whole store may have. */
  _setMaxHolds(limit: number): void {
    this.#remote.setMaxHolds(limit)
  }

  // ---- for tests ----

  /**
   * @internal For tests: how much the engine keeps (`[keys, requests, key places, request places,
   * timers, resources]`), and the names the store keeps.
   */
  _footprint(): number[] {
    return this.#host.footprint()
  }

  /** @internal For tests: the size of wasm memory in bytes. */
  _memoryBytes(): number {
    return this.#host.memoryBytes()
  }

  /** @internal For tests: makes the engine trap, as a bug would. */
  _trapForTest(): void {
    this.#host.trapForTest()
  }
}

/** The parameters of the constructor `Store` hides (see Lease's constructor). */
type StoreArgs = [
  core: Core,
  memory: WebAssembly.Memory,
  storage: Storage,
  writes: FenceWrites,
  clock: Clock,
  context: ContextStorage | undefined,
  transport?: Transport,
]

/** Makes a store: `Store` itself, typed with the constructor its published type hides. */
const MadeStore = Store as unknown as new (...args: StoreArgs) => Store

/** @internal Opens a store on `platform`; the entry of each runtime calls this. */
export async function openStoreOn(platform: Platform, options?: StoreOptions): Promise<Store> {
  const o = checkOptions(options, 'openStore', ['storage', 'clock'])
  if (o.storage !== undefined && !isStorage(o.storage)) {
    throw new InvalidError('openStore: option storage must be an object with get(key) and set(key, value)')
  }
  if (o.clock !== undefined && !isClock(o.clock)) {
    throw new InvalidError('openStore: option clock must have now(), setTimeout(fn, ms) and clearTimeout(handle)')
  }
  const storage = (o.storage as Storage | undefined) ?? platform.defaultStorage()
  const clock = (o.clock as Clock | undefined) ?? systemClock
  if (o.clock !== undefined) checkTime(clock.now())
  // Answered at once, but for a bundled Node or Bun entry's first open (runtime/node/runtime.ts).
  const ready = platform.init()
  const memory = ready instanceof Promise ? await ready : ready
  claimStorage(storage, 'openStore')
  const writes = new FenceWrites(storage)
  let core: Core
  try {
    core = await openEngine(storage, writes)
    await readPools(core, storage, clock)
  } catch (error) {
    try {
      await storage.close?.()
    } catch {
      // the open's own error says more
    }
    releaseStorage(storage)
    throw fromEngine(error, 'openStore')
  }
  return new MadeStore(core, memory, storage, writes, clock, platform.context, platform.transport)
}

/**
 * A caller's clock's time, read once at open: a number of ms from 0 to 2^53 - 1, as the engine counts
 * it. The engine host takes a time below 0 as none read yet (the store trapped and closed at its first
 * hold), NaN leaves every deadline unmet, and anything not a number is added to as text. (A clock
 * is monotonic: one that starts in range stays there until 2^53 ms.)
 */
function checkTime(now: unknown): void {
  if (typeof now === 'number' && now >= 0 && now <= Number.MAX_SAFE_INTEGER) return
  const shown =
    typeof now === 'number'
      ? String(now)
      : typeof now === 'string'
        ? JSON.stringify(now)
        : now === undefined || now === null
          ? String(now)
          : typeof now === 'object'
            ? 'an object'
            : `a ${typeof now}`
  throw new InvalidError(`openStore: option clock: now() answered ${shown}, not a number of ms from 0 to 2^53 - 1`)
}

/**
 * Reads the fence ceiling, opens the engine on it, and answers once storage kept the next ceiling
 * (nothing is granted before: a fence handed out under a ceiling that was never kept could repeat).
 */
async function openEngine(storage: Storage, writes: FenceWrites): Promise<Core> {
  let stored: unknown
  try {
    stored = await storage.get(fenceKey())
  } catch (error) {
    throw new StorageError(`openStore: storage.get failed: ${(error as Error)?.message ?? String(error)}`, { cause: error })
  }
  const first = new Promise<[number, boolean]>(resolve => {
    writes.settled = (ceiling, ok) => resolve([ceiling, ok])
  })
  const core = openCore(stored, writes.persist)
  const [ceiling, ok] = await first
  if (!ok) {
    core.free()
    throw new StorageError(`openStore: storage.set failed: ${(writes.lastError as Error)?.message ?? String(writes.lastError)}`, { cause: writes.lastError })
  }
  core.ceilingWritten(ceiling, true, 0)
  return core
}
