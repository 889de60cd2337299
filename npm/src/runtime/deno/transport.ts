/**
 * The transport of Deno. Clients over Deno's own WebSocket (the global `WebSocket`): Unix sockets
 * through a `WebSocket` whose `client` is `Deno.createHttpClient({ proxy: { transport: 'unix', path } })`;
 * `wss://` trusting the system's certificates, Deno's own (`--cert`, `DENO_CERT`), and
 * `connect(url, { ca })`'s, through a `Deno.createHttpClient({ caCerts })`. Deno's TLS (rustls) refuses
 * a server certificate that is itself a CA (`CaUsedAsEndEntity`): a self-signed certificate must say
 * `basicConstraints=CA:FALSE` (openssl's `req -x509` makes a CA unless told so), or be signed by a CA
 * certificate the client trusts.
 *
 * Servers are Node's transport's (`node:http`/`node:https` and `ws`, under Deno's Node APIs): see
 * `listen` below for why not `Deno.serve`.
 *
 * Permissions: `--allow-net` for TCP; a Unix socket path also needs `--allow-read` and `--allow-write`
 * (or `--allow-net=unix:PATH`, where Deno scopes it so). A server also needs `--allow-env` for `ws`
 * (`--allow-env=WS_NO_BUFFER_UTIL,WS_NO_UTF_8_VALIDATE` at least).
 *
 * Deno's WebSocket has no bound on message size: a frame larger than `maxPayload` closes the
 * connection once it arrived (1009), as `ws` does before it is read whole.
 */

import { onAbandon, textMessage, withHandlers, type DialOptions, type Socket, type Transport } from '../transport.js'
import { wsTransport } from '../node/transport.js'
import { checkCa } from '../tls.js'

/** The parts of the `Deno` namespace this transport uses (the package is typed without Deno's types). */
interface DenoHttpClient {
  close(): void
}
interface DenoLike {
  createHttpClient(options: { proxy?: { transport: 'unix'; path: string }; caCerts?: string[] }): DenoHttpClient
}

function deno(): DenoLike {
  const d = (globalThis as { Deno?: DenoLike }).Deno
  if (!d || typeof d.createHttpClient !== 'function') throw new Error('the Deno transport runs on Deno only')
  return d
}

/** Adapts a client's open WebSocket to a `Socket`. */
function adapt(ws: WebSocket, maxPayload: number, onClosed?: () => void): Socket {
  const { socket, message, closed } = withHandlers({
    send(frame) {
      if (ws.readyState !== WebSocket.OPEN) return
      ws.send(frame)
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

/** What `ws` reads from the environment as it loads. */
const WS_ENV = ['WS_NO_BUFFER_UTIL', 'WS_NO_UTF_8_VALIDATE']

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
  checkCa,
  // Deno's own server (`Deno.serve` and `Deno.upgradeWebSocket`) cannot bound what a peer keeps: a
  // WebSocket it closed stays open until its peer answers the close, as long as the peer likes (even
  // past the server's shutdown; nothing public ends the connection under it), and a request dribbled
  // a byte at a time is never cut (no header timeout). Node's HTTP server under Deno gives both: the
  // socket to cut after `CLOSE_GRACE`, and `headersTimeout`; so servers are Node's transport's.
  //
  // `ws` reads two environment variables as it loads: Deno refuses that without `--allow-env`, deep
  // in `ws`; the refusal is told here with the flags to give. It stays Deno's `NotCapable`, as the
  // refusal of any other permission serve() lacks (`--allow-net`) is: a serve() that cannot listen
  // rejects with the runtime's error (README, *Errors*), and code may branch on its class.
  async listen(options, onSocket) {
    try {
      return await wsTransport.listen(options, onSocket)
    } catch (error) {
      if ((error as Error)?.name !== 'NotCapable' || !/env access/.test((error as Error).message)) throw error
      const NotCapable = (error as Error).constructor as ErrorConstructor
      throw new NotCapable(
        `serve() on Deno: ${(error as Error).message}. The server (the ws package) reads ${WS_ENV.join(' and ')}: run with --allow-net and --allow-env (--allow-env=${WS_ENV.join(',')} is enough)`,
        { cause: error },
      )
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
