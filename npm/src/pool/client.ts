/**
 * Pools over a connection (`connect(url).pool(name, { capacity })`, protocol revision 4): the same
 * `Pool` and `Claim` handles as in process, whose operations travel as frames to the server's store.
 *
 * # Revisions
 * The client says revision 4 in its hello; the server's welcome says the conversation's (the lower of
 * the two). A pool frame goes only when that is 4 or more (`POOLS`): an older server would close the
 * connection on it. To an older server every pool operation is refused at once, with an
 * `InvalidError` naming its revision. An inspection of pools goes page by page when the conversation
 * is of revision 8 (`POOL_PAGES`), and whole, as one `pools` frame, before.
 *
 * # Claims across dropped connections
 * Every claim travels with a claim id (the caller's, or one drawn here), which the server remembers
 * (POOL-03). A claim still unanswered when the connection drops is asked again, with the same id, once
 * the client is back: the server cancelled it when the connection ended (undoing it if it had taken its
 * units, since nobody was told), so the second ask answers the claim as it stands — claimed before the
 * drop and answered since (the first outcome), or a claim anew. Never units nobody was told of.
 * An id asked again while unanswered is one more ask, its own frame, which the server joins to the
 * first and answers by its own wait; a signal answers its own ask alone. A claim is cancelled on the
 * server once its last ask is given up; a `claimed` answer that raced the cancel is withdrawn at once
 * (revision 6: undone, its id forgotten, as a claim cancelled before its answer; an older server can
 * only release it, its id remembered as claimed). The server keeps a withdrawn claim that it answered
 * `claimed` to another asker too (another client's ask of the id, or a caller in its process): it is
 * theirs, and this client just forgets it (answered 0) — unless its id was drawn here, which no other
 * asker can have been told: a server restarted since read the claim back, knows nobody it told, and
 * keeps it (0), so a drawn id no caller here holds is released then (`#letGo`; that release, lost
 * with a dropped connection, is sent again once the client is back, as a withdraw is). A withdraw answered
 * `storage` is asked again until the server says it is kept, for as long as the client is open
 * (withdraw-retry.ts): a server that restarts before it wrote the undo again reads the claim back. A withdraw (or that
 * release) lost with a dropped connection is sent again once the client is back, until answered —
 * before revision 7, not if the id was asked again meanwhile (that ask is answered the claim, and
 * holds it). The hello names this client's party (remote/client.ts `#party`), so that the server
 * takes the withdraw sent on the new connection for the client it answered on the old one; a server
 * that does not know parties keeps it (held until its ttl, or for good), as it did before.
 *
 * Answers a dropped connection lost (revision 7, `NAMED_ASKS`): a claim the server answered `claimed`
 * just before the connection dropped, the answer lost, looks to the client like a frame the server
 * never read. So every `withdraw` names the frame id of the `claim` whose answer it takes back (the
 * link's frame ids count up across connections, never reused), and the server takes back that
 * answer alone, or nothing if it never answered that frame `claimed`: once back, the client withdraws
 * every claim frame whose answer a drop lost — after asking again the asks still on, which the
 * server answers the open claim first, so that their answers stand. A claim given up before the
 * client was back is undone then (its id forgotten); one a caller holds from another answer stays.
 * With a server older than revision 7 such a claim stays held until its ttl (or for good): a
 * withdraw naming no answer could take back one this client's caller holds. A connection the server
 * still holds open (half-open, cut on this side only) cannot answer a claim after that withdraw: the
 * new hello supersedes it, and the server ends it as a drop before the withdraw acts, cancelling
 * its claims still unanswered (remote/session.ts `Protocol.resumed`).
 *
 * # Capacity
 * A handle's first frame carries its capacity: the server makes the pool with it, or refuses it
 * (`InvalidError` naming both) if the pool has another, as `store.pool()` does. Once a frame of the
 * handle was answered, later ones carry 0 (the pool as it is), so that a resize by anyone does not
 * make the handle's frames invalid. A handle made without a capacity (`pool(name)`) names an existing
 * pool.
 */

import { CancelledError, ClosedError, InvalidError, errorOf, type ErrorCode } from '../errors.js'
import { HANDED_BACK, NAMED_ASKS, POOL_PAGES, POOLS, type ClientMessage, type ServerMessage } from '../remote/wire.js'
import { clearTimer, setTimer, type Clock } from '../util/clock.js'
import { checkOptions } from '../util/options.js'
import { randomId } from '../util/random.js'
import { HandleCapacities } from './capacities.js'
import { MadeClaim, MadePool, checkUnits, type Pool, type ClaimRequest, type ClaimResult, type PoolStore } from './pool.js'
import type { PoolInfo } from './types.js'
import { withdrawAgainIn } from './withdraw-retry.js'
import { checkName } from '../util/name.js'
import { masked } from '../util/masked-url.js'

/** An answer, or `dropped`: the connection ended before it came (id 0: the frame was not even sent). */
export type LinkFrame = (ServerMessage & { id: number }) | { id: number; type: 'dropped' }

/** What the pools need of their connection (`RemoteStore`). */
export interface PoolLink {
  readonly url: string
  readonly clock: Clock
  /** Sends a frame; `answered` gets its answer, or `dropped` (at once when there is no connection). */
  send(message: ClientMessage, answered: (frame: LinkFrame) => void): void
  /** The revision of the conversation on the last connection (2 when the server said none). */
  revision(): number
  /** Why the client is closed, if it is. */
  closed(): ClosedError | undefined
  /** Resolves once a connection is back; rejects `ClosedError` (its message after `prefix`) when none will be by `until`. */
  reconnected(until: number, prefix: string): Promise<void>
}

/** How long past its wait a claim waits for the server's own answer. */
const WAIT_GRACE = 1_000
/** How long an operation waits for a server that cannot be reached. */
const PATIENCE = 10_000

/** One caller's ask of a claim: its own frame, answered by its own wait; its own signal. */
class Ask {
  timer: unknown
  /** Stops listening to its signal. */
  off: (() => void) | undefined
  constructor(
    readonly wait: number,
    /** When its wait runs out, on the link's clock (Infinity: never). */
    readonly deadline: number,
    readonly ttl: number,
    readonly resolve: (result: ClaimResult) => void,
    readonly reject: (error: Error) => void,
  ) {}
}

/**
 * The asks of one claim id on this client not yet answered. Each is its own `claim` frame, which the
 * server joins to the others (POOL-03) and answers by its own wait; a signal aborting one ask answers
 * it alone, and only the last to leave cancels the claim on the server.
 */
class PendingClaim {
  readonly asks = new Set<Ask>()
  /** A caller was answered `claimed`: a late `claimed` of an ask given up is that same claim, not to be let go (before revision 7). */
  delivered = false
  constructor(
    readonly pool: Pool,
    readonly n: number,
    readonly id: string,
    /** Its id was drawn here: no caller but its one ask knows it (see `#letGo`). */
    readonly drawn: boolean,
  ) {}
}

/**
 * A `claimed` answer to let go: to the `claim` frame `frame` of claim `id` of `pool`; `read`: the
 * client read it (else a dropped connection may have lost it: let go only by naming its frame,
 * revision 7).
 */
interface LetGo {
  readonly pool: Pool
  readonly id: string
  readonly frame: number
  readonly read: boolean
  /** The claim's asks here: whether its id was drawn here, and whether a caller holds it. */
  readonly claim: PendingClaim
}

export class RemotePools implements PoolStore {
  readonly #link: PoolLink
  /** Per handle: the capacity its frames carry (see # Capacity). */
  readonly #capacities = new HandleCapacities()
  /** Claims sent and not yet answered, by pool and claim id. */
  readonly #pending = new Map<string, PendingClaim>()
  /**
   * `claimed` answers to let go (`#letGo`) once the client is back, by pool, claim id and the frame
   * they answer: those whose withdraw (or release) a dropped connection lost, and (revision 7) the
   * answers a dropped connection may have lost (`read` false).
   */
  readonly #lettingGo = new Map<string, LetGo>()
  /**
   * Drawn ids to release (`#releaseDrawn`) once the client is back, by pool and claim id: those whose
   * release a dropped connection lost.
   */
  readonly #releasing = new Map<string, LetGo>()

  constructor(link: PoolLink) {
    this.#link = link
  }

  /** `connect(url).pool(name, { capacity })`; without a capacity, an existing pool. */
  pool(name: unknown, options?: unknown): Pool {
    const place = `pool ${String(name)}`
    const closed = this.#link.closed()
    if (closed) throw new ClosedError(`${place}: ${closed.message}`)
    checkName('pool', name)
    const o = checkOptions(options, place, ['capacity'])
    const capacity = o.capacity === undefined ? 0 : checkUnits(o.capacity, `${place}: capacity`)
    const pool = new MadePool(this, name, 0)
    this.#capacities.made(pool, capacity)
    return pool
  }

  /** Refused at once: the client is closed, or its server has no pools (see # Revisions). */
  #refusal(place: string): Error | undefined {
    const closed = this.#link.closed()
    if (closed) return new ClosedError(`${place}: ${closed.message}`)
    const revision = this.#link.revision()
    if (revision < POOLS) {
      return new InvalidError(
        `${place}: the server at ${masked(this.#link.url)} speaks protocol revision ${revision}, which has no pools (pools need revision ${POOLS}: a newer holdfast on the server)`,
      )
    }
    return undefined
  }

  /** @internal */
  _claim(pool: Pool, request: ClaimRequest): Promise<ClaimResult> {
    const refused = this.#refusal(`pool ${pool.name}`)
    if (refused) return Promise.reject(refused)
    const id = request.id ?? randomId()
    // A drawn id is named by no message, as in process: nobody but this claim's answer knows it.
    const place = placeOf(pool, id, request.id === undefined)
    return new Promise<ClaimResult>((resolve, reject) => {
      const key = `${pool.name}\0${id}`
      let p = this.#pending.get(key)
      // Asked again while unanswered: the server joins it to the first. Under another n it is
      // refused, in the words of the store's own claim (the engine's).
      if (p && p.n !== request.n)
        return reject(new InvalidError(`pool ${pool.name}: claim id ${JSON.stringify(id)} took ${p.n} units; asked again for ${request.n}`))
      if (!p) this.#pending.set(key, (p = new PendingClaim(pool, request.n, id, request.id === undefined)))
      const claim = p
      const ask = new Ask(request.wait, this.#link.clock.now() + request.wait, request.ttl, resolve, reject)
      claim.asks.add(ask)
      const signal = request.signal
      if (signal) {
        const onAbort = () => {
          if (!claim.asks.has(ask)) return
          this.#leave(key, claim, ask)
          ask.reject(new CancelledError(`${place}: cancelled while waiting`, { cause: signal.reason }))
          // The last ask of it gone, the claim is cancelled on the server (a `claimed` that raced the
          // cancel is let go when it comes: see #ask).
          if (claim.asks.size === 0) this.#send(pool, { op: 'cancel', claim: id })
        }
        signal.addEventListener('abort', onAbort, { once: true })
        ask.off = () => signal.removeEventListener('abort', onAbort)
      }
      if (ask.wait !== Infinity) {
        // The server answers a wait that ran out; if it does not (it cannot be reached, or its
        // storage is slow), this side gives the ask up. The last ask of the claim withdraws it: a
        // cancel, which undoes it there if it took units not yet answered (its id not remembered).
        // Answered by what comes first: the claim's own answer (frames come in order: one sent
        // before the cancel was read comes before the cancel's, and is the outcome), or the
        // cancel's — the claim took nothing. Given up before the cancel's answer, a claim answered
        // `claimed` later was released, its id remembered as claimed: asked again, it answered
        // claimed with nothing held. An ask with others still waiting is given up alone: the claim
        // goes on for them, and its id, asked again, answers how it ended.
        ask.timer = setTimer(
          this.#link.clock,
          () => {
            ask.timer = undefined
            if (!claim.asks.has(ask)) return
            if (claim.asks.size > 1) {
              this.#leave(key, claim, ask)
              return ask.reject(
                new ClosedError(`${place}: no answer from ${masked(this.#link.url)} within the wait; the claim goes on for another ask of its id`),
              )
            }
            this.#link.send({ type: 'pool', op: 'cancel', pool: pool.name, capacity: 0, claim: id, value: 0 }, answer => {
              if (!claim.asks.has(ask)) return
              this.#leave(key, claim, ask)
              ask.reject(
                new ClosedError(
                  answer.type === 'dropped'
                    ? `${place}: no answer from the server within the wait (${masked(this.#link.url)} unreachable)`
                    : `${place}: no answer from ${masked(this.#link.url)} within the wait; withdrawn there (it took nothing)`,
                ),
              )
            })
          },
          ask.wait + WAIT_GRACE,
        )
      }
      this.#ask(key, claim, ask)
    })
  }

  /**
   * Sends (or sends again, after a reconnect) one ask of a claim, and acts on its answer. Sent again,
   * it waits only what is left of its wait: with the whole wait again, the server kept it in line past
   * the caller's, and this side's timer gave it up first (`ClosedError`, not `claimed: false`).
   */
  #ask(key: string, p: PendingClaim, ask: Ask): void {
    const pool = p.pool
    this.#link.send(
      {
        type: 'claim',
        pool: pool.name,
        capacity: this.#capacities.carried(pool),
        n: p.n,
        claim: p.id,
        wait: ask.wait === Infinity ? null : Math.min(ask.wait, Math.max(0, Math.ceil(ask.deadline - this.#link.clock.now()))),
        ttl: ask.ttl,
      },
      answer => {
        if (answer.type === 'dropped') {
          // Asked again once the client is back (if its ask is still on). The server may have
          // answered it `claimed` before the drop, the answer lost: withdrawn by its frame then
          // (revision 7), which takes back that answer if there was one, and nothing else.
          if (answer.id !== 0) this.#lettingGo.set(letGoKey(key, answer.id), { pool, id: p.id, frame: answer.id, read: false, claim: p })
          return
        }
        const claimed = answer.type === 'claimed' && answer.claimed
        if (!p.asks.has(ask)) {
          // Cancelled (or given up) meanwhile: a claim that raced it is let go. Withdrawn (revision
          // 6), it is undone as if it never was, its id forgotten, as a claim cancelled before its
          // answer is: released, its id stayed remembered as claimed, and asked again it answered
          // claimed: true with nothing held. An older server can only release it. From revision 7
          // the withdraw takes back this answer alone: the server keeps the claim while any other
          // answer of it stands (another ask of it, here or elsewhere, was told it). Before, it names
          // no answer, so it is sent only if no other ask of it still waits or was told it (theirs:
          // the same claim), and its id was not asked again since (that ask, sent before this is
          // read, is answered this same open claim).
          if (claimed && (this.#named() || (p.asks.size === 0 && !p.delivered && !this.#pending.has(key)))) {
            this.#letGo({ pool, id: p.id, frame: answer.id, read: true, claim: p })
          }
          return
        }
        this.#leave(key, p, ask)
        if (answer.type === 'claimed') {
          this.#capacities.answered(pool)
          if (claimed) p.delivered = true
          return ask.resolve(
            answer.claimed
              ? { claimed: true, remaining: answer.remaining, claim: new MadeClaim(pool, p.id, p.n) }
              : { claimed: false, remaining: answer.remaining },
          )
        }
        if (answer.type === 'error') {
          // The server names every claim by its id: a drawn one is left out, as in process.
          const message = p.drawn ? answer.message.replace(`pool ${pool.name}: claim ${JSON.stringify(p.id)}: `, `pool ${pool.name}: `) : answer.message
          return ask.reject(errorOf(answer.code as ErrorCode, message))
        }
        ask.reject(new ClosedError(`pool ${pool.name}: unexpected answer ${answer.type} from ${masked(this.#link.url)}`))
      },
    )
  }

  /** `ask` is answered (or given up): it stops listening; its claim is forgotten once no ask of it is left. */
  #leave(key: string, p: PendingClaim, ask: Ask): void {
    p.asks.delete(ask)
    ask.off?.()
    if (ask.timer !== undefined) clearTimer(this.#link.clock, ask.timer)
    ask.timer = undefined
    if (p.asks.size === 0 && this.#pending.get(key) === p) this.#pending.delete(key)
  }

  /** Whether the conversation names the frame a withdraw takes back the answer of (revision 7). */
  #named(): boolean {
    return this.#link.revision() >= NAMED_ASKS
  }

  /**
   * Lets go a `claimed` answer no caller was handed: a withdraw (revision 6; from revision 7 naming
   * the frame it answers), or a release to an older server. An answer a dropped connection may have
   * lost (`read` false) is let go only by naming its frame: else it could take back an answer a
   * caller holds. One a dropped connection loses is sent again once the client is back
   * (`reconnected`), until the server answered it: else the claim stayed held there (without a
   * ttl, for good), its asker gone. One answered `storage` (its write failed) is asked again, for as
   * long as the client is open (withdraw-retry.ts); the server restarted meanwhile answers 0, as for
   * any claim read back. A withdraw that undid nothing (0) keeps the claim for whoever
   * else was told it; but an id drawn here was told to nobody else, and a server that restarted
   * since read the claim back knowing nobody it told, and keeps it: so a drawn id's claim that no
   * caller here holds, and no ask here still waits for, is released then (else its units were
   * taken for good, under an id only this client knew).
   */
  #letGo(go: LetGo, tried = 1): void {
    const named = this.#named()
    if (!named && !go.read) return
    const k = letGoKey(`${go.pool.name}\0${go.id}`, go.frame)
    this.#lettingGo.delete(k)
    const op = this.#link.revision() >= HANDED_BACK ? 'withdraw' : 'release'
    this.#link.send({ type: 'pool', op, pool: go.pool.name, capacity: 0, claim: go.id, value: named ? go.frame : 0 }, answer => {
      if (answer.type === 'dropped' && !this.#lettingGo.has(k)) this.#lettingGo.set(k, go)
      const wait = op === 'withdraw' && answer.type === 'error' && answer.code === 'storage' ? withdrawAgainIn(tried) : undefined
      if (wait !== undefined) return void setTimer(this.#link.clock, () => this.#link.closed() || this.#letGo(go, tried + 1), wait)
      const kept = op === 'withdraw' && answer.type === 'count' && answer.value === 0
      if (kept && go.claim.drawn && !go.claim.delivered && go.claim.asks.size === 0) this.#releaseDrawn(go)
    })
  }

  /**
   * Releases the claim of a drawn id that no caller here holds, kept by a withdraw (see `#letGo`).
   * One a dropped connection loses is sent again once the client is back (`reconnected`), however
   * long that takes, as a withdraw is: as a caller's release (`#operation`), it was asked again only
   * within the patience, and then given up with nobody to tell, the units taken for good under an id
   * only this client knew. Sent again after its first frame was done, it finds nothing to give back.
   */
  #releaseDrawn(go: LetGo): void {
    const k = `${go.pool.name}\0${go.id}`
    this.#releasing.delete(k)
    this.#link.send({ type: 'pool', op: 'release', pool: go.pool.name, capacity: 0, claim: go.id, value: 0 }, answer => {
      if (answer.type === 'dropped') this.#releasing.set(k, go)
    })
  }

  /** A pool frame whose answer nobody waits for. */
  #send(pool: Pool, op: { op: 'cancel'; claim: string }): void {
    this.#link.send({ type: 'pool', op: op.op, pool: pool.name, capacity: 0, claim: op.claim, value: 0 }, () => {})
  }

  /**
   * A pool operation: asked again after a dropped connection, once the client is back (within the
   * patience, counted from the drop: a connection dropped for its silence, heartbeat.ts, is dropped
   * past any patience counted from the ask); its answer, of the type `expect`, mapped by `read`, or its
   * error thrown (an answer of another type is a `ClosedError` naming it, as a claim's is).
   */
  async #operation<T>(
    pool: Pool,
    op: 'release' | 'confirm' | 'remaining' | 'resize',
    claim: string,
    value: number,
    expect: 'count' | 'done',
    read: (answer: LinkFrame, again: boolean) => T,
  ): Promise<T> {
    const place = claim ? `pool ${pool.name}: claim ${JSON.stringify(claim)}` : `pool ${pool.name}`
    // Asked again after a drop: the frame sent before may have been done, its answer lost.
    let again = false
    for (;;) {
      const refused = this.#refusal(place)
      if (refused) throw refused
      const answer = await new Promise<LinkFrame>(resolve =>
        this.#link.send({ type: 'pool', op, pool: pool.name, capacity: this.#capacities.carried(pool), claim, value }, resolve),
      )
      if (answer.type === 'dropped') {
        await this.#link.reconnected(this.#link.clock.now() + PATIENCE, `${place}: `)
        again = true
        continue
      }
      if (answer.type === 'error') throw errorOf(answer.code as ErrorCode, answer.message)
      if (answer.type !== expect) throw new ClosedError(`${place}: unexpected answer ${answer.type} from ${masked(this.#link.url)}`)
      this.#capacities.answered(pool)
      return read(answer, again)
    }
  }

  /** @internal */
  _releaseClaim(pool: Pool, id: string): Promise<boolean> {
    // 2 (a server of revision 6): it held nothing, having given its units back before. Asked again
    // after a drop, that is most likely this release's own first frame, done with its answer lost:
    // the units are back (by it, or just before it), so `true`; asked once, `false` (released before).
    // A server older than revision 6 answers 0 there: `false`, though the first frame may have done it.
    return this.#operation(pool, 'release', id, 0, 'count', (a, again) => {
      const { value } = a as Extract<LinkFrame, { type: 'count' }>
      return value === 1 || (again && value === 2)
    })
  }

  /** @internal */
  _confirmClaim(pool: Pool, id: string): Promise<void> {
    return this.#operation(pool, 'confirm', id, 0, 'done', () => undefined)
  }

  /** @internal */
  _remaining(pool: Pool): Promise<number> {
    return this.#operation(pool, 'remaining', '', 0, 'count', a => (a as Extract<LinkFrame, { type: 'count' }>).value)
  }

  /** @internal */
  _resize(pool: Pool, capacity: number): Promise<void> {
    return this.#operation(pool, 'resize', '', capacity, 'done', () => undefined)
  }

  /**
   * Every pool of the server's store (none from a server older than revision 4): page by page, in
   * order of name, each page asked after the last name of the one before, from a server of revision 8
   * (`POOL_PAGES`), which sends no frame larger than its bound however many pools it has; whole, in
   * the server's order, from an older one. An ask whose connection drops is asked again once the
   * client is back, within the patience, as an inspection of keys is (remote/client.ts
   * `#inspectKeys`): the next page, as the server keeps nothing between pages — or all of it again,
   * whole, if the server the client is back to speaks an older revision.
   */
  async inspect(): Promise<PoolInfo[]> {
    const pools: PoolInfo[] = []
    for (;;) {
      const revision = this.#link.revision()
      if (revision < POOLS) return []
      const paged = revision >= POOL_PAGES
      if (!paged) pools.length = 0
      const ask: ClientMessage = paged ? { type: 'inspectPoolsPage', after: pools[pools.length - 1]?.name ?? '' } : { type: 'inspectPools' }
      const answer = await new Promise<LinkFrame>(resolve => this.#link.send(ask, resolve))
      if (answer.type === 'pools' && !paged) return answer.pools.map(p => ({ kind: 'pool', ...p }))
      if (answer.type === 'poolsPage' && paged) {
        for (const p of answer.pools) pools.push({ kind: 'pool', ...p })
        if (!answer.more) return pools
        // A page holds a pool at least: one empty with more to come would be asked again forever.
        if (answer.pools.length === 0) throw new ClosedError(`inspect: ${masked(this.#link.url)}: unexpected answer poolsPage, empty with more to come`)
        continue
      }
      if (answer.type === 'error') throw errorOf(answer.code as ErrorCode, `inspect: ${answer.message}`)
      if (answer.type !== 'dropped') throw new ClosedError(`inspect: ${masked(this.#link.url)}: unexpected answer ${answer.type}`)
      await this.#link.reconnected(this.#link.clock.now() + PATIENCE, 'inspect: ')
    }
  }

  /**
   * The client is back: every claim still unanswered is asked again, with its id; then every answer
   * to let go whose letting go a dropped connection lost, or that it may have lost, is let go (before
   * revision 7, not one whose id was asked again since: that ask is answered the claim, and holds it;
   * from revision 7 after the asks again, so that the server answers them the open claim before it
   * takes back an answer of it).
   */
  reconnected(): void {
    for (const [key, p] of [...this.#pending]) {
      const refused = this.#refusal(`pool ${p.pool.name}`)
      for (const ask of [...p.asks]) {
        if (refused) {
          this.#leave(key, p, ask)
          ask.reject(refused)
        } else this.#ask(key, p, ask)
      }
    }
    for (const [k, go] of [...this.#lettingGo]) {
      this.#lettingGo.delete(k)
      if (this.#link.revision() < POOLS || (!this.#named() && this.#pending.has(`${go.pool.name}\0${go.id}`))) continue
      this.#letGo(go)
    }
    for (const [k, go] of [...this.#releasing]) {
      this.#releasing.delete(k)
      if (this.#link.revision() >= POOLS) this.#releaseDrawn(go)
    }
  }

  /** Whether a claim still awaits its answer (asked again once the client is back). */
  awaiting(): boolean {
    return this.#pending.size > 0
  }

  /** The client closed: every claim still unanswered is answered `error`. */
  fail(error: ClosedError): void {
    this.#lettingGo.clear()
    this.#releasing.clear()
    for (const [key, p] of [...this.#pending]) {
      for (const ask of [...p.asks]) {
        this.#leave(key, p, ask)
        ask.reject(new ClosedError(`${placeOf(p.pool, p.id, p.drawn)}: ${error.message}`, { cause: error }))
      }
    }
  }
}

/** Where a claim's messages say it is: its pool, and its id unless the id was drawn here (see `_claim`). */
function placeOf(pool: Pool, id: string, drawn: boolean): string {
  return drawn ? `pool ${pool.name}` : `pool ${pool.name}: claim ${JSON.stringify(id)}`
}

/** The key of an answer to let go in `RemotePools.#lettingGo`: its claim's key (pool and id), and the frame it answers. */
function letGoKey(key: string, frame: number): string {
  return `${key}\0${frame}`
}
