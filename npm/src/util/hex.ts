/**
 * Hex text of ids (32 digits, most significant first; written lower case, as the codec's `push_hex`
 * writes them, and read in either case): the tables that spell a byte, an id given as four 32-bit
 * words, and an id read back into words. An id a frame carried (`Id`) is one or the other: hex when
 * the codec read the frame, words when wire.ts read it by hand (`readHeld`), so that a hold's frames
 * make no string of their ids on the server.
 */

/** The character codes of each byte's high and low hex digit, lower case. */
export const HEX_HIGH = new Uint8Array(256)
export const HEX_LOW = new Uint8Array(256)
for (let b = 0; b < 256; b++) {
  HEX_HIGH[b] = '0123456789abcdef'.charCodeAt(b >> 4)
  HEX_LOW[b] = '0123456789abcdef'.charCodeAt(b & 15)
}

/** An id given as four words (most significant first) as its 32 hex digits. */
export function hexOfWords(w0: number, w1: number, w2: number, w3: number): string {
  const hex8 = (w: number) => (w >>> 0).toString(16).padStart(8, '0')
  return hex8(w0) + hex8(w1) + hex8(w2) + hex8(w3)
}

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

/** An id as four 32-bit words, most significant first (as the engine takes it). */
export interface WordId {
  readonly w0: number
  readonly w1: number
  readonly w2: number
  readonly w3: number
}

/** An id as a frame carried it: 32 hex digits, or its words (see the module doc). */
export type Id = string | WordId

/** An id as its 32 hex digits (made, for one given as words). */
export function hexOfId(id: Id): string {
  return typeof id === 'string' ? id : hexOfWords(id.w0, id.w1, id.w2, id.w3)
}

/** `idWords` of an id either way: one given as words is always well formed. */
export function idWordsOf(id: Id, words: Uint32Array, at: number): boolean {
  if (typeof id === 'string') return idWords(id, words, at)
  words[at] = id.w0
  words[at + 1] = id.w1
  words[at + 2] = id.w2
  words[at + 3] = id.w3
  return true
}
