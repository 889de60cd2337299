/**
 * Checks of option objects: unknown names are refused by name (that is what catches typos); and of
 * the arguments of a function that takes no options, which refuses any past its own.
 */

import { InvalidError } from '../errors.js'

export function checkOptions(value: unknown, place: string, known: readonly string[]): Record<string, unknown> {
  if (value === undefined) return {}
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidError(`${place}: options must be an object, not ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`)
  }
  for (const name of Object.keys(value)) {
    if (!known.includes(name)) throw new InvalidError(`${place}: unknown option ${JSON.stringify(name)} (known: ${known.join(', ')})`)
  }
  return value as Record<string, unknown>
}

/**
 * A signal option: anything with `aborted` and both listener methods (an `AbortSignal` of any realm or
 * polyfill). One without `removeEventListener` would be accepted, then throw where its waiter is
 * answered and stops listening: inside the release that grants it, midway through a line.
 */
export function checkSignal(value: unknown, place: string): AbortSignal | undefined {
  if (value === undefined) return undefined
  const s = value as AbortSignal | null
  if (
    typeof s === 'object' &&
    s !== null &&
    typeof s.aborted === 'boolean' &&
    typeof s.addEventListener === 'function' &&
    typeof s.removeEventListener === 'function'
  )
    return s
  throw new InvalidError(`${place}: option signal must be an AbortSignal`)
}

/**
 * The arguments past those a function takes (`fileStorage(dir, { fsync: false })`, `memoryStorage(values)`):
 * they would go unheard, the function running without what it was asked, so they are refused as an
 * unknown option name is. One left `undefined` (a wrapper passing its own along) is none, as options
 * left `undefined` are. `takes` names the arguments it does take ('' for none).
 */
export function checkNoMore(extra: readonly unknown[], what: string, takes: string): void {
  if (!extra.some(a => a !== undefined)) return
  throw new InvalidError(takes === '' ? `${what} takes no arguments` : `${what} takes (${takes}): nothing after ${takes}`)
}
