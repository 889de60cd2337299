/**
 * Serving a store to other processes: `store.serve({ port, host, token })` or `{ path }`.
 *
 * Each connection speaks the wire protocol (`docs/protocol.md`), decoded and encoded in wasm
 * (through `wire.ts`). The first frame must be `hello` with the server's token, compared in constant
 * time; until then nothing reaches the engine. A frame that cannot be decoded, or any frame before a good hello, closes that
 * connection and harms no other. Holds go to the store like local ones (they share keys, lines and
 * fences), as leases that last their ttl from each renewal (LOCK-05).
 *
 * # What one client can take
 * - Connections not yet past hello have a budget of their own (`maxUnauthenticated`), apart from the
 *   connections past it (`maxConnections`), and `helloTimeout` to say hello, so that connections
 *   without the token never take the place of those with it. When the budget is full, a new
 *   connection closes the *oldest* one not past hello: a client that means to say hello does so at
 *   once, so the oldest is the likeliest to be silent, and a flood of silent connections cannot keep
 *   out a client that comes with the token.
 * - A hello that finds `maxConnections` connections past hello is refused (`error` `limit`, close
 *   4429), save one of a party (revision 6, session.ts) that has a connection past hello: one of the
 *   two, the older, is superseded at once (4409). So a client whose connection went half-open (cut on
 *   its side only, still counted here) gets back in at once, in the old connection's place; the count
 *   never passes `maxConnections`, and a client with the token that names another's party takes only
 *   that party's place (as it may below the limit). A connection is not refused at accept for it:
 *   until its hello it is one of those not past hello, in their budget.
 * - Bytes not yet written to one connection never stay above `maxBuffered`: the transport closes a
 *   connection that does not read what it asked for (transport.ts), and its buffers go with it.
 * - A client of revision 5 or more silent for 30 s with holds in line (its host gone without a close)
 *   is dropped, so that its holds step aside rather than be granted to nobody (silent-clients.ts).
 * - Leases and waiting holds over connections are bounded per connection (`connectionLimit`, in the
 *   engine) and in the whole store (`maxHolds`, in store/remote-holds.ts), those of dropped connections included
 *   until they end, so that reconnecting does not get around the first.
 */

import { InvalidError } from '../errors.js'
import { toMs } from '../util/duration.js'
import { MAX_ANSWER } from './inspect-pages.js'
import { MAX_FRAME, Protocol, Session, type Refusal } from './session.js'
import { SilentClients } from './silent-clients.js'
import { clearTimer, setTimer, type Clock } from '../util/clock.js'
import type { ServedStore } from './host.js'
import type { Listener, Socket, Transport } from '../runtime/transport.js'
import { checkOptions } from '../util/options.js'
import { asyncDispose } from '../util/async-dispose.js'
import { closeOnce } from '../util/close-once.js'

export interface ServeOptions {
  /** TCP port (default 7420) and host (default 127.0.0.1: bind other addresses on purpose). */
  port?: number
  host?: string
  /** A Unix socket path instead of a port; clients connect to `ws+unix://PATH`. */
  path?: string
  /** The mode of the Unix socket (default 0o600: only its owner may connect). */
  socketMode?: number
  /** The token clients must present in their first frame. Required. */
  token: string
  /** PEM certificate and key (text or bytes; nothing else is taken), to serve `wss://` (or end TLS at a reverse proxy instead). */
  tls?: { cert: string | Uint8Array; key: string | Uint8Array }
  /**
   * Connections past hello at once (default 1,000); one more is refused `limit` at its hello, save a
   * client's reconnection, which takes the place of its older connection (see # What one client can take).
   */
  maxConnections?: number
  /** Connections not yet past hello at once (default 64); one more closes the oldest of them. */
  maxUnauthenticated?: number
  /** How long a connection has to say hello (default 5 s); then it is closed. */
  helloTimeout?: number | string
  /** Bytes not yet written to one connection (default 8 MiB); past it the connection is closed. */
  maxBuffered?: number
  /** Leases and waiting holds per connection (default 10,000); one more is refused `limit`. */
  connectionLimit?: number
  /** Leases and waiting holds over connections in the whole store, dropped connections' included
   * (default 100,000); one more is refused `limit`. */
  maxHolds?: number
}

export interface Server {
  /** Where clients connect. */
  readonly url: string
  /** How many connections are open past hello. */
  readonly connections: number
  /**
   * Stops listening and closes every connection; their leases live until their ttl. A connection
   * whose client is closing (its goodbye said) is first sent the answers of the pool frames it asked
   * before (a release, confirm or resize, once storage kept it). Calls after the first answer its
   * promise, resolved once the server stopped listening.
   */
  close(): Promise<void>
  /** `close()`, for `await using`: the server closes at the end of the block. */
  [asyncDispose](): Promise<void>
}

/** The most bytes of a token, as a hello carries it (the client's check: connect()). */
const MAX_TOKEN = 1024

const DEFAULTS = { maxConnections: 1_000, maxUnauthenticated: 64, helloTimeout: 5_000, maxBuffered: 8 * 1024 * 1024, socketMode: 0o600 }

export class HoldfastServer implements Server {
  readonly #protocol: Protocol
  readonly #clock: Clock
  readonly #maxConnections: number
  readonly #maxUnauthenticated: number
  readonly #helloTimeout: number
  readonly #maxBuffered: number
  /** Connections past hello. */
  readonly #sessions = new Set<Session>()
  /** Connections not yet past hello, oldest first, with the timer of their hello deadline. */
  readonly #pending = new Map<Session, unknown>()
  /**
   * Connections that said goodbye while answers of their pool frames asked before it were under way
   * (`Session.owe`), until those were sent or the connection closed: `close()` waits for them before
   * it cuts the connections, as the goodbye's answer does (session.ts `#farewell`).
   */
  readonly #leaving = new Map<Session, { done: Promise<void>; gone: () => void }>()
  /** Drops clients of revision 5 gone silent with holds in line (silent-clients.ts). */
  readonly #silent: SilentClients
  #listener: Listener | undefined
  readonly #store: ServedStore
  #closed = false
  /** `close()`: `#close()` run once, its promise answered to every call (util/close-once.ts). */
  readonly #closeOnce = closeOnce(() => this.#close())

  constructor(store: ServedStore, options: ServeOptions, clock: Clock) {
    this.#store = store
    this.#clock = clock
    this.#maxConnections = options.maxConnections ?? DEFAULTS.maxConnections
    this.#maxUnauthenticated = options.maxUnauthenticated ?? DEFAULTS.maxUnauthenticated
    this.#helloTimeout = options.helloTimeout === undefined ? DEFAULTS.helloTimeout : toMs(options.helloTimeout, 'serve: helloTimeout')
    this.#maxBuffered = options.maxBuffered ?? DEFAULTS.maxBuffered
    // An inspection frame fits twice in what a connection may have unwritten: a client that reads is
    // never closed for the page it is reading.
    const maxAnswer = Math.min(MAX_ANSWER, Math.floor(this.#maxBuffered / 2))
    this.#protocol = new Protocol(
      () => store,
      options.token,
      {
        admit: session => this.#admit(session),
        closed: (session, goodbye) => {
          this.#sessions.delete(session)
          if (goodbye) this.#leave(session)
        },
      },
      undefined,
      maxAnswer,
    )
    this.#silent = new SilentClients(
      clock,
      () => this.#sessions,
      this.#protocol,
      () => store,
    )
    if (options.connectionLimit !== undefined) this.#protocol.connectionLimit = options.connectionLimit
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
      {
        port: options.port,
        host: options.host,
        path: options.path,
        mode: options.path === undefined ? undefined : (options.socketMode ?? DEFAULTS.socketMode),
        tls: options.tls,
        maxPayload: MAX_FRAME,
        maxBuffered: this.#maxBuffered,
        handshakeTimeout: this.#helloTimeout,
      },
      socket => this.#accept(socket),
    )
    // The store's, set once it listens: a serve() that could not (a busy port, a bad tls) leaves the
    // store's limits, which its other servers' connections are counted by, as they were.
    if (options.connectionLimit !== undefined) this.#store._setConnectionLimit(options.connectionLimit)
    if (options.maxHolds !== undefined) this.#store._setMaxHolds(options.maxHolds)
  }

  #accept(socket: Socket): void {
    // Numbered by the store, across its servers: the engine knows a connection by its number alone.
    const session = new Session(this.#store._nextConnection(), socket, this.#protocol)
    socket.onMessage = bytes => this.#protocol.frame(session, bytes)
    socket.onText = () => this.#protocol.text(session)
    socket.onClose = () => {
      this.#unpend(session)
      this.#leaving.get(session)?.gone()
      this.#protocol.dropped(session)
    }
    if (this.#closed) return session.refuse(0, 'closed', 'server: closing')
    // Not refused here at maxConnections: its hello may supersede an older connection of its client
    // (`#admit`); until then it waits in the budget of connections not past hello, as any other.
    if (this.#pending.size >= this.#maxUnauthenticated) {
      const [oldest] = this.#pending.keys()
      this.#unpend(oldest!)
      oldest!.refuse(
        0,
        'limit',
        `server: ${this.#maxUnauthenticated} connections not past hello is the most (serve() option maxUnauthenticated); this was the oldest`,
      )
    }
    // (Through `setTimer`: a helloTimeout past a runtime's longest timer, 24.8 days, fired at once.)
    const deadline = setTimer(
      this.#clock,
      () => {
        if (!this.#pending.delete(session)) return
        session.refuse(0, 'closed', `server: no hello within ${this.#helloTimeout}ms`)
      },
      this.#helloTimeout,
    )
    this.#pending.set(session, deadline)
  }

  /**
   * A connection presents the token: it is past hello, unless the server is full — save for a hello
   * that takes its party's place (`Protocol.admits`): the older of the two is superseded as this one
   * is welcomed (`Protocol.resumed`, in the same turn), so the count is back at most maxConnections
   * before anything else runs. Once the server is closing, none is: a hello read on a
   * connection `#close` is closing (sent before its client read that close) is refused `closed`, or
   * it would be past hello after close() ended every connection, its frames acting on the store.
   */
  #admit(session: Session): Refusal | undefined {
    if (this.#closed) return { code: 'closed', message: 'server: closing' }
    if (!this.#protocol.admits(session, this.#sessions.size, this.#maxConnections)) {
      return { code: 'limit', message: `server: ${this.#maxConnections} connections is the most (serve() option maxConnections)` }
    }
    this.#unpend(session)
    this.#sessions.add(session)
    this.#silent.watch()
    return undefined
  }

  /**
   * `session` said goodbye: counted among the leaving (`#leaving`) while it is owed answers, which its
   * client awaits before its close() resolves. No longer past hello, it is not among `#sessions`, so
   * without this `close()` cut it with them unsent: its client was told `ClosedError` for a release,
   * confirm or resize the server did.
   */
  #leave(session: Session): void {
    const owed = session.owed()
    if (owed === undefined || session.gone) return
    let gone!: () => void
    const done = Promise.race([owed, new Promise<void>(resolve => (gone = resolve))])
    this.#leaving.set(session, { done, gone })
    void done.then(() => this.#leaving.delete(session))
  }

  #unpend(session: Session): void {
    if (!this.#pending.has(session)) return
    clearTimer(this.#clock, this.#pending.get(session))
    this.#pending.delete(session)
  }

  /** @internal Resolves once the answers of the pool frames asked so far were sent (`Protocol.answered`); never rejects. */
  _answered(): Promise<void> {
    return this.#protocol.answered()
  }

  /**
   * Closes every connection and stops listening. A second call answers the first's promise: it
   * resolves once the server no longer listens (a store's close() closes its servers so, and awaits
   * it), not at once while the first is still closing.
   */
  close(): Promise<void> {
    return this.#closeOnce()
  }

  /** `close()`, for `await using`: the server closes at the end of the block. */
  [asyncDispose](): Promise<void> {
    return this.close()
  }

  async #close(): Promise<void> {
    this.#closed = true
    this.#silent.stop()
    for (const session of [...this.#pending.keys()]) {
      this.#unpend(session)
      session.socket.close(1001, 'server closing')
    }
    for (const session of [...this.#sessions]) {
      this.#protocol.dropped(session)
      session.socket.close(1001, 'server closing')
    }
    // A connection that said goodbye gets the answers it is owed, then its goodbye's, before the
    // listener's close cuts every connection: they wait on storage, as a store's close() does, or on
    // the client, which closes its side if it waits no longer.
    await Promise.all([...this.#leaving.values()].map(leaving => leaving.done))
    await this.#listener?.close()
  }
}

/** Starts a server for `store` on `transport`; its deadlines run on `clock` (the store's). */
export async function serveOn(store: ServedStore, transport: Transport | undefined, options: ServeOptions, clock: Clock): Promise<HoldfastServer> {
  const o = checkOptions(options, 'serve', [
    'port',
    'host',
    'path',
    'socketMode',
    'token',
    'tls',
    'maxConnections',
    'maxUnauthenticated',
    'helloTimeout',
    'maxBuffered',
    'connectionLimit',
    'maxHolds',
  ])
  if (!transport) throw new InvalidError('serve: this runtime has no server transport')
  if (typeof o.token !== 'string' || o.token.length === 0) {
    throw new InvalidError('serve: a token is required (option token, a non-empty string); clients present it in their first frame')
  }
  // A hello carries a token of 1,024 bytes at most (docs/protocol.md): past it, a server no client
  // could say hello to (connect() refuses it, and the hello's decoder would).
  const tokenBytes = new TextEncoder().encode(o.token).length
  if (tokenBytes > MAX_TOKEN)
    throw new InvalidError(`serve: a token is at most ${MAX_TOKEN} bytes (this one is ${tokenBytes}), as clients present it in their hello`)
  if (o.path !== undefined && (o.port !== undefined || o.host !== undefined)) throw new InvalidError('serve: give path, or port and host, not both')
  // Checked here, not left to the runtime: Node's listen() takes an empty or non-text host as every
  // address (`[::]`), which would undo the 127.0.0.1 default, and refuses a bad port as a RangeError.
  if (o.port !== undefined && (!Number.isInteger(o.port) || (o.port as number) < 0 || (o.port as number) > 65535)) {
    throw new InvalidError(`serve: port ${JSON.stringify(o.port) ?? String(o.port)} must be a whole number from 0 to 65535 (0 picks a free one)`)
  }
  if (o.host !== undefined && (typeof o.host !== 'string' || o.host.length === 0)) {
    throw new InvalidError(`serve: host ${JSON.stringify(o.host) ?? String(o.host)} must be an address to bind, such as '127.0.0.1' (the default) or '0.0.0.0'`)
  }
  if (o.path !== undefined && (typeof o.path !== 'string' || o.path.length === 0)) {
    throw new InvalidError(`serve: path ${JSON.stringify(o.path) ?? String(o.path)} must be the path of a Unix socket`)
  }
  // A socket's address holds so many bytes of its path (`sun_path`). Past them Node cut the path and
  // listened at the cut one, then failed its chmod at the whole one (a bare ENOENT), the cut socket
  // left behind; Bun refused it EINVAL.
  if (o.path !== undefined) {
    const bytes = new TextEncoder().encode(o.path as string).length
    const most = (globalThis as { process?: { platform?: string } }).process?.platform === 'linux' ? 108 : 104
    if (bytes > most) {
      throw new InvalidError(
        `serve: path ${JSON.stringify(o.path)} is ${bytes} bytes: a Unix socket's path is at most ${most} bytes here; give a shorter one (a relative path is taken as given)`,
      )
    }
  }
  if (o.tls !== undefined) {
    // Its contents are read by the transport, before it listens (runtime/tls.ts). A certificate and its
    // key, nothing more: Node's server is made with these two alone, so anything else (a passphrase,
    // requestCert) would go unheard there, while Bun's would take it.
    const tls = checkOptions(o.tls, 'serve: tls', ['cert', 'key'])
    for (const n of ['cert', 'key'] as const) {
      const v = tls[n]
      if ((typeof v === 'string' || v instanceof Uint8Array) && v.length > 0) continue
      const given = v === undefined ? 'none was given' : typeof v === 'string' || v instanceof Uint8Array ? 'it is empty' : `it is of type ${typeof v}`
      throw new InvalidError(`serve: tls.${n} must be PEM text, or its bytes (a Uint8Array): ${given}`)
    }
  }
  for (const n of ['maxConnections', 'maxUnauthenticated', 'connectionLimit', 'maxHolds'] as const) {
    if (o[n] !== undefined && (!Number.isInteger(o[n]) || (o[n] as number) < 1))
      throw new InvalidError(`serve: ${n} ${String(o[n])} must be a whole number, 1 or more`)
  }
  if (o.maxBuffered !== undefined && (!Number.isInteger(o.maxBuffered) || (o.maxBuffered as number) < MAX_FRAME)) {
    throw new InvalidError(`serve: maxBuffered ${String(o.maxBuffered)} must be a whole number of bytes, ${MAX_FRAME} or more`)
  }
  if (o.helloTimeout !== undefined && !(toMs(o.helloTimeout, 'serve: helloTimeout') > 0)) throw new InvalidError('serve: helloTimeout must be more than 0')
  if (o.socketMode !== undefined) {
    if (o.path === undefined) throw new InvalidError('serve: socketMode is the mode of a Unix socket: give path too')
    if (!Number.isInteger(o.socketMode) || (o.socketMode as number) < 0 || (o.socketMode as number) > 0o777) {
      throw new InvalidError(`serve: socketMode ${String(o.socketMode)} must be a file mode from 0 to 0o777, such as 0o600`)
    }
  }
  const server = new HoldfastServer(store, options, clock)
  await server._listen(transport, options)
  return server
}
