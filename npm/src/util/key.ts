/**
 * Keys: strings, or numbers spelled in decimal (`42` and `'42'` are one key), 1 to 1024 bytes of UTF-8.
 * A number must be a safe integer: past 2^53-1 a number is no longer exact (2^53 + 1 reads as 2^53),
 * so two keys a caller told apart would be one.
 * Keys never cross into wasm on the in-process path, so they are checked here, without encoding them:
 * a string of at most 341 UTF-16 units is at most 1023 bytes, and only longer ones are counted.
 *
 * A key must be well-formed Unicode: a lone surrogate (a string cut in the middle of an emoji) is an
 * `InvalidError`. In process the JS string is compared as it is, but on the wire (and in anything
 * that encodes it as UTF-8) a lone surrogate becomes U+FFFD, so `'\ud800'`, `'\udc00'` and `'\ufffd'`
 * would be three keys here and one over a connection: one key held twice at once. Refusing them gives
 * a key one meaning everywhere (#13). `isWellFormed` (Node 20, Bun, Deno, workerd) answers a one-byte
 * string at once, so the hot path pays almost nothing for it.
 */

import { InvalidError } from '../errors.js'

export const MAX_KEY_BYTES = 1024

export function toKey(key: unknown, place: string): string {
  if (typeof key === 'string') {
    if (key.length === 0) throw new InvalidError(`${place}: key "" must be 1 to ${MAX_KEY_BYTES} bytes`)
    if (!key.isWellFormed())
      throw new InvalidError(
        `${place}: key ${JSON.stringify(key)} is not well-formed Unicode (a lone surrogate at index ${loneSurrogate(key)}): a key must be text that UTF-8 can carry`,
      )
    if (key.length > 341) {
      const bytes = utf8Length(key)
      if (bytes > MAX_KEY_BYTES) throw new InvalidError(`${place}: key of ${bytes} bytes must be 1 to ${MAX_KEY_BYTES} bytes`)
    }
    return key
  }
  if (typeof key === 'number' && Number.isSafeInteger(key)) return String(key)
  throw new InvalidError(
    `${place}: key ${typeof key === 'number' ? String(key) : `of type ${key === null ? 'null' : typeof key}`} must be a string or a whole number from -(2^53-1) to 2^53-1`,
  )
}

/** The index of the first lone surrogate in `text`, or -1. */
export function loneSurrogate(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0xd800 || c > 0xdfff) continue
    if (c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++
    else return i
  }
  return -1
}

/** UTF-8 length, a lone surrogate counting as its replacement character (3 bytes). */
export function utf8Length(text: string): number {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) bytes += 1
    else if (c < 0x800) bytes += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}
