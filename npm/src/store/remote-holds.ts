/**
 * The host of holds over connections: what the server's sessions (remote/session.ts) and a Durable
 * Object (cloudflare/object.ts) ask of the store, through `ServedStore`.
 *
 * A hold over a connection is a request of the same engine as a local one (`core.holdRemote`), with a
 * ttl, so local and remote holds share keys, lines and fences (LOCK-05). Its record is a
 * `RemoteRequest`, kept in the host's `reqs` like any other, and found by the client's request id or
 * by its lease id through the engine, which indexes both (`core.remoteReq`), so that a request asked
 * again (after a reconnection) resumes instead of queueing twice. Every answer goes through the record's sink: at once (granted, busy, an error), or from an
 * event the host's drain hands to `event`.
 *
 * Invariants:
 * - The whole store has at most `maxHolds` requests over connections (`serve({ maxHolds })`), leases
 *   and waiting holds; a request asked again is not a new one. Dropped connections' requests stay
 *   until they end, so reconnecting frees nothing.
 * - A lease over a connection always has a deadline (its ttl, renewed by `renew`): the host's timer is
 *   set at every grant and renewal, and the engine ends the lease at it (`EXPIRED`).
 * - Every connection to the store has a number of its own (`nextConnection`), whichever of its
 *   servers, or the Durable Object hosting it, took the connection: the engine knows a connection by
 *   its number alone (its leases end at its goodbye, its waiting holds at its drop, its requests are
 *   counted against `connectionLimit`), so two connections sharing one would end or count each other's.
 * - A number is never given while it is in use, even once the u32 counter wrapped: not while a
 *   connection of that number is live (`liveConnections`: from `nextConnection(true)` or
 *   `connectionTaken` until `connectionEnded`, which every way a session ends reaches), nor while the
 *   engine has a request of it (a dropped connection's leases, an RPC call's, a lease taken back
 *   after a restart). A Durable Object's RPC calls and taken-back leases are numbered so
 *   (`nextConnection(false)`) without being live: they never say goodbye, so `liveConnections` holds
 *   only connections open now, and never grows with calls.
 */

import { LimitError } from '../errors.js'
import type { Lock } from '../handle/lock.js'
import type { Resource } from './key-ids.js'
import { RemoteRequest, followRequestShape } from '../remote/request.js'
import { type Id, idWordsOf } from '../util/hex.js'
import { soon } from '../util/soon.js'
import {
  BUSY,
  ENDED,
  EXPIRED,
  FAILED,
  GRANTED,
  HOLD_EVENTS,
  INVALID,
  KEY,
  LIMIT,
  RELEASED,
  REQ,
  RESUMED,
  RESUMED_FENCE,
  REVOKE_IN,
  REVOKED,
  TIMED_OUT,
} from './abi.js'
import type { EngineHost, RemoteEvents } from './engine-host.js'

/** The words of an id looked up. */
const LOOKUP = new Uint32Array(4)

/**
 * The pin of a name the server keeps until the end of the turn that used it (see `#keep`): not a
 * handle's pin, and no handle is ever given it — `deref()` answers nothing, so `Names.pin` makes a
 * real pin for a new handle in its place, and `forgetIfUnused` does not count it as a handle alive.
 * It works through the rule of names.ts that a key going idle (and `_letGo`) forgets a name only when
 * its `pin` is `undefined`.
 */
const KEPT: { deref(): object | undefined } = { deref: () => undefined }

export class RemoteHolds implements RemoteEvents {
  readonly #host: EngineHost
  /**
   * How many requests over connections live (in `reqs`). They are not kept here by id as well: the
   * engine indexes them by request id and by lease id, and a `Map` gaining and losing an entry on
   * every hold cost more than the rest of this file's work of a hold. On V8 such a `Map` rehashes its
   * table every few dozen operations, and each table it leaves points to the next (for iterators):
   * once one is in the old generation (every mark-compact puts it there), the scavenger keeps every
   * later table and what they held until the next mark-compact — megabytes promoted per scavenge on
   * the benchmark's R3 server, Node 24.
   */
  #live = 0
  /** The most requests over connections at once, leases and waiting holds (`serve({ maxHolds })`). */
  #maxHolds = 100_000
  /** The server's last handle (`store._serverHandle`), for the next hold of the same name. */
  #lastHandle: Lock | undefined
  /** The name kept (`KEPT`) until the end of this turn, if one is. */
  #kept: Resource | undefined
  /** The number of the last connection (`nextConnection`). */
  #lastConnection = 0
  /**
   * The numbers of the connections live now (see the module doc): from `nextConnection(true)` or
   * `connectionTaken` until `connectionEnded`. Never given to another meanwhile.
   */
  readonly #liveConnections = new Set<number>()

  constructor(host: EngineHost) {
    this.#host = host
  }

  /**
   * A hold over a connection. Answers through `record.sink` — at once (granted, busy, an error) or
   * when the engine grants it — and records it so that events find it.
   */
  hold(handle: Lock, record: RemoteRequest, wait: number): void {
    const host = this.#host
    if (host.closed) return record.sink.failed(record, 'closed', `${record.place()}: the store is closed`)
    if (this.#live >= this.#maxHolds && this.byRequest(record.request) === undefined) {
      return record.sink.failed(
        record,
        'limit',
        `${record.place()}: the store has ${this.#maxHolds} leases and waiting holds over connections, the most it takes (serve() option maxHolds, holdfast serve --max-holds)`,
      )
    }
    const resource = handle._resource
    resource.remote = true
    let known = resource.keys.get(record.key)
    if (known !== undefined && typeof known !== 'number') known = host.adopt(resource, record.key, known)
    // The ids cross into wasm as words (see crate/wasm/src/remote.rs, request.ts # Ids as words).
    if (record.idsOk !== 0) return record.sink.failed(record, 'invalid', `${record.place()}: ${record.idsOk === 1 ? 'request' : 'lease'} must be 32 hex digits`)
    const now = host.clock.now()
    let answer: number
    try {
      answer = host.core.holdRemote(
        resource.id,
        known ?? -1,
        wait === Infinity ? -1 : wait,
        record.maxHold,
        record.conn,
        record.r0,
        record.r1,
        record.r2,
        record.r3,
        record.l0,
        record.l1,
        record.l2,
        record.l3,
        record.ttl,
        now,
      )
    } catch (error) {
      throw host.trap(error)
    }
    const buf = host.view()
    if (answer === RESUMED) {
      const existing = host.reqs[buf[REQ]! >>> 0]
      if (!(existing instanceof RemoteRequest)) throw host.trap(new Error('a resumed request has no record'))
      const resumed = existing
      resumed.conn = record.conn
      resumed.frame = record.frame
      resumed.sink = record.sink
      if (resumed.holding) {
        // The fence it holds; its ttl now counts from this answer.
        resumed.sink.granted(resumed, buf[RESUMED_FENCE]!, Math.max(0, host.core.revokeIn(buf[REQ]!, now)))
        host.schedule(now + resumed.ttl)
      }
      // A waiter back from away may have been granted at once.
      const events = buf[HOLD_EVENTS]!
      if (events > 0) host.drain(events, now)
      return
    }
    if (answer >= 0) {
      const req = buf[REQ]!
      const keyId = buf[KEY]!
      // The events of deadlines acted on first are read before this request is recorded: one may be
      // of the request whose slot it took (see engine-host.ts `#granted`).
      const events = buf[HOLD_EVENTS]!
      const lost = events > 0 ? host.answer(events, now) : undefined
      if (keyId !== known) host.newKey(resource, record.key, keyId)
      record.req = req
      host.reqs[req >>> 0] = record
      this.#live++
      if (answer > 0) {
        record.holding = true
        if (record.maxHold > 0) host.schedule(now + record.maxHold)
      }
      host.schedule(now + (answer > 0 ? record.ttl : wait === Infinity ? Infinity : wait))
      if (answer > 0) record.sink.granted(record, answer, record.maxHold)
      if (events > 0) host.settle(lost)
      return
    }
    const events = buf[HOLD_EVENTS]!
    if (events > 0) host.drain(events, now)
    if (answer === BUSY) return record.sink.busy(record)
    const message = `${record.place()}: ${host.core.lastError()}`
    record.sink.failed(record, answer === LIMIT ? 'limit' : answer === INVALID ? 'invalid' : 'closed', message)
  }

  /**
   * The server's last handle if it serves a hold of `kind`, `name` and `limit`: a handle pins nothing
   * and keeps nothing of a hold, so one serves every hold of its name while the name is in use (most
   * holds over connections name one just used). Once the store forgot the name (its place in
   * `names.byId` is no longer this resource: another `Resource` of it may be there since), or closed,
   * it is made anew, checked as it always was.
   */
  lastHandle(kind: 'lock' | 'semaphore', name: string, limit: number): Lock | undefined {
    const last = this.#lastHandle
    if (last === undefined) return undefined
    const r = last._resource
    if (r.name !== name || r.kind !== kind || (kind === 'semaphore' && r.limit !== limit)) return undefined
    const host = this.#host
    if (host.names.byId[r.id >>> 0] !== r || host.closed) return undefined
    return last
  }

  /** Keeps the server's handle just made (see `lastHandle`). */
  keepHandle(handle: Lock): Lock {
    this.#lastHandle = handle
    return handle
  }

  /**
   * A key of `resource` went idle and no handle pins its name (engine-host.ts `idle`): the last name
   * served is kept to the end of the turn (`#keep`), any other forgotten if unused, as names.ts would.
   */
  idled(resource: Resource): void {
    if (resource === this.#lastHandle?._resource) this.#keep(resource)
    else this.#host.names.forgetIfUnused(resource)
  }

  /**
   * Keeps the last name served until the end of the turn (a microtask) once one of its keys went
   * idle: a client holding one key in sequence sends the release of one hold and the next hold in one
   * message, and the name the release left unused would be forgotten by the engine and registered
   * anew for the hold, on every hold (about a quarter of the server's own work of one, Node 24). A
   * name nothing else pins (`pin` undefined: no handle of the store's user alive) is marked `KEPT`; at
   * the end of the turn, if still so, it is unmarked and forgotten if unused, as it would have been —
   * so a name only clients use still costs nothing once idle (#13 item 5), from the end of the turn
   * that let it go. Kept only when a key goes idle (`idled`), not at every hold and release: a
   * release that hands its key to the next holder, as in a contended line, leaves the name in use,
   * and queues nothing.
   */
  #keep(resource: Resource): void {
    if (resource.pin === undefined) resource.pin = KEPT
    if (resource.pin !== KEPT || this.#kept === resource) return
    // Another name kept in this turn goes back at once: only the last one is kept.
    if (this.#kept !== undefined) this.#unkeep()
    else soon(this.#endOfTurn) // a promise's reaction: cheaper than queueMicrotask (util/soon.ts)
    this.#kept = resource
  }

  readonly #endOfTurn = (): void => this.#unkeep()

  /** The kept name is no longer kept: forgotten if unused (and nothing pinned it since). */
  #unkeep(): void {
    const resource = this.#kept
    this.#kept = undefined
    if (resource === undefined || resource.pin !== KEPT) return
    resource.pin = undefined
    this.#host.names.forgetIfUnused(resource)
  }

  /** An event of the host's drain for a request over a connection: answered through its sink. */
  event(record: RemoteRequest, kind: number, a: number, now: number): void {
    const host = this.#host
    if (kind === GRANTED) {
      record.holding = true
      host.schedule(now + record.ttl)
      if (record.maxHold > 0) host.schedule(now + record.maxHold)
      record.sink.granted(record, a, record.maxHold)
      return
    }
    this.#ended(record)
    if (kind === TIMED_OUT) record.sink.failed(record, 'in_use', `${record.place()}: still held after waiting`)
    else if (kind === FAILED)
      record.sink.failed(record, a === 1 ? 'storage' : 'limit', `${record.place()}: ${a === 1 ? 'storage failed to keep the fence ceiling' : 'fences used up'}`)
    else if (kind === REVOKED) record.sink.lost(record, 'lost')
    else if (kind === EXPIRED) record.sink.lost(record, 'lost')
    else if (kind === ENDED && host.closed) {
      if (record.holding) record.sink.lost(record, 'closed')
      else record.sink.failed(record, 'closed', `${record.place()}: the store is closed`)
    }
    // ENDED while open: its connection ended; nobody is left to answer.
  }

  /** Renews a lease over a connection: its ttl and maxHold remaining, or `undefined` if lost. */
  renew(lease: string): { ttl: number; revokeIn: number } | undefined {
    const host = this.#host
    if (host.closed) return undefined
    const now = host.clock.now()
    let ttl: number
    try {
      ttl = host.core.renew(lease, now)
    } catch (error) {
      throw host.trap(error)
    }
    const buf = host.view()
    const revokeIn = buf[REVOKE_IN]!
    const events = buf[HOLD_EVENTS]!
    if (events > 0) host.drain(events, now)
    if (ttl <= 0) return undefined
    host.schedule(now + ttl)
    return { ttl, revokeIn }
  }

  /** Releases (or, if still waiting, cancels) a request over a connection. */
  end(record: RemoteRequest): void {
    const host = this.#host
    if (host.closed || host.reqs[record.req >>> 0] !== record) return
    this.#ended(record)
    const now = host.clock.now()
    let n: number
    try {
      n = host.core.cancel(record.req, now)
    } catch (error) {
      throw host.trap(error)
    }
    if (n > 0) host.drain(n, now)
  }

  /**
   * Releases (or, if still waiting, cancels) the live request over a connection whose lease id is
   * `lease`, as `end` does, found and ended in one call into the engine (`core.releaseRemote`): a
   * release is every other message of a client holding keys in turn. Nothing when none has it.
   */
  release(lease: Id): void {
    const host = this.#host
    const w = LOOKUP
    if (host.closed || !idWordsOf(lease, w, 0)) return
    const now = host.clock.now()
    let n: number
    try {
      n = host.core.releaseRemote(w[0]!, w[1]!, w[2]!, w[3]!, now)
    } catch (error) {
      throw host.trap(error)
    }
    const req = host.view()[RELEASED]!
    if (req < 0) return
    const record = host.reqs[req >>> 0]
    if (!(record instanceof RemoteRequest)) throw host.trap(new Error(`the engine released request ${req}, which has no record over a connection`))
    this.#ended(record)
    if (n > 0) host.drain(n, now)
  }

  /**
   * A request ends (`end`, `release`, or an engine's event of its end): forgotten here, before the
   * events of its end are drained (a key it leaves idle keeps its name to the end of the turn if it
   * is the last served: `idled`).
   */
  #ended(record: RemoteRequest): void {
    this.#host.reqs[record.req >>> 0] = undefined
    // The kept record is moved along once none is left, as a full collection would then free the
    // shape (request.ts); while records live, they keep it.
    if (--this.#live === 0) followRequestShape()
  }

  /** The live request of a connection with this request id. */
  byRequest(request: Id): RemoteRequest | undefined {
    return this.#find(request, false)
  }

  /** The live request of a connection with this lease id. */
  byLease(lease: Id): RemoteRequest | undefined {
    return this.#find(lease, true)
  }

  /** The record of the engine's live request over a connection with this id (`byLease`: a lease id). */
  #find(id: Id, byLease: boolean): RemoteRequest | undefined {
    const host = this.#host
    const w = LOOKUP
    if (host.closed || !idWordsOf(id, w, 0)) return undefined
    let req: number
    try {
      req = host.core.remoteReq(byLease, w[0]!, w[1]!, w[2]!, w[3]!)
    } catch (error) {
      throw host.trap(error)
    }
    if (req < 0) return undefined
    const record = host.reqs[req >>> 0]
    return record instanceof RemoteRequest ? record : undefined
  }

  /** A connection ended: its waiters leave their lines; with `goodbye`, its leases end too. */
  connectionEnded(conn: number, goodbye: boolean): void {
    // Its number is free once nothing of it is left (a dropped connection's leases keep it: see
    // nextConnection), whatever the store does below.
    this.#liveConnections.delete(conn)
    const host = this.#host
    if (host.closed) return
    const now = host.clock.now()
    let n: number
    let next: number
    try {
      n = host.core.connectionEnded(conn, goodbye, now)
      if (n > 0) host.drain(n, now)
      // Its waiters are away until their ttl: the engine acts on that deadline.
      next = host.core.nextDeadline()
    } catch (error) {
      throw host.trap(error)
    }
    if (next >= 0) host.schedule(next)
  }

  /** How many holds of a connection wait in line (asked of a silent connection only: see server.ts). */
  connectionWaiting(conn: number): number {
    const host = this.#host
    if (host.closed) return 0
    try {
      return host.core.connectionWaiting(conn)
    } catch (error) {
      throw host.trap(error)
    }
  }

  /**
   * The number of a new connection. u32, as the engine takes it, counted up and wrapping past the
   * last u32 to 1: it skips 0, which the Durable Object reads as no number (a socket without its
   * attachment), the numbers of live connections, and those the engine has requests of (see the
   * module doc), so that a connection open through 2^32 newer numbers keeps its own. `live`: the
   * number is a connection's, live until `connectionEnded`; else (a Durable Object's RPC call, a
   * lease taken back) it is in use only while the engine has a request of it.
   */
  nextConnection(live: boolean): number {
    const host = this.#host
    let conn = this.#lastConnection
    for (let tried = 0; ; tried++) {
      // (Every number in use would take more memory than a store has: a bound, not a case.)
      if (tried === 0xffff_ffff) throw new LimitError('the store has a connection (or a request) of every connection number')
      conn = (conn + 1) >>> 0 || 1
      if (!this.#liveConnections.has(conn) && (host.closed || this.#requestsOf(conn) === 0)) break
    }
    this.#lastConnection = conn
    if (live) this.#liveConnections.add(conn)
    return conn
  }

  /** How many requests the engine has of connection `conn` (leases, waiting or away). */
  #requestsOf(conn: number): number {
    try {
      return this.#host.core.connectionRequests(conn)
    } catch (error) {
      throw this.#host.trap(error)
    }
  }

  /**
   * `conn` is a live connection's number already (one a restarted Durable Object's client kept in
   * its socket's attachment): it is never given to another until `connectionEnded`, and the numbers
   * of new connections are counted from past it. With `live` false (the last number an old store of
   * the same Durable Object gave), new numbers are only counted from past it.
   */
  connectionTaken(conn: number, live: boolean): void {
    this.#lastConnection = Math.max(this.#lastConnection, conn)
    if (live && conn !== 0) this.#liveConnections.add(conn)
  }

  /** For tests: how many connections are live (`#liveConnections`). */
  get liveConnections(): number {
    return this.#liveConnections.size
  }

  /** How many requests one connection may have. */
  setConnectionLimit(limit: number): void {
    this.#host.core.setConnectionLimit(limit)
  }

  /** How many requests over connections the whole store may have. */
  setMaxHolds(limit: number): void {
    this.#maxHolds = limit
  }
}
