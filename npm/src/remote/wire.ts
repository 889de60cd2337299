/**
 * The wire protocol's messages as JavaScript objects (`{ id, type, ... }`), over the codec in wasm
 * (`crate/wasm/src/wire.rs`; the protocol is `docs/protocol.md`). Frames are decoded and checked in
 * Rust; what crosses back is one string and a few numbers in scratch slots of wasm memory, from which
 * the message object is built here — building it property by property inside wasm cost several µs a
 * frame, more than the rest of a hold over a connection.
 *
 * Ids (request and lease) are 32 hex digits; a hold's `wait` of `null` is without limit. An inspection
 * page is asked for after the entry named by `kind`, `name` and `key` (`name` empty: the first page).
 */

import {
  decodeClient as decodeClientFlat,
  decodeServer as decodeServerFlat,
  encodeBusy,
  encodeCancel,
  encodeDone,
  encodeError,
  encodeGoodbye,
  encodeGranted,
  encodeHello,
  encodeHold,
  encodeInspect,
  encodeInspected,
  encodeInspectedPage,
  encodeInspectPage,
  encodeLost,
  encodeRelease,
  encodeRenew,
  encodeRenewed,
  encodeWelcome,
  wireMemory,
  wireSlots,
} from '../../wasm/holdfast_wasm.js'
import type { ErrorCode } from '../errors.js'

/** One busy key, as `inspected` lists it. */
export interface WireEntry {
  kind: 'lock' | 'semaphore'
  name: string
  key: string
  holders: { fence: number; heldMs: number }[]
  waiting: number
}

export type ClientMessage =
  | { type: 'hello'; token: string; client: string }
  | { type: 'hold'; semaphore: boolean; limit: number; name: string; key: string; ttl: number; maxHold: number; wait: number | null; request: string }
  | { type: 'renew'; lease: string }
  | { type: 'release'; lease: string }
  | { type: 'cancel'; request: string }
  | { type: 'inspect' }
  | { type: 'inspectPage'; kind: 'lock' | 'semaphore'; name: string; key: string }
  | { type: 'goodbye' }

export type ServerMessage =
  | { type: 'welcome'; maxFrame: number; connectionLimit: number }
  | { type: 'granted'; request: string; lease: string; fence: number; ttl: number; revokeIn: number }
  | { type: 'busy' }
  | { type: 'renewed'; ttl: number; revokeIn: number }
  | { type: 'done' }
  | { type: 'error'; code: ErrorCode | 'protocol'; message: string }
  | { type: 'inspected'; entries: WireEntry[] }
  | { type: 'inspectedPage'; more: boolean; entries: WireEntry[] }
  | { type: 'lost'; lease: string; code: 'lost' | 'closed' }

export type ClientFrame = ClientMessage & { id: number }
export type ServerFrame = ServerMessage & { id: number }

// The scratch slots and message types (crate/wasm/src/wire.rs, modules `slot` and `kind`).
const TYPE = 0
const ID = 1
const A = 2
const B = 3
const C = 4
const D = 5
const E = 6
const CUT1 = 7
const CUT2 = 8
const SLOTS = 9

const HELLO = 1
const HOLD = 2
const RENEW = 3
const RELEASE = 4
const CANCEL = 5
const INSPECT = 6
const GOODBYE = 7
const INSPECT_PAGE = 8
const WELCOME = 11
const GRANTED = 12
const BUSY = 13
const RENEWED = 14
const DONE = 15
const ERROR = 16
const INSPECTED = 17
const LOST = 18
const INSPECTED_PAGE = 19

let view: Float64Array | undefined

/** The scratch slots, viewed anew when wasm memory grew (which detaches the old view). */
function slots(): Float64Array {
  if (view === undefined || view.length === 0) view = new Float64Array((wireMemory() as WebAssembly.Memory).buffer, wireSlots(), SLOTS)
  return view
}

/** Decodes a frame a client sent. Throws a `protocol` error (from wasm) for a bad frame. */
export function decodeClient(bytes: Uint8Array): ClientFrame {
  const text = decodeClientFlat(bytes)
  const s = slots()
  const id = s[ID]!
  switch (s[TYPE]) {
    case HOLD: {
      const nameEnd = s[CUT1]!
      const keyEnd = s[CUT2]!
      const wait = s[E]!
      return {
        id,
        type: 'hold',
        semaphore: s[A] === 1,
        limit: s[B]!,
        name: text.slice(0, nameEnd),
        key: text.slice(nameEnd, keyEnd),
        ttl: s[C]!,
        maxHold: s[D]!,
        wait: wait < 0 ? null : wait,
        request: text.slice(keyEnd),
      }
    }
    case RELEASE:
      return { id, type: 'release', lease: text }
    case RENEW:
      return { id, type: 'renew', lease: text }
    case CANCEL:
      return { id, type: 'cancel', request: text }
    case HELLO:
      return { id, type: 'hello', token: text.slice(0, s[CUT1]), client: text.slice(s[CUT1]) }
    case INSPECT:
      return { id, type: 'inspect' }
    case GOODBYE:
      return { id, type: 'goodbye' }
    case INSPECT_PAGE:
      return { id, type: 'inspectPage', kind: s[A] === 1 ? 'semaphore' : 'lock', name: text.slice(0, s[CUT1]), key: text.slice(s[CUT1]) }
    default:
      throw new Error(`wire: unknown client message type ${s[TYPE]} from the codec`)
  }
}

/** Encodes a client's message under correlation id `id`. Throws `invalid` for a bad id. */
export function encodeClient(id: number, m: ClientMessage): Uint8Array {
  switch (m.type) {
    case 'hold':
      return encodeHold(id, m.semaphore, m.limit, m.name, m.key, m.ttl, m.maxHold, m.wait ?? -1, m.request)
    case 'release':
      return encodeRelease(id, m.lease)
    case 'renew':
      return encodeRenew(id, m.lease)
    case 'cancel':
      return encodeCancel(id, m.request)
    case 'hello':
      return encodeHello(id, m.token, m.client)
    case 'inspect':
      return encodeInspect(id)
    case 'goodbye':
      return encodeGoodbye(id)
    case 'inspectPage':
      return encodeInspectPage(id, m.kind === 'semaphore', m.name, m.key)
  }
}

/** Decodes a frame a server sent. Throws a `protocol` error (from wasm) for a bad frame. */
export function decodeServer(bytes: Uint8Array): ServerFrame {
  const answer = decodeServerFlat(bytes) as string | WireEntry[]
  const s = slots()
  const id = s[ID]!
  const text = typeof answer === 'string' ? answer : ''
  switch (s[TYPE]) {
    case GRANTED:
      return { id, type: 'granted', request: text.slice(0, 32), lease: text.slice(32), fence: s[A]!, ttl: s[B]!, revokeIn: s[C]! }
    case RENEWED:
      return { id, type: 'renewed', ttl: s[A]!, revokeIn: s[B]! }
    case DONE:
      return { id, type: 'done' }
    case BUSY:
      return { id, type: 'busy' }
    case ERROR:
      return { id, type: 'error', code: text.slice(0, s[CUT1]) as ErrorCode, message: text.slice(s[CUT1]) }
    case LOST:
      return { id, type: 'lost', code: text.slice(0, s[CUT1]) as 'lost' | 'closed', lease: text.slice(s[CUT1]) }
    case WELCOME:
      return { id, type: 'welcome', maxFrame: s[A]!, connectionLimit: s[B]! }
    case INSPECTED:
      return { id, type: 'inspected', entries: answer as WireEntry[] }
    case INSPECTED_PAGE:
      return { id, type: 'inspectedPage', more: s[A] === 1, entries: answer as WireEntry[] }
    default:
      throw new Error(`wire: unknown server message type ${s[TYPE]} from the codec`)
  }
}

/** Encodes a server's message under correlation id `id` (a `lost` always goes under 0). */
export function encodeServer(id: number, m: ServerMessage): Uint8Array {
  switch (m.type) {
    case 'granted':
      return encodeGranted(id, m.request, m.lease, m.fence, m.ttl, m.revokeIn)
    case 'renewed':
      return encodeRenewed(id, m.ttl, m.revokeIn)
    case 'done':
      return encodeDone(id)
    case 'busy':
      return encodeBusy(id)
    case 'error':
      return encodeError(id, m.code, m.message)
    case 'lost':
      return encodeLost(m.lease, m.code)
    case 'welcome':
      return encodeWelcome(id, m.maxFrame, m.connectionLimit)
    case 'inspected':
      return encodeInspected(id, m.entries)
    case 'inspectedPage':
      return encodeInspectedPage(id, m.more, m.entries)
  }
}
