/**
 * A server in this process for tests of a client across its connections (remote/client.ts): each
 * dial is a connection of its own, which keeps the frames its client sent; the test answers them.
 */

import { decodeClientAll, encodeServer, type ClientFrame } from '../src/remote/wire.js'
import type { Socket, Transport } from '../src/runtime/transport.js'

/** One connection the fake server took: the frames its client sent, and the socket to answer on. */
export interface Connection {
  socket: Socket
  frames: ClientFrame[]
  closed: boolean
}

/** A server that welcomes (revision 7) every hello but those `refuse` says to leave unanswered. */
export function fakeServer(refuse: (connection: number) => boolean) {
  const connections: Connection[] = []
  const transport: Transport = {
    listen: () => Promise.reject(new Error('no')),
    async dial() {
      const n = connections.length
      const c: Connection = {
        frames: [],
        closed: false,
        socket: {
          send(bytes) {
            for (const f of decodeClientAll(bytes)) {
              c.frames.push(f)
              if (f.type === 'hello' && !refuse(n))
                queueMicrotask(() => c.socket.onMessage(encodeServer(f.id, { type: 'welcome', revision: 7, maxFrame: 65_536, connectionLimit: 100 })))
              if (f.type === 'goodbye') queueMicrotask(() => c.socket.onMessage(encodeServer(f.id, { type: 'done' })))
            }
          },
          close() {
            if (c.closed) return
            c.closed = true
            // As a socket's close event, on a later turn than the message read before it.
            setImmediate(() => c.socket.onClose())
          },
          onMessage: () => {},
          onClose: () => {},
        },
      }
      connections.push(c)
      return c.socket
    },
  }
  return { transport, connections }
}

/** Lets the client's promises and the fake's deferred events run. */
export const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise(r => setImmediate(r))
}
