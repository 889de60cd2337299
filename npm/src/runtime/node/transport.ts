/**
 * The transport of Node and Bun, over the `ws` package (loaded only when a server or a client is
 * made, so that importing holdfast stays light). TLS is `serve({ tls: { cert, key } })`, served by
 * `node:https` once the pair was read (runtime/tls.ts); a reverse proxy that ends TLS works as well.
 */

import {
  CLOSE_GRACE,
  onAbandon,
  packed,
  textMessage,
  withHandlers,
  type DialOptions,
  type Listener,
  type ListenOptions,
  type Socket,
  type Transport,
} from '../transport.js'
import { resolve } from 'node:path'
import { LONGEST_TIMER } from '../../util/clock.js'
import { checkPhase } from '../../util/soon.js'
import { checkCa, checkTls } from '../tls.js'
import { BATCHED_MAX, framesOf } from './ws-frames.js'

type WsSocket = import('ws').WebSocket

/**
 * The part of the TCP (or TLS, or Unix) socket under a `ws` WebSocket that frames are written to, and
 * `cork`, only looked for: a Node stream socket has it, Bun's net sockets under `ws` do not.
 */
interface RawSocket {
  cork?: unknown
  write(bytes: Uint8Array): boolean
  on(event: 'data', listener: () => void): unknown
}

/**
 * `masked`: this end is the client, whose frames RFC 6455 masks. `maxBuffered` (a server's): the
 * bytes a peer may leave unread (`ws.bufferedAmount`: the socket's write queue, and what `ws` holds)
 * before the connection is cut.
 */
function adapt(ws: WsSocket, masked: boolean, maxBuffered = Infinity): Socket {
  // Frames sent in one turn of the event loop (a server answering every hold of a read, a client's
  // workers asking at once) leave in one write, flushed in the turn's check phase (setImmediate),
  // after the callbacks of its I/O, their ticks and microtasks; a tick (process.nextTick) would flush
  // between the immediates of one turn, which is where holders resume after a yield. A server's
  // frames to the connection it just read from (its answers to the messages read, with whatever that
  // connection was sent before in the turn) leave as soon as the read is done: they do not wait for
  // the rest of the turn (its other reads, its microtasks, the way to its check phase), while frames
  // to other connections (grants that a release handed over) still gather until the turn's end, with
  // what those connections' own reads, later in the turn, are answered. Where `ws` runs on a Node
  // socket without extensions (no compression), the frames are built here, all into one buffer
  // (ws-frames.ts): through `ws`, each message cost a header, a stream write and two chunks of a
  // writev. Once the peer takes batches (protocol revision 3: `socket.pack` set), the frames of a
  // turn go as one WebSocket message (or a few, `packed`), which the peer reads and decodes at once.
  // Elsewhere (Bun's sockets under ws have no cork) each message is `ws.send` as it comes, or, to a
  // peer that takes batches, the turn's packed messages at its end.
  const raw = (ws as unknown as { _socket?: Partial<RawSocket> })._socket
  const extensions = (ws as unknown as { _extensions?: object })._extensions
  const nodeSocket = typeof raw?.cork === 'function' && typeof raw.write === 'function'
  const direct = nodeSocket && extensions !== undefined && Object.keys(extensions).length === 0 ? (raw as RawSocket) : undefined
  let queue: Uint8Array[] = []
  let queued = 0
  let scheduled = false
  /** Cuts a connection whose peer does not read: what it had buffered goes with its socket. */
  const bounded = () => {
    if (ws.bufferedAmount > maxBuffered) {
      queue = []
      queued = 0
      ws.terminate()
    }
  }
  const flush = () => {
    scheduled = false
    if (queue.length === 0) return
    const frames = queue
    queue = []
    queued = 0
    // A peer that takes batches (socket.pack) gets the turn's frames in as few messages as fit.
    const pack = socket.pack
    const messages = pack !== undefined && frames.length > 1 ? packed(frames, pack, BATCHED_MAX) : frames
    if (ws.readyState !== 1) return
    if (direct) direct.write(framesOf(messages, masked))
    else for (const m of messages) ws.send(m)
    bounded()
  }
  // A server's answers to what it read leave once the read is done: this listener comes after the one
  // of `ws`, which emits the messages of the bytes read, all of them, before it returns. (The turn's
  // immediate then finds nothing to send.)
  if (!masked && direct) {
    direct.on('data', () => {
      if (queue.length > 0) flush()
    })
  }
  const { socket, message, closed } = withHandlers({
    send(frame) {
      if (ws.readyState !== 1) return
      if (!direct && socket.pack === undefined) {
        ws.send(frame)
        return bounded()
      }
      if (frame.length > BATCHED_MAX) {
        // Through ws, after the frames batched before it.
        flush()
        ws.send(frame)
        return bounded()
      }
      queue.push(frame)
      queued += frame.length
      // Frames of one turn are bounded too (a flood of small answers before the flush).
      if (queued > maxBuffered) return flush()
      if (!scheduled) {
        scheduled = true
        checkPhase(flush)
      }
    },
    close(code, reason) {
      // What was sent before the close leaves before it.
      flush()
      if (ws.readyState !== 0 && ws.readyState !== 1) return
      ws.close(code ?? 1000, reason)
      // Neither side waits the 30 s of ws for a peer that never answers the close (a client's silent
      // server, heartbeat.ts, is one).
      setTimeout(() => ws.terminate(), CLOSE_GRACE).unref()
    },
  })
  ws.binaryType = 'nodebuffer'
  ws.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
    if (!isBinary) return textMessage(socket)
    message(Array.isArray(data) ? Buffer.concat(data) : data instanceof ArrayBuffer ? new Uint8Array(data) : data)
  })
  ws.on('close', closed)
  ws.on('error', () => {}) // a 'close' follows
  return socket
}

function pem(value: string | Uint8Array): string | Buffer {
  return typeof value === 'string' ? value : Buffer.from(value)
}

/**
 * `ws+unix:///run/x.sock` as `ws` spells it (`ws+unix:///run/x.sock:/`), or the URL as it is. A relative
 * path (`ws+unix://run/x.sock`) is taken from the working directory, as Deno's transport takes it: `ws`
 * read its first part as a host and dialed the socket "/" (ECONNREFUSED), on Node and Bun only.
 */
function wsTarget(url: string): string {
  if (!url.startsWith('ws+unix://')) return url
  const rest = url.slice('ws+unix://'.length)
  const whole = rest.startsWith('/') ? rest : resolve(rest)
  return whole.includes(':') ? `ws+unix://${whole}` : `ws+unix://${whole}:/`
}

export const wsTransport: Transport = {
  checkCa,
  async listen(options: ListenOptions, onSocket: (socket: Socket) => void): Promise<Listener> {
    if (options.tls) await checkTls(options.tls)
    const { WebSocketServer } = await import('ws')
    const http = options.tls ? await import('node:https') : await import('node:http')
    const refuse = (_req: unknown, res: { writeHead(code: number): void; end(body: string): void }) => {
      res.writeHead(426)
      res.end('holdfast: connect with a WebSocket client\n')
    }
    // A connection has `handshakeTimeout` to send its upgrade request, counted from its start: the idle
    // timeout (`setTimeout`, which ws clears on the ones it upgrades) cuts a silent one, but restarts
    // at every byte, so a request dribbled a byte at a time would be cut only at Node's own
    // `headersTimeout` (a minute, looked at every 30 s), none of it counted among the connections not
    // past hello. The HTTP server stops counting a connection's request once it is upgraded.
    // (Whole ms: Node refuses a fraction, and one past 2^53 - 1, a RangeError: none comes that late.)
    const handshake = options.handshakeTimeout === undefined ? undefined : Math.min(Math.ceil(options.handshakeTimeout), Number.MAX_SAFE_INTEGER)
    const timeouts =
      handshake === undefined ? {} : { headersTimeout: handshake, requestTimeout: handshake, connectionsCheckingInterval: Math.min(1_000, handshake) }
    const server = options.tls
      ? (http as typeof import('node:https')).createServer({ cert: pem(options.tls.cert), key: pem(options.tls.key), ...timeouts }, refuse)
      : (http as typeof import('node:http')).createServer(timeouts, refuse)
    // (At most what a timer keeps: past it, Node truncates it to that, with a warning.)
    if (options.handshakeTimeout !== undefined) server.setTimeout(Math.min(options.handshakeTimeout, LONGEST_TIMER))
    const wss = new WebSocketServer({ server, maxPayload: options.maxPayload })
    wss.on('connection', ws => onSocket(adapt(ws, false, options.maxBuffered)))
    await new Promise<void>((resolve, reject) => {
      // ws re-emits the HTTP server's errors (EADDRINUSE): listen on both, or it throws unheard.
      server.once('error', reject)
      wss.once('error', reject)
      if (options.path === undefined) return server.listen(options.port ?? 7420, options.host ?? '127.0.0.1', resolve)
      if (options.mode === undefined) return server.listen(options.path, resolve)
      // The socket file is made by listen(), at once (a path needs no lookup): under a umask that
      // leaves only `mode`, so that no other user can connect between its making and the chmod below.
      // (Deno lets a process set its umask only with `--allow-sys`: without it, the file has its mode
      // from the chmod alone, a moment after it was made, as under Deno's own server before.)
      let umask: number | undefined
      try {
        umask = process.umask(0o777 & ~options.mode)
      } catch {
        // not allowed: the chmod below
      }
      try {
        server.listen(options.path, resolve)
      } finally {
        if (umask !== undefined) process.umask(umask)
      }
    })
    const close = () =>
      new Promise<void>(resolve => {
        for (const client of wss.clients) client.terminate()
        wss.close(() => server.close(() => resolve()))
      })
    wss.on('error', () => {}) // later errors reach each socket's own 'error' and 'close'
    // The mode asked for exactly (a umask can only take bits away). One that cannot be set leaves
    // nothing listening (the close removes the socket file): serve() rejects, and no socket of a mode
    // nobody asked for is left for others to connect to.
    if (options.path !== undefined && options.mode !== undefined) {
      try {
        ;(await import('node:fs')).chmodSync(options.path, options.mode)
      } catch (error) {
        await close()
        throw error
      }
    }
    const address = server.address()
    const scheme = options.tls ? 'wss' : 'ws'
    // A relative path is listened on as given (a socket's path is short), but said whole: a client
    // reads `ws+unix://rel.sock` as the host "rel.sock" and the socket "/".
    const url =
      options.path !== undefined
        ? `${scheme}+unix://${(await import('node:path')).resolve(options.path)}`
        : typeof address === 'object' && address
          ? `${scheme}://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`
          : `${scheme}://${options.host}:${options.port}`
    return { url, close }
  },

  async dial(url: string, options: DialOptions): Promise<Socket> {
    const { WebSocket } = await import('ws')
    const ws = new WebSocket(wsTarget(url), { maxPayload: options.maxPayload, ...(options.ca ? { ca: pem(options.ca) } : {}) })
    return new Promise<Socket>((resolve, reject) => {
      // Adapted in the 'open' event itself: frames that came with the upgrade's answer are emitted
      // right after it, in the same read, and must find its listeners (withHandlers keeps them).
      ws.once('open', () => resolve(adapt(ws, true)))
      ws.once('error', reject)
      onAbandon(options.signal, ws, reject, () => ws.terminate())
    })
  },
}
