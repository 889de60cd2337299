/**
 * Serving a store to other processes: `store.serve({ port, host, token })` or `{ path }`.
 *
 * Each connection speaks the wire protocol (`crate/PROTOCOL.md`), decoded and encoded in wasm. The
 * first frame must be `hello` with the server's token, compared in constant time; until then nothing
 * reaches the engine. A frame that cannot be decoded, or any frame before a good hello, closes that
 * connection and harms no other. Holds go to the store like local ones (they share keys, lines and
 * fences), as leases that last their ttl from each renewal (LOCK-05).
 */

import { InvalidError, type ErrorCode } from './errors.js'
import type { Lock } from './lock.js'
import { RemoteRequest, type RemoteSink } from './remote-request.js'
import type { Store } from './store.js'
import type { Listener, Socket, Transport } from './transport.js'
import { checkOptions } from './options.js'
import { randomId } from './random.js'
import { decodeClient, encodeServer, type ClientFrame, type ServerMessage } from './wire.js'

/** The largest frame a server accepts. */
export const MAX_FRAME = 64 * 1024

export interface ServeOptions {
  /** TCP port (default 7420) and host (default 127.0.0.1: bind other addresses on purpose). */
  port?: number
  host?: string
  /** A Unix socket path instead of a port; clients connect to `ws+unix://PATH`. */
  path?: string
  /** The token clients must present in their first frame. Required. */
  token: string
  /** PEM certificate and key, to serve `wss://` (or end TLS at a reverse proxy instead). */
  tls?: { cert: string | Uint8Array; key: string | Uint8Array }
  /** Connections at once (default 1,000); one more is refused `limit`. */
  maxConnections?: number
  /** Leases and waiting holds per connection (default 10,000); one more is refused `limit`. */
  connectionLimit?: number
}

export interface Server {
  /** Where clients connect. */
  readonly url: string
  /** How many connections are open. */
  readonly connections: number
  /** Stops listening and closes every connection; their leases live until their ttl. */
  close(): Promise<void>
}

const encoder = new TextEncoder()

/** Compares tokens in constant time (for their length): no early exit on the first difference. */
export function sameToken(given: string, expected: Uint8Array): boolean {
  const a = encoder.encode(given)
  let diff = a.length ^ expected.length
  for (let i = 0; i < expected.length; i++) diff |= (a[i] ?? 0) ^ expected[i]!
  return diff === 0
}


/** One client's connection. */
class Session implements RemoteSink {
  authed = false

  constructor(
    readonly conn: number,
    readonly socket: Socket,
    readonly server: HoldfastServer,
  ) {}

  send(frame: number, message: ServerMessage): void {
    this.socket.send(encodeServer(frame, message))
  }

  granted(record: RemoteRequest, fence: number, revokeIn: number): void {
    if (record.sink !== this) return
    this.send(record.frame, { type: 'granted', request: record.request, lease: record.lease, fence, ttl: record.ttl, revokeIn })
  }

  busy(record: RemoteRequest): void {
    this.send(record.frame, { type: 'busy' })
  }

  failed(record: RemoteRequest, code: ErrorCode, message: string): void {
    this.send(record.frame, { type: 'error', code, message })
  }

  lost(record: RemoteRequest, code: 'lost' | 'closed'): void {
    this.send(0, { type: 'lost', lease: record.lease, code })
  }

  /** Refuses and disconnects a misbehaving client. */
  refuse(frame: number, code: ErrorCode | 'protocol', message: string): void {
    this.send(frame, { type: 'error', code, message })
    this.socket.close(code === 'permission' ? 4401 : 4400, message.slice(0, 120))
  }
}

export class HoldfastServer implements Server {
  readonly #store: Store
  readonly #token: Uint8Array
  readonly #maxConnections: number
  readonly #sessions = new Set<Session>()
  readonly #handles = new Map<string, Lock>()
  #listener: Listener | undefined
  #next = 0
  #closed = false

  constructor(store: Store, options: ServeOptions) {
    this.#store = store
    this.#token = encoder.encode(options.token)
    this.#maxConnections = options.maxConnections ?? 1_000
    if (options.connectionLimit !== undefined) store._setConnectionLimit(options.connectionLimit)
  }

  get url(): string {
    return this.#listener?.url ?? ''
  }

  get connections(): number {
    return this.#sessions.size
  }

  /** @internal */
  async _listen(transport: Transport, options: ServeOptions): Promise<void> {
    this.#listener = await transport.listen(
      { port: options.port, host: options.host, path: options.path, tls: options.tls, maxPayload: MAX_FRAME },
      socket => this.#accept(socket),
    )
  }

  #accept(socket: Socket): void {
    // Connection numbers are u32 on the wire to the engine; they wrap long after any live one ended.
    this.#next = (this.#next + 1) >>> 0
    const session = new Session(this.#next, socket, this)
    if (this.#closed || this.#sessions.size >= this.#maxConnections) {
      // Refused, but as the answer to its hello, so that the client can tell why.
      socket.onMessage = bytes => {
        let id = 0
        try {
          id = decodeClient(bytes).id
        } catch {
          // a bad frame: refused all the same
        }
        session.refuse(id, this.#closed ? 'closed' : 'limit', `server: ${this.#maxConnections} connections is the most`)
      }
      return
    }
    this.#sessions.add(session)
    socket.onMessage = bytes => this.#frame(session, bytes)
    socket.onClose = () => {
      if (!this.#sessions.delete(session)) return
      try {
        this.#store._connectionEnded(session.conn, false)
      } catch {
        // the store closed
      }
    }
  }

  #frame(session: Session, bytes: Uint8Array): void {
    let frame: ClientFrame
    try {
      frame = decodeClient(bytes)
    } catch (error) {
      return session.refuse(0, 'protocol', String((error as Error).message))
    }
    if (!session.authed) {
      if (frame.type !== 'hello' || !sameToken(String(frame.token), this.#token)) {
        return session.refuse(frame.id, 'permission', 'server: token refused')
      }
      session.authed = true
      return session.send(frame.id, { type: 'welcome', maxFrame: MAX_FRAME, connectionLimit: 0 })
    }
    try {
      this.#dispatch(session, frame)
    } catch (error) {
      const e = error as { code?: unknown; message?: unknown }
      const code = typeof e?.code === 'string' ? (e.code as ErrorCode) : 'closed'
      session.send(frame.id, { type: 'error', code, message: String(e?.message ?? error) })
    }
  }

  #dispatch(session: Session, frame: ClientFrame): void {
    const store = this.#store
    switch (frame.type) {
      case 'hold': {
        const name = String(frame.name)
        const key = String(frame.key)
        const kind = frame.semaphore ? 'semaphore' : 'lock'
        if (key.length === 0) throw new InvalidError(`${kind} ${name}: key "" must be 1 to 1024 bytes`)
        const handle = this.#handle(kind, name, Number(frame.limit))
        const record = new RemoteRequest(kind, name, key, String(frame.request), randomId(), Number(frame.ttl), Number(frame.maxHold), session.conn, frame.id, session)
        const wait = frame.wait === null || frame.wait === undefined ? Infinity : Number(frame.wait)
        return store._remoteHold(handle, record, wait)
      }
      case 'renew': {
        const renewed = store._renew(String(frame.lease))
        if (renewed) return session.send(frame.id, { type: 'renewed', ttl: renewed.ttl, revokeIn: Math.max(0, renewed.revokeIn) })
        return session.send(frame.id, { type: 'error', code: 'lost', message: 'lease lost: past its ttl, revoked, released, or never granted' })
      }
      case 'release': {
        const record = store._remoteLease(String(frame.lease))
        if (record) store._endRemote(record)
        // Id 0 asks for no answer: a hold's release need not cost a second frame.
        if (frame.id !== 0) session.send(frame.id, { type: 'done' })
        return
      }
      case 'cancel': {
        const record = store._remoteRequest(String(frame.request))
        if (record) {
          const waiting = !record.holding
          store._endRemote(record)
          if (waiting) record.sink.failed(record, 'cancelled', `${record.place()}: cancelled while waiting`)
        }
        return session.send(frame.id, { type: 'done' })
      }
      case 'inspect': {
        const entries = store.inspect().map(k => ({ kind: k.kind, name: k.name, key: k.key, holders: k.holders, waiting: k.waiting }))
        return session.send(frame.id, { type: 'inspected', entries })
      }
      case 'goodbye': {
        this.#sessions.delete(session)
        store._connectionEnded(session.conn, true)
        session.send(frame.id, { type: 'done' })
        return session.socket.close(1000, 'goodbye')
      }
      case 'hello':
        return session.send(frame.id, { type: 'welcome', maxFrame: MAX_FRAME, connectionLimit: 0 })
    }
  }

  /** A handle per lock or semaphore, made once (it checks the name, and a semaphore's limit). */
  #handle(kind: 'lock' | 'semaphore', name: string, limit: number): Lock {
    const id = `${kind} ${name} ${kind === 'semaphore' ? limit : 1}`
    let handle = this.#handles.get(id)
    if (!handle) {
      handle = kind === 'lock' ? this.#store.lock(name) : this.#store.semaphore(name, { limit })
      this.#handles.set(id, handle)
    }
    return handle
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    for (const session of this.#sessions) {
      this.#sessions.delete(session)
      try {
        this.#store._connectionEnded(session.conn, false)
      } catch {
        // the store closed
      }
      session.socket.close(1001, 'server closing')
    }
    await this.#listener?.close()
  }
}

/** Starts a server for `store` on `transport`. */
export async function serveOn(store: Store, transport: Transport | undefined, options: ServeOptions): Promise<HoldfastServer> {
  const o = checkOptions(options, 'serve', ['port', 'host', 'path', 'token', 'tls', 'maxConnections', 'connectionLimit'])
  if (!transport) throw new InvalidError('serve: this runtime has no server transport')
  if (typeof o.token !== 'string' || o.token.length === 0) {
    throw new InvalidError('serve: a token is required (option token, a non-empty string); clients present it in their first frame')
  }
  if (o.path !== undefined && (o.port !== undefined || o.host !== undefined)) throw new InvalidError('serve: give path, or port and host, not both')
  for (const n of ['maxConnections', 'connectionLimit'] as const) {
    if (o[n] !== undefined && (!Number.isInteger(o[n]) || (o[n] as number) < 1)) throw new InvalidError(`serve: ${n} must be a whole number, 1 or more`)
  }
  const server = new HoldfastServer(store, options)
  await server._listen(transport, options)
  return server
}
