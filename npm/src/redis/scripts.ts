/**
 * The Lua scripts that keep holdfast's locks in Redis, and how they are run: by `EVALSHA`, falling back
 * to `EVAL` (which loads the script again) when the server answers `NOSCRIPT` — after a restart, a
 * failover, or on a Cluster node that never saw it.
 *
 * # Data layout
 * Everything of one key of one lock shares a hash tag, `{KIND:NAME:KEY}` (KIND `l` for a lock, `s` for
 * a semaphore), so it lives in one Cluster slot; every Redis key starts with the store's prefix:
 * - `P:{…}:m` hash: the meta — `f` the last fence, `t` the last ticket, `l` the limit (1 for a lock),
 *   `n` how many hold, `q` how many wait, `x` when the keys expire, `e` a time no deadline of the key
 *   is earlier than (the reap step reads the deadlines only from then on) — and the records, by id:
 *   `H fence ttl hardDeadline since channel` (holding), `W ttl maxHold waitDeadline channel` (waiting;
 *   -1 for no wait limit), `E why` (ended: R released, C cancelled, L lost past its lease, T its wait
 *   ran out, X no heartbeat within its ttl).
 * - `P:{…}:q` zset, the line: waiting request ids, scored by ticket (the order Redis received them).
 * - `P:{…}:d` zset, the deadlines (server ms): `h` + id of a holder (its lease), `w` + id of a waiter
 *   (the end of its wait or of its last heartbeat's ttl, whichever is first), `e` + id of a tombstone.
 *
 * # Invariants (every script keeps them before it answers)
 * - Every script reads the server's clock first (`TIME`): every deadline is judged by the server, never
 *   by a client's clock. Then the reap step ends whatever is past its deadline.
 * - At most `l` holders. While a permit is free, the line is empty: every script that may free one
 *   grants from the head of the line before it answers, and tells the granted request's process on its
 *   channel (`PUBLISH`, `SPUBLISH` in Cluster). So nobody barges: a new request is granted at once only
 *   when nobody waits, and waiters are granted in ticket order.
 * - A request id is granted at most once while Redis knows it. Asked again, a script answers the
 *   request's record; a request that ended while a copy of its acquire may still come (its client had
 *   no answer to one: a dropped connection, a give-up) keeps a tombstone for its ttl, so that the late
 *   copy is answered, not granted; one whose every acquire was answered is forgotten at once (its
 *   client never sends it again). A renewal never grants.
 * - Fences of a key grow: `max(last + 1, serverMs × 1024)`. After a rollback of recent writes (a restart
 *   from an AOF a second behind, a failover that lost writes) or the expiry of the meta, the time term
 *   is still larger than every fence given before, unless the new server's clock is behind the old
 *   one's by more than the time that passed. They stay safe integers until about the year 2248.
 * - Every key expires at least a grace after its largest deadline (`PEXPIREAT` at a mark kept in the
 *   meta, moved half a grace further each time a deadline passes it): a key nobody holds or waits for
 *   costs nothing a grace and a half after its last deadline.
 * - Scripts start with `#!lua` on Redis 7 and later, so that in Cluster they may touch only the keys
 *   they declare; the read-only one says `flags=no-writes`. Wake-ups are classic `PUBLISH` (no key):
 *   in Cluster it reaches every node, so the subscriber may listen on any.
 */

import { createHash } from 'node:crypto'
import common from './scripts/common.js'
import acquireBody from './scripts/acquire.js'
import renewBody from './scripts/renew.js'
import releaseBody from './scripts/release.js'
import inspectBody from './scripts/inspect.js'

export interface Script {
  readonly name: string
  readonly source: string
  readonly sha: string
}

function script(name: string, source: string): Script {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') }
}

export interface Scripts {
  acquire: Script
  renew: Script
  release: Script
  inspect: Script
}

/** The scripts, with the `#!lua` line where the server knows it (Redis 7 and later). */
export function scriptsFor(shebang: boolean): Scripts {
  const writes = shebang ? '#!lua\n' : ''
  const reads = shebang ? '#!lua flags=no-writes\n' : ''
  return {
    acquire: script('acquire', writes + common + acquireBody),
    renew: script('renew', writes + common + renewBody),
    release: script('release', writes + common + releaseBody),
    inspect: script('inspect', reads + inspectBody),
  }
}

/** The Redis keys of one key of one lock, in the order the scripts take them. */
export function keysOf(prefix: string, kind: 'lock' | 'semaphore', name: string, key: string): string[] {
  const base = `${prefix}:{${kind === 'lock' ? 'l' : 's'}:${name}:${key}}:`
  return [`${base}m`, `${base}q`, `${base}d`]
}

/** The lock kind, name and key of a meta key (`P:{l:NAME:KEY}:m`), or undefined for another key. */
export function parseMetaKey(prefix: string, redisKey: string): { kind: 'lock' | 'semaphore'; name: string; key: string } | undefined {
  const head = `${prefix}:{`
  if (!redisKey.startsWith(head) || !redisKey.endsWith('}:m')) return undefined
  const inner = redisKey.slice(head.length, -3)
  const kind = inner[0] === 'l' ? 'lock' : inner[0] === 's' ? 'semaphore' : undefined
  const colon = inner.indexOf(':', 2)
  if (!kind || inner[1] !== ':' || colon < 0) return undefined
  return { kind, name: inner.slice(2, colon), key: inner.slice(colon + 1) }
}
