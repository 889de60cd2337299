/** Checks of option objects: unknown names are refused by name (that is what catches typos). */

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

export function checkSignal(value: unknown, place: string): AbortSignal | undefined {
  if (value === undefined) return undefined
  const s = value as AbortSignal | null
  if (typeof s === 'object' && s !== null && typeof s.aborted === 'boolean' && typeof s.addEventListener === 'function') return s
  throw new InvalidError(`${place}: option signal must be an AbortSignal`)
}
