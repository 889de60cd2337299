/**
 * The transport of Bun's own server: `Bun.serve` with its WebSocket upgrade (on a port or a Unix
 * socket, with TLS when asked), and of its clients: Bun's own `WebSocket` for `ws://` and `wss://`
 * (`dialNative`), the `ws` package for a Unix socket or certificates of one's own (`ca`), which it
 * does not take.
 *
 * Bun buffers what a peer does not read up to its `backpressureLimit` and then *drops* messages
 * (`send` answers 0): the limit is set past `maxBuffered`, and a connection is cut once its buffered
 * bytes pass `maxBuffered` (or a message was dropped all the same), so that no answer is ever lost
 * on a connection that stays open. A connection that never finishes its upgrade is cut by Bun itself
 * (after about 12 s, whatever `idleTimeout` says): `handshakeTimeout` is not used here.
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
import { wsTransport } from '../node/transport.js'
import { checkCa, checkTls } from '../tls.js'
import { checkPhase } from '../../util/soon.js'

/** The part of Bun's API used here (Bun's own types are not a dependency of the package). */
interface BunSocket {
  /** Bytes sent; -1: queued (backpressure); 0: dropped. */
  send(data: Uint8Array): number
  getBufferedAmount(): number
  close(code?: number, reason?: string): void
  terminate(): void
  data: { socket?: Socket }
}

interface BunServer {
  port?: number
  hostname?: string
  upgrade(req: Request, options: { data: { socket?: Socket } }): boolean
  stop(closeActive?: boolean): void | Promise<void>
}

interface BunServeOptions {
  port?: number
  hostname?: string
  unix?: string
  tls?: { cert: string | Uint8Array; key: string | Uint8Array }
  fetch(req: Request, server: BunServer): Response | undefined
  websocket: {
    maxPayloadLength: number
    backpressureLimit?: number
    closeOnBackpressureLimit?: boolean
    open(ws: BunSocket): void
    message(ws: BunSocket, message: string | Uint8Array): void
    close(ws: BunSocket): void
  }
}

declare const Bun: { serve(options: BunServeOptions): BunServer }

/** The part of Bun's `WebSocket` (the WHATWG client, with Bun's `nodebuffer`) used here. */
interface BunClient {
  binaryType: string
  readonly readyState: number
  send(data: Uint8Array): void
  close(code?: number, reason?: string): void
  addEventListener(type: 'open' | 'error', listener: (event: { message?: string }) => void, options?: { once?: boolean }): void
  onmessage: ((event: { data: unknown }) => void) | null
  onclose: (() => void) | null
}

declare const WebSocket: new (url: string) => BunClient

/** The largest message the frames of a turn are packed into for a peer that takes batches. */
const PACKED_MAX = 16 * 1024

function adapt(ws: BunSocket, maxBuffered: number): Socket {
  let open = true
  /** Once the peer takes batches (`socket.pack`), the frames of the turn, sent at its end. */
  let queue: Uint8Array[] = []
  const put = (message: Uint8Array): boolean => {
    const sent = ws.send(message)
    if (sent > 0 || (sent < 0 && ws.getBufferedAmount() <= maxBuffered)) return true
    // Past the bound, or dropped by Bun: cut, and its buffers go with it.
    open = false
    queue = []
    ws.terminate()
    return false
  }
  const flush = () => {
    const frames = queue
    queue = []
    if (!open || frames.length === 0) return
    for (const message of frames.length > 1 ? packed(frames, socket.pack!, PACKED_MAX) : frames) if (!put(message)) return
  }
  const socket: Socket = {
    send(frame) {
      if (!open) return
      if (socket.pack === undefined) return void put(frame)
      // A peer that takes batches gets the frames of a turn as one message, sent in its check phase.
      if (queue.length === 0) checkPhase(flush)
      queue.push(frame)
    },
    close(code, reason) {
      if (!open) return
      flush()
      open = false
      ws.close(code ?? 1000, reason)
      // Not waiting long for a peer that never answers the close.
      const timer = setTimeout(() => ws.terminate(), CLOSE_GRACE) as unknown as { unref?: () => void }
      timer.unref?.()
    },
    onMessage: () => {},
    onClose: () => {},
  }
  // Bun calls `close` once the socket is closed, whoever closed it.
  ws.data.socket = socket
  return socket
}

export const bunTransport: Transport = {
  checkCa,
  async listen(options: ListenOptions, onSocket: (socket: Socket) => void): Promise<Listener> {
    // Read first (runtime/tls.ts): Bun's own refusal names neither option, and it took a missing key.
    if (options.tls) await checkTls(options.tls)
    const maxBuffered = options.maxBuffered ?? Infinity
    const serve = () =>
      Bun.serve({
        ...(options.path !== undefined ? { unix: options.path } : { port: options.port ?? 7420, hostname: options.host ?? '127.0.0.1' }),
        ...(options.tls ? { tls: options.tls } : {}),
        fetch(req, srv) {
          if (srv.upgrade(req, { data: {} })) return undefined
          return new Response('holdfast: connect with a WebSocket client\n', { status: 426 })
        },
        websocket: {
          maxPayloadLength: options.maxPayload,
          // Never dropping below the bound (see the module docs); a frame is at most 16 MiB.
          ...(Number.isFinite(maxBuffered) ? { backpressureLimit: maxBuffered + 16 * 1024 * 1024, closeOnBackpressureLimit: true } : {}),
          open(ws) {
            onSocket(adapt(ws, maxBuffered))
          },
          message(ws, message) {
            const socket = ws.data.socket
            if (!socket) return
            if (typeof message === 'string') return textMessage(socket)
            socket.onMessage(message)
          },
          close(ws) {
            ws.data.socket?.onClose()
          },
        },
      })
    let server: BunServer
    if (options.path === undefined || options.mode === undefined) server = serve()
    else {
      // Bun.serve makes the socket file at once: under a umask that leaves only `mode` (see transport-ws.ts).
      const umask = process.umask(0o777 & ~options.mode)
      try {
        server = serve()
      } finally {
        process.umask(umask)
      }
      // One that cannot be set leaves nothing listening, nor the socket file (node/transport.ts).
      try {
        ;(await import('node:fs')).chmodSync(options.path, options.mode)
      } catch (error) {
        await server.stop(true)
        ;(await import('node:fs')).rmSync(options.path, { force: true })
        throw error
      }
    }
    const scheme = options.tls ? 'wss' : 'ws'
    // A relative path said whole, as on Node (node/transport.ts).
    const url =
      options.path !== undefined
        ? `${scheme}+unix://${(await import('node:path')).resolve(options.path)}`
        : `${scheme}://${server.hostname ?? options.host}:${server.port}`
    return {
      url,
      close: async () => {
        await server.stop(true)
      },
    }
  },

  dial(url: string, options: DialOptions): Promise<Socket> {
    if (url.startsWith('ws+unix://') || options.ca !== undefined) return wsTransport.dial(url, options)
    return dialNative(url, options.maxPayload, options.signal)
  },
}

/**
 * A client's connection over Bun's own `WebSocket`. Through the `ws` package, Bun wraps the same
 * native client in a port of `ws` (its `send` checks and converts every message, its events pass
 * through an emitter): here each message goes to the native `send`, each one received comes as a
 * `Buffer` (`binaryType = 'nodebuffer'`). On the wire nothing changes: one binary message per frame,
 * or a turn's frames packed into one for a peer that takes batches (`socket.pack`), sent in the
 * turn's check phase, as the server side above. Bun's client takes no bound on a message's size: a
 * message past `maxPayload` closes the connection here (1009, as `ws` closes it), unread.
 */
function dialNative(url: string, maxPayload: number, signal: AbortSignal | undefined): Promise<Socket> {
  const ws = new WebSocket(url)
  ws.binaryType = 'nodebuffer'
  return new Promise<Socket>((resolve, reject) => {
    ws.addEventListener('open', () => resolve(adaptClient(ws, maxPayload)), { once: true })
    ws.addEventListener('error', event => reject(new Error(event.message ?? `WebSocket connection to ${url} failed`)), { once: true })
    onAbandon(signal, ws, reject, () => ws.close())
  })
}

function adaptClient(ws: BunClient, maxPayload: number): Socket {
  let queue: Uint8Array[] = []
  const flush = (): void => {
    const frames = queue
    queue = []
    if (ws.readyState !== 1 || frames.length === 0) return
    for (const message of frames.length > 1 ? packed(frames, socket.pack!, PACKED_MAX) : frames) ws.send(message)
  }
  const { socket, message, closed } = withHandlers({
    send(frame) {
      if (ws.readyState !== 1) return
      if (socket.pack === undefined) return ws.send(frame)
      if (queue.length === 0) checkPhase(flush)
      queue.push(frame)
    },
    close(code, reason) {
      // What was sent before the close leaves before it.
      flush()
      if (ws.readyState === 0 || ws.readyState === 1) ws.close(code ?? 1000, reason)
    },
  })
  let refused = false
  ws.onmessage = event => {
    const data = event.data
    const bytes = data instanceof Uint8Array ? data : data instanceof ArrayBuffer ? new Uint8Array(data) : undefined
    // Once one was refused, nothing more is read (as `ws` stops reading).
    if (refused) return
    if (bytes !== undefined && bytes.length <= maxPayload) return message(bytes)
    refused = true
    if (bytes === undefined) socket.close(1003, 'holdfast speaks binary frames')
    else socket.close(1009, 'message too big')
    // Ended for its user now, as `ws` ends it, not when the peer answers the close (if ever).
    end()
  }
  let ended = false
  const end = (): void => {
    if (ended) return
    ended = true
    closed()
  }
  ws.onclose = end
  return socket
}
