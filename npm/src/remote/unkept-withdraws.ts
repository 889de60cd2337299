/**
 * Withdraws a server answered `storage` (their write failed), which their client asks again
 * (pool/client.ts `#letGo`). The store undid the claim in memory all the same, and writes it again
 * with the pools' next write (pool/writes.ts); but a restart before that write lands reads the claim
 * back, which nobody then knows was withdrawn — with an id the client drew, taken for good. So the
 * client asks again until the server says the undo is kept, and a withdraw asked again is answered
 * here, not by the store (which finds nothing left to undo, and would answer 0): `storage` again
 * while a pools' write is owed, 1 once one landed (a snapshot: it carries the undo). A store the host
 * reopened since (after a trap) read the pools as storage kept them: what was kept here is forgotten,
 * and the withdraw is the store's to answer, as after any restart (0: the claim read back, which a
 * drawn id's client then releases). The same as a Durable Object does for its RPC callers
 * (cloudflare/object.ts `#withdraw`), through this same record.
 *
 * A withdraw is known by its party (the client, on all its connections), its pool, its claim and the
 * claim frame it names (revision 7; 0 before). Entries live while a write is owed: once none is, every
 * one of them was kept, and they all go.
 */

import { StorageError } from '../errors.js'
import type { Party } from '../pool/pool.js'
import type { ServedStore } from './host.js'

export class UnkeptWithdraws {
  /** The store the entries were answered `storage` by. */
  #store: ServedStore | undefined
  /** By party: its withdraws answered `storage`, by pool, claim and frame named. */
  readonly #unkept = new Map<Party, Set<string>>()

  /** `withdraw` of `party` was answered `error`: remembered if its write failed (`storage`). */
  failed(store: ServedStore, party: Party, withdraw: string, error: unknown): void {
    if (!(error instanceof StorageError)) return
    if (this.#store !== store) this.#forget(store)
    let mine = this.#unkept.get(party)
    if (!mine) this.#unkept.set(party, (mine = new Set()))
    mine.add(withdraw)
  }

  /**
   * The answer of `withdraw` of `party`, asked again after it was answered `storage`: rejects
   * `StorageError` while a pools' write is owed, resolves `true` (undone, and kept) once none is.
   * `undefined`: not one of those; the store answers it.
   */
  again(store: ServedStore, party: Party, withdraw: string, place: string): Promise<boolean> | undefined {
    if (this.#unkept.size === 0) return undefined
    if (this.#store !== store) return void this.#forget(store)
    const mine = this.#unkept.get(party)
    if (!mine?.has(withdraw)) return undefined
    if (store._poolsOwed()) return Promise.reject(new StorageError(`${place}: withdrawn, but storage has not kept it yet (ask again)`))
    this.#forget(store)
    return Promise.resolve(true)
  }

  /** Every entry goes: kept since, or read back by another store. */
  #forget(store: ServedStore): void {
    this.#store = store
    this.#unkept.clear()
  }
}

/** The key of a withdraw in `UnkeptWithdraws`: its pool, claim and the claim frame it names (0: none). */
export function withdrawKey(pool: string, claim: string, ask: number): string {
  return `${pool}\0${claim}\0${ask}`
}
