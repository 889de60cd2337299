/**
 * Durations: a number is milliseconds; text is whole numbers with units, largest first, no spaces:
 * `'250ms'`, `'30s'`, `'1m30s'`, `'2h'`, `'1d'`. Text without a unit is refused, so that `'250'` cannot
 * be mistaken for seconds.
 */

import { InvalidError } from '../errors.js'
import { quoted } from './shown.js'

export type Duration = number | string

const units: Record<string, number> = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000, ms: 1 }
const order = ['d', 'h', 'm', 's', 'ms']
const part = /(\d+)(ms|d|h|m|s)/y

/**
 * Milliseconds of a duration, or an `InvalidError` naming `what` and the value. `Infinity` passes only
 * where `infinite` is allowed (a wait without limit).
 */
export function toMs(value: unknown, what: string, infinite = false): number {
  if (typeof value === 'number') {
    if (value === Infinity && infinite) return Infinity
    if (Number.isFinite(value) && value >= 0) return value
    throw new InvalidError(`${what} ${String(value)} must be a duration: milliseconds (0 or more), or text such as '30s'`)
  }
  if (typeof value === 'string') {
    const ms = parseText(value)
    if (ms !== undefined) return ms
    throw new InvalidError(`${what} ${quoted(value)} must be whole numbers with units, largest first, such as '250ms', '30s', '1m30s', '2h', '1d'`)
  }
  throw new InvalidError(`${what} must be a duration (a number of ms or text such as '30s'), not ${typeof value}`)
}

function parseText(text: string): number | undefined {
  if (text.length === 0) return undefined
  let total = 0
  let at = 0
  let last = -1
  while (at < text.length) {
    part.lastIndex = at
    const m = part.exec(text)
    if (!m) return undefined
    const rank = order.indexOf(m[2]!)
    if (rank <= last) return undefined
    last = rank
    total += Number(m[1]) * units[m[2]!]!
    at = part.lastIndex
  }
  return Number.isSafeInteger(total) ? total : undefined
}
