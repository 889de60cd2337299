/**
 * Serving a store to other processes: `store.serve({ port, host, token })` or `{ path }`.
 *
 * Each connection speaks the wire protocol (`crate/PROTOCOL.md`), decoded and encoded in wasm
 * (through `wire.ts`). The first frame must be `hello` with the server's token, compared in constant
 * time; until then nothing reaches the engine. A frame that cannot be decoded, or any frame before a good hello, closes that
 * connection and harms no other. Holds go to the store like local ones (they share keys, lines and
 * fences), as leases that last their ttl from each renewal (LOCK-05).
 */

import { InvalidError } from './errors.js'
import { MAX_FRAME, Protocol, Session, refuseHello } from './protocol-session.js'
import type { Store } from './store.js'
import type { Listener, Socket, Transport } from './transport.js'
import { checkOptions } from './options.js'

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

export class HoldfastServer implements Server {
  readonly #protocol: Protocol
  readonly #maxConnections: number
  readonly #sessions = new Set<Session>()
  #listener: Listener | undefined
  #next = 0
  #closed = false

  constructor(store: Store, options: ServeOptions) {
    this.#protocol = new Protocol(() => store, options.token, { closed: session => void this.#sessions.delete(session) })
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
    const session = new Session(this.#next, socket, this.#protocol)
    if (this.#closed || this.#sessions.size >= this.#maxConnections) {
      // Refused, but as the answer to its hello, so that the client can tell why.
      const [code, message] = this.#closed ? (['closed', 'server: closing'] as const) : (['limit', `server: ${this.#maxConnections} connections is the most`] as const)
      socket.onMessage = bytes => refuseHello(session, bytes, code, message)
      return
    }
    this.#sessions.add(session)
    socket.onMessage = bytes => this.#protocol.frame(session, bytes)
    socket.onClose = () => this.#protocol.dropped(session)
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    for (const session of [...this.#sessions]) {
      this.#protocol.dropped(session)
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
