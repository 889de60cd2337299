/**
 * Keys: strings, or numbers spelled in decimal (`42` and `'42'` are one key), 1 to 1024 bytes of UTF-8.
 * Keys never cross into wasm on the in-process path, so they are checked here, without encoding them:
 * a string of at most 341 UTF-16 units is at most 1023 bytes, and only longer ones are counted.
 */

import { InvalidError } from './errors.js'

export const MAX_KEY_BYTES = 1024

export function toKey(key: unknown, place: string): string {
  if (typeof key === 'string') {
    if (key.length === 0) throw new InvalidError(`${place}: key "" must be 1 to ${MAX_KEY_BYTES} bytes`)
    if (key.length > 341) {
      const bytes = utf8Length(key)
      if (bytes > MAX_KEY_BYTES) throw new InvalidError(`${place}: key of ${bytes} bytes must be 1 to ${MAX_KEY_BYTES} bytes`)
    }
    return key
  }
  if (typeof key === 'number' && Number.isSafeInteger(key)) return String(key)
  throw new InvalidError(`${place}: key ${typeof key === 'number' ? String(key) : `of type ${key === null ? 'null' : typeof key}`} must be a string or a whole number`)
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
