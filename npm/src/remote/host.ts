/**
 * What serving a store asks of it: the calls a server's sessions (`session.ts`) and `serve()`
 * (`server.ts`) make, and `HoldfastObject`, which serves the store it hosts. The in-process `Store` is
 * the one that answers them; declaring them here, on the calling side, keeps the protocol's code free
 * of the store's module, so that the store may import the server without a circle.
 *
 * The rules these calls keep are the store's (LOCK-05): a hold over a connection is a request of the
 * same engine as a local one, with a ttl; every lease it is granted, renews or ends passes through the
 * session's hooks.
 */

import type { Lock } from '../handle/lock.js'
import type { Party, Pool } from '../pool/pool.js'
import type { PoolInfo } from '../pool/types.js'
import type { KeyInfo } from '../types.js'
import type { Id } from '../util/hex.js'
import type { RemoteRequest } from './request.js'

export interface ServedStore {
  /** @internal Every busy key with its holders and how many wait. */
  inspectKeys(): KeyInfo[]
  /** @internal Every pool (revision 4). */
  inspectPools(): PoolInfo[]
  /** @internal The pool of a client's frame: made with `capacity` if new; 0: the pool as it is (revision 4). */
  _servedPool(name: string, capacity: number): Pool
  /**
   * @internal A client's pool release (revision 6): 1 once storage kept it, 2 at once when the claim
   * held nothing but had given its units back before (released, or its ttl ran out), else 0.
   */
  _releaseServed(pool: Pool, id: string): Promise<0 | 1 | 2>
  /**
   * @internal A client's pool withdraw (revision 6): undoes an open claim, its id forgotten, if no
   * asker but `party` (its client, or a Durable Object's RPC caller) was answered `claimed` for it;
   * `true` once kept. `ask` (revision 7): the frame id of the `claim` whose answer it takes back.
   */
  _withdrawServed(pool: Pool, id: string, party: Party, ask?: number): Promise<boolean>
  /** @internal Whether claim `id` of pool `name` is open, holding its units (false if there is no such pool). */
  _claimOpen(name: string, id: string): boolean
  /** @internal Whether a change of the pools may not be in storage yet (pool/writes.ts `owed`). */
  _poolsOwed(): boolean
  /** @internal A handle of the name for one hold of a client's, which pins nothing (see `_letGo`). */
  _serverHandle(kind: 'lock' | 'semaphore', name: string, limit: number): Lock
  /** @internal The hold of `handle` is over: its name may be forgotten if nothing else uses it. */
  _letGo(handle: Lock): void
  /** @internal Asks for a key for a client's request; the answer comes through `record`'s sink. */
  _remoteHold(handle: Lock, record: RemoteRequest, wait: number): void
  /** @internal Renews a lease by its id: its ttl and how long until its maxHold, or `undefined` if it is lost. */
  _renew(lease: string): { ttl: number; revokeIn: number } | undefined
  /** @internal Ends a client's request: releases its lease, or takes it out of the line. */
  _endRemote(record: RemoteRequest): void
  /** @internal Ends the request holding a lease id, if the store has it (as `_remoteLease`, then `_endRemote`). */
  _releaseRemote(lease: Id): void
  /** @internal The request of a client's request id, if the store has it. */
  _remoteRequest(request: Id): RemoteRequest | undefined
  /** @internal The request holding a lease id, if the store has it. */
  _remoteLease(lease: Id): RemoteRequest | undefined
  /**
   * @internal The number of a new connection (u32, never 0): one of its own in the store, whichever
   * server (or Durable Object) took it, since the calls below name a connection by its number alone.
   * Invariant: a number is never given while a connection of it is live, nor while the store has a
   * request of it, even once the u32 counter wrapped (remote-holds.ts). With `live` (the default),
   * it is a connection's, live from here until `_connectionEnded`, which every way its session ends
   * must reach (refused, timed out, superseded, dropped, goodbye, closed); with `live` false (a
   * Durable Object's RPC call, a lease taken back), it never is live, and is in use only while the
   * store has a request of it.
   */
  _nextConnection(live?: boolean): number
  /**
   * @internal A live connection has number `conn` already (a Durable Object's client that outlived
   * its restart, numbered in its socket's attachment): live until `_connectionEnded` (with `live`
   * false: never, only counted past), and new ones are counted from past it.
   */
  _connectionTaken(conn: number, live?: boolean): void
  /**
   * @internal A connection ended: with `goodbye` its requests end at once, else they live their ttl.
   * Its number is no longer live (see `_nextConnection`).
   */
  _connectionEnded(conn: number, goodbye: boolean): void
  /** @internal How many holds of a connection wait in line (not away). */
  _connectionWaiting(conn: number): number
  /** @internal The most leases and waiting holds one connection may have. */
  _setConnectionLimit(limit: number): void
  /** @internal The most leases and waiting holds over connections in the whole store. */
  _setMaxHolds(limit: number): void
}
