/**
 * What crosses Workers RPC between `workerStore` (in a Worker) and `HoldfastObject` (the Durable
 * Object), and the parts of Cloudflare's types that holdfast uses (the package is typed without
 * `@cloudflare/workers-types`; the real objects fit these shapes).
 *
 * Every answer is a plain value: `{ ok: … }` or `{ error: { code, message } }`. Workers RPC keeps
 * only the message of a thrown error, so errors travel as values, and the client rebuilds the
 * `HoldfastError` subclass from the code.
 */

import type { ErrorCode } from '../errors.js'

/** What `acquire` and `tryAcquire` carry besides kind, name and key. */
export interface AcquireOptions {
  /** A semaphore's limit (1 for a lock). */
  limit: number
  /** ms, 1 s to 1 h: the lease lasts this long from its grant and from each renewal. */
  ttl: number
  /** ms from the grant at which the lease is revoked; 0 for none. */
  maxHold: number
  /** ms to wait for the key; `null` for no limit (`acquire` only). */
  wait: number | null
  /** The caller's id of this hold (32 hex digits): asked again with it, a hold is never granted twice. */
  request: string
}

/** A granted lease, as its holder learns it. */
export interface LeaseGrant {
  /** The lease's secret id (32 hex digits): renewing and releasing need it. */
  lease: string
  fence: number
  /** ms the lease lasts from now unless renewed. */
  ttl: number
  /** ms until maxHold revokes it; 0 for none. */
  revokeIn: number
}

export interface ErrorAnswer {
  error: { code: ErrorCode; message: string }
}

export type AcquireAnswer = { ok: LeaseGrant } | ErrorAnswer
/** `ok: null`: the key was held, or others wait for it. */
export type TryAcquireAnswer = { ok: LeaseGrant | null } | ErrorAnswer
export type RenewAnswer = { ok: { ttl: number; revokeIn: number } } | ErrorAnswer
export type DoneAnswer = { ok: true } | ErrorAnswer

/** What `poolClaim` carries besides the pool's name, its capacity and the units. */
export interface PoolClaimOptions {
  /** The claim's id (always sent: a call asked again with it never takes units twice, POOL-03). */
  id: string
  /** ms to wait in line; `null` for no limit. */
  wait: number | null
  /** ms after which the units come back unless confirmed; 0 for none. */
  ttl: number
  /**
   * The call's own id (one per `claim()`, the same when asked again after a failed call): a `cancel`
   * naming it ends that caller's wait only, as its signal does in process. Without it, `cancel` ends
   * every caller's wait of the claim. The object keeps whom it answered `claimed` by it: a `withdraw`
   * naming it undoes the claim only if no other asker was answered `claimed`.
   */
  asker?: string
}

/** A claim's outcome: `claimed` and the units left right after it (the first outcome, asked again). */
export type PoolClaimAnswer = { ok: { claimed: boolean; remaining: number } } | ErrorAnswer
/**
 * The other pool operations; `ok` is a count: `release` 1 (it gave the claim's units back), 2 (it
 * held nothing, having given them back before: released, or its ttl ran out) or 0 (no such claim; an
 * object before 2 answers 0 for both), `withdraw` 1 or 0 (whether it undid the claim), `remaining`
 * the units left, else 0.
 */
export type PoolOp = 'release' | 'confirm' | 'remaining' | 'resize' | 'cancel' | 'withdraw'
export type PoolOpAnswer = { ok: number } | ErrorAnswer

/** The RPC methods of `HoldfastObject`, as a stub offers them. */
export interface HoldfastObjectRpc {
  acquire(kind: 'lock' | 'semaphore', name: string, key: string, options: AcquireOptions): Promise<AcquireAnswer>
  tryAcquire(kind: 'lock' | 'semaphore', name: string, key: string, options: AcquireOptions): Promise<TryAcquireAnswer>
  renew(lease: string): Promise<RenewAnswer>
  release(lease: string): Promise<DoneAnswer>
  cancel(request: string): Promise<DoneAnswer>
  /**
   * Claims `n` units of pool `name` (made with `capacity` if new; 0: it must exist; another capacity
   * than its own is `invalid`), answered once the object's storage kept the claim (POOL-02).
   */
  poolClaim(name: string, capacity: number, n: number, options: PoolClaimOptions): Promise<PoolClaimAnswer>
  /**
   * Releases, confirms or cancels (a waiting or unanswered claim: `asker`'s call, or every one) claim
   * `claim`; withdraws it (`asker`'s `claimed` answer crossed its cancel: undone only if no other asker
   * was answered `claimed`); reads what remains; resizes to `value`. A cancel naming an asker whose
   * call has not come yet (it travels on another stub) answers that call `cancelled` when it comes.
   */
  poolOp(op: PoolOp, name: string, capacity: number, claim: string, value: number, asker?: string): Promise<PoolOpAnswer>
}

/** The part of a `DurableObjectNamespace` that `workerStore` uses. */
export interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown
  get(id: never): unknown
}

/** The part of `DurableObjectStorage` that `HoldfastObject` and `durableObjectStorage` use. */
export interface DurableObjectStorageLike {
  get(key: string): Promise<unknown>
  get(keys: string[]): Promise<Map<string, unknown>>
  put(key: string, value: unknown): Promise<void>
  delete(key: string): Promise<boolean>
  list(options: { prefix: string }): Promise<Map<string, unknown>>
  getAlarm(): Promise<number | null>
  setAlarm(scheduledTime: number): Promise<void>
}

/** The part of a server-side `WebSocket` accepted with hibernation that `HoldfastObject` uses. */
export interface HibernatableWebSocketLike {
  send(message: ArrayBuffer | ArrayBufferView | string): void
  close(code?: number, reason?: string): void
  /** A small value kept with the socket while the object hibernates (structured clone, ≤ 2 KiB). */
  serializeAttachment(value: unknown): void
  deserializeAttachment(): unknown
}

/** The part of `DurableObjectState` that `HoldfastObject` uses. */
export interface DurableObjectStateLike {
  readonly storage: DurableObjectStorageLike
  blockConcurrencyWhile<T>(fn: () => Promise<T>): Promise<T>
  abort?(reason?: string): void
  /** Accepts a WebSocket with hibernation: its events come to `webSocketMessage` and the others. */
  acceptWebSocket(ws: HibernatableWebSocketLike, tags?: string[]): void
  /** The sockets accepted so, still open (also after the object woke from hibernation). */
  getWebSockets(tag?: string): HibernatableWebSocketLike[]
}
