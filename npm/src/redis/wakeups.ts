/**
 * Wake-ups: how a waiting hold learns that a script granted it, without polling. The script that
 * grants (a release, a reap, anyone's acquire) publishes `g ID FENCE LEASE_MS REVOKE_MS` on the channel
 * the waiter gave; this process listens on one pub/sub connection (`duplicate()` of the client) to one
 * channel of its own, whatever the number of its waiters.
 *
 * A wake-up can be lost (the subscriber reconnecting): the waiter's next heartbeat answers the grant
 * all the same, and after every reconnect of the subscriber the store heartbeats all its waiters at
 * once (`resubscribed`), so a lost wake-up delays a waiter by one round trip, not by a ttl/3.
 */

import type { Adapter, Subscriber } from './adapter.js'

export interface Wake {
  id: string
  fence: number
  leaseMs: number
  revokeMs: number
}

export class Wakeups {
  /** The channel grants for this process are published on. */
  readonly channel: string
  /** The command the scripts publish with. */
  readonly publish = 'PUBLISH'
  #subscriber: Subscriber | undefined

  constructor(prefix: string, clientId: string) {
    this.channel = `${prefix}:w:${clientId}`
  }

  /** Subscribes; resolves once the subscription is in place (no grant can be missed after). */
  async open(adapter: Adapter, woken: (wake: Wake) => void, resubscribed: () => void): Promise<void> {
    const channel = this.channel
    let subscriber: Subscriber | undefined
    subscriber = await adapter.subscriber(
      (ch, text) => {
        if (ch !== channel) return
        const wake = parse(text)
        if (wake) woken(wake)
      },
      () => {
        // Reconnected: the client subscribes again by itself; ask once more to know when it is done,
        // then let the store catch up on what may have been published meanwhile.
        void subscriber?.subscribe(channel).then(resubscribed, resubscribed)
      },
    )
    await subscriber.subscribe(channel)
    this.#subscriber = subscriber
  }

  async close(): Promise<void> {
    await this.#subscriber?.close().catch(() => {})
    this.#subscriber = undefined
  }
}

function parse(text: string): Wake | undefined {
  const [g, id, fence, leaseMs, revokeMs] = text.split(' ')
  if (g !== 'g' || !id) return undefined
  const wake = { id, fence: Number(fence), leaseMs: Number(leaseMs), revokeMs: Number(revokeMs) }
  return Number.isSafeInteger(wake.fence) && wake.leaseMs > 0 ? wake : undefined
}
