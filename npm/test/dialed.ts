/**
 * A server in this process for tests of a client across its connections (remote/client.ts): each
 * dial is a connection of its own, which keeps the frames its client sent; the test answers them.
 */

import { before } from 'node:test'
import { readFileSync } from 'node:fs'
import { initSync } from '../wasm/holdfast_wasm.js'
import { decodeClientAll, encodeServer, type ClientFrame } from '../src/remote/wire.js'
import type { Socket, Transport } from '../src/runtime/transport.js'

/** One connection the fake server took: the frames its client sent, and the socket to answer on. */
export interface Connection {
  socket: Socket
  frames: ClientFrame[]
  closed: boolean
}

/**
 * A server that welcomes (revision 7) every hello but those `refuse` says to leave unanswered. The
 * dials `hang` names are never answered: they reject once their signal aborts (`abandoned` counts them).
 */
export function fakeServer(refuse: (connection: number) => boolean, hang: (dial: number) => boolean = () => false) {
  const connections: Connection[] = []
  let dials = 0
  const server = { transport: undefined as unknown as Transport, connections, abandoned: 0 }
  server.transport = {
    listen: () => Promise.reject(new Error('no')),
    async dial(_url, options) {
      if (hang(dials++)) {
        return new Promise<Socket>((_, reject) =>
          options.signal?.addEventListener('abort', () => {
            server.abandoned++
            reject(new Error('no answer to the WebSocket upgrade'))
          }),
        )
      }
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
  return server
}

/** Lets the client's promises and the fake's deferred events run. */
export const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise(r => setImmediate(r))
}

/** Loads the engine (the codec's wasm) before the tests of the file that calls it. */
export function loadEngine(): void {
  before(() => {
    initSync({ module: new WebAssembly.Module(readFileSync(new URL('../wasm/holdfast_wasm_bg.wasm', import.meta.url))) })
  })
}
