/**
 * The Lua that keeps holdfast's locks in Redis, and how it is run. On Redis 7 and later it is loaded
 * once as a Function library (`FUNCTION LOAD`, named after a hash of its text, so that two versions of
 * holdfast never share a name) and called by `FCALL`: its helpers are made once, not at each call, and
 * Redis keeps the library in its data (replicated, in the AOF and RDB files), so that a restart or a
 * failover keeps it. Where Functions are missing (Redis 6.2) or not allowed (an ACL without
 * `FUNCTION`), or a server lost the library (`FUNCTION FLUSH`, a node that never had it), the same Lua
 * runs as scripts: `EVALSHA`, falling back to `EVAL` when the server answers `NOSCRIPT`.
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
 * - `P:{…}:z` zset, the line and the deadlines. The line: `q` + id of each waiter, scored by its
 *   ticket (the order Redis received them) minus 2^52, so that the line comes before every deadline
 *   and its head is the zset's first member. The deadlines (server ms): `h` + id of a holder (its
 *   lease), `w` + id of a waiter (the end of its wait or of its last heartbeat's ttl, whichever is
 *   first), `e` + id of a tombstone. The index of a semaphore's holders: `H` + id scored 2^52 + its
 *   lease deadline (after every deadline), so that the earliest holder, which a waiter near the head is
 *   told of, is the first of that range (O(log n)) however many waiters' and tombstones' deadlines come
 *   before it, and `inspect` lists the holders without reading the tombstones. And `z`, after all of them: the zset exists exactly while the meta does, so adding a
 *   deadline never makes a key without an expiry.
 *   The index came after the rest, and locks keep no format mark: both layouts are read by both
 *   versions of the Lua. A script of before ignores `H` members (its reap reads scores up to now, its
 *   `inspect` knows `h` and `w` only) and removes only the `h` of a holder it ends, so the Lua drops an
 *   index entry whose `h` is missing or scored otherwise when it comes first; a holder a script of before
 *   granted has no entry, and a waiter learns of its end at its next heartbeat rather than at its time.
 *
 * Pools (issue #16) keep theirs under `{p:NAME}`, changed by the `pool` entry point, which shares only
 * the clock with the locks' Lua and documents its own layout and invariants (`scripts/pool.ts`).
 *
 * # Invariants (every call keeps them before it answers)
 * - Every deadline is judged by the server's clock (`TIME`), never by a client's. A call that reads
 *   the clock first ends whatever is past its deadline (the reap step) when one may be due: at most
 *   REAP of them (scripts/common.ts), earliest first. A call that finds more due ends REAP, grants
 *   nobody, answers `{'a'}` and its store asks again at once: every other answer is given with nothing
 *   due (the bound `e` stays at the earliest deadline left, so every call that decides anything, fast
 *   paths included, reaps first).
 * - At most `l` holders. While a permit is free, the line is empty: every call that may free one
 *   grants from the head of the line before it answers, and tells the granted request's process on its
 *   channel (`PUBLISH`, or `SPUBLISH` in a Cluster). So nobody barges: a new request is granted at
 *   once only when nobody waits, and waiters are granted in ticket order.
 * - A request id is granted at most once while Redis knows it. Asked again, a call answers the
 *   request's record; a request that ended while a copy of its acquire may still come (its client had
 *   no answer to one: a dropped connection, a give-up) keeps a tombstone for its ttl, so that the late
 *   copy is answered, not granted; one whose every acquire was answered is forgotten at once (its
 *   client never sends it again). A renewal never grants.
 * - Fences of a key grow: `max(last + 1, serverMs × 1024)`. After a rollback of recent writes (a restart
 *   from an AOF a second behind, a failover that lost writes) or the expiry of the meta, the time term
 *   is still larger than every fence given before, unless the new server's clock is behind the old
 *   one's by more than the time that passed. They stay safe integers until about the year 2248.
 * - Both keys expire at least a grace after the largest deadline (`PEXPIREAT` at a mark kept in the
 *   meta, moved half a grace further each time a deadline passes it): a key nobody holds or waits for
 *   costs nothing a grace and a half after its last deadline. Nothing is written for a key Redis does
 *   not have but by a grant, which sets the mark.
 * - The Lua starts with `#!lua` on Redis 7 and later, so that in a Cluster it may touch only keys of
 *   the slot of those it declares; `inspect` says `no-writes`.
 */

import { createHash } from 'node:crypto'
import common, { clock } from './scripts/common.js'
import acquireBody from './scripts/acquire.js'
import renewBody from './scripts/renew.js'
import releaseBody from './scripts/release.js'
import inspectBody from './scripts/inspect.js'
import poolBody from './scripts/pool.js'
import accessBody from './scripts/access.js'

/** The entry points, each a Function of the library and a script of its own. */
export type Op = 'acquire' | 'renew' | 'release' | 'inspect' | 'pool' | 'access'

export interface Script {
  readonly source: string
  readonly sha: string
}

export interface Scripts {
  /** The Function library: its name, its text for `FUNCTION LOAD`, and the name of each entry point's Function. */
  readonly library: { readonly name: string; readonly source: string; readonly functions: Readonly<Record<Op, string>> }
  /** Each entry point as a script of its own, for `EVALSHA` and `EVAL`. */
  readonly scripts: Readonly<Record<Op, Script>>
}

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex')

function script(source: string): Script {
  return { source, sha: sha1(source) }
}

/**
 * The library and the scripts, with the `#!lua` line where the server knows it (Redis 7 and later).
 * `clockKey` (for the model test only): the Lua reads the time from that Redis key (ms) instead of
 * `TIME`, so that a test drives every deadline; nothing else differs (and the library's name, a hash
 * of its text, differs from the real one's). `reap` (tests only): the most deadlines and tombstones a
 * pool's call ends (`REAP`, `FORGET` in scripts/pool.ts), small enough for a test to reach; `lockReap`
 * the same for the locks' (`REAP` in scripts/common.ts).
 */
export function scriptsFor(
  shebang: boolean,
  options: { clockKey?: string; reap?: { deadlines: number; tombstones: number }; lockReap?: number } = {},
): Scripts {
  const time =
    options.clockKey === undefined ? clock : `\nlocal function time()\n  return tonumber(redis.call('GET', ${JSON.stringify(options.clockKey)}))\nend\n`
  const lockReap = options.lockReap
  const shared = (lockReap === undefined ? common : common.replace(/local REAP = \d+/, `local REAP = ${lockReap}`)).replace(clock, time)
  const reap = options.reap
  const poolLua = reap
    ? poolBody.replace(/local REAP = \d+/, `local REAP = ${reap.deadlines}`).replace(/local FORGET = \d+/, `local FORGET = ${reap.tombstones}`)
    : poolBody
  // Pools (scripts/pool.ts) share only the clock with the locks.
  const lua = shared + acquireBody + renewBody + releaseBody + inspectBody + poolLua + accessBody
  const name = `holdfast_${sha1(lua).slice(0, 12)}`
  const functions = {
    acquire: `${name}_acquire`,
    renew: `${name}_renew`,
    release: `${name}_release`,
    inspect: `${name}_inspect`,
    pool: `${name}_pool`,
    access: `${name}_access`,
  }
  const source = `#!lua name=${name}\n${lua}
redis.register_function('${functions.acquire}', acquire)
redis.register_function('${functions.renew}', renew)
redis.register_function('${functions.release}', release)
redis.register_function{function_name='${functions.inspect}', callback=inspect, flags={'no-writes'}}
redis.register_function('${functions.pool}', pool)
redis.register_function{function_name='${functions.access}', callback=access, flags={'no-writes'}}
`
  const writes = shebang ? '#!lua\n' : ''
  const reads = shebang ? '#!lua flags=no-writes\n' : ''
  return {
    library: { name, source, functions },
    scripts: {
      acquire: script(`${writes}${shared}${acquireBody}return acquire(KEYS, ARGV)\n`),
      renew: script(`${writes}${shared}${renewBody}return renew(KEYS, ARGV)\n`),
      release: script(`${writes}${shared}${releaseBody}return release(KEYS, ARGV)\n`),
      inspect: script(`${reads}${inspectBody}return inspect(KEYS, ARGV)\n`),
      pool: script(`${writes}${time}${poolLua}return pool(KEYS, ARGV)\n`),
      access: script(`${reads}${accessBody}return access(KEYS, ARGV)\n`),
    },
  }
}

/**
 * The last argument of every call: what a handle sends with each, as one text (one argument rather
 * than six: each costs the client and the server): the grace ms, the publish command, the lease ttl
 * ms, maxHold ms (0: none), the limit, and the channel that tells the process of a grant.
 */
export function constants(grace: number, publish: string, ttl: number, maxHold: number, limit: number, channel: string): string {
  return `${grace} ${publish} ${ttl} ${maxHold} ${limit} ${channel}`
}

/** The hash tag of one key of one lock: everything holdfast writes for it is in the slot of this tag. */
export function tagOf(kind: 'lock' | 'semaphore', name: string, key: string): string {
  return `{${kind === 'lock' ? 'l' : 's'}:${name}:${key}}`
}

/** The Redis keys of one key of one lock, in the order the scripts take them. */
export function keysOf(prefix: string, kind: 'lock' | 'semaphore', name: string, key: string): string[] {
  const base = `${prefix}:${tagOf(kind, name, key)}:`
  return [`${base}m`, `${base}z`]
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

/** The hash tag of a pool: everything holdfast writes for it is in the slot of this tag. */
export function poolTagOf(name: string): string {
  return `{p:${name}}`
}

/** The Redis keys of a pool, in the order the `pool` entry point takes them. */
export function poolKeysOf(prefix: string, name: string): string[] {
  const base = `${prefix}:${poolTagOf(name)}:`
  return [`${base}m`, `${base}z`]
}

/** The pool name of a pool's hash (`P:{p:NAME}:m`), or undefined for another key. */
export function parsePoolKey(prefix: string, redisKey: string): string | undefined {
  const head = `${prefix}:{p:`
  return redisKey.startsWith(head) && redisKey.endsWith('}:m') ? redisKey.slice(head.length, -3) : undefined
}
