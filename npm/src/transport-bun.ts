/**
 * The transport of Bun's own server: `Bun.serve` with its WebSocket upgrade (on a port or a Unix
 * socket, with TLS when asked). Clients on Bun dial with the `ws` package, as on Node.
 */

import type { Listener, ListenOptions, Socket, Transport } from './transport.js'
import { wsTransport } from './transport-ws.js'

/** The part of Bun's API used here (Bun's own types are not a dependency of the package). */
interface BunSocket {
  send(data: Uint8Array): number
  close(code?: number, reason?: string): void
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
    open(ws: BunSocket): void
    message(ws: BunSocket, message: string | Uint8Array): void
    close(ws: BunSocket): void
  }
}

declare const Bun: { serve(options: BunServeOptions): BunServer }

function adapt(ws: BunSocket): Socket {
  let open = true
  const socket: Socket = {
    send(frame) {
      if (open) ws.send(frame)
    },
    close(code, reason) {
      if (!open) return
      open = false
      ws.close(code ?? 1000, reason)
    },
    onMessage: () => {},
    onClose: () => {},
  }
  // Bun calls `close` once the socket is closed, whoever closed it.
  ws.data.socket = socket
  return socket
}

export const bunTransport: Transport = {
  async listen(options: ListenOptions, onSocket: (socket: Socket) => void): Promise<Listener> {
    const server = Bun.serve({
      ...(options.path !== undefined ? { unix: options.path } : { port: options.port ?? 7420, hostname: options.host ?? '127.0.0.1' }),
      ...(options.tls ? { tls: options.tls } : {}),
      fetch(req, srv) {
        if (srv.upgrade(req, { data: {} })) return undefined
        return new Response('holdfast: connect with a WebSocket client\n', { status: 426 })
      },
      websocket: {
        maxPayloadLength: options.maxPayload,
        open(ws) {
          onSocket(adapt(ws))
        },
        message(ws, message) {
          const socket = ws.data.socket
          if (!socket) return
          if (typeof message === 'string') return socket.close(1003, 'holdfast speaks binary frames')
          socket.onMessage(message)
        },
        close(ws) {
          ws.data.socket?.onClose()
        },
      },
    })
    const scheme = options.tls ? 'wss' : 'ws'
    const url = options.path !== undefined ? `${scheme}+unix://${options.path}` : `${scheme}://${server.hostname ?? options.host}:${server.port}`
    return {
      url,
      close: async () => {
        await server.stop(true)
      },
    }
  },

  dial: wsTransport.dial,
}
