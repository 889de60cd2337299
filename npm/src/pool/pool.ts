/**
 * The handles of pools (issue #16): `store.pool(name, { capacity })` and the claims it answers. A
 * handle checks its arguments and names the place in errors; its store does the claiming (the
 * in-process store's `PoolRoom`, `room.ts`).
 *
 * - `pool.claim(n, { id, wait, signal, ttl })` → `{ claimed: true, remaining, claim }` or
 *   `{ claimed: false, remaining }`: never below zero (POOL-01); answered `claimed: true` only once
 *   storage kept the claim (POOL-02); an `id` asked again answers the first claim (POOL-03); with
 *   `wait`, in line, first come first served, the head never overtaken (POOL-04).
 * - `claim.release()` / `pool.release(id)`: hands back exactly what the claim took, once (`false`
 *   when it held nothing: released before, its ttl ran out, never claimed).
 * - `claim.confirm()` / `pool.confirm(id)`: a claim with a `ttl` keeps its units until released
 *   (`LostError` if its ttl ran out first).
 * - `pool.remaining()`, `pool.resize(capacity)` (never below what is claimed: `InvalidError`).
 */

import { CancelledError, InvalidError } from '../errors.js'
import { toMs } from '../util/duration.js'
import { loneSurrogate, utf8Length } from '../util/key.js'
import { checkOptions, checkSignal } from '../util/options.js'
import { shown } from '../util/shown.js'
import type { ClaimOptions } from './types.js'

/** The largest count: the largest integer a JavaScript number holds exactly. */
const MAX_UNITS = 2 ** 53 - 1
/** The longest claim ttl (ms): 30 days, as a maxHold (the engine's bounds.rs); checked here for every store. */
const MAX_TTL_MS = 30 * 24 * 3_600_000

/** What a claim answers. */
export type ClaimResult = { claimed: true; remaining: number; claim: Claim } | { claimed: false; remaining: number }

/** A claim's request as its store gets it, the options read. */
export interface ClaimRequest {
  n: number
  id: string | undefined
  /** In ms; Infinity without limit. */
  wait: number
  signal: AbortSignal | undefined
  /** In ms; 0 for none. */
  ttl: number
  /**
   * @internal Who asks, when a served connection does (its client's `Party`) or a Durable Object's
   * Workers RPC caller (its asker id): a `withdraw` of the claim is undone only if nobody but that
   * party was answered `claimed` (see room.ts # Withdrawn claims). None: a caller in this process.
   */
  party?: Party
  /**
   * @internal The frame id of a served client's `claim` (revision 7): a `withdraw` naming it takes
   * back that frame's `claimed` answer alone (see room.ts # Withdrawn claims).
   */
  ask?: number
}

/**
 * @internal Who asks for a claim, as the pools tell who was answered `claimed` (room.ts # Withdrawn
 * claims): a served client — the party its hello named (a string: every connection of that client is
 * the same party), or its connection's session (an object: a client whose hello names none; see
 * remote/session.ts `partyOf`) — or a `HoldfastObject`'s Workers RPC caller, by its asker id (a string
 * that names no client's party: cloudflare/object.ts `rpcParty`).
 */
export type Party = object | string

/**
 * What a pool handle asks of its store. Declared here, by the side that calls, so that the handle
 * needs nothing of the store's module.
 */
export interface PoolStore {
  /** @internal */
  _claim(pool: Pool, request: ClaimRequest): Promise<ClaimResult>
  /** @internal */
  _releaseClaim(pool: Pool, id: string): Promise<boolean>
  /** @internal */
  _confirmClaim(pool: Pool, id: string): Promise<void>
  /** @internal */
  _remaining(pool: Pool): Promise<number>
  /** @internal */
  _resize(pool: Pool, capacity: number): Promise<void>
}

/** Whether `value` is a whole number of units (1 to 2^53−1); else an `InvalidError` naming it. */
export function checkUnits(value: unknown, what: string): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_UNITS) return value
  throw new InvalidError(`${what} ${shown(value)} must be a whole number from 1 to 2^53-1`)
}

export class Pool {
  readonly name: string
  /** @internal The store's id of the pool. */
  readonly _id: number
  /** @internal */
  readonly _store: PoolStore

  /** Pools are made by a store's `pool(name, { capacity })`, never by hand. */
  protected constructor(...internal: never)
  // The published types keep the overload above alone (see Lease's constructor).
  protected constructor(...[store, name, id]: PoolArgs) {
    this._store = store
    this.name = name
    this._id = id
  }

  /**
   * Claims `n` units (1 to the capacity). Resolves `{ claimed: true, remaining, claim }` once storage
   * kept the claim, or `{ claimed: false, remaining }` when the units are not there (at once, or when
   * `wait` runs out). Rejects `CancelledError` if `signal` aborts first, `ClosedError` if the store
   * closes, `StorageError` if storage failed to keep it (it took nothing then).
   */
  claim(n: number, options?: ClaimOptions): Promise<ClaimResult>
  claim(n: number, options?: ClaimOptions, more?: unknown): Promise<ClaimResult> {
    try {
      // More options after the options would go unheard (an id among them: a retry would claim twice).
      if (more !== undefined) throw new InvalidError(`pool ${this.name}: claim takes (n, [options]): nothing after options`)
      return this._store._claim(this, this.#request(n, options))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** @internal `claim` asked by a served client or an RPC caller, `party` (in its frame `ask`): see `ClaimRequest`. */
  _claimFor(n: number, options: ClaimOptions, party: Party, ask?: number): Promise<ClaimResult> {
    try {
      return this._store._claim(this, { ...this.#request(n, options), party, ...(ask === undefined ? {} : { ask }) })
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** Hands back the units of claim `id`, once: `false` when it holds none. */
  release(id: string): Promise<boolean> {
    try {
      return this._store._releaseClaim(this, checkId(id, this.#place()))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** Keeps the units of claim `id` (a claim with a `ttl`) until released; `LostError` if its ttl ran out first. */
  confirm(id: string): Promise<void> {
    try {
      return this._store._confirmClaim(this, checkId(id, this.#place()))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** The units left. */
  remaining(): Promise<number> {
    // A store's call may throw (a wasm trap inside it): a promise-returning method rejects, never throws.
    try {
      return this._store._remaining(this)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** Changes the capacity, never below what is claimed; resolves once storage kept it. */
  resize(capacity: number): Promise<void> {
    try {
      return this._store._resize(this, checkUnits(capacity, `${this.#place()}: capacity`))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  #request(n: number, options: ClaimOptions | undefined): ClaimRequest {
    const place = this.#place()
    const units = checkUnits(n, `${place}: a claim of`)
    const o = checkOptions(options, `${place}: claim`, ['id', 'wait', 'signal', 'ttl'])
    const id = o.id === undefined ? undefined : checkId(o.id, place)
    const wait = o.wait === undefined ? 0 : toMs(o.wait, `${place}: wait`, true)
    const ttl = o.ttl === undefined ? 0 : toMs(o.ttl, `${place}: ttl`)
    // Checked here, for every store, and named as given: past this check the engine makes it a u64,
    // and its refusal named 1e300 ms as 18446744073709551615 ms.
    if (o.ttl !== undefined && !(ttl > 0 && ttl <= MAX_TTL_MS)) {
      throw new InvalidError(`${place}: claim ttl ${ttl}ms must be more than 0 and at most 30 days`)
    }
    const signal = checkSignal(o.signal, `${place}: claim`)
    if (signal?.aborted) throw new CancelledError(`${place}: claim cancelled before it began`, { cause: signal.reason })
    return { n: units, id, wait, signal, ttl: Math.ceil(ttl) }
  }

  #place(): string {
    return `pool ${this.name}`
  }
}

/** A claim id: a string of 1 to 128 bytes (the store checks the bytes). */
/** The longest claim id, in bytes of UTF-8 (the engine's `MAX_CLAIM_ID_BYTES`, the wire's and Redis's). */
export const MAX_ID_BYTES = 128
/** At most this many UTF-16 units, a string is at most `MAX_ID_BYTES` bytes of UTF-8 (3 bytes a unit). */
const MAX_ID_UNITS = Math.floor(MAX_ID_BYTES / 3)

/** @internal Checks a claim id (as `release(id)` does), for a host that passes one to its store's served calls. */
export function checkId(id: unknown, place: string): string {
  if (typeof id === 'string' && id.length > 0) {
    // As a key must (util/key.ts): encoded as UTF-8, in wasm, on the wire or in Redis, a lone
    // surrogate becomes U+FFFD, and two different ids would name one claim.
    if (!id.isWellFormed()) {
      throw new InvalidError(
        `${place}: claim id ${JSON.stringify(id)} is not well-formed Unicode (a lone surrogate at index ${loneSurrogate(id)}): an id must be text that UTF-8 can carry`,
      )
    }
    // Checked here for every store (the engine checks it too, but over a connection a longer one was
    // sent, refused by the server's decoder as a broken frame: the connection dropped, again and again).
    if (id.length > MAX_ID_UNITS && utf8Length(id) > MAX_ID_BYTES) {
      throw new InvalidError(`${place}: claim id of ${utf8Length(id)} bytes must be 1 to ${MAX_ID_BYTES} bytes`)
    }
    return id
  }
  throw new InvalidError(`${place}: claim id must be a non-empty string, not ${typeof id === 'string' ? '""' : typeof id}`)
}

/** The units one claim holds, until released (or, with a ttl not confirmed, until the ttl runs out). */
export class Claim {
  /** The claim's id: the caller's, or one the store drew. */
  readonly id: string
  /** How many units it took. */
  readonly units: number
  readonly #pool: Pool

  /** Claims are made by a pool's `claim(n)`, never by hand. */
  protected constructor(...internal: never)
  // The published types keep the overload above alone (see Lease's constructor).
  protected constructor(...[pool, id, units]: ClaimArgs) {
    this.#pool = pool
    this.id = id
    this.units = units
  }

  /** The pool's name. */
  get pool(): string {
    return this.#pool.name
  }

  /** Hands back what this claim took, once: `false` when it holds nothing (released before, or its ttl ran out). */
  release(): Promise<boolean> {
    try {
      return this.#pool._store._releaseClaim(this.#pool, this.id)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** Keeps the units of a claim with a `ttl` until released; `LostError` if the ttl ran out first. */
  confirm(): Promise<void> {
    try {
      return this.#pool._store._confirmClaim(this.#pool, this.id)
    } catch (error) {
      return Promise.reject(error)
    }
  }
}

/** The parameters of the constructor `Pool` hides (see Lease's constructor). */
type PoolArgs = [store: PoolStore, name: string, id: number]
/** The parameters of the constructor `Claim` hides. */
type ClaimArgs = [pool: Pool, id: string, units: number]

/** @internal Makes a pool: `Pool` itself, typed with the constructor its published type hides. */
export const MadePool = Pool as unknown as new (...args: PoolArgs) => Pool
/** @internal Makes a claim: `Claim` itself, typed with the constructor its published type hides. */
export const MadeClaim = Claim as unknown as new (...args: ClaimArgs) => Claim
