/**
 * The part of a Redis client that holdfast uses, over the clients teams have: ioredis and node-redis
 * (`redis` v5 and later), each for one server, a server found through Sentinel, or a Cluster; and, on
 * Bun, Bun's own `RedisClient` (one server only: Bun has no Sentinel or Cluster client). None is a
 * dependency of holdfast (optional peers, never bundled; Bun's is built in): a client is recognised by
 * its shape, and `url` alone imports whichever is installed (on Bun with neither, Bun's own).
 *
 * Commands go through each client's generic call (`call` / `sendCommand`): raw replies, the same from
 * all of them. A command may wait for a connection (the clients queue commands while they reconnect),
 * so `send` never waits past the patience it is given: the caller decides how long an answer is worth.
 *
 * Pub/sub uses connections of its own, whatever the number of waiters: one (`duplicate()`d from the
 * client) for one server; through node-redis's Sentinel client, its own pub/sub connection to the
 * primary; in a Cluster, sharded pub/sub (`SSUBSCRIBE`, one connection a primary, made by the client)
 * where the client can (ioredis 5.9 and later, node-redis), else classic pub/sub on one node, which a
 * Cluster broadcasts to.
 */

import { nextTick } from 'node:process'
import { ClosedError, InvalidError } from '../errors.js'
import { masked } from '../util/masked-url.js'
import { pause, systemClock } from '../util/clock.js'
import { retried, type Backoff } from '../util/retry.js'

type Arg = string | number

/** Sends a command to one server (or, in a Cluster, to the node of the key it names). */
export type Sender = (args: Arg[]) => Promise<unknown>

/** The pub/sub side; its messages go to the store. */
export interface Subscriber {
  /** Subscribes to a channel (`SSUBSCRIBE` when sharded); resolves once the server took it. */
  subscribe(channel: string): Promise<void>
  unsubscribe(channel: string): Promise<void>
  close(): Promise<void>
}

/** Which client a store talks through. */
export type ClientKind = 'ioredis' | 'node-redis' | 'bun'

export interface Adapter {
  readonly client: ClientKind
  /** What the client reaches: one server, the primary Sentinel names, or a Cluster. */
  readonly topology: 'server' | 'sentinel' | 'cluster'
  /** Whether wake-ups go by sharded pub/sub: `SPUBLISH` to a channel in the key's slot, `SSUBSCRIBE`. */
  readonly sharded: boolean
  /**
   * What the client puts before every key a command names (ioredis's `keyPrefix`; '' for none, and
   * for node-redis, which has no such option): names the Lua reads from its arguments (a channel, the
   * keys the open's ACL check judges) must carry it, as the keys passed as keys get it from the client.
   * `scan` takes and answers keys without it; `subscriber` takes and gives channels in full, with it.
   */
  readonly keyPrefix: string
  /** Sends a command; rejects `ReplyFailure` when the server answered an error, anything else when it could not be reached. */
  send: Sender
  /** `send` without turning the client's errors into `ReplyFailure` (one promise less): the caller does it, with `asReply`. */
  call: Sender
  /** A `send` to each primary: the one server, or every primary of a Cluster (Function libraries, SCAN). */
  primaries(): Promise<Sender[]>
  /** Every key matching `pattern`, from every primary (a Cluster's too); both without the client's `keyPrefix`. */
  scan(pattern: string): Promise<string[]>
  /**
   * Opens the pub/sub side (classic, or sharded when `sharded`). `ready` is called each time it may
   * have missed messages (it reconnected, or the primary changed) after the first time.
   */
  subscriber(message: (channel: string, text: string) => void, ready: () => void): Promise<Subscriber>
  /**
   * Resolves once the client can take the store's first commands: at once, unless it refuses commands
   * while not connected (ioredis's `enableOfflineQueue: false`, node-redis's `disableOfflineQueue`),
   * which waits until it is ready (connecting an ioredis one made with `lazyConnect`),
   * `CONNECT_PATIENCE` at most.
   */
  connected(): Promise<void>
  /**
   * Where the subscriber is a connection of holdfast's own (a `duplicate()`: ioredis's, node-redis's of
   * one server, Bun's): calls `ended` once the application's client is closed for good (quit, or given
   * up reconnecting), and `back` when it is connected (again: after a reconnection too, which the caller
   * tells apart). Answers what stops watching. Absent where the subscriptions ride on the application's
   * client (node-redis's Sentinel and Cluster clients), which closes them with itself.
   */
  watchEnd?(ended: () => void, back: () => void): () => void
  /** Closes the client, if holdfast opened it (from `url`); a client the application gave is left open. */
  close(): Promise<void>
  /**
   * node-redis's Sentinel client only (`PrimaryWatch`): calls `found` each time the client is found on
   * a node the sentinels no longer name the primary, from the opening of the pub/sub side on; answers
   * how to stop.
   */
  onStale?(found: () => void): () => void
  /**
   * Whether the client is closed for good (the application quit it, or it gave up reconnecting:
   * ioredis's status `end`, node-redis not open): nothing sent on it will ever be answered, so what
   * waits for an answer is not asked again.
   */
  ended(): boolean
}

/** The server answered an error (`NOSCRIPT …`, `ERR …`, `OOM …`): its first word is `code`. */
export class ReplyFailure extends Error {
  readonly code: string
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = /^[A-Z]+/.exec(message)?.[0] ?? 'ERR'
  }
}

/** Why what waits for Redis is answered `ClosedError` once its client is closed for good (see `Adapter.ended`). */
export const CLIENT_ENDED = 'the Redis client was closed (by the application, or it gave up reconnecting): nothing can reach Redis'

/**
 * Error replies that pass by themselves (a loading, busy or failing-over server): asked again later.
 * NOREPLICAS: a primary set to `min-replicas-to-write` has too few replicas in sync (one restarting,
 * or the sentinels moved them to a new primary): writes resume there, or the client moves.
 */
export const TRANSIENT = new Set(['LOADING', 'BUSY', 'READONLY', 'MASTERDOWN', 'NOREPLICAS', 'TRYAGAIN', 'CLUSTERDOWN', 'MOVED', 'ASK'])

/**
 * What to tell a user of a command Redis answered with a reply that passes by itself (`TRANSIENT`,
 * found as `error` or its `cause`) until it was given up: Redis was reached, so it is not
 * "unreachable". `when` says when it answered (`within the wait (500ms)`). Undefined for anything
 * else (no answer at all). READONLY: the server is a replica (a failover under way, or a client given a
 * replica's address).
 */
export function answeredTransient(error: unknown, when = ''): string | undefined {
  const reply = error instanceof ReplyFailure ? error : (error as { cause?: unknown } | null)?.cause
  if (!(reply instanceof ReplyFailure) || !TRANSIENT.has(reply.code)) return undefined
  const replica =
    reply.code === 'READONLY'
      ? ': a replica, which takes no writes (a failover under way, or the address of a replica)'
      : reply.code === 'NOREPLICAS'
        ? ': a primary with fewer replicas in sync than its min-replicas-to-write (one restarting, or a failover under way)'
        : ''
  return `Redis answered ${JSON.stringify(reply.message)}${when && ` ${when}`}${replica}`
}

const noop = () => {}

/** The code of Bun's RedisError for an error reply (`ERR …`, `NOSCRIPT …`): anything else is the connection's. */
const BUN_REPLY = 'ERR_REDIS_SERVER_ERROR'

/**
 * The errors a client raises for an error reply (ioredis: ReplyError; node-redis: SimpleError /
 * ErrorReply; Bun: a RedisError of code ERR_REDIS_SERVER_ERROR, where a connection lost or refused is
 * another code, ERR_REDIS_CONNECTION_CLOSED and the like).
 */
export function asReply(error: unknown): unknown {
  if (error instanceof ReplyFailure) return error
  const e = error as { name?: unknown; constructor?: { name?: unknown }; message?: unknown; code?: unknown } | null
  if (!e || typeof e.message !== 'string') return error
  const names = [e.name, e.constructor?.name]
  if (e.code === BUN_REPLY || names.some(n => n === 'ReplyError' || n === 'SimpleError' || n === 'ErrorReply' || n === 'BlobError'))
    return new ReplyFailure(e.message, { cause: error })
  return error
}

interface IoRedis {
  call(command: string, ...args: Arg[]): Promise<unknown>
  /** A Cluster's nodes (ioredis `Cluster`). */
  nodes?(role: 'master'): IoRedis[]
  /** A Redis's or a Cluster's options: `sentinels` (a Redis found through Sentinel); `shardedSubscribers` known (a Cluster that can). */
  options?: { sentinels?: unknown[] | null; shardedSubscribers?: boolean; keyPrefix?: unknown; enableOfflineQueue?: boolean; redisOptions?: object }
  duplicate(...override: unknown[]): IoRedis
  subscribe(channel: string): Promise<unknown>
  unsubscribe(channel: string): Promise<unknown>
  ssubscribe?(channel: string): Promise<unknown>
  sunsubscribe?(channel: string): Promise<unknown>
  on(event: string, fn: (...args: never[]) => void): unknown
  once(event: string, fn: (...args: never[]) => void): unknown
  off(event: string, fn: (...args: never[]) => void): unknown
  quit(): Promise<unknown>
  disconnect(): void
  status: string
  /** The connection of a Redis (not a Cluster's) once connected: a Node socket, which can be corked. */
  stream?: { cork?(): void; uncork?(): void }
  /** A Cluster's: whether a refresh of its slots is under way; one, with what to call once it ended (joined to the one under way); its timer of the next one, cleared. */
  isRefreshing?: boolean
  refreshSlotsCache?(callback: () => void): void
  clearNodesRefreshInterval?(): void
}

type Listener = (message: string, channel: string) => void

interface NodeRedisBase {
  isOpen: boolean
  on(event: string, fn: (...args: never[]) => void): unknown
  off(event: string, fn: (...args: never[]) => void): unknown
  quit?(): Promise<unknown>
  close?(): Promise<unknown>
  destroy?(): unknown
  disconnect?(): Promise<unknown>
}

/** A node-redis client of one server (`createClient`). */
interface NodeRedis extends NodeRedisBase {
  /** Whether it is connected and ready (`isOpen` is true from `connect()` on). */
  isReady?: boolean
  options?: { disableOfflineQueue?: boolean }
  sendCommand(args: string[]): Promise<unknown>
  duplicate(): NodeRedis
  connect(): Promise<unknown>
  subscribe(channel: string, listener: Listener): Promise<unknown>
  unsubscribe(channel: string, listener?: Listener): Promise<unknown>
}

/** node-redis's Sentinel client (`createSentinel`): commands go to the primary it finds. */
interface NodeRedisSentinel extends NodeRedisBase {
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>
  acquire(): Promise<unknown>
  subscribe(channel: string, listener: Listener): Promise<unknown>
  unsubscribe(channel: string, listener?: Listener): Promise<unknown>
}

/** What of a node-redis client's events holdfast uses on a connection the Cluster client made. */
interface NodeRedisEvents {
  on(event: string, fn: (...args: never[]) => void): unknown
  off(event: string, fn: (...args: never[]) => void): unknown
}

/** node-redis's Cluster client (`createCluster`): commands go to the node of their first key. */
interface NodeRedisCluster extends NodeRedisBase {
  /** The options it was made with: `defaults`, those of every connection it makes. */
  readonly _options?: { defaults?: { disableOfflineQueue?: boolean } }
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>
  readonly masters: unknown[]
  nodeClient(node: unknown): Promise<{ sendCommand(args: string[]): Promise<unknown> }>
  sSubscribe(channel: string, listener: Listener): Promise<unknown>
  sUnsubscribe(channel: string, listener?: Listener): Promise<unknown>
}

function isIoRedis(c: unknown): c is IoRedis {
  const x = c as IoRedis
  return typeof x?.call === 'function' && typeof x.duplicate === 'function' && typeof x.status === 'string'
}

function isNodeRedisCluster(c: unknown): c is NodeRedisCluster {
  const x = c as NodeRedisCluster
  return typeof x?.sendCommand === 'function' && typeof x.nodeClient === 'function' && typeof x.sSubscribe === 'function' && typeof x.isOpen === 'boolean'
}

function isNodeRedisSentinel(c: unknown): c is NodeRedisSentinel {
  const x = c as NodeRedisSentinel
  return typeof x?.sendCommand === 'function' && typeof x.acquire === 'function' && typeof x.isOpen === 'boolean'
}

function isNodeRedis(c: unknown): c is NodeRedis {
  const x = c as NodeRedis
  return typeof x?.sendCommand === 'function' && typeof x.duplicate === 'function' && typeof x.isOpen === 'boolean'
}

/** SCAN of one server, every page; `send` sends a command to that server. */
async function scanOne(send: Sender, pattern: string): Promise<string[]> {
  const out: string[] = []
  let cursor = '0'
  do {
    const [next, keys] = (await send(['SCAN', cursor, 'MATCH', pattern, 'COUNT', 1000])) as [unknown, unknown[]]
    cursor = String(next)
    for (const k of keys) out.push(String(k))
  } while (cursor !== '0')
  return out
}

async function scanAll(primaries: Sender[], pattern: string): Promise<string[]> {
  return (await Promise.all(primaries.map(send => scanOne(send, pattern)))).flat()
}

/**
 * SCAN under a client's `keyPrefix`: the client leaves SCAN's MATCH as it is (a pattern is not a key)
 * and answers the keys as Redis has them, prefixed; so the prefix goes before the pattern (its glob
 * characters escaped) and comes off the answers. Without it, `inspect()` found nothing of a store on
 * an ioredis client with `keyPrefix`.
 */
async function scanPrefixed(primaries: Sender[], keyPrefix: string, pattern: string): Promise<string[]> {
  if (keyPrefix === '') return scanAll(primaries, pattern)
  const keys = await scanAll(primaries, keyPrefix.replace(/[*?[\]\\]/g, '\\$&') + pattern)
  return keys.filter(k => k.startsWith(keyPrefix)).map(k => k.slice(keyPrefix.length))
}

/** `send` that turns the client's error replies into `ReplyFailure`. */
function replying(raw: Sender): Sender {
  return args => raw(args).catch(error => Promise.reject(asReply(error)))
}

/** Calls `ready` on every call of the returned function but the first. */
function afterFirst(ready: () => void): () => void {
  let first = true
  return () => {
    if (first) first = false
    else ready()
  }
}

/** Listens for `events` (name: listener) on `emitter`; answers what takes the listeners off. */
function onEvents(emitter: NodeRedisEvents, events: Record<string, () => void>): () => void {
  const listeners = Object.entries(events).map(([name, fn]) => [name, () => fn()] as [string, (...args: never[]) => void])
  for (const [name, fn] of listeners) emitter.on(name, fn)
  return () => {
    for (const [name, fn] of listeners) emitter.off(name, fn)
  }
}

/** How long a call that needs a Cluster's primaries waits for its client to be ready. */
const CLUSTER_PATIENCE = 10_000

/**
 * A Cluster client that has not found its nodes yet (or a client of one server not connected yet):
 * waits until it has, at most `CLUSTER_PATIENCE` (the caller looks at the client's status then), or
 * until the adapter closes (`ends` holds the end of each wait under way; `close()` calls them). A
 * wait that ends without it takes its listener off the application's client: left on, each call
 * while the Cluster is unreachable (every `inspect()`) added one more, for as long as it stayed so.
 * Its timer keeps no process alive, and goes with the wait: a process that asked `inspect()` of an
 * unreachable Cluster, then closed its store and its client, lived on until the 10 s were over.
 */
async function clusterReady(c: IoRedis, ends: Set<() => void>): Promise<void> {
  if (c.status === 'ready') return
  await new Promise<void>(resolve => {
    const end = () => {
      clearTimeout(timer)
      c.off('ready', end)
      ends.delete(end)
      resolve()
    }
    const timer = setTimeout(end, CLUSTER_PATIENCE)
    ;(timer as { unref?: () => void }).unref?.()
    c.once('ready', end)
    ends.add(end)
  })
}

/**
 * Sends the commands of one run of callbacks in one write: ioredis writes each command to its socket
 * as it is called (a syscall each, on both sides, which costs more than a script's commands), so the
 * socket is corked at the first command and uncorked once the microtasks that follow it ran
 * (`nextTick`): a release and the acquire of the same worker's next hold, or the commands of every
 * hold an answer woke, leave together, in order. Not later (in the turn's check phase, as the
 * WebSocket transport does): a release held back a turn keeps its key busy that much longer. Only
 * while the client is ready (else ioredis queues the command itself) and its socket can cork (Node's;
 * on Bun an uncork writes the same).
 */
function corking(c: IoRedis): Sender {
  let corked: { uncork?(): void } | undefined
  const uncork = () => {
    const s = corked
    corked = undefined
    s?.uncork?.()
  }
  return args => {
    if (corked === undefined && c.status === 'ready') {
      const s = c.stream
      if (typeof s?.cork === 'function' && typeof s.uncork === 'function') {
        s.cork()
        corked = s
        nextTick(uncork)
      }
    }
    return c.call(...(args as [string, ...Arg[]]))
  }
}

function ioredisAdapter(c: IoRedis, owned: boolean): Adapter {
  // Every command's first argument is its name, a string: the array goes as it is (no copy without it).
  const raw = (node: IoRedis) => (args: Arg[]) => node.call(...(args as [string, ...Arg[]]))
  const cluster = typeof c.nodes === 'function'
  // ioredis 5.9 and later know sharded subscribers (a Cluster option, false unless asked for).
  const sharded = cluster && c.options !== undefined && 'shardedSubscribers' in c.options
  const keyPrefix = typeof c.options?.keyPrefix === 'string' ? c.options.keyPrefix : ''
  const readyWaits = new Set<() => void>()
  let closed = false
  // A client made with enableOfflineQueue: false refuses a command while it reconnects ("Stream isn't
  // writeable"; a Cluster's, while it is not ready: "Cluster isn't ready"): sent again once it is back,
  // as node-redis's (onceOnline). A Cluster's refusal is one only for a command sent while it was not
  // ready: one sent while it was, cut in flight and tried again by ioredis as the Cluster went down, is
  // answered those words too, and may have run.
  const refuses = c.options?.enableOfflineQueue === false
  const unsent = cluster ? () => c.status !== 'ready' : undefined
  const online = (sender: Sender) => (refuses ? onceOnline(sender, () => c.status === 'end', unsent) : sender)
  const send = replying(online(raw(c)))
  const primaries = async () => {
    if (!cluster) return [send]
    await clusterReady(c, readyWaits)
    // Closed meanwhile: nothing more is sent on the application's client for a closed store.
    if (closed) throw new Error('the store closed while the Cluster client was not ready')
    // Still not ready: it knows no primaries (it lost them), and a SCAN of none answered "nothing busy".
    if (c.status !== 'ready') throw new Error(`the Cluster client is not ready (${c.status}) after ${CLUSTER_PATIENCE}ms`)
    return c.nodes!('master').map(node => replying(raw(node)))
  }
  return {
    client: 'ioredis',
    topology: cluster ? 'cluster' : c.options?.sentinels?.length ? 'sentinel' : 'server',
    sharded,
    keyPrefix,
    send,
    call: online(cluster ? raw(c) : corking(c)),
    primaries,
    scan: async pattern => scanPrefixed(await primaries(), keyPrefix, pattern),
    async subscriber(message, ready) {
      // A Cluster's duplicate takes (startup nodes, options); the one with sharded subscribers makes a
      // subscriber connection a primary and sends each SSUBSCRIBE to the node of the channel's slot.
      // A server's subscriber subscribes again after a reconnect through the store (wakeups.ts), not
      // by itself: ioredis's own resubscription leaves its promise unhandled, and a close while it is
      // under way made it an unhandled rejection ("Connection is closed.") in the application.
      // When a slot moves to another primary (resharding, a failover), Redis drops the subscriptions of
      // its channels (a `sunsubscribe` nobody asked for, which ioredis passes over): the duplicate
      // subscribes them again on the new primary once its own map of slots changed, which it reads
      // only when told to, hence `SLOTS_REFRESH`; and the store catches up then ('subscribersReady').
      // Without it, every wake-up of a moved key was lost, its waiters answered by heartbeats only.
      // The duplicate queues its subscriptions while it connects, whatever the application's client
      // does (enableOfflineQueue: false refused the first one, made before it was connected, and
      // with it the store): the first is bounded below, and the store subscribes again when it is back.
      // The sharded one has no keyPrefix: SSUBSCRIBE's channel is a key to ioredis, and the store's
      // channels carry the prefix already (the Lua publishes to them as they are). One in redisOptions
      // (the Cluster's connections have it too) prefixed the names ioredis keeps again as it subscribed
      // them anew after a reconnection: every later wake-up of those keys was lost.
      const sub = sharded
        ? c.duplicate([], {
            shardedSubscribers: true,
            slotsRefreshInterval: SLOTS_REFRESH,
            enableOfflineQueue: true,
            keyPrefix: '',
            redisOptions: { ...c.options?.redisOptions, keyPrefix: '' },
          })
        : cluster
          ? c.duplicate([], { enableOfflineQueue: true })
          : c.duplicate({ autoResubscribe: false, enableOfflineQueue: true })
      sub.on('error', noop)
      sub.on(sharded ? 'smessage' : 'message', ((channel: string, text: string) => message(channel, text)) as (...args: never[]) => void)
      sub.on('ready', afterFirst(ready))
      if (sharded) sub.on('subscribersReady', afterFirst(ready))
      // The first subscription waits for the connection: bounded, as node-redis's (connectNodeRedis).
      // ioredis queues it while it connects again and again (a Redis at maxclients refuses each try)
      // until maxRetriesPerRequest, and for good with none (null, as BullMQ asks of its clients):
      // openRedisStore never settled.
      let first = true
      return {
        subscribe: async channel => {
          const subscribed = sharded ? sub.ssubscribe!(channel) : sub.subscribe(channel)
          if (!first) return void (await subscribed)
          first = false
          await within(subscribed, CONNECT_PATIENCE, `no connection for pub/sub within ${CONNECT_PATIENCE}ms`)
        },
        unsubscribe: async channel => void (await (sharded ? sub.sunsubscribe!(channel) : sub.unsubscribe(channel))),
        close: async () => {
          sub.disconnect()
          // A Cluster's (ioredis 5) slots refresh under way, once it ends, schedules the next one even
          // though the client was disconnected meanwhile, and each the next after it, every
          // slotsRefreshInterval for good (a refresh of no nodes fails at once): a timer that kept the
          // process alive after close(). Once it ended (asked with it, not anew), that timer goes.
          if (sub.isRefreshing === true) sub.refreshSlotsCache?.(() => sub.clearNodesRefreshInterval?.())
        },
      }
    },
    ended: () => c.status === 'end',
    watchEnd: (ended, back) => onEvents(c, { end: ended, ready: back }),
    async connected() {
      // A client that queues commands needs no wait: they go once it is connected. One that refuses
      // them refused the store's first (INFO), made as soon as the application made the client: the
      // store could not open on it (with lazyConnect, which connects at the first command, ever).
      if (c.options?.enableOfflineQueue !== false || c.status === 'end') return
      if (c.status === 'wait') (c as unknown as { connect(): Promise<void> }).connect().catch(noop)
      await clusterReady(c, readyWaits)
    },
    async close() {
      closed = true
      for (const end of [...readyWaits]) end()
      if (!owned) return
      // QUIT waits behind every command queued, and with Redis gone those wait for ioredis's retries
      // to give up (about 74 s, measured: the store's close and the CLI hung that long). A client not
      // connected is cut at once; a connected one has QUIT_PATIENCE to say goodbye.
      if (c.status !== 'ready') return c.disconnect()
      if (!(await settlesWithin(c.quit(), QUIT_PATIENCE))) c.disconnect()
    },
  }
}

/**
 * How often a Cluster's sharded subscriber (ioredis) reads where the slots are (`CLUSTER SLOTS`, one
 * command): a waiter whose key's slot moved is woken by a release within about this long after the move.
 */
const SLOTS_REFRESH = 1_000

/** How long closing a client holdfast opened waits for Redis to take its QUIT before cutting it. */
const QUIT_PATIENCE = 1_000

/**
 * Whether `p` settles (either way) within `ms` of real time: the client is I/O, not the store's
 * clock (a test clock would never let a close end).
 */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<false>(resolve => (timer = setTimeout(resolve, ms, false)))
  try {
    return await Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      late,
    ])
  } finally {
    clearTimeout(timer)
  }
}

/** `p`, or a rejection saying `what` after `ms` of real time (the client is I/O, not the store's clock). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(what)), ms)
    p.then(
      value => (clearTimeout(timer), resolve(value)),
      error => (clearTimeout(timer), reject(error)),
    )
  })
}

/** Closes a node-redis client holdfast opened: QUIT (or `close()`), cut if it fails or Redis does not take it in time (see above). */
async function endNodeRedis(c: NodeRedisBase): Promise<void> {
  const cut = async () => {
    if (typeof c.destroy === 'function') await c.destroy()
    else await c.disconnect?.().catch(noop)
  }
  if (!c.isOpen) return
  const goodbye = typeof c.close === 'function' ? c.close() : typeof c.quit === 'function' ? c.quit() : undefined
  if (!goodbye) return cut()
  let failed = false
  const settled = await settlesWithin(
    goodbye.catch(() => (failed = true)),
    QUIT_PATIENCE,
  )
  if (!settled || failed) await cut()
}

/**
 * Tells of subscriptions that were dropped under the store: `lost(channel)`, Redis dropped one (its
 * slot moved to another primary); `lostAll()`, any may have been (the client replaced a connection).
 * `watch()` after each subscription (it may have opened a connection to watch), `off()` at close.
 */
interface Dropped {
  watch(): void
  off(): void
}

/** How long a dropped subscription waits before it is asked again, at first and at most (doubling). */
const REGAIN_FIRST = 50
const REGAIN_MOST = 2_000

/** What a retry of a client's I/O does (`retried`): tried again while `goOn(error)` holds, waiting in real time; `unref`: the wait keeps no process alive (nothing else would end it). */
function retriedWhile<T>(attempt: () => Promise<T>, backoff: Backoff & { unref?: boolean }, goOn: (error: unknown) => boolean): Promise<T> {
  return retried(
    attempt,
    backoff,
    error => {
      if (!goOn(error)) throw error
    },
    ms => pause(systemClock, ms, !backoff.unref),
  )
}

/**
 * The pub/sub side made of a client's own `subscribe` / `unsubscribe` (Sentinel's, a Cluster's sharded
 * ones). `off` takes the store's listener of the client's events off at close. `dropped` (a Cluster's)
 * wires what tells that subscriptions were dropped: they are subscribed again (one already in place
 * costs nothing), each asked until it is taken (the client learns where a slot went from the first
 * command Redis answers MOVED: the catch-up's), and the store catches up (`ready`) at once and once
 * they are back: the drops of one moment together, so that a move of many channels costs one catch-up.
 */
function ownPubSub(
  subscribe: (channel: string, listener: Listener) => Promise<unknown>,
  unsubscribe: (channel: string, listener: Listener) => Promise<unknown>,
  message: (channel: string, text: string) => void,
  off: () => void,
  ready: () => void,
  dropped?: (lost: (channel: string) => void, lostAll: () => void) => Dropped,
): Subscriber {
  const listener: Listener = (text, channel) => message(channel, text)
  const channels = new Set<string>()
  let closed = false
  let pending: Set<string> | undefined
  const wanted = (channel: string) => () => channels.has(channel) && !closed
  const again = (channel: string) =>
    wanted(channel)()
      ? retriedWhile(() => subscribe(channel, listener), { first: REGAIN_FIRST, most: REGAIN_MOST }, wanted(channel)).then(noop, noop)
      : undefined
  const regain = (list: Iterable<string>) => {
    if (closed) return
    if (!pending) {
      pending = new Set()
      setTimeout(async () => {
        const now = [...pending!].filter(c => channels.has(c))
        pending = undefined
        ready()
        await Promise.all(now.map(again))
        watching?.watch()
        if (!closed) ready()
      }, 0)
    }
    for (const channel of list) pending.add(channel)
  }
  const watching = dropped?.(
    channel => regain([channel]),
    () => regain([...channels]),
  )
  return {
    subscribe: async channel => {
      channels.add(channel)
      await subscribe(channel, listener)
      watching?.watch()
    },
    unsubscribe: async channel => {
      channels.delete(channel)
      await unsubscribe(channel, listener)
    },
    // The client is the application's: only this store's channels go, and its listener (which refers
    // to the store: left on, a closed store would live as long as the client, one more for each).
    // Waited for QUIT_PATIENCE at most: an unsubscribe waits on the connection of its channel's
    // primary, and node-redis's Cluster client keeps a dead primary's for good (it never learns of the
    // failover): close() never settled. Past it, the listener stays with that connection.
    close: async () => {
      closed = true
      off()
      watching?.off()
      await settlesWithin(Promise.all([...channels].map(channel => unsubscribe(channel, listener).catch(noop))), QUIT_PATIENCE)
      channels.clear()
    },
  }
}

/** What an adapter of one server without a keyPrefix (node-redis's, Bun's) has: commands by `call`, the one primary, its SCAN. */
function oneServer(client: ClientKind, call: Sender) {
  const send = replying(call)
  return {
    client,
    topology: 'server',
    sharded: false,
    keyPrefix: '',
    send,
    call,
    primaries: async () => [send],
    scan: (pattern: string) => scanOne(send, pattern),
  } as const
}

function nodeRedisAdapter(c: NodeRedis, owned: boolean): Adapter {
  const sendCommand = (args: Arg[]) => c.sendCommand(args.map(String))
  return {
    ...oneServer('node-redis', c.options?.disableOfflineQueue === true ? onceOnline(sendCommand, () => !c.isOpen) : sendCommand),
    async subscriber(message, ready) {
      const sub = c.duplicate()
      sub.on('error', noop)
      sub.on('ready', afterFirst(ready))
      await connectNodeRedis(sub, `no connection for pub/sub within ${CONNECT_PATIENCE}ms`)
      const listener: Listener = (text, ch) => message(ch, text)
      return {
        subscribe: async channel => void (await sub.subscribe(channel, listener)),
        unsubscribe: async channel => void (await sub.unsubscribe(channel, listener)),
        close: () => endNodeRedis(sub),
      }
    },
    ended: () => !c.isOpen,
    watchEnd: (ended, back) => onEvents(c, { end: ended, ready: back }),
    async connected() {
      // One that refuses commands while not connected (disableOfflineQueue), passed while its
      // connect() was under way (not awaited) or while it reconnected, refused the store's first
      // command ("The client is offline"), and the store with it. One quit meanwhile is not waited for.
      if (c.options?.disableOfflineQueue === true && c.isReady === false) await untilEvent(c, ['ready', 'end'])
    },
    async close() {
      if (owned) await endNodeRedis(c)
    },
  }
}

/** How long a connection holdfast makes (for a url, for pub/sub) has to connect and be ready. */
const CONNECT_PATIENCE = 10_000

/** Resolves at the first of `events` on `emitter`, or `CONNECT_PATIENCE` on (the caller looks at the client then). */
function untilEvent(emitter: NodeRedisBase, events: string[]): Promise<void> {
  return new Promise<void>(resolve => {
    const done = () => {
      clearTimeout(timer)
      for (const event of events) emitter.off(event, done)
      resolve()
    }
    const timer = setTimeout(done, CONNECT_PATIENCE)
    for (const event of events) emitter.on(event, done)
  })
}

/** ioredis's refusal of a command while a client of one server is not connected (enableOfflineQueue: false). */
const IOREDIS_OFFLINE = "Stream isn't writeable and enableOfflineQueue options is false"

/** ioredis's refusal of a command while a Cluster is not ready (enableOfflineQueue: false). */
const IOREDIS_CLUSTER_OFFLINE = "Cluster isn't ready and enableOfflineQueue options is false"

/**
 * A client's refusal of a command while its connection is not ready (node-redis's disableOfflineQueue,
 * ioredis's enableOfflineQueue: false): the command was not sent.
 */
function refusedOffline(error: unknown): boolean {
  const e = error as Error | null
  const said = e?.message
  return e?.constructor?.name === 'ClientOfflineError' || said === 'The client is offline' || said === IOREDIS_OFFLINE || said === IOREDIS_CLUSTER_OFFLINE
}

/**
 * `send` through a connection that refuses commands while it is not connected (node-redis's
 * disableOfflineQueue, ioredis's enableOfflineQueue: false): a command refused so (never sent) is sent
 * again once the connection is back, as one queued by a client that queues would be: tried again 10 ms
 * on, then twice as long after each refusal (at most 500 ms apart), for `CONNECT_PATIENCE` at most and
 * not once the client is closed for good (`ended`), when the refusal is the answer. `unsent`, asked as
 * each try is sent: whether a refusal then means the command was not sent (a client whose refusal may
 * also answer a command sent before: an ioredis Cluster's). The store waits for it as for any command,
 * within the patience it gives it. Without it, a command sent as a cut connection came back failed at
 * once.
 */
function onceOnline(send: Sender, ended: () => boolean, unsent: () => boolean = () => true): Sender {
  return args => {
    const giveUp = Date.now() + CONNECT_PATIENCE
    let refusable = true
    return retriedWhile(
      () => {
        refusable = unsent()
        return send(args)
      },
      { first: 10, most: 500 },
      error => refusable && refusedOffline(error) && !ended() && Date.now() < giveUp,
    )
  }
}

/**
 * Connects a node-redis client holdfast made (for a url, or the subscriber connection duplicated from
 * the application's client); rejects its first error (a refused connection, a refused AUTH: the
 * password changed since the application's client connected), or `late` when it is not ready within
 * `CONNECT_PATIENCE` (a Redis that takes the connection and never answers its handshake), with the
 * connection cut. node-redis's `connect()` does not reject while its reconnect strategy tries again (by
 * default, for good), nor while its handshake waits: openRedisStore waited for good, and the
 * connection, which nobody would close, tried again every 2 s.
 */
async function connectNodeRedis(client: NodeRedis, late: string): Promise<void> {
  let onError: (error: unknown) => void = noop
  let timer: ReturnType<typeof setTimeout> | undefined
  const failed = new Promise<never>((_, reject) => {
    onError = reject
    timer = setTimeout(() => reject(new Error(late)), CONNECT_PATIENCE)
  })
  client.on('error', onError as (...args: never[]) => void)
  const connecting = client.connect()
  try {
    await Promise.race([connecting, failed])
  } catch (error) {
    // Cut, not closed: a QUIT would wait behind the connection it never made.
    connecting.catch(noop)
    if (typeof client.destroy === 'function') client.destroy()
    else await client.disconnect?.().catch(noop)
    throw error
  } finally {
    clearTimeout(timer)
    client.off('error', onError as (...args: never[]) => void)
  }
}

/**
 * node-redis's Sentinel and Cluster clients: commands by `raw`, pub/sub by the client's own
 * (`subscribe`, or the sharded one), `missed` wires the client's event that says messages may have
 * been missed and answers how to unwire it; closed only if holdfast opened the client.
 */
function nodeRedisOwnPubSubAdapter(
  c: NodeRedisBase,
  owned: boolean,
  o: {
    topology: 'sentinel' | 'cluster'
    raw: Sender
    primaries?: () => Promise<Sender[]>
    subscribe: (channel: string, listener: Listener) => Promise<unknown>
    unsubscribe: (channel: string, listener: Listener) => Promise<unknown>
    missed: (ready: () => void) => () => void
    dropped?: (lost: (channel: string) => void, lostAll: () => void) => Dropped
    connected?: () => Promise<void>
    /** Whether what the client answers now comes from a node no longer its primary (messages too), and the watch that tells, started with the pub/sub side. */
    watch?: PrimaryWatch
  },
): Adapter {
  const send = replying(o.raw)
  const primaries = o.primaries ?? (async () => [send])
  return {
    client: 'node-redis',
    topology: o.topology,
    sharded: o.topology === 'cluster',
    keyPrefix: '',
    send,
    call: o.raw,
    primaries,
    scan: async pattern => scanAll(await primaries(), pattern),
    async subscriber(message, ready) {
      const watch = o.watch
      if (!watch) return ownPubSub(o.subscribe, o.unsubscribe, message, o.missed(ready), ready, o.dropped)
      // A grant published by a node that is no longer the primary is not one: not heard (the store
      // catches up once the client moved, `ready`).
      const heard = (channel: string, text: string) => void (watch.stale() ? undefined : message(channel, text))
      const missed = o.missed(ready)
      await watch.start()
      return ownPubSub(o.subscribe, o.unsubscribe, heard, () => (missed(), watch.stop()), ready, o.dropped)
    },
    onStale: o.watch && (found => o.watch!.onStale(found)),
    ended: () => !c.isOpen,
    connected: o.connected ?? (async () => {}),
    async close() {
      if (owned) await endNodeRedis(c)
    },
  }
}

/** What the sentinels publish, every 2 s, on every node they watch: `ip,port,runid,epoch,name,primary ip,primary port,primary config epoch`. */
const HELLO = '__sentinel__:hello'

/**
 * How long after a promotion the sentinels' hellos name the new primary on the old one, at most: the
 * failover's leader reads the promoted replica's role every second and sends its hellos every 2 s;
 * the other sentinels follow its hello at once. With margin for a busy machine.
 */
export const ANNOUNCED_WITHIN = 5_000

/**
 * Where node-redis's Sentinel client stands against where the sentinels say the primary is.
 *
 * node-redis 5 (5.12) moves to a new primary when it hears of one, but it listens for `switch-master`
 * where the sentinels announce `+switch-master` (sentinel/index.js:620), so after a graceful failover
 * it stays on the old primary until its sentinel announces a replica, a command fails there, or the
 * sentinels demote the old primary (up to about 10 s on); and it moves only once the sentinel it asks
 * no longer flags a failover in progress (sentinel/utils.js:8), which the failover's leader does until
 * every replica was reconfigured (seconds). Meanwhile that node answers every command, renewals
 * included, and the new primary sees none of them: a lease runs out there, and the key goes to another
 * process while its holder, answered by the old node, still believes it holds it.
 *
 * The sentinels say where the primary is on the nodes themselves: their hello (`__sentinel__:hello`,
 * every 2 s from each, to every node they watch, the old primary included once they count it a
 * replica) names the primary and its config epoch. Heard on the client's own pub/sub connection (on
 * the node it is on, with the client's credentials), a hello of a later epoch naming another node than
 * the client's says the client has not moved. Until it has (its 'topology-change' MASTER_CHANGE),
 * nothing that node answers counts (`checked`): every answer, or error, is taken as no answer (asked
 * again, as after a dropped connection: a renewal extends no lease, a grant is not believed and its
 * request is asked again on the new primary), and wake-ups published there are not heard. What it
 * answered before the hello was heard is the store's to doubt (`onStale`: the last ANNOUNCED_WITHIN
 * of renewals). Nothing here makes the client move: node-redis has no public way to ask it (a command
 * answered READONLY makes it look, sentinel/index.js:605-612, but while its sentinel flags the failover
 * it finds nothing and holds every command of the application's until it does).
 */
export class PrimaryWatch {
  readonly #c: NodeRedisSentinel
  /** The name of the primary the hellos speak of (the first hello's). */
  #name: string | undefined
  /** Where the primary is, by the latest hello or by the client's last move, and the epoch of that hello. */
  #primary: { at: string; epoch: number } | undefined
  /**
   * Where the client is (`host:port` as the sentinels name it): the first hello's primary, then where
   * its last move took it (its event names the node as the sentinels do). Never the client's own view
   * of the node (the node's own address, `laddr`, nor the address it dialled, `getMasterNode()`): the
   * sentinels may name nodes otherwise (hostnames with `announce-hostnames`, an `announce-ip` behind
   * NAT, a `nodeAddressMap` to reach them), and a client taken for stale from the start would have
   * every answer refused for good. So a store that heard no hello before a failover (opened in the
   * 2 s before it) takes the first for where its client is, and is not watched through that failover.
   */
  #clientAt: string | undefined
  /**
   * The node's own address (`laddr` of `CLIENT INFO` at the start), until the client moves: a hello
   * of a later epoch naming it says the client is on the primary (the first hello heard was of a
   * sentinel that had not yet learned of an earlier failover), not that it has to move.
   */
  #ownAddress: string | undefined
  readonly #found = new Set<() => void>()
  readonly #hello: Listener = text => this.#heard(text)
  readonly #moved = ((event: { type?: string; node?: { host?: unknown; port?: unknown } }) => {
    if (event?.type !== 'MASTER_CHANGE' || !event.node) return
    // Its own move: where it went is the primary, until a hello of a later epoch names another.
    const at = `${String(event.node.host)}:${String(event.node.port)}`
    this.#clientAt = at
    this.#ownAddress = undefined
    if (this.#primary) this.#primary = { at, epoch: this.#primary.epoch }
  }) as (...args: never[]) => void

  constructor(c: NodeRedisSentinel) {
    this.#c = c
  }

  /** Whether the client is on a node the sentinels no longer name the primary. */
  stale(): boolean {
    return this.#primary !== undefined && this.#clientAt !== undefined && this.#clientAt !== this.#primary.at
  }

  /** `sent`, as the client answers it; while `stale()` at its answer, rejected instead (no answer). */
  checked<T>(sent: Promise<T>): Promise<T> {
    return sent.then(
      value => (this.stale() ? Promise.reject(this.#refusal()) : value),
      error => Promise.reject(this.stale() ? this.#refusal(error) : error),
    )
  }

  /** Calls `found` each time the client is found stale; answers how to stop. */
  onStale(found: () => void): () => void {
    this.#found.add(found)
    return () => this.#found.delete(found)
  }

  /** Listens to the hellos; a refused subscription (an ACL without the channel) leaves the client unwatched. */
  async start(): Promise<void> {
    this.#c.on('topology-change', this.#moved)
    const info = await this.#c.sendCommand(false, ['CLIENT', 'INFO']).catch(noop)
    this.#ownAddress = / laddr=(\S+)/.exec(` ${String(info)}`)?.[1]
    await this.#c.subscribe(HELLO, this.#hello).catch(noop)
  }

  stop(): void {
    this.#found.clear()
    this.#c.off('topology-change', this.#moved)
    this.#c.unsubscribe(HELLO, this.#hello).catch(noop)
  }

  #refusal(cause?: unknown): Error {
    return new Error(
      `answered by ${this.#clientAt}, which the sentinels no longer name the primary of ${this.#name} (now ${this.#primary?.at}): node-redis's Sentinel client has not moved yet`,
      { cause },
    )
  }

  #heard(text: string): void {
    const f = String(text).split(',')
    const epoch = Number(f[7])
    if (f.length < 8 || !Number.isSafeInteger(epoch)) return
    this.#name ??= f[4]
    if (f[4] !== this.#name || (this.#primary && epoch <= this.#primary.epoch)) return
    const was = this.stale()
    this.#primary = { at: `${f[5]}:${f[6]}`, epoch }
    if (this.#clientAt === undefined || this.#primary.at === this.#ownAddress) this.#clientAt = this.#primary.at
    if (this.stale() && !was) for (const found of this.#found) found()
  }
}

function nodeRedisSentinelAdapter(c: NodeRedisSentinel, owned: boolean): Adapter {
  const watch = new PrimaryWatch(c)
  return nodeRedisOwnPubSubAdapter(c, owned, {
    topology: 'sentinel',
    raw: args => watch.checked(c.sendCommand(false, args.map(String))),
    watch,
    // The Sentinel client keeps a pub/sub connection of its own to the primary, and moves it (with its
    // channels) when the primary changes: messages published meanwhile may be missed.
    subscribe: (channel, listener) => c.subscribe(channel, listener),
    unsubscribe: (channel, listener) => c.unsubscribe(channel, listener),
    missed: ready => {
      const listener = ((event: { type?: string }) => {
        if (event?.type === 'MASTER_CHANGE') ready()
      }) as (...args: never[]) => void
      c.on('topology-change', listener)
      return () => c.off('topology-change', listener)
    },
  })
}

/** The first key a command names (the scripts' and Functions'), by which a Cluster client routes it. */
function firstKey(args: Arg[]): string | undefined {
  const name = String(args[0]).toUpperCase()
  if ((name === 'FCALL' || name === 'FCALL_RO' || name === 'EVALSHA' || name === 'EVAL') && Number(args[2]) > 0) return String(args[3])
  return undefined
}

function nodeRedisClusterAdapter(c: NodeRedisCluster, owned: boolean): Adapter {
  // Its connections made with disableOfflineQueue (the Cluster's `defaults`) refuse commands while
  // they reconnect, as a client of one server does: a cut connection failed the next inspect(), or a
  // claim, "The client is offline".
  const refuses = c._options?.defaults?.disableOfflineQueue === true
  const online = (sender: Sender) => (refuses ? onceOnline(sender, () => !c.isOpen) : sender)
  return nodeRedisOwnPubSubAdapter(c, owned, {
    topology: 'cluster',
    raw: online(args => c.sendCommand(firstKey(args), false, args.map(String))),
    primaries: async () => c.masters.map(master => replying(online(async (args: Arg[]) => (await c.nodeClient(master)).sendCommand(args.map(String))))),
    // Passed while its connect() is under way (not awaited), it knows no node yet, and sending threw
    // ("Cannot read properties of undefined"): the store waits until it found them ('connect').
    connected: async () => {
      if (c.masters.length === 0 && c.isOpen) await untilEvent(c, ['connect', 'disconnect'])
    },
    // Sharded channels go to the primary of their slot, on a pub/sub connection the client makes for
    // it (and moves when the slot does); a node connecting anew may have missed messages.
    subscribe: (channel, listener) => c.sSubscribe(channel, listener),
    unsubscribe: (channel, listener) => c.sUnsubscribe(channel, listener),
    missed: ready => {
      const listener = afterFirst(ready)
      c.on('node-ready', listener)
      return () => c.off('node-ready', listener)
    },
    // A slot that moved (resharding, a failover): Redis drops the subscriptions of its channels, and
    // the pub/sub connection of that primary says so ('sharded-channel-moved', its listeners taken off).
    // node-redis means to subscribe them again on the new primary, but listens for another name of the
    // event ('server-sunsubscribe', 5.12): they stayed dropped, every wake-up of a moved key lost.
    // And when a primary is replaced (a failover), the client drops its pub/sub connection, with its
    // subscriptions, silently: they go again once the new primary's connection is ready. A pub/sub
    // connection cut and made again subscribes its channels again by itself, then says 'ready' (its
    // own event: the Cluster's 'node-ready' comes once a connection, never after a reconnection, and
    // the store did not catch up: a grant published while it was away was never heard).
    dropped: (lost, lostAll) => {
      const watched = new Map<NodeRedisEvents, (...args: never[]) => void>()
      const listener = ((channel: unknown) => lost(String(channel))) as (...args: never[]) => void
      const replaced = afterFirst(lostAll)
      c.on('node-ready', replaced)
      return {
        watch() {
          for (const master of c.masters) {
            const client = (master as { pubSub?: { client?: NodeRedisEvents & { isReady?: boolean } } } | null)?.pubSub?.client
            if (!client || watched.has(client)) continue
            // One still connecting (another channel's subscription under way) says 'ready' first for that.
            const back = client.isReady === false ? afterFirst(lostAll) : () => lostAll()
            watched.set(client, back)
            client.on('sharded-channel-moved', listener)
            client.on('ready', back)
          }
        },
        off() {
          c.off('node-ready', replaced)
          for (const [client, back] of watched) {
            client.off('sharded-channel-moved', listener)
            client.off('ready', back)
          }
          watched.clear()
        },
      }
    },
  })
}

/**
 * What Bun's client answers once it is closed for good, until its `connect()` is called: closed by the
 * application (`close()`), or given up reconnecting (`maxRetries`, 10 by default: about 30 s). Bun says
 * it by these words alone (the code, ERR_REDIS_CONNECTION_CLOSED, is also a connection cut while it
 * reconnects), and has no state to read: `connected` is false while it reconnects too.
 */
const BUN_GONE = /^(Connection has failed|Max reconnection attempts reached)/

/** How often the store looks at whether Bun's client was closed for good, or is back (`watchEnd`). */
const BUN_WATCH = 1_000

/** What Bun's client answers a command while not connected, made with `enableOfflineQueue: false`. */
const BUN_OFFLINE = /offline queue is disabled/i

/** Bun's own Redis client (`new RedisClient(url)` from 'bun'): one server, RESP3. */
interface BunRedis {
  send(command: string, args: string[]): Promise<unknown>
  /** A new client with the same url and options, connected. */
  duplicate(): Promise<BunRedis>
  connect(): Promise<unknown>
  close(): void
  readonly connected: boolean
  /** Called on every connection made after the first (a reconnect). One callback, not a list: set only on a client holdfast made. */
  onconnect: (() => void) | null | undefined
  /** Called once the client is closed for good (closed, or given up reconnecting). */
  onclose: ((error: unknown) => void) | null | undefined
  subscribe(channel: string, listener: Listener): Promise<unknown>
  unsubscribe(channel: string, listener?: Listener): Promise<unknown>
}

function isBunRedis(c: unknown): c is BunRedis {
  const x = c as BunRedis
  return typeof x?.send === 'function' && typeof x.duplicate === 'function' && typeof x.subscribe === 'function' && typeof x.connected === 'boolean'
}

/**
 * Bun's client (`RedisClient`): commands by `send(name, args)` (Bun batches those of one tick by itself:
 * nothing to cork). It rejects a command in flight when its connection is cut (asked again by the
 * store, as node-redis's), queues commands while it reconnects, and gives up after `maxRetries`; an
 * error reply is a RedisError of its own code (`asReply`). The application's `onconnect` / `onclose`
 * are one callback each, never touched: whether it is closed for good is read from its answers
 * (`BUN_GONE`), noted by every command, and forgotten at the next answer (the application may call
 * `connect()` on a client that gave up; a cut after that is a reconnection again).
 */
function bunAdapter(c: BunRedis, owned: boolean): Adapter {
  // Closed for good, by its last answer; any answer since says it is back.
  let gone = false
  const answered = (value: unknown) => {
    gone = false
    return value
  }
  const note = (error: unknown) => {
    const e = error as { message?: unknown } | null
    if (typeof e?.message === 'string' && BUN_GONE.test(e.message)) gone = true
    throw error
  }
  const call: Sender = args => c.send(String(args[0]), args.slice(1).map(String)).then(answered, note)
  return {
    ...oneServer('bun', call),
    subscriber: (message, ready) => bunSubscriber(c, message, ready),
    ended: () => gone && !c.connected,
    watchEnd(ended, back) {
      // Bun's client tells nothing but `connected` (false while it reconnects too), and its `onconnect`
      // / `onclose` are the application's: it is looked at every BUN_WATCH ms, by a timer that keeps no
      // process alive. Not connected, a PING says whether it is closed for good (answered at once:
      // BUN_GONE) or reconnecting (answered once back, or given up: BUN_GONE then).
      let told = false
      let asking = false
      const timer = setInterval(() => {
        if (c.connected) {
          if (told) back()
          told = false
          return
        }
        if (asking || told) return
        asking = true
        call(['PING'])
          .catch(noop)
          .finally(() => {
            asking = false
            if (!told && gone && !c.connected) {
              told = true
              ended()
            }
          })
      }, BUN_WATCH)
      ;(timer as { unref?: () => void }).unref?.()
      return () => clearInterval(timer)
    },
    async connected() {
      // Bun connects at the first command; one made with enableOfflineQueue: false refuses it instead
      // ("offline queue is disabled"), and with it the store: connected here, as ioredis's lazy one.
      // A client closed before answers at once that it failed (noted: the store says it was closed).
      if (c.connected) return
      try {
        await within(call(['PING']), CONNECT_PATIENCE, `not ready within ${CONNECT_PATIENCE}ms`)
      } catch (error) {
        if (BUN_OFFLINE.test(String((error as Error)?.message))) await within(c.connect(), CONNECT_PATIENCE, 'not connected').catch(noop)
      }
    },
    async close() {
      if (owned) c.close()
    },
  }
}

/**
 * The pub/sub side on Bun: a `duplicate()` of the application's client, holdfast's own. Bun reconnects
 * it but does not subscribe again (its listeners stay, the server knows none of the channels: every
 * wake-up after a cut was lost), and subscribing again adds the listener once more (each message came
 * twice): so on every reconnection (`onconnect`) each channel's listener is taken off and the channel
 * subscribed anew, then the store catches up (`ready`); a `subscribe` of a channel already subscribed
 * on this connection answers that subscription. A subscriber that gave up reconnecting (`onclose`) is
 * asked to connect again, from every 50 ms to every 2 s, until it is back or closed.
 */
async function bunSubscriber(c: BunRedis, message: (channel: string, text: string) => void, ready: () => void): Promise<Subscriber> {
  // A refused connection (a password changed since the client connected) rejects "Connection closed",
  // the server's words lost: said so, rather than passed on as if Redis were down.
  const duplicated = c.duplicate().catch(error => {
    const said = (error as Error)?.message ?? String(error)
    throw new Error(`no connection for pub/sub: ${said} (Bun's client does not say why: a refused password or ACL, maxclients, a refused connection)`, {
      cause: error,
    })
  })
  // One that comes after the patience is closed: nobody else would.
  const sub = await within(duplicated, CONNECT_PATIENCE, `no connection for pub/sub within ${CONNECT_PATIENCE}ms`).catch(error => {
    duplicated.then(late => late.close(), noop)
    throw error
  })
  const listener: Listener = (text, channel) => message(channel, text)
  const channels = new Map<string, Promise<unknown>>()
  let closed = false
  let regaining = false
  const take = (channel: string, subscribing: Promise<unknown>) => {
    channels.set(channel, subscribing)
    subscribing.catch(() => {
      if (channels.get(channel) === subscribing) channels.delete(channel)
    })
    return subscribing
  }
  sub.onconnect = () => {
    if (closed) return
    for (const channel of channels.keys())
      take(
        channel,
        sub
          .unsubscribe(channel, listener)
          .catch(noop)
          .then(() => sub.subscribe(channel, listener)),
      )
    ready()
  }
  sub.onclose = () => {
    if (closed || regaining) return
    regaining = true
    // Bun may have just given up: asked first after REGAIN_FIRST, then as a dropped subscription is.
    const open = () => !closed
    pause(systemClock, REGAIN_FIRST)
      .then(() => (open() ? retriedWhile(() => sub.connect(), { first: 2 * REGAIN_FIRST, most: REGAIN_MOST, unref: true }, open) : undefined))
      .catch(noop)
      .finally(() => (regaining = false))
  }
  return {
    subscribe: async channel => void (await (channels.get(channel) ?? take(channel, sub.subscribe(channel, listener)))),
    unsubscribe: async channel => {
      channels.delete(channel)
      await sub.unsubscribe(channel, listener)
    },
    close: async () => {
      closed = true
      channels.clear()
      sub.close()
    },
  }
}

/** An adapter over a client the application made. */
export function adapterOf(client: unknown, place: string): Adapter {
  if (isIoRedis(client)) {
    const keyPrefix = client.options?.keyPrefix
    if (keyPrefix !== undefined && keyPrefix !== null && typeof keyPrefix !== 'string')
      throw new InvalidError(`${place}: option redis: the ioredis client's keyPrefix must be a string (a Buffer is not supported): give it as text`)
    return ioredisAdapter(client, false)
  }
  const nodeRedis = isNodeRedisCluster(client) || isNodeRedisSentinel(client) || isNodeRedis(client)
  if (nodeRedis && !(client as NodeRedisBase).isOpen)
    throw new InvalidError(`${place}: option redis: the node-redis client is not connected: await client.connect() before passing it`)
  if (isNodeRedisCluster(client)) return nodeRedisClusterAdapter(client, false)
  if (isNodeRedisSentinel(client)) return nodeRedisSentinelAdapter(client, false)
  if (isNodeRedis(client)) return nodeRedisAdapter(client, false)
  if (isBunRedis(client)) return bunAdapter(client, false)
  throw new InvalidError(
    `${place}: option redis must be an ioredis client (new Redis(…), new Cluster(…)), a node-redis client (createClient(…), createCluster(…), createSentinel(…), connected) or, on Bun, Bun's (new RedisClient(…))`,
  )
}

/** Bun's `RedisClient` class: a url, and its options (holdfast gives `autoReconnect` alone). */
type BunRedisClass = new (url: string, options?: { autoReconnect?: boolean }) => BunRedis

/** Bun's `RedisClient` when running on Bun (undefined elsewhere, and on a Bun without it). */
async function bunClient(): Promise<BunRedisClass | undefined> {
  if (typeof (globalThis as { Bun?: unknown }).Bun !== 'object') return undefined
  try {
    const bun = (await import('bun' as string)) as { RedisClient?: BunRedisClass }
    return typeof bun.RedisClient === 'function' ? bun.RedisClient : undefined
  } catch {
    return undefined
  }
}

/** Opens a client for `url` with whichever of ioredis and node-redis is installed (ioredis first); on Bun with neither, Bun's own. */
export async function adapterForUrl(url: string, place: string): Promise<Adapter> {
  let ioredis: { Redis?: new (url: string, options: object) => IoRedis; default?: unknown } | undefined
  try {
    ioredis = await import('ioredis' as string)
  } catch {
    ioredis = undefined
  }
  if (ioredis) {
    const Redis = (ioredis.Redis ?? ioredis.default) as new (url: string, options: object) => IoRedis
    const client = new Redis(url, { lazyConnect: true })
    client.on('error', noop)
    // connect() rejects "Connection is closed." whatever happened (a refused password, a refused
    // connection): why is the client's last 'error'.
    let why: unknown
    const record = ((error: unknown) => (why = error)) as (...args: never[]) => void
    client.on('error', record)
    try {
      // ioredis's connectTimeout ends when the TCP connection is made; its readiness check (INFO) waits
      // for good on a Redis that takes connections and never answers (frozen, or behind a proxy).
      await within((client as unknown as { connect(): Promise<void> }).connect(), CONNECT_PATIENCE, `not ready within ${CONNECT_PATIENCE}ms`)
    } catch (error) {
      client.disconnect()
      const cause = why ?? error
      throw new ClosedError(`${place}: cannot reach ${masked(url)}: ${(cause as Error)?.message ?? cause}`, { cause })
    } finally {
      client.off('error', record)
    }
    return ioredisAdapter(client, true)
  }
  let nodeRedis: { createClient?: (options: object) => NodeRedis } | undefined
  try {
    nodeRedis = await import('redis' as string)
  } catch {
    nodeRedis = undefined
  }
  if (nodeRedis?.createClient) {
    const client = nodeRedis.createClient({ url })
    client.on('error', noop)
    try {
      await connectNodeRedis(client, `not ready within ${CONNECT_PATIENCE}ms`)
    } catch (error) {
      throw new ClosedError(`${place}: cannot reach ${masked(url)}: ${(error as Error)?.message ?? error}`, { cause: error })
    }
    return nodeRedisAdapter(client, true)
  }
  // On Bun with neither installed, Bun's own client: one server, as a url names.
  const bun = await bunClient()
  if (bun) return bunAdapter(await openBun(bun, url, place), true)
  throw new InvalidError(`${place}: ${NO_CLIENT}: install one (npm install ioredis), or pass your own as option redis`)
}

/**
 * Opens Bun's client for `url`, the one the store keeps, answering. Asked by a command, not connect():
 * a refused password rejects it at once with the server's words (WRONGPASS …), connect() with
 * "Connection closed". But a connection Bun cannot make (nothing listening, an unknown host) is told
 * only once it gave up reconnecting (`maxRetries`: about 30 s). So when the client has not answered
 * within `BUN_LATE`, a client that does not reconnect (`autoReconnect: false`) asks too, answered at
 * once: its refusal is the open's, what it could not reach named by a connection of holdfast's own
 * (`bunUnreachable`); its answer (a Redis merely slow) leaves the open waiting, within its patience.
 * A Redis that answers in time costs one connection.
 */
async function openBun(Client: BunRedisClass, url: string, place: string): Promise<BunRedis> {
  const client = new Client(url)
  let timer: ReturnType<typeof setTimeout> | undefined
  const refused = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const probe = new Client(url, { autoReconnect: false })
      probe.send('PING', []).then(
        () => probe.close(),
        error => {
          probe.close()
          reject(error)
        },
      )
    }, BUN_LATE)
  })
  try {
    await within(Promise.race([client.send('PING', []), refused]), CONNECT_PATIENCE, `not ready within ${CONNECT_PATIENCE}ms`)
    return client
  } catch (error) {
    client.close()
    throw new ClosedError(`${place}: cannot reach ${masked(url)}: ${await bunUnreachable(url, error)}`, { cause: error })
  } finally {
    clearTimeout(timer)
  }
}

/** How long Bun's client may take to answer at open before a client that does not reconnect asks why (`openBun`). */
const BUN_LATE = 200

/**
 * Why Bun's client could not reach `url`: its own words, unless it lost them ("Connection closed",
 * ERR_REDIS_CONNECTION_CLOSED: Bun says that of a refused connection, an unknown host, a closed TLS
 * handshake alike); then a TCP connection to its host and port says it (`connect ECONNREFUSED
 * 127.0.0.1:6379`, `getaddrinfo ENOTFOUND host`), within `BUN_WHY` (else Bun's words, and that it does
 * not say why).
 */
async function bunUnreachable(url: string, error: unknown): Promise<string> {
  const said = String((error as Error)?.message ?? error)
  if ((error as { code?: unknown } | null)?.code !== 'ERR_REDIS_CONNECTION_CLOSED') return said
  const { connect } = await import('node:net')
  const { hostname, port } = new URL(url)
  const why = await new Promise<string | undefined>(resolve => {
    const socket = connect({ host: hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(port || 6379) })
    const done = (why?: string) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(why)
    }
    const timer = setTimeout(done, BUN_WHY)
    socket.once('connect', () => done())
    socket.once('error', e => done(e.message))
  })
  return why ?? `${said} (Bun's client does not say why)`
}

/** How long a TCP connection that tells why Bun's client could not connect may take. */
const BUN_WHY = 2_000

/** What a url's store says when neither ioredis nor redis can be imported (the CLI tells its users otherwise). */
export const NO_CLIENT = 'option url needs a Redis client'
