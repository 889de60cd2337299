/**
 * WebSocket data frames (RFC 6455 §5.2) built by hand, several into one buffer, for the `ws`
 * transport: the messages a connection sends in one turn of the event loop leave in one write of one
 * buffer, instead of passing one by one through `ws`'s sender and the stream's write queue (a header
 * buffer, a chunk and a callback each, then a writev of two chunks per message). On the wire it is the
 * same: one binary message per protocol frame, each a final (unfragmented) frame.
 *
 * Invariants:
 * - Each frame is whole and in order; the buffer holds nothing else.
 * - A client's frames are masked, each with its own 4-byte key from the platform's cryptographic
 *   source (drawn in blocks, as `ws` draws its own), as RFC 6455 §5.3 requires; a server's are not.
 * - The buffer comes from Node's pool (`Buffer.allocUnsafe`) and every byte of it is written here.
 * - Only small messages are batched (`BATCHED_MAX`): a larger one goes through `ws` as before, after
 *   whatever was batched ahead of it.
 */

/** The largest payload built here; larger ones are sent by `ws` itself. */
export const BATCHED_MAX = 16 * 1024

const KEYS = 1024
let keys = new Uint8Array(0)
let keyAt = 0

/** Four unpredictable bytes for a frame's masking key. */
function maskAt(out: Uint8Array, at: number): void {
  if (keyAt === keys.length) {
    keys = new Uint8Array(4 * KEYS)
    crypto.getRandomValues(keys)
    keyAt = 0
  }
  out[at] = keys[keyAt]!
  out[at + 1] = keys[keyAt + 1]!
  out[at + 2] = keys[keyAt + 2]!
  out[at + 3] = keys[keyAt + 3]!
  keyAt += 4
}

/** The size of a frame of `length` payload bytes (at most `BATCHED_MAX`). */
function frameSize(length: number, masked: boolean): number {
  return (length > 125 ? 4 : 2) + (masked ? 4 : 0) + length
}

/**
 * One buffer holding `payloads` as binary WebSocket messages, masked when `masked` (a client's).
 * Every payload is at most `BATCHED_MAX` bytes.
 */
export function framesOf(payloads: readonly Uint8Array[], masked: boolean): Uint8Array {
  let size = 0
  for (const p of payloads) size += frameSize(p.length, masked)
  // From Node's pool of small buffers: every byte is written below. A `new Uint8Array` of 64 bytes or
  // less (a granted, framed) lives in V8's heap, and the socket's write first moved it out of it (a
  // backing store made and copied); a larger one is a backing store of its own each time.
  const out = Buffer.allocUnsafe(size)
  let at = 0
  for (const p of payloads) {
    const length = p.length
    out[at++] = 0x82 // FIN, binary
    const maskBit = masked ? 0x80 : 0
    if (length > 125) {
      out[at++] = maskBit | 126
      out[at++] = length >>> 8
      out[at++] = length & 0xff
    } else out[at++] = maskBit | length
    if (masked) {
      maskAt(out, at)
      const k = at
      at += 4
      for (let i = 0; i < length; i++) out[at + i] = p[i]! ^ out[k + (i & 3)]!
    } else out.set(p, at)
    at += length
  }
  return out
}
