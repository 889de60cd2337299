/**
 * An inspection over a connection, bounded in size: the server never builds a frame larger than
 * `maxAnswer` bytes of entries (at most `MAX_ANSWER`, far below the 16 MiB a client accepts) — larger
 * inspections go page by page (protocol revision 2, `docs/protocol.md`); an inspection of pools too,
 * from revision 8, in pages of the same budget, by name.
 *
 * Invariants:
 * - Pages come in one order, by kind (locks first), name and key, and a page is asked for after the
 *   last entry of the one before: the server keeps nothing between pages. A key busy throughout an
 *   inspection is in exactly one page; a key that became busy or idle meanwhile may be in it or not;
 *   each entry is as it was when its page was read.
 * - A page holds at least one entry, however large (a semaphore with many holders), so that an
 *   inspection always moves on.
 * - Pools likewise: by name, a page asked for after the last name of the one before (`''`: the
 *   first), at least one pool a page. A pool that exists throughout the inspection is in exactly one
 *   page; each is as it was when its page was read.
 * - Sizes are counted exactly as the codec writes them (`crate/engine/src/wire/codec.rs`).
 */

import { utf8Length } from '../util/key.js'
import type { WireEntry, WirePool } from './wire.js'

/** The largest inspection answer (or page) a server sends, in bytes. */
export const MAX_ANSWER = 4 * 1024 * 1024

/** The frame header and the entries' count (a page's `more` flag is one byte more). */
const FRAME_OVERHEAD = 6 + 4 + 1

/** Where a page starts: after this entry (`name` empty: from the first). */
export interface PageCursor {
  kind: 'lock' | 'semaphore'
  name: string
  key: string
}

const NOT_ASCII = /[^\0-\x7f]/

/** UTF-8 bytes of `text`; most keys are ASCII, which a regular expression tells faster than a count. */
function bytesOf(text: string): number {
  return NOT_ASCII.test(text) ? utf8Length(text) : text.length
}

/** The bytes of one entry on the wire: kind, name, key, holders (fence and heldMs), waiting. */
export function entrySize(e: WireEntry): number {
  // A name is ASCII (its pattern): its length is its bytes.
  return 1 + 2 + e.name.length + 2 + bytesOf(e.key) + 4 + 16 * e.holders.length + 4
}

/** The bytes of an answer that lists every entry in one frame. */
export function answerSize(entries: readonly WireEntry[]): number {
  return wholeSize(entries, entrySize)
}

/** The bytes of a frame that lists every one of `items`, each `sizeOf` bytes. */
function wholeSize<T>(items: readonly T[], sizeOf: (item: T) => number): number {
  let size = FRAME_OVERHEAD
  for (const item of items) size += sizeOf(item)
  return size
}

/** The first of `sorted` that fit in `budget` bytes (at least one), and whether more follow: a page of either kind. */
function fitted<T>(sorted: T[], sizeOf: (item: T) => number, budget: number): { items: T[]; more: boolean } {
  let size = FRAME_OVERHEAD
  let n = 0
  for (; n < sorted.length; n++) {
    size += sizeOf(sorted[n]!)
    if (size > budget && n > 0) break
  }
  return { items: sorted.slice(0, n), more: n < sorted.length }
}

function order(a: PageCursor, b: PageCursor): number {
  if (a.kind !== b.kind) return a.kind === 'lock' ? -1 : 1
  if (a.name !== b.name) return a.name < b.name ? -1 : 1
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0
}

/** The page of `entries` after `cursor` that fits in `budget` bytes (at least one entry), and whether more follow. */
export function pageAfter(entries: readonly WireEntry[], cursor: PageCursor, budget: number): { entries: WireEntry[]; more: boolean } {
  const rest = cursor.name === '' ? entries.slice() : entries.filter(e => order(e, cursor) > 0)
  rest.sort(order)
  const { items, more } = fitted(rest, entrySize, budget)
  return { entries: items, more }
}

/** The bytes of one pool on the wire: name, capacity, remaining, claims, waiting. A name is ASCII (its pattern). */
function poolSize(p: WirePool): number {
  return 2 + p.name.length + 8 + 8 + 4 + 4
}

/** The bytes of an answer that lists every pool in one frame (revision 4's `pools`). */
export function poolsAnswerSize(pools: readonly WirePool[]): number {
  return wholeSize(pools, poolSize)
}

/** The page of `pools` after the name `after` (`''`: from the first) that fits in `budget` bytes (at least one pool), and whether more follow. */
export function poolsPageAfter(pools: readonly WirePool[], after: string, budget: number): { pools: WirePool[]; more: boolean } {
  // Names compare as the codec's bytes do: they are ASCII, so code units are bytes.
  const rest = after === '' ? pools.slice() : pools.filter(p => p.name > after)
  rest.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const { items, more } = fitted(rest, poolSize, budget)
  return { pools: items, more }
}

/** `bytes` for a message: `17.3 MiB`, `612 KiB`. */
export function sizeText(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MiB` : `${Math.ceil(bytes / 1024)} KiB`
}
