/**
 * The part of a Redis client that holdfast uses, over the two clients teams have: ioredis and
 * node-redis (`redis` v5 and later). Neither is a dependency of holdfast (optional peers, never
 * bundled): a client is recognised by its shape, and `url` alone imports whichever is installed.
 *
 * Commands go through each client's generic call (`call` / `sendCommand`): raw replies, the same from
 * both. A command may wait for a connection (both clients queue commands while they reconnect), so
 * `send` never waits past the patience it is given: the caller decides how long an answer is worth.
 * Pub/sub uses one more connection, `duplicate()`d from the client, whatever the number of waiters.
 */

import { ClosedError, InvalidError } from '../errors.js'

type Arg = string | number

/** A second connection, subscribed to channels; its messages go to the store. */
export interface Subscriber {
  subscribe(channel: string): Promise<void>
  close(): Promise<void>
}

export interface Adapter {
  readonly client: 'ioredis' | 'node-redis'
  /** Sends a command; rejects `ReplyFailure` when the server answered an error, anything else when it could not be reached. */
  send(args: Arg[]): Promise<unknown>
  /** `send` without turning the client's errors into `ReplyFailure` (one promise less): the caller does it, with `asReply`. */
  call(args: Arg[]): Promise<unknown>
  /** A `send` to each primary: the one server, or every primary of a Cluster (Function libraries, SCAN). */
  primaries(): Array<(args: Arg[]) => Promise<unknown>>
  /** Every key matching `pattern`, from every primary (a Cluster's too). */
  scan(pattern: string): Promise<string[]>
  /** Opens the pub/sub connection. `ready` is called each time it (re)connected after the first. */
  subscriber(message: (channel: string, text: string) => void, ready: () => void): Promise<Subscriber>
  /** Closes the client, if holdfast opened it (from `url`); a client the application gave is left open. */
  close(): Promise<void>
}

/** The server answered an error (`NOSCRIPT …`, `ERR …`, `OOM …`): its first word is `code`. */
export class ReplyFailure extends Error {
  readonly code: string
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = /^[A-Z]+/.exec(message)?.[0] ?? 'ERR'
  }
}

/** Error replies that pass by themselves (a loading, busy or failing-over server): asked again later. */
export const TRANSIENT = new Set(['LOADING', 'BUSY', 'READONLY', 'MASTERDOWN', 'TRYAGAIN', 'CLUSTERDOWN', 'MOVED', 'ASK'])

const noop = () => {}

/** The errors a client raises for an error reply (ioredis: ReplyError; node-redis: SimpleError / ErrorReply). */
export function asReply(error: unknown): unknown {
  if (error instanceof ReplyFailure) return error
  const e = error as { name?: unknown; constructor?: { name?: unknown }; message?: unknown } | null
  if (!e || typeof e.message !== 'string') return error
  const names = [e.name, e.constructor?.name]
  if (names.some(n => n === 'ReplyError' || n === 'SimpleError' || n === 'ErrorReply' || n === 'BlobError'))
    return new ReplyFailure(e.message, { cause: error })
  return error
}

interface IoRedis {
  call(command: string, ...args: Arg[]): Promise<unknown>
  /** A Cluster's nodes (ioredis `Cluster`). */
  nodes?(role: 'master'): IoRedis[]
  duplicate(): IoRedis
  subscribe(channel: string): Promise<unknown>
  on(event: string, fn: (...args: never[]) => void): unknown
  quit(): Promise<unknown>
  disconnect(): void
  status: string
}

interface NodeRedis {
  sendCommand(args: string[]): Promise<unknown>
  duplicate(): NodeRedis
  connect(): Promise<unknown>
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>
  on(event: string, fn: (...args: never[]) => void): unknown
  quit?(): Promise<unknown>
  close?(): Promise<unknown>
  destroy?(): void
  disconnect?(): Promise<unknown>
  isOpen: boolean
}

function isIoRedis(c: unknown): c is IoRedis {
  const x = c as IoRedis
  return typeof x?.call === 'function' && typeof x.duplicate === 'function' && typeof x.status === 'string'
}

function isNodeRedis(c: unknown): c is NodeRedis {
  const x = c as NodeRedis
  return typeof x?.sendCommand === 'function' && typeof x.duplicate === 'function' && typeof x.isOpen === 'boolean'
}

/** SCAN of one server, every page; `send` sends a command to that server. */
async function scanOne(send: (args: Arg[]) => Promise<unknown>, pattern: string): Promise<string[]> {
  const out: string[] = []
  let cursor = '0'
  do {
    const [next, keys] = (await send(['SCAN', cursor, 'MATCH', pattern, 'COUNT', 1000])) as [unknown, unknown[]]
    cursor = String(next)
    for (const k of keys) out.push(String(k))
  } while (cursor !== '0')
  return out
}

function ioredisAdapter(c: IoRedis, owned: boolean): Adapter {
  const raw = (node: IoRedis) => (args: Arg[]) => node.call(String(args[0]), ...args.slice(1))
  const call = (node: IoRedis) => (args: Arg[]) => raw(node)(args).catch(error => Promise.reject(asReply(error)))
  const primaries = () => (typeof c.nodes === 'function' ? c.nodes('master') : [c]).map(call)
  return {
    client: 'ioredis',
    send: call(c),
    call: raw(c),
    primaries,
    async scan(pattern) {
      return (await Promise.all(primaries().map(send => scanOne(send, pattern)))).flat()
    },
    async subscriber(message, ready) {
      const sub = c.duplicate()
      sub.on('error', noop)
      sub.on('message', ((channel: string, text: string) => message(channel, text)) as (...args: never[]) => void)
      let first = true
      sub.on('ready', () => {
        if (first) first = false
        else ready()
      })
      return {
        subscribe: async channel => void (await sub.subscribe(channel)),
        close: async () => sub.disconnect(),
      }
    },
    async close() {
      if (!owned) return
      await c.quit().catch(() => c.disconnect())
    },
  }
}

async function endNodeRedis(c: NodeRedis): Promise<void> {
  try {
    if (typeof c.close === 'function') await c.close()
    else if (typeof c.quit === 'function') await c.quit()
  } catch {
    if (typeof c.destroy === 'function') c.destroy()
    else await c.disconnect?.().catch(noop)
  }
}

function nodeRedisAdapter(c: NodeRedis, owned: boolean): Adapter {
  const raw = (args: Arg[]) => c.sendCommand(args.map(String))
  const send = (args: Arg[]) => raw(args).catch(error => Promise.reject(asReply(error)))
  return {
    client: 'node-redis',
    send,
    call: raw,
    primaries: () => [send],
    scan: pattern => scanOne(send, pattern),
    async subscriber(message, ready) {
      const sub = c.duplicate()
      sub.on('error', noop)
      let first = true
      sub.on('ready', () => {
        if (first) first = false
        else ready()
      })
      await sub.connect()
      return {
        subscribe: async channel => void (await sub.subscribe(channel, (text, ch) => message(ch, text))),
        close: () => endNodeRedis(sub),
      }
    },
    async close() {
      if (owned) await endNodeRedis(c)
    },
  }
}

/** An adapter over a client the application made. */
export function adapterOf(client: unknown, place: string): Adapter {
  if (isIoRedis(client)) return ioredisAdapter(client, false)
  if (isNodeRedis(client)) {
    if (!client.isOpen) throw new InvalidError(`${place}: the node-redis client is not connected (await client.connect() first)`)
    return nodeRedisAdapter(client, false)
  }
  throw new InvalidError(`${place}: option redis must be an ioredis client (new Redis(…)) or a node-redis client (createClient(…), connected)`)
}

/** Opens a client for `url` with whichever of ioredis and node-redis is installed (ioredis first). */
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
    try {
      await (client as unknown as { connect(): Promise<void> }).connect()
    } catch (error) {
      client.disconnect()
      throw new ClosedError(`${place}: cannot reach ${url}: ${(error as Error)?.message ?? error}`, { cause: error })
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
      await client.connect()
    } catch (error) {
      await endNodeRedis(client)
      throw new ClosedError(`${place}: cannot reach ${url}: ${(error as Error)?.message ?? error}`, { cause: error })
    }
    return nodeRedisAdapter(client, true)
  }
  throw new InvalidError(`${place}: option url needs a Redis client: install one (npm install ioredis), or pass your own as option redis`)
}
