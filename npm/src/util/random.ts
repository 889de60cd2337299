/**
 * Random ids (16 bytes, as 32 hex digits) from the platform's cryptographic source, drawn 1,024 at a
 * time (16 KiB): a `getRandomValues` call costs about as much for 16 KiB as for 1 KiB (1.5–3 µs on
 * Node 24), so that an id costs 3 ns of it rather than 27.
 *
 * The id is made in one `String.fromCharCode` of its 32 digits: a flat string at once. Joined two
 * digits at a time it was a rope of 16 pieces, which every later read (a map's hash, the encoder's
 * digits) flattened first — together 0.2 µs more an id on Node 24 and Bun, and two ids a hold over a
 * connection (its request id, its lease id).
 */

import { HEX_HIGH as HIGH, HEX_LOW as LOW } from './hex.js'

const BATCH = 1024
let pool = new Uint8Array(0)
/** The pool as words (`randomWord`): `at` is always a multiple of 4, since ids and words take 16 and 4 bytes. */
let words = new Int32Array(0)
let at = 0

/** Makes the pool hold at least `n` bytes not handed out yet. */
function draw(n: number): void {
  if (at + n <= pool.length) return
  pool = new Uint8Array(16 * BATCH)
  words = new Int32Array(pool.buffer)
  crypto.getRandomValues(pool)
  at = 0
}

export function randomId(): string {
  draw(16)
  const p = pool
  const i = at
  // biome-ignore format: the 16 bytes, two digits each, in order
  const hex = String.fromCharCode(
    HIGH[p[i]!]!, LOW[p[i]!]!, HIGH[p[i + 1]!]!, LOW[p[i + 1]!]!, HIGH[p[i + 2]!]!, LOW[p[i + 2]!]!, HIGH[p[i + 3]!]!, LOW[p[i + 3]!]!,
    HIGH[p[i + 4]!]!, LOW[p[i + 4]!]!, HIGH[p[i + 5]!]!, LOW[p[i + 5]!]!, HIGH[p[i + 6]!]!, LOW[p[i + 6]!]!, HIGH[p[i + 7]!]!, LOW[p[i + 7]!]!,
    HIGH[p[i + 8]!]!, LOW[p[i + 8]!]!, HIGH[p[i + 9]!]!, LOW[p[i + 9]!]!, HIGH[p[i + 10]!]!, LOW[p[i + 10]!]!, HIGH[p[i + 11]!]!, LOW[p[i + 11]!]!,
    HIGH[p[i + 12]!]!, LOW[p[i + 12]!]!, HIGH[p[i + 13]!]!, LOW[p[i + 13]!]!, HIGH[p[i + 14]!]!, LOW[p[i + 14]!]!, HIGH[p[i + 15]!]!, LOW[p[i + 15]!]!,
  )
  // Zero what was used, so that an id never lingers in memory after it was handed out.
  pool.fill(0, i, i + 16)
  at = i + 16
  return hex
}

/**
 * A random 32-bit word, as a signed number (a small integer to V8, in any field), from the same pool:
 * a client keeps its request ids as four (remote/client.ts), and makes no string for one.
 */
export function randomWord(): number {
  // Read as one word of the pool's (in the platform's byte order: random either way), and `draw`
  // called only when the pool runs out: a hold over a connection draws four on each side (its lease
  // id, its request id), mostly in code not optimized yet (a server's first holds, a client that
  // holds rarely), where every call and every byte read costs.
  if (at + 4 > pool.length) draw(4)
  const i = at >> 2
  const word = words[i]!
  words[i] = 0
  at += 4
  return word
}
