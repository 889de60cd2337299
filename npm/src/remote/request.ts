/**
 * What the store keeps of a request made over a connection, and the sink that answers its client.
 * The store records it where it records local holds, so that engine events find it; the server
 * (server.ts) owns the sink.
 */

import type { ErrorCode } from '../errors.js'
import { type Id, hexOfWords, idWords, idWordsOf } from '../util/hex.js'
import { randomWord } from '../util/random.js'
import { keepShapes } from '../util/shapes.js'

/** Where `RemoteRequest`'s constructor reads an id's words into. */
const WORDS = new Uint32Array(4)

/** Whom a request over a connection answers. */
export interface RemoteSink {
  /** The hold is granted (or, asked again, still holds): `fence`, and `revokeIn` ms to its maxHold (0: none). */
  granted(record: RemoteRequest, fence: number, revokeIn: number): void
  /** A hold that would not wait found the key held. */
  busy(record: RemoteRequest): void
  /** The hold ended without a grant. */
  failed(record: RemoteRequest, code: ErrorCode, message: string): void
  /** A granted lease was lost: revoked, past its ttl, or the store closed. */
  lost(record: RemoteRequest, code: 'lost' | 'closed'): void
}

/**
 * # Ids as words
 * A request's id and its lease's are kept as four 32-bit words each, most significant first (`r0`-`r3`,
 * `l0`-`l3`), as the engine takes them (`core.holdRemote`) and the `granted` frame carries them
 * (wire.ts `encodeGrantedOf`): a lease made by the server is drawn as four random words, and its 32
 * hex digits are made only when asked for (`lease`: a `lost` frame, a host's hooks). Through hex, every
 * hold over a connection made one id as a string and read both ids back from hex twice (about 0.3 µs
 * of the server's 2 µs of a hold, Node 24). A request's id read by hand from its frame comes as
 * words too, and its hex is made only when asked for (`request`: a host that listens for waiting
 * sessions, an inspection). `idsOk` is 0 when both ids are 32 hex digits, else which
 * is not (1: the request's, 2: the lease's): the store refuses such a hold `invalid`.
 */
export class RemoteRequest {
  /** The engine's id of the request, once made. */
  req = -1
  holding = false
  r0 = 0
  r1 = 0
  r2 = 0
  r3 = 0
  l0 = 0
  l1 = 0
  l2 = 0
  l3 = 0
  readonly idsOk: 0 | 1 | 2
  #request: string | undefined
  #lease: string | undefined

  constructor(
    readonly kind: 'lock' | 'semaphore',
    readonly name: string,
    readonly key: string,
    /** The client's request id, as 32 hex digits or as words. */
    request: Id,
    /** The lease's secret id as 32 hex digits, or `undefined` for a new one drawn at random. */
    lease: string | undefined,
    readonly ttl: number,
    /** ms; 0 for none. */
    readonly maxHold: number,
    /** The connection it was last asked on, and the frame id to answer. */
    public conn: number,
    public frame: number,
    public sink: RemoteSink,
    /** A semaphore's limit (1 for a lock), for hosts that keep the lease and take it back later. */
    readonly limit = 1,
  ) {
    const w = WORDS
    let ok: 0 | 1 | 2 = 0
    if (idWordsOf(request, w, 0)) {
      this.r0 = w[0]! | 0
      this.r1 = w[1]! | 0
      this.r2 = w[2]! | 0
      this.r3 = w[3]! | 0
    } else ok = 1
    if (lease === undefined) {
      this.l0 = randomWord()
      this.l1 = randomWord()
      this.l2 = randomWord()
      this.l3 = randomWord()
    } else if (idWords(lease, w, 0)) {
      this.l0 = w[0]! | 0
      this.l1 = w[1]! | 0
      this.l2 = w[2]! | 0
      this.l3 = w[3]! | 0
    } else if (ok === 0) ok = 2
    this.idsOk = ok
    this.#request = typeof request === 'string' ? request : undefined
    this.#lease = lease
  }

  /** The client's request id, as 32 hex digits. */
  get request(): string {
    return (this.#request ??= hexOfWords(this.r0, this.r1, this.r2, this.r3))
  }

  /** The lease's secret id, as 32 hex digits. */
  get lease(): string {
    return (this.#lease ??= hexOfWords(this.l0, this.l1, this.l2, this.l3))
  }

  place(): string {
    return `${this.kind} ${this.name}: key ${JSON.stringify(this.key)}`
  }
}

/**
 * A request's shape, kept (util/shapes.ts): a server's records all die when its clients have no hold,
 * and a full collection would then free their shape, and with it the code of a hold's path optimized
 * for it. Its `req` is a double, as the engine's view gives it (a small integer there first was the
 * shape V8 left behind); moved along where the last live record ends (store/remote-holds.ts), as the
 * client's holds.
 */
// (Its lease id is given, not drawn: a Worker may not draw random numbers in its global scope.)
const zeros = '0'.repeat(32)
const shaped = new RemoteRequest('lock', '', '', zeros, zeros, 1_000, 0, 0, 0, { granted() {}, busy() {}, failed() {}, lost() {} })
shaped.req = 0.5
export const followRequestShape = keepShapes([shaped], request => {
  request.holding = false
})
