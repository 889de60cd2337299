/**
 * Wake-ups: how a waiting hold learns that a script granted it, without polling. The script that
 * grants (a release, a reap, anyone's acquire) publishes `g ID FENCE LEASE_MS REVOKE_MS` on the channel
 * the waiter gave, with the command the store gave (`publish`); for a pool's waiting claim, `p
 * REMAINING KEY ID` (it took its units) or `n REMAINING KEY ID` (it left the line), KEY its pool's hash.
 *
 * - Classic pub/sub (one server, Sentinel, or a Cluster whose client has no sharded subscribers): one
 *   channel per process, subscribed once when the store opens, whatever the number of its waiters. In a
 *   Cluster, Redis broadcasts each classic message to every node.
 * - Sharded pub/sub (a Cluster, whose client can): `SPUBLISH` reaches only the node of the channel's
 *   slot, so the channel carries the key's hash tag (`P:w:{l:NAME:KEY}:CLIENT`): the script may publish
 *   only in its own slot, and the channel follows the key when its slot moves. A process subscribes to
 *   a key's channel when one of its holds first waits for that key (`want`), and lets it go a while
 *   after its last waiter there left (`release`), so that a busy key is not subscribed again for every
 *   wait. A grant published before the subscription was in place is missed: `want` answers true then,
 *   and the store asks Redis where its waiters on that key stand.
 *
 * Channels are named as Redis knows them: after the client's `keyPrefix` (ioredis's; see
 * `Adapter.keyPrefix`), so that the Lua, which publishes to the name it is given, and an ACL of the
 * app's prefix (`&app:*`) see the same name as the subscription.
 *
 * A wake-up can be lost (the subscriber reconnecting, a failover): the waiter's next heartbeat answers
 * the grant all the same, and each time the subscriber may have missed messages the store heartbeats
 * all its waiters at once (`resubscribed`; one whose question was under way asks again once it is
 * answered, Redis having maybe run it before the grant), so a lost wake-up delays a waiter by one
 * round trip, not by a ttl/3.
 */

import type { Adapter, Subscriber } from './adapter.js'
import { clearTimer, setTimer, type Clock } from '../util/clock.js'

export interface Wake {
  id: string
  fence: number
  leaseMs: number
  revokeMs: number
}

/** A wake-up of a pool's waiting claim: `p` it took its units, `n` it left the line without them. */
export interface PoolWake {
  what: 'p' | 'n'
  remaining: number
  /** The pool's hash (`P:{p:NAME}:m`). */
  key: string
  id: string
}

/** How long a sharded channel stays subscribed after its last local waiter left. */
const IDLE_MS = 30_000

/**
 * A sharded channel: how many local waiters use it, its subscription, and the timer that ends it once
 * idle. It stays while a waiter uses it, its subscription failed or not: each waiter that `want`ed it
 * lets it go once (`release`), so a count of one kept by a failed subscription is never taken from
 * another's.
 */
interface Channel {
  refs: number
  subscribed: Promise<void>
  /** Whether the server took the subscription (a hold that waits from then on cannot miss its grant). */
  confirmed: boolean
  /** Whether the subscription failed: the next `want` tries again. */
  failed: boolean
  idle: unknown
}

export class Wakeups {
  /** The command the scripts publish with. */
  readonly publish: 'PUBLISH' | 'SPUBLISH'
  readonly sharded: boolean
  readonly #prefix: string
  readonly #clientId: string
  readonly #clock: Clock
  /** The channel of classic wake-ups; the end of every sharded one. */
  readonly #channel: string
  readonly #suffix: string
  /** The client's `keyPrefix`, which a pool's wake-up has before its hash's name. */
  readonly #keyPrefix: string
  readonly #channels = new Map<string, Channel>()
  #subscriber: Subscriber | undefined
  /** What `open` was given, to open the subscriber again (`#unpark`). */
  #open: { adapter: Adapter; woken: (wake: Wake | PoolWake) => void; resubscribed: () => void } | undefined
  /** The subscriber was closed since the application's client ended (`#park`), until it is back. */
  #parked = false
  #closed = false
  /** Parks and unparks, one after the other (each waits for the one before). */
  #turn: Promise<void> = Promise.resolve()
  /** Stops watching the application's client (`Adapter.watchEnd`). */
  #unwatch: (() => void) | undefined

  constructor(prefix: string, clientId: string, sharded: boolean, clock: Clock, keyPrefix = '') {
    this.#prefix = `${keyPrefix}${prefix}`
    this.#keyPrefix = keyPrefix
    this.#clientId = clientId
    this.#clock = clock
    this.sharded = sharded
    this.publish = sharded ? 'SPUBLISH' : 'PUBLISH'
    this.#channel = `${this.#prefix}:w:${clientId}`
    this.#suffix = `}:${clientId}`
  }

  /** The channel that tells this process of a grant of a key whose hash tag is `tag` (`{l:NAME:KEY}`). */
  channelFor(tag: string): string {
    return this.sharded ? `${this.#prefix}:w:${tag}:${this.#clientId}` : this.#channel
  }

  /**
   * Opens the pub/sub side; classic: subscribed once this resolves (no grant can be missed after). Where
   * the subscriber is a connection of holdfast's own, it goes when the application's client is closed
   * for good (quit, or given up reconnecting), which would leave it alone keeping the process alive,
   * and comes back when the client does (`Adapter.watchEnd`).
   */
  async open(adapter: Adapter, woken: (wake: Wake | PoolWake) => void, resubscribed: () => void): Promise<void> {
    this.#open = { adapter, woken, resubscribed }
    await this.#connect()
    this.#unwatch = adapter.watchEnd?.(
      () => this.#park(),
      () => this.#unpark(),
    )
  }

  /** Opens the subscriber (classic: and subscribes the process's channel). */
  async #connect(): Promise<void> {
    const { adapter, woken, resubscribed } = this.#open!
    const mine = (ch: string) => (this.sharded ? ch.endsWith(this.#suffix) : ch === this.#channel)
    this.#subscriber = await adapter.subscriber(
      (ch, text) => {
        if (!mine(ch)) return
        const wake = parse(text)
        // The script names a pool's hash as Redis has it; the store knows it without the keyPrefix.
        if (wake && 'key' in wake && this.#keyPrefix !== '' && wake.key.startsWith(this.#keyPrefix)) wake.key = wake.key.slice(this.#keyPrefix.length)
        if (wake) woken(wake)
      },
      () => {
        // Classic: subscribe again (an ioredis server's subscriber does not by itself, see adapter.ts;
        // node-redis's and a Cluster's do, and asking once more tells when that is done). Sharded: the
        // client subscribes again by itself. Then the store catches up on what may have been
        // published meanwhile.
        if (this.sharded) resubscribed()
        else void this.#subscriber?.subscribe(this.#channel).then(resubscribed, resubscribed)
      },
    )
    if (!this.sharded) await this.#subscriber.subscribe(this.#channel)
  }

  /** The application's client is closed for good: the subscriber's connection goes (nothing can be granted meanwhile). */
  #park(): void {
    this.#turn = this.#turn.then(async () => {
      if (this.#parked || this.#closed || !this.#subscriber) return
      this.#parked = true
      const subscriber = this.#subscriber
      this.#subscriber = undefined
      await subscriber.close().catch(() => {})
    })
  }

  /**
   * The application's client is back (connected again): so is the subscriber, with every channel a
   * waiter wants, then the store catches up on what was published meanwhile. One that cannot connect
   * stays parked until the client is back the next time.
   */
  #unpark(): void {
    this.#turn = this.#turn.then(async () => {
      if (!this.#parked || this.#closed) return
      try {
        await this.#connect()
      } catch {
        // Parked still; a subscriber made whose subscription failed goes too.
        const made = this.#subscriber
        this.#subscriber = undefined
        await made?.close().catch(() => {})
        return
      }
      this.#parked = false
      for (const [channel, entry] of this.#channels) void this.#subscribe(channel, entry)
      this.#open!.resubscribed()
    })
  }

  /**
   * A hold of this process waits on `channel`. Sharded: subscribes to it unless it is already;
   * resolves true once subscribed, when the subscription was not in place as the hold joined the line
   * (a grant may have been published before: ask Redis), false when it was. Classic: false at once.
   * Never rejects (a failed subscription leaves the waiter to its heartbeats, and is tried again by
   * the next `want`).
   */
  want(channel: string): Promise<boolean> {
    if (!this.sharded || (!this.#subscriber && !this.#parked)) return Promise.resolve(false)
    const known = this.#channels.get(channel)
    if (known) {
      known.refs++
      if (known.idle !== undefined) clearTimer(this.#clock, known.idle)
      known.idle = undefined
      if (known.failed) return this.#subscribe(channel, known)
      const missed = !known.confirmed
      return known.subscribed.then(
        () => missed,
        () => false,
      )
    }
    const entry: Channel = { refs: 1, subscribed: Promise.resolve(), confirmed: false, failed: false, idle: undefined }
    this.#channels.set(channel, entry)
    return this.#subscribe(channel, entry)
  }

  /** Subscribes to `channel` (again, after a failure); resolves true once subscribed, false if it failed. */
  #subscribe(channel: string, entry: Channel): Promise<boolean> {
    entry.failed = false
    entry.confirmed = false
    // Parked: subscribed once the subscriber is back (`#unpark`).
    const subscribed = this.#subscriber ? this.#subscriber.subscribe(channel) : Promise.reject(new Error('parked'))
    entry.subscribed = subscribed
    return subscribed.then(
      () => {
        if (entry.subscribed === subscribed) entry.confirmed = true
        return true
      },
      () => {
        if (entry.subscribed === subscribed) entry.failed = true
        return false
      },
    )
  }

  /** A hold that `want`ed `channel` no longer waits on it: the channel goes once idle for a while. */
  release(channel: string): void {
    const entry = this.#channels.get(channel)
    if (!entry || --entry.refs > 0) return
    entry.idle = setTimer(
      this.#clock,
      () => {
        if (this.#channels.get(channel) !== entry || entry.refs > 0) return
        this.#channels.delete(channel)
        if (!entry.failed) void this.#subscriber?.unsubscribe(channel).catch(() => {})
      },
      IDLE_MS,
    )
  }

  async close(): Promise<void> {
    this.#closed = true
    this.#unwatch?.()
    this.#unwatch = undefined
    await this.#turn
    for (const entry of this.#channels.values()) if (entry.idle !== undefined) clearTimer(this.#clock, entry.idle)
    this.#channels.clear()
    await this.#subscriber?.close().catch(() => {})
    this.#subscriber = undefined
  }
}

function parse(text: string): Wake | PoolWake | undefined {
  if (text[0] === 'p' || text[0] === 'n') return parsePool(text)
  const [g, id, fence, leaseMs, revokeMs] = text.split(' ')
  if (g !== 'g' || !id) return undefined
  const wake = { id, fence: Number(fence), leaseMs: Number(leaseMs), revokeMs: Number(revokeMs) }
  return Number.isSafeInteger(wake.fence) && wake.leaseMs > 0 ? wake : undefined
}

/** A pool claim's wake-up (scripts/pool.ts): `p REMAINING KEY ID` (it took its units) or `n …` (it left the line); the id may hold spaces. */
function parsePool(text: string): PoolWake | undefined {
  const m = /^([pn]) (\d+) (\S+) (.+)$/s.exec(text)
  return m ? { what: m[1] as 'p' | 'n', remaining: Number(m[2]), key: m[3]!, id: m[4]! } : undefined
}
