import { openStore } from '../src/entry/node.js'
import { memoryStorage } from '../src/storage/storage.js'
import { Protocol, Session, type SessionHooks } from '../src/remote/session.js'
import { REVISION, decodeServerAll, encodeClient, type ServerFrame } from '../src/remote/wire.js'
import type { Socket } from '../src/runtime/transport.js'
import type { Clock } from '../src/util/clock.js'

/**
 * A store served to one session of a `Protocol`, without a socket: `send` hands the session a
 * client's message, as its connection would, and `frames` answers what the server sent it since the
 * last call. The session has said hello. `served`: a stand-in for the store, which the protocol
 * serves instead (a store is opened all the same: it instantiates the wasm that encodes frames).
 */
export async function servedSession({
  revision = REVISION,
  hooks = {},
  served,
  ...options
}: {
  clock?: Clock
  revision?: number
  hooks?: SessionHooks
  served?: object
} = {}) {
  const store = await openStore({ storage: memoryStorage(), ...options })
  const protocol = new Protocol(() => (served ?? store) as never, 'token', hooks)
  const sent: Uint8Array[] = []
  const socket = { send: (f: Uint8Array) => void sent.push(f), close() {}, onMessage() {}, onClose() {} } as unknown as Socket
  const session = new Session(1, socket, protocol)
  protocol.frame(session, encodeClient(1, { type: 'hello', revision, token: 'token', client: 'test' }))
  sent.length = 0
  /** The frames sent since the last call. */
  const frames = (): ServerFrame[] => {
    const all = sent.flatMap(m => decodeServerAll(m))
    sent.length = 0
    return all
  }
  return { store, protocol, session, send: (bytes: Uint8Array) => protocol.frame(session, bytes), frames }
}
