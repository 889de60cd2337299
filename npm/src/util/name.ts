/**
 * The name of a lock, semaphore or pool, as every store takes it: 1 to 64 of `a-z 0-9 _ . -`, starting
 * with a letter or digit (the engine's `bounds.rs` holds the same rule, and says it in the same words,
 * so that a bad name reads alike in process, over a connection, on Redis and from a Worker). A name of
 * more than 100 characters is quoted cut (util/shown.ts `quoted`); the engine never sees one that long
 * (every store checks here first, and the wire carries 64 bytes at most).
 */

import { InvalidError } from '../errors.js'
import { placeText, quoted } from './shown.js'

export const NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/

/**
 * Checks `name` for a `kind` (`lock`, `semaphore`, `pool`); throws an `InvalidError` at its place:
 * `lock: name must be a string, not number`, `pool Seats!: name "Seats!" must match …`.
 */
export function checkName(kind: string, name: unknown): asserts name is string {
  if (typeof name !== 'string') throw new InvalidError(`${kind}: name must be a string, not ${typeof name}`)
  if (!NAME.test(name)) throw new InvalidError(`${kind} ${placeText(name)}: name ${quoted(name)} must match [a-z0-9][a-z0-9_.-]{0,63}`)
}
