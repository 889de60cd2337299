/**
 * What the store keeps of a request made over a connection, and the sink that answers its client.
 * The store records it where it records local holds, so that engine events find it; the server
 * (server.ts) owns the sink.
 */

import type { ErrorCode } from '../errors.js'

/** The value of each ASCII code as a hex digit, or -1. */
const HEX_VALUE = new Int8Array(128).fill(-1)
for (let c = 0; c < 10; c++) HEX_VALUE[48 + c] = c
for (let c = 0; c < 6; c++) HEX_VALUE[97 + c] = HEX_VALUE[65 + c] = 10 + c

/** The value of the hex digit at `i` of `hex`, or -1 (any other character). */
export function hexDigit(hex: string, i: number): number {
  const c = hex.charCodeAt(i)
  return c < 128 ? HEX_VALUE[c]! : -1
}

/**
 * Writes an id of 32 hex digits into `words[at]` to `words[at + 3]` as four 32-bit words, the most
 * significant first (as `core.holdRemote` takes it: crate/wasm/src/remote.rs). False, and nothing
 * to rely on written, when `hex` is not 32 hex digits.
 */
export function idWords(hex: string, words: Uint32Array, at: number): boolean {
  if (hex.length !== 32) return false
  for (let w = 0; w < 4; w++) {
    let word = 0
    for (let i = 8 * w; i < 8 * w + 8; i++) {
      const d = hexDigit(hex, i)
      if (d < 0) return false
      word = (word << 4) | d
    }
    words[at + w] = word
  }
  return true
}

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

export class RemoteRequest {
  /** The engine's id of the request, once made. */
  req = -1
  holding = false

  constructor(
    readonly kind: 'lock' | 'semaphore',
    readonly name: string,
    readonly key: string,
    /** The client's request id and the lease's secret id, as 32 hex digits. */
    readonly request: string,
    readonly lease: string,
    readonly ttl: number,
    /** ms; 0 for none. */
    readonly maxHold: number,
    /** The connection it was last asked on, and the frame id to answer. */
    public conn: number,
    public frame: number,
    public sink: RemoteSink,
    /** A semaphore's limit (1 for a lock), for hosts that keep the lease and take it back later. */
    readonly limit = 1,
  ) {}

  place(): string {
    return `${this.kind} ${this.name}: key ${JSON.stringify(this.key)}`
  }
}
