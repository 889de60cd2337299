import { utf8Length } from './key.js'

/** The most characters of a text an error message quotes. */
const SHOWN_CHARS = 100

/**
 * Text as an error message quotes it: whole, up to `SHOWN_CHARS` characters (code points); past that,
 * its first `SHOWN_CHARS`, `…` and its length in bytes. A request body passed by mistake as a name or a
 * duration made a message the size of the body (twice, for a name), into every log line that printed it.
 */
export function quoted(text: string): string {
  const start = head(text)
  return start === undefined ? JSON.stringify(text) : `${JSON.stringify(start)}… (${utf8Length(text)} bytes)`
}

/** Text as an error message names a place by it (unquoted): whole, or its first `SHOWN_CHARS` and `…`. */
export function placeText(text: string): string {
  const start = head(text)
  return start === undefined ? text : `${start}…`
}

/** The first `SHOWN_CHARS` code points of `text`, or undefined when it has no more. */
function head(text: string): string | undefined {
  if (text.length <= SHOWN_CHARS) return undefined
  let at = 0
  let count = 0
  for (const c of text) {
    if (count === SHOWN_CHARS) return text.slice(0, at)
    at += c.length
    count++
  }
  return undefined
}

/**
 * A bad value as an error message names it: a number as itself, text quoted (so that `'10'` does not
 * read as the number 10, which would pass; a long one cut, see `quoted`), a bigint with its `n`, `null`, `undefined` and booleans as
 * written, and anything else by what it is (`an object`, `a function`, `a symbol`), never its
 * contents.
 */
export function shown(value: unknown): string {
  switch (typeof value) {
    case 'number':
    case 'boolean':
    case 'undefined':
      return String(value)
    case 'string':
      return quoted(value)
    case 'bigint':
      return `${value}n`
    default:
      return value === null ? 'null' : `a${typeof value === 'object' ? 'n' : ''} ${typeof value}`
  }
}
