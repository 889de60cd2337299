/**
 * A first-in first-out line of things: `push` at its end, `shift` from its front, `remove` from
 * anywhere. The line of holds waiting for a key the store granted itself (store/lent-fences.ts
 * # Lines the store keeps itself).
 *
 * Invariants:
 * - `shift` answers the things in the order they were pushed, less those removed.
 * - The things in line are `items[head..]`, all defined; `size` is their count. The slots before
 *   `head` were emptied (no thing is kept alive by the line once it left it), and are dropped once
 *   they are at least half the array, so a long-lived line of a busy key stays as long as its waiters.
 */

import { keepShape } from './shapes.js'

export class Line<T> {
  /**
   * Made with an element and emptied, so that it holds any value from the start: a new empty array
   * holds small integers only, and the first thing pushed into one would deoptimize a `push` that V8
   * optimized for the lines before (each busy period of a key has a line of its own).
   */
  readonly #items: (T | undefined)[] = emptyLine<T>()
  #head = 0

  get size(): number {
    return this.#items.length - this.#head
  }

  push(thing: T): void {
    this.#items.push(thing)
  }

  /** The first thing in line, taken out of it; `undefined` when the line is empty. */
  shift(): T | undefined {
    const items = this.#items
    const head = this.#head
    if (head === items.length) return undefined
    const thing = items[head]
    items[head] = undefined
    if (head + 1 === items.length) {
      // Emptied: start again at 0 (the array keeps its backing store for the next pushes).
      items.length = 0
      this.#head = 0
    } else if (head >= 1024 && head * 2 >= items.length) {
      items.splice(0, head + 1)
      this.#head = 0
    } else this.#head = head + 1
    return thing
  }

  /** Takes `thing` out of the line; answers whether it was in it. */
  remove(thing: T): boolean {
    const items = this.#items
    const at = items.indexOf(thing, this.#head)
    if (at < 0) return false
    items.splice(at, 1)
    return true
  }

  /** Every thing in line, first to last, taken out of it (the line is left empty). */
  drain(): T[] {
    const things = this.#items.slice(this.#head) as T[]
    this.#items.length = 0
    this.#head = 0
    return things
  }
}

function emptyLine<T>(): (T | undefined)[] {
  const items: (T | undefined)[] = [undefined]
  items.length = 0
  return items
}

// A line's shape, kept (util/shapes.ts).
keepShape(new Line<unknown>())
