/**
 * The transport of Deno, over Deno's own server and client: `Deno.serve` and `Deno.upgradeWebSocket`
 * for servers, the global `WebSocket` for clients. Unix sockets both ways: `Deno.serve({ path })`, and a
 * `WebSocket` whose `client` is `Deno.createHttpClient({ proxy: { transport: 'unix', path } })`. TLS is
 * `serve({ tls: { cert, key } })` (PEM), served by `Deno.serve({ cert, key })`; a client trusts the
 * system's certificates, Deno's own (`--cert`, `DENO_CERT`), and `connect(url, { ca })`'s, through a
 * `Deno.createHttpClient({ caCerts })`. Deno's TLS (rustls) refuses a server certificate that is itself
 * a CA (`CaUsedAsEndEntity`): a self-signed certificate must say `basicConstraints=CA:FALSE` (openssl's
 * `req -x509` makes a CA unless told so), or be signed by a CA certificate the client trusts.
 *
 * Permissions: `--allow-net` for TCP; a Unix socket path also needs `--allow-read` and `--allow-write`
 * (or `--allow-net=unix:PATH`, where Deno scopes it so).
 *
 * Deno's WebSocket has no bound on message size: a frame larger than `maxPayload` closes the
 * connection once it arrived (1009), as `ws` does before it is read whole. Past `maxBuffered` bytes
 * not yet written (its `bufferedAmount`), a server's connection is closed (Deno has no way to cut it
 * at once). A Unix socket is given its mode right after `Deno.serve` made it (Deno's umask is unstable).
 */

import { onAbandon, textMessage, withHandlers, type DialOptions, type Listener, type ListenOptions, type Socket, type Transport } from '../transport.js'

/** The parts of the `Deno` namespace this transport uses (the package is typed without Deno's types). */
interface DenoServer {
  readonly addr: { transport: string; hostname?: string; port?: number; path?: string | null }
  shutdown(): Promise<void>
}
interface DenoHttpClient {
  close(): void
}
interface DenoLike {
  chmodSync(path: string, mode: number): void
  serve(options: Record<string, unknown>, handler: (request: Request) => Response | Promise<Response>): DenoServer
  upgradeWebSocket(request: Request, options?: { idleTimeout?: number }): { socket: WebSocket; response: Response }
  createHttpClient(options: { proxy?: { transport: 'unix'; path: string }; caCerts?: string[] }): DenoHttpClient
}

function deno(): DenoLike {
  const d = (globalThis as { Deno?: DenoLike }).Deno
  if (!d || typeof d.serve !== 'function') throw new Error('the Deno transport runs on Deno only')
  return d
}

/** Adapts an open WebSocket (of either side) to a `Socket`. */
function adapt(ws: WebSocket, maxPayload: number, onClosed?: () => void, maxBuffered = Infinity): Socket {
  const { socket, message, closed } = withHandlers({
    send(frame) {
      if (ws.readyState !== WebSocket.OPEN) return
      ws.send(frame)
      if (ws.bufferedAmount > maxBuffered) ws.close(1008, 'holdfast: the client does not read its answers')
    },
    close(code, reason) {
      if (ws.readyState === WebSocket.CONNECTING || ws.readyState === WebSocket.OPEN) ws.close(code ?? 1000, reason)
    },
  })
  ws.binaryType = 'arraybuffer'
  ws.onmessage = event => {
    const data: unknown = event.data
    if (!(data instanceof ArrayBuffer)) return textMessage(socket)
    if (data.byteLength > maxPayload) return socket.close(1009, `frames of more than ${maxPayload} bytes are refused`)
    message(new Uint8Array(data))
  }
  let ended = false
  ws.onclose = () => {
    if (ended) return
    ended = true
    onClosed?.()
    closed()
  }
  ws.onerror = () => {} // a 'close' follows
  return socket
}

function pem(value: string | Uint8Array): string {
  return typeof value === 'string' ? value : new TextDecoder().decode(value)
}

/**
 * Where to dial: `ws://…` and `wss://…` as they are; `ws+unix:///run/x.sock` (or `ws`'s spelling with a
 * request path, `ws+unix:///run/x.sock:/path`) through a Unix socket.
 */
function target(url: string): { url: string; unix?: string } {
  const m = /^(wss?)\+unix:\/\/(.*)$/.exec(url)
  if (!m) return { url }
  const rest = m[2]!
  const colon = rest.indexOf(':')
  const path = colon < 0 ? rest : rest.slice(0, colon)
  const requestPath = colon < 0 ? '/' : rest.slice(colon + 1) || '/'
  return { url: `${m[1]}://localhost${requestPath.startsWith('/') ? requestPath : `/${requestPath}`}`, unix: path }
}

export const denoTransport: Transport = {
  async listen(options: ListenOptions, onSocket: (socket: Socket) => void): Promise<Listener> {
    const Deno = deno()
    const open = new Set<WebSocket>()
    const handler = (request: Request): Response => {
      if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket') {
        return new Response('holdfast: connect with a WebSocket client\n', { status: 426 })
      }
      const { socket: ws, response } = Deno.upgradeWebSocket(request)
      open.add(ws)
      // The socket goes to the server once open: it cannot send before.
      ws.onopen = () => onSocket(adapt(ws, options.maxPayload, () => open.delete(ws), options.maxBuffered))
      ws.onclose = () => open.delete(ws)
      return response
    }
    let listening!: () => void
    const ready = new Promise<void>(resolve => (listening = resolve))
    const serveOptions: Record<string, unknown> = { onListen: () => listening() }
    if (options.path !== undefined) serveOptions.path = options.path
    else {
      serveOptions.port = options.port ?? 7420
      serveOptions.hostname = options.host ?? '127.0.0.1'
    }
    if (options.tls) {
      serveOptions.cert = pem(options.tls.cert)
      serveOptions.key = pem(options.tls.key)
    }
    // Deno.serve throws at once when it cannot listen (AddrInUse, with code EADDRINUSE, as on Node).
    const server = Deno.serve(serveOptions, handler)
    await ready
    if (options.path !== undefined && options.mode !== undefined) Deno.chmodSync(options.path, options.mode)
    const scheme = options.tls ? 'wss' : 'ws'
    const addr = server.addr
    const url =
      options.path !== undefined
        ? `${scheme}+unix://${options.path}`
        : `${scheme}://${addr.hostname?.includes(':') ? `[${addr.hostname}]` : addr.hostname}:${addr.port}`
    return {
      url,
      async close() {
        for (const ws of open) {
          try {
            ws.close(1001, 'server closing')
          } catch {
            // already closing
          }
        }
        open.clear()
        // Also removes a Unix socket's file.
        await server.shutdown()
      },
    }
  },

  async dial(url: string, options: DialOptions): Promise<Socket> {
    const t = target(url)
    let client: DenoHttpClient | undefined
    let ws: WebSocket
    if (t.unix !== undefined || options.ca !== undefined) {
      client = deno().createHttpClient({
        ...(t.unix !== undefined ? { proxy: { transport: 'unix' as const, path: t.unix } } : {}),
        ...(options.ca !== undefined ? { caCerts: [pem(options.ca)] } : {}),
      })
      // `client` is Deno's own WebSocket option.
      ws = new (WebSocket as unknown as new (url: string, options: { client: DenoHttpClient }) => WebSocket)(t.url, { client })
    } else {
      ws = new WebSocket(t.url)
    }
    const done = () => client?.close()
    ws.binaryType = 'arraybuffer'
    try {
      return await new Promise<Socket>((resolve, reject) => {
        // Adapted in the open event itself, so that no frame after it finds no listener.
        ws.onopen = () => resolve(adapt(ws, options.maxPayload, done))
        ws.onerror = event => reject(new Error((event as ErrorEvent).message || 'WebSocket error'))
        ws.onclose = event => reject(new Error(`connection closed (${event.code})`))
        onAbandon(options.signal, ws, reject, () => ws.close())
      })
    } catch (error) {
      done()
      throw error
    }
  },
}
