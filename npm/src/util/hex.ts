/**
 * Hex text of ids (32 lower-case digits, most significant first, as the codec's `push_hex` writes
 * them): the tables that spell a byte, and an id given as four 32-bit words.
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
