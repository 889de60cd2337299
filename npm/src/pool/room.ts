/**
 * The pools of an in-process store (issue #16): the bridge from the handles (`pool.ts`) to the engine
 * in wasm, and the records of the pool requests the engine has not answered yet.
 *
 * # How a claim crosses into wasm
 * One call (`core.claim`) answers at once (refused, or the first outcome of its id), or names a pool
 * request that an event answers later: `CLAIMED` once storage kept it (no claim is answered before the
 * write that keeps it is acknowledged: POOL-02), `NOT_CLAIMED` when its wait ran out, `POOL_FAILED`
 * when the write failed, `POOL_ENDED` when the store closed (a claim that took its units and was not
 * yet answered is undone by the engine then: it took nothing, and the store's last write says so). A
 * release, confirm or resize is answered `DURABLE` or `POOL_FAILED` by its write, even when the store
 * closes meanwhile: the close waits for that write, so it happens, and its caller is told so. But a
 * release or confirm of a claim still being written whose claim is then undone (its write failed, a
 * cancel, the close) acted on no claim: `NO_CLAIM`, answered as one of an id no open claim has (a
 * release `false`, a confirm `LostError`), never as done. The
 * engine's writes are grouped here in TypeScript (one under way, taken a microtask after the turn's
 * calls: writes.ts), poked after every call (`#after`); their outcome goes back to the engine, and the
 * host's drain hands the pool events it answers here (`event`).
 *
 * # Invariants
 * - Every pool request the engine named is in `#records` until one event (or a cancel) answers it;
 *   then each of its askers still there is answered, exactly once. A claim asked again with the id of
 *   a request still unanswered joins that record (`CLAIM_JOINED`) as one more asker.
 * - Each asker is answered by its own signal and its own wait (POOL-04): one whose signal aborts is
 *   answered `CancelledError` alone, one whose wait runs out `claimed: false` alone, and the claim goes
 *   on for the others. The engine keeps a joined claim in line for the longest wait of its askers;
 *   an asker whose wait ends earlier has a timer of its own here. Once no asker is left, the claim is
 *   cancelled in the engine (`cancelClaim`), which takes it out of the line, or gives back the units
 *   it took before its write was acknowledged (as LOCK-06 for holds).
 * - If the engine traps, every record is answered with the store's `ClosedError` (`trap`).
 *
 * # Withdrawn claims
 * A served client withdraws a claim whose `claimed` answer crossed its caller's cancel (revision 6;
 * an older client releases it, and its connection reads that release as its withdraw:
 * remote/crossed-releases.ts), and so does a Worker over Workers RPC (`HoldfastObject`'s
 * `poolOp('withdraw')`, its call's asker id).
 * Joined, the same claim may have been answered `claimed` to others as well — another client
 * asking the same order id, another Worker's call, or a caller in this process — and those hold it:
 * undone, its units would go back to the pool while they believe they have them (POOL-01). So the
 * room keeps, per open claim with an id, who was answered `claimed` (`#told`: the one party — a served
 * client or an RPC caller, `Party`, or `LOCAL` — or `MANY`), and undoes a withdraw only when that is
 * the withdrawing party alone. A client
 * whose hello named its party is one party on all its connections: a withdraw that a dropped
 * connection lost, sent again on the next, still undoes the claim it alone was told (pool/client.ts
 * # Claims across dropped connections). A client sends a withdraw for each `claimed` answer it lets
 * go, and may hold the claim from another answer (its caller was answered it, then asked the id again
 * and gave that ask up): so a party answered more than once is counted (`Tells`), each withdraw takes
 * back one answer, and only the one that takes back the last undoes the claim. From revision 7 a
 * client's withdraw names the frame of the `claim` whose answer it takes back (`ClaimRequest.ask`,
 * kept in `Tells.asks`): it takes back that answer, or nothing if that frame was never answered
 * `claimed` (the server never read it, or answered it otherwise) — so that a client may withdraw an
 * answer a dropped connection lost, which it cannot tell from a frame the server never read, without
 * taking back one its caller holds. A party's frame ids are kept up to `MAX_NAMED` a claim. A claim read back
 * from storage has no entry (who was told before the restart is not known): a withdraw keeps it. An
 * entry goes with its claim (released, withdrawn, asked anew once its id was forgotten; one whose
 * ttl ran out at the next sweep, `#keep`).
 *
 * Only a served client (or RPC caller) withdraws, so the room keeps nothing until one first asks for
 * a claim (`#tracking`): a store nobody reaches over a connection pays no entry per claim (measured:
 * 90 bytes a claim, 100,000 claims with ids, Node 20). A claim made before then may have been told
 * to callers here already: answered again once the room keeps entries, it counts as `MANY` (who was
 * told is not known), and a withdraw keeps it; so does one answered from a claim already open
 * (`CLAIM_KNOWN`) that has no entry.
 *
 * Pools' deadlines (waits, ttls, the 24 hours of an id) are the engine's: after each call the store's
 * timer is set for the next one (`schedule`).
 */

import type { Core } from '../../wasm/holdfast_wasm.js'
import { CancelledError, ClosedError, InvalidError, LimitError, LostError, StorageError, fromEngine, placed } from '../errors.js'
import {
  CLAIM_JOINED,
  CLAIM_KNOWN,
  CLAIM_QUEUED,
  CLAIM_REFUSED,
  CLAIM_REMAINING,
  CLAIM_WRITING,
  CLAIMED,
  DURABLE,
  HOLD_EVENTS,
  INVALID,
  LIMIT,
  NO_CLAIM,
  NOT_CLAIMED,
  POOL_ENDED,
  POOL_FAILED,
  REQ,
} from '../store/abi.js'
import { clearTimer, keepAlive, setTimer, type Clock } from '../util/clock.js'
import { randomId } from '../util/random.js'
import { soon } from '../util/soon.js'
import { checkOptions } from '../util/options.js'
import { MadeClaim, MadePool, checkUnits, type Pool, type ClaimRequest, type ClaimResult, type Party, type PoolStore } from './pool.js'
import type { PoolInfo } from './types.js'
import { checkName } from '../util/name.js'

/** What the room needs of its store. */
export interface PoolHost {
  readonly core: Core
  /** The store's clock: the timers of askers whose wait ends before their claim's (see # Invariants). */
  readonly clock: Clock
  /** The shared buffer (made anew when wasm memory grew). */
  view(): Float64Array
  now(): number
  /** Answers `n` events the last call wrote (pool events come back to `event`). */
  drain(n: number, now: number): void
  /** Sets the store's timer for `at`, if it is earlier than the one set. */
  schedule(at: number): void
  /** A claim's answer waits on the store's timer: it keeps the process alive until `promise` settles. */
  awaits(promise: Promise<unknown>): void
  /** The store's `ClosedError` for `place`, if it is closed. */
  closed(place: string): ClosedError | undefined
  /** The engine trapped: the store closes; answers the error to throw. */
  trap(error: unknown): ClosedError
  /** A call may have changed a pool: the pools' write is scheduled if one is wanted (writes.ts). */
  poke(): void
  /** What the storage failed with, the last time a pools' write failed. */
  storageError(): unknown
}

/** A pool's name, as the engine checks it (here only to word a pool named alone that no pool could have). */
/** The party of a caller in this process (never one that withdraws). */
const LOCAL = Object.freeze({})
/** More than one party was answered `claimed`, or who was told is not known. */
const MANY = Object.freeze({})

/**
 * One party answered `claimed` for a claim `n` times not withdrawn: more than once, or once to a frame
 * a withdraw may name (see # Withdrawn claims). `asks`: the frame ids of those answers that were to a
 * named frame (revision 7), as many as `n` at most.
 */
class Tells {
  constructor(
    readonly party: Party,
    public n: number,
    readonly asks: number[],
  ) {}
}
/**
 * The most frame ids one party's `Tells` keeps (revision 7): past them the oldest is forgotten, its
 * answer still counted, so that a client asking one open claim again and again costs the server no
 * more; a withdraw naming a forgotten frame takes back nothing, and the claim stays (until a release,
 * or its ttl), never undone under an answer that may stand.
 */
const MAX_NAMED = 1024
/** `#told` is swept of claims no longer open when it reaches this many entries, or twice its size after the last sweep. */
const SWEEP_AT = 1024

/** One caller waiting for a pool request's answer; several, when a claim id was asked again (joined). */
class Asker {
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
  readonly promise: Promise<unknown>
  /** When its wait runs out (Infinity: never; a barrier's askers never wait). */
  readonly deadline: number
  signal: AbortSignal | undefined
  onAbort: (() => void) | undefined
  timer: unknown
  /** The served client or RPC caller that asks (`Party`), or `LOCAL` (see # Withdrawn claims). */
  party: Party = LOCAL
  /** The frame id of its client's `claim` (revision 7), which a withdraw names. */
  ask: number | undefined

  constructor(deadline: number) {
    this.deadline = deadline
    let resolve!: (value: unknown) => void
    let reject!: (error: unknown) => void
    this.promise = new Promise((res, rej) => {
      resolve = res
      reject = rej
    })
    this.resolve = resolve
    this.reject = reject
  }
}

/** A pool request the engine has not answered yet: a claim (waiting, or being written) or a barrier. */
class Pending {
  readonly place: string
  readonly pool: Pool
  /**
   * `remember`: its id was the caller's (one drawn here nobody can ask again, nor withdraw); `tracked`:
   * made while the room kept who was told (see # Withdrawn claims).
   */
  readonly claim: { id: string; n: number; remember: boolean; tracked: boolean } | undefined
  /** Who waits for its answer, first asker first. */
  readonly askers = new Set<Asker>()
  /** A release's or confirm's answer when its claim was undone before it was answered (`NO_CLAIM`). */
  noClaim: ((asker: Asker) => void) | undefined

  constructor(pool: Pool, place: string, claim: { id: string; n: number; remember: boolean; tracked: boolean } | undefined) {
    this.pool = pool
    this.place = place
    this.claim = claim
  }

  /** The engine's deadline for the claim: the latest of its askers' (see `Pools::claim`'s join). */
  get deadline(): number {
    let latest = Number.NEGATIVE_INFINITY
    for (const a of this.askers) latest = Math.max(latest, a.deadline)
    return latest
  }

  /** Answers every asker still there (each stops listening first: its signal, its timer). */
  answer(clock: Clock, each: (asker: Asker) => void): void {
    const askers = [...this.askers]
    this.askers.clear()
    for (const a of askers) {
      settled(clock, a)
      each(a)
    }
  }
}

/** The key of claim `id` of `pool` in `PoolRoom.#told`. */
function told(pool: Pool, id: string): string {
  return `${pool._id}\0${id}`
}

/** `asker` was answered, or left: it stops listening to its signal and its timer. */
function settled(clock: Clock, asker: Asker): void {
  if (asker.onAbort) asker.signal!.removeEventListener('abort', asker.onAbort)
  if (asker.timer !== undefined) clearTimer(clock, asker.timer)
  asker.timer = undefined
}

export class PoolRoom implements PoolStore {
  readonly #host: PoolHost
  /** Pool requests by their engine id. */
  readonly #records = new Map<number, Pending>()
  /** Who was answered `claimed` for an open claim with an id, by `told(pool, id)` (see # Withdrawn claims). */
  readonly #told = new Map<string, Party | Tells>()
  #sweepAt = SWEEP_AT
  #sweeping = false
  /** Whether a served connection asked for a claim yet: only then is `#told` kept (see # Withdrawn claims). */
  #tracking = false

  constructor(host: PoolHost) {
    this.#host = host
    // Pools read back may have deadlines (a ttl, the 24 hours of an id).
    this.#scheduleNext()
  }

  /**
   * `store.pool(name, { capacity })`; without a capacity, the pool as it is (it must exist), as over a
   * connection and on Redis: startup code that names a pool alone opens it whatever a resize made it.
   */
  pool(name: unknown, options: unknown): Pool {
    const place = `pool ${String(name)}`
    this.#checkOpen(place)
    // The name before the options, as on every store.
    checkName('pool', name)
    const o = checkOptions(options, place, ['capacity'])
    if (o.capacity === undefined) return this.#existing(name, place)
    const capacity = checkUnits(o.capacity, `${place}: capacity`)
    let id: number
    try {
      id = this.#host.core.pool(name, capacity)
    } catch (error) {
      const e = error as { code?: unknown }
      // Named at its place (a bad name, a capacity that differs), as a lock's errors are.
      if (e && typeof e.code === 'string') throw fromEngine(error, place)
      throw this.#host.trap(error)
    }
    // A pool made is written (its capacity), as any change.
    this.#host.poke()
    return new MadePool(this, name, id)
  }

  /**
   * @internal A pool for a client's frame (see remote/session.ts): made with `capacity` if new, as
   * `pool()` does; with `capacity` 0, the pool as it is (it must exist).
   */
  servedPool(name: string, capacity: number): Pool {
    if (capacity !== 0) return this.pool(name, { capacity })
    const place = `pool ${name}`
    this.#checkOpen(place)
    return this.#existing(name, place)
  }

  /** The pool `name` as it is: `InvalidError` if none was made (in the words of a server and of Redis). */
  #existing(name: string, place: string): Pool {
    const id = this.#call(() => this.#host.core.findPool(name))
    if (id >= 0) return new MadePool(this, name, id)
    // No pool has a name the engine would refuse: say what is wrong with it rather than "no such pool".
    checkName('pool', name)
    throw new InvalidError(`${place}: no such pool (its first use names its capacity)`)
  }

  /** @internal Whether claim `id` of pool `name` is open, holding its units (false: no such pool, or the store closed). */
  claimOpen(name: string, id: string): boolean {
    if (this.#host.closed('pools')) return false
    const pool = this.#call(() => this.#host.core.findPool(name))
    return pool >= 0 && this.#call(() => this.#host.core.claimOpen(pool, id))
  }

  /** Every pool, as `inspect()` lists them. */
  inspect(): PoolInfo[] {
    const raw = this.#call(() => this.#host.core.inspectPools()) as Omit<PoolInfo, 'kind'>[]
    return raw.map(p => ({ kind: 'pool', ...p }))
  }

  /** @internal */
  _claim(pool: Pool, request: ClaimRequest): Promise<ClaimResult> {
    const place = `pool ${pool.name}`
    const closed = this.#host.closed(place)
    if (closed) return Promise.reject(closed)
    const remember = request.id !== undefined
    const id = request.id ?? randomId()
    if (request.party !== undefined) this.#tracking = true
    const now = this.#host.now()
    const answer = this.#call(() => this.#host.core.claim(pool._id, request.n, id, remember, request.wait === Infinity ? -1 : request.wait, request.ttl, now))
    const buf = this.#host.view()
    let result: Promise<unknown>
    if (answer === CLAIM_WRITING || answer === CLAIM_QUEUED) {
      // A new claim of the id: what was kept of an earlier one of it (ended, its id forgotten) is not its own.
      if (remember && this.#tracking) this.#told.delete(told(pool, id))
      const claim = { id, n: request.n, remember, tracked: this.#tracking }
      const record = new Pending(pool, remember ? `${place}: claim ${JSON.stringify(id)}` : place, claim)
      this.#records.set(buf[REQ]!, record)
      // The engine's answer says whether it waits in line (no call to ask it: `#waits`).
      result = this.#ask(record, buf[REQ]!, request, now, answer === CLAIM_QUEUED)
      // Its wait, or a claim's ttl ahead of it, is the store's timer: it keeps the process alive meanwhile.
      this.#host.awaits(result)
    } else if (answer === CLAIM_JOINED) {
      const record = this.#records.get(buf[REQ]!)
      if (!record) throw this.#host.trap(new Error(`the engine joined a claim to request ${buf[REQ]}, which this side does not know`))
      // Joined to a claim that waits, or one being written: the engine says which.
      result = this.#ask(record, buf[REQ]!, request, now, this.#waits(buf[REQ]!))
      this.#host.awaits(result)
    } else if (answer === CLAIM_REFUSED) {
      result = Promise.resolve({ claimed: false, remaining: buf[CLAIM_REMAINING]! })
    } else if (answer === CLAIM_KNOWN) {
      this.#tell(pool, id, request.party ?? LOCAL, false, request.ask)
      result = Promise.resolve({ claimed: true, remaining: buf[CLAIM_REMAINING]!, claim: new MadeClaim(pool, id, request.n) })
    } else result = Promise.reject(this.#refusal(answer, place))
    this.#after(buf, now)
    return result as Promise<ClaimResult>
  }

  /** @internal `true` once storage kept the release; `false` at once when the claim held nothing. */
  _releaseClaim(pool: Pool, id: string): Promise<boolean> {
    return this.releaseServed(pool, id).then(released => released === 1)
  }

  /**
   * @internal A release as a server answers it (revision 6): 1 once storage kept it; at once 2 when
   * the claim held nothing but took its units and gave them back before (released, or its ttl ran
   * out: its id remembered), else 0. Read in the call that released nothing, so that nothing comes
   * between.
   */
  releaseServed(pool: Pool, id: string): Promise<0 | 1 | 2> {
    const place = `pool ${pool.name}: claim ${JSON.stringify(id)}`
    let released: 0 | 1 | 2 = 0
    return this.#barrier(
      pool,
      place,
      now => {
        const answer = this.#host.core.releaseClaim(pool._id, id, now)
        if (answer === 1) {
          released = 1
          this.#told.delete(told(pool, id))
        } else if (answer === 0 && this.#host.core.claimHandedBack(pool._id, id)) released = 2
        return answer
      },
      () => undefined,
      asker => {
        // Its claim took nothing after all: it released nothing.
        released = 0
        asker.resolve(undefined)
      },
    ).then(() => released)
  }

  /**
   * @internal A client's `withdraw` (revision 6): undoes the open claim `id`, whose `claimed` answer
   * its client did not hand to a caller (it crossed its asker's cancel; revision 7: or a dropped
   * connection lost it), as if it never was (its id forgotten) — only if nobody but `party` (the
   * client, or the RPC caller) was answered `claimed` for it, and this takes back its last such
   * answer: else it stays theirs (see # Withdrawn claims). `ask` (revision 7): the frame id of the
   * `claim` whose answer it takes back. `true` once storage kept the undo; `false` at once when
   * nothing was undone.
   */
  withdrawServed(pool: Pool, id: string, party: Party, ask?: number): Promise<boolean> {
    const key = told(pool, id)
    let undone = false
    return this.#barrier(
      pool,
      `pool ${pool.name}: claim ${JSON.stringify(id)}`,
      now => {
        if (!this.#takeBack(key, party, ask)) return 0
        this.#told.delete(key)
        const answer = this.#host.core.withdrawClaim(pool._id, id, now)
        undone = answer === 1
        return answer
      },
      () => undefined,
    ).then(() => undone)
  }

  /**
   * Takes back one `claimed` answer `party` was told for claim `key` — the one to its frame `ask`, if
   * named (revision 7; nothing if that frame was not answered `claimed`): whether that was the last
   * answer anyone was told of it (the claim is to be undone). See # Withdrawn claims.
   */
  #takeBack(key: string, party: Party, ask: number | undefined): boolean {
    const who = this.#told.get(key)
    if (!(who instanceof Tells)) return who === party && ask === undefined
    if (who.party !== party) return false
    if (ask !== undefined) {
      const at = who.asks.indexOf(ask)
      if (at < 0) return false
      who.asks.splice(at, 1)
    } else if (who.asks.length === who.n) who.asks.pop() // every answer was to a named frame: one of them
    // Answered more than once (its caller holds it from another answer): the claim stays.
    return --who.n === 0
  }

  /**
   * `party` was answered `claimed` for claim `id` of `pool` (see # Withdrawn claims), to its frame
   * `ask` if it names one (revision 7); `first`: the claim was made while the room kept entries, and
   * an entry it lacks means nobody was told yet.
   */
  #tell(pool: Pool, id: string, party: Party, first: boolean, ask: number | undefined): void {
    if (!this.#tracking) return
    const key = told(pool, id)
    const was = this.#told.get(key)
    if (was === MANY) return
    const asks = ask === undefined ? [] : [ask]
    if (was === party) return this.#keep(key, new Tells(party, 2, asks))
    if (was instanceof Tells && was.party === party) {
      was.n++
      if (ask === undefined) return
      if (was.asks.length === MAX_NAMED) was.asks.shift()
      was.asks.push(ask)
      return
    }
    if (was !== undefined || !first) return this.#keep(key, MANY)
    this.#keep(key, ask === undefined ? party : new Tells(party, 1, asks))
  }

  /** Keeps `who` for claim `key`, sweeping the entries of claims no longer open now and then. */
  #keep(key: string, who: Party | Tells): void {
    this.#told.set(key, who)
    if (this.#told.size < this.#sweepAt || this.#sweeping) return
    // Claims whose ttl ran out (or that ended otherwise unseen here) leave their entries behind:
    // swept once the map doubled since the last sweep, so each entry costs O(1) sweeping. After
    // this turn's calls: a read of the engine here may grow wasm memory under a drain's view.
    this.#sweeping = true
    soon(() => {
      this.#sweeping = false
      if (this.#host.closed('pools')) return
      for (const k of this.#told.keys()) {
        const cut = k.indexOf('\0')
        if (!this.#call(() => this.#host.core.claimOpen(Number(k.slice(0, cut)), k.slice(cut + 1)))) this.#told.delete(k)
      }
      this.#sweepAt = Math.max(SWEEP_AT, 2 * this.#told.size)
    })
  }

  /** @internal */
  _remaining(pool: Pool): Promise<number> {
    return this.#simple(pool, now => this.#host.core.poolRemaining(pool._id, now))
  }

  /** @internal */
  _confirmClaim(pool: Pool, id: string): Promise<void> {
    const place = `pool ${pool.name}: claim ${JSON.stringify(id)}`
    return this.#barrier(
      pool,
      place,
      now => this.#host.core.confirmClaim(pool._id, id, now),
      answer =>
        answer === 3
          ? new LostError(`${place}: holds no units to confirm (released, its ttl ran out, or it never took any: never claimed, or still waiting in line)`)
          : undefined,
      asker => asker.reject(new LostError(`${place}: holds no units to confirm (its claim took nothing: its write failed, or it was cancelled)`)),
    )
  }

  /** @internal */
  _resize(pool: Pool, capacity: number): Promise<void> {
    return this.#barrier(
      pool,
      `pool ${pool.name}`,
      now => this.#host.core.resizePool(pool._id, capacity, now),
      () => undefined,
    )
  }

  /**
   * A call that changes something the engine then writes (a release, a confirm, a resize): answered
   * once storage kept it (1: a request the `DURABLE` event answers), at once when there was nothing to
   * write, or with `refuse`'s error (else the status's). `noClaim` answers a release or confirm whose
   * claim was undone before it was answered (`NO_CLAIM`).
   */
  #barrier(
    pool: Pool,
    place: string,
    call: (now: number) => number,
    refuse: (answer: number) => Error | undefined,
    noClaim?: (asker: Asker) => void,
  ): Promise<void> {
    const closed = this.#host.closed(place)
    if (closed) return Promise.reject(closed)
    const now = this.#host.now()
    const answer = this.#call(() => call(now))
    const buf = this.#host.view()
    let result: Promise<unknown>
    if (answer === 1) {
      const record = new Pending(pool, place, undefined)
      record.noClaim = noClaim
      this.#records.set(buf[REQ]!, record)
      const asker = new Asker(Number.POSITIVE_INFINITY)
      record.askers.add(asker)
      result = asker.promise
    } else if (answer < 0) result = Promise.reject(this.#refusal(answer, place))
    else {
      const refused = refuse(answer)
      result = refused ? Promise.reject(refused) : Promise.resolve()
    }
    this.#after(buf, now)
    return result as Promise<void>
  }

  /** A call answered at once with a number (0 or more), or a negative status. */
  #simple(pool: Pool, call: (now: number) => number): Promise<number> {
    const place = `pool ${pool.name}`
    const closed = this.#host.closed(place)
    if (closed) return Promise.reject(closed)
    const now = this.#host.now()
    const answer = this.#call(() => call(now))
    const buf = this.#host.view()
    const result = answer < 0 ? Promise.reject(this.#refusal(answer, place)) : Promise.resolve(answer)
    this.#after(buf, now)
    return result
  }

  /** After a call: the events it wrote (deadlines acted on first), and the timer for the next deadline. */
  #after(buf: Float64Array, now: number): void {
    const events = buf[HOLD_EVENTS]!
    if (events > 0) this.#host.drain(events, now)
    this.#host.poke()
    this.#scheduleNext()
  }

  #scheduleNext(): void {
    const next = this.#call(() => this.#host.core.nextDeadline())
    if (next >= 0) this.#host.schedule(next)
  }

  #refusal(answer: number, place: string): Error {
    const message = placed(place, this.#host.core.lastError())
    if (answer === INVALID) return new InvalidError(message)
    if (answer === LIMIT) return new LimitError(message)
    return this.#host.closed(place) ?? new ClosedError(`${place}: the store is closed`)
  }

  /**
   * One more asker of claim `record` (request `req`), answered by its own signal and wait. The engine
   * keeps the claim in line for the latest wait of its askers (a join may have moved it: see
   * `Pools::claim`); every asker whose wait ends before that one is answered by a timer here.
   * `waits`: whether the claim waits in line now.
   */
  #ask(record: Pending, req: number, request: ClaimRequest, now: number, waits: boolean): Promise<unknown> {
    // A wait counts while the claim waits in line: one that took its units is answered to every
    // asker once written (as the engine never answers a claim being written "not claimed").
    const asker = new Asker(waits ? now + request.wait : Number.POSITIVE_INFINITY)
    if (request.party !== undefined) asker.party = request.party
    asker.ask = request.ask
    record.askers.add(asker)
    const signal = request.signal
    if (signal) {
      asker.signal = signal
      asker.onAbort = () => {
        const error = new CancelledError(`${record.place}: cancelled while waiting`, { cause: signal.reason })
        this.#leave(record, req, asker, () => asker.reject(error))
      }
      signal.addEventListener('abort', asker.onAbort, { once: true })
    }
    const latest = record.deadline
    for (const a of record.askers) {
      if (a.timer !== undefined || !(a.deadline < latest)) continue
      a.timer = setTimer(
        this.#host.clock,
        () => {
          a.timer = undefined
          // Taken meanwhile, the claim is being written: its answer comes to every asker.
          let waits: boolean
          try {
            waits = this.#waits(req)
          } catch {
            // A trap: it answered every asker of the claim, this one too (a timer throws nothing).
            return
          }
          if (!waits) return
          // Its wait ran out, not the claim's: answered as a claim that did not fit, with what is left now.
          this.#leave(record, req, a, () => a.resolve({ claimed: false, remaining: this.#remainingNow(record.pool) }))
        },
        Math.max(0, a.deadline - this.#host.now()),
      )
      // Its end answers the asker, who awaits it.
      keepAlive(a.timer)
    }
    return asker.promise
  }

  /**
   * `asker` gives up claim `record` (its signal aborted, or its own wait ran out) and is answered by
   * `answer`; the last asker to leave cancels the claim in the engine (POOL-04).
   */
  #leave(record: Pending, req: number, asker: Asker, answer: () => void): void {
    if (this.#records.get(req) !== record || !record.askers.has(asker) || this.#host.closed(record.place)) return
    record.askers.delete(asker)
    settled(this.#host.clock, asker)
    const last = record.askers.size === 0
    const now = this.#host.now()
    let answered = false
    try {
      if (last) {
        this.#records.delete(req)
        this.#call(() => this.#host.core.cancelClaim(req, now))
      }
      answer()
      answered = true
      if (last) this.#after(this.#host.view(), now)
    } catch (error) {
      if (answered) return
      // A trap (in the cancel, in what `answer` asks, or in the claims it let in): it answered every
      // request it found, but not this asker, who had left already: answered here, once. Runs in an
      // abort listener or a timer: throws nothing.
      const closed = error instanceof ClosedError ? error : this.#host.trap(error)
      asker.reject(new ClosedError(`${record.place}: ${closed.message}`, closed.cause === undefined ? undefined : { cause: closed.cause }))
    }
  }

  /** Whether pool request `req` is a claim waiting in line. */
  #waits(req: number): boolean {
    return this.#call(() => this.#host.core.claimWaits(req))
  }

  /** The units left in `pool` now (0 if the store cannot say: it closed meanwhile). */
  #remainingNow(pool: Pool): number {
    const now = this.#host.now()
    const left = this.#call(() => this.#host.core.poolRemaining(pool._id, now))
    this.#after(this.#host.view(), now)
    return Math.max(0, left)
  }

  /** A pool event, from the store's drain. */
  event(kind: number, id: number, a: number): void {
    const record = this.#records.get(id)
    if (!record) return
    this.#records.delete(id)
    const clock = this.#host.clock
    if (kind === CLAIMED) {
      const { id: claimId, n, remember, tracked } = record.claim!
      record.answer(clock, asker => {
        if (remember) this.#tell(record.pool, claimId, asker.party, tracked, asker.ask)
        asker.resolve({ claimed: true, remaining: a, claim: new MadeClaim(record.pool, claimId, n) })
      })
    } else if (kind === NOT_CLAIMED) record.answer(clock, asker => asker.resolve({ claimed: false, remaining: a }))
    else if (kind === DURABLE) record.answer(clock, asker => asker.resolve(undefined))
    else if (kind === NO_CLAIM) record.answer(clock, record.noClaim ?? (asker => asker.resolve(undefined)))
    else if (kind === POOL_FAILED) {
      const cause = this.#host.storageError()
      // A claim is undone; a release, confirm or resize stands here, written again with the next write.
      const what = record.claim ? 'it took nothing' : 'it may or may not have been kept'
      record.answer(clock, asker => asker.reject(new StorageError(`${record.place}: storage failed to keep it; ${what}`, { cause })))
    } else if (kind === POOL_ENDED) {
      const error = this.#host.closed(record.place) ?? new ClosedError(`${record.place}: the store is closed`)
      record.answer(clock, asker => asker.reject(error))
    }
  }

  /** The engine trapped: every request still unanswered gets the store's error. */
  trap(closed: ClosedError): void {
    const records = [...this.#records.values()]
    this.#records.clear()
    for (const record of records) {
      record.answer(this.#host.clock, asker => asker.reject(new ClosedError(`${record.place}: ${closed.message}`, { cause: closed.cause })))
    }
  }

  #checkOpen(place: string): void {
    const closed = this.#host.closed(place)
    if (closed) throw closed
  }

  /** A call into wasm that may trap. */
  #call<T>(fn: () => T): T {
    try {
      return fn()
    } catch (error) {
      throw this.#host.trap(error)
    }
  }
}
