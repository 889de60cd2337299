/**
 * The wire protocol's messages as JavaScript objects (`{ id, type, ... }`), over the codec in wasm
 * (`crate/wasm/src/wire.rs`; the protocol is `docs/protocol.md`). Frames are decoded and checked in
 * Rust; what crosses back is one string and a few numbers per frame in a scratch table of wasm memory,
 * from which the message objects are built here — building them property by property inside wasm cost
 * several µs a frame, more than the rest of a hold over a connection. A WebSocket message is decoded
 * in one call however many frames it carries (a batch, revision 3), all of it or none.
 *
 * A batch's container is built here (`batchOf`: a header and each frame after its `u16` length, as
 * `crate/engine/src/wire` encodes it), from frames the codec encoded: it copies bytes and checks
 * nothing, and Rust decodes it.
 *
 * The frames of every hold (`hold`, `release`, `renew`; the server's `granted`) are encoded here, in
 * JavaScript, byte for byte as the codec encodes them (`npm/test/wire.test.ts` checks both against each
 * other): through the codec, each took a crossing into wasm and an allocation there for each string
 * (the ids, the name, the key) and for the frame, more than the rest of its encoding. Anything these
 * encoders do not take as it comes (an id that is not 32 hex digits, a string longer than a `u16`
 * length, a number past 2^53) goes to the codec, which encodes or refuses it as it always did.
 *
 * They are read here too, as the codec reads them: a client's message of `hold`, `release` and
 * `renew` frames only (names and keys in ASCII), and a server's message of `granted` frames only, each
 * alone or batched (the test reads them against the codec, bad frames among them). Any other message,
 * or one these readers do not take whole, goes to the codec, which reads or refuses it as always.
 *
 * Ids (request and lease) are 32 hex digits; a hold's `wait` of `null` is without limit. An inspection
 * page is asked for after the entry named by `kind`, `name` and `key` (`name` empty: the first page).
 * Pools (revision 4): `claim`, `pool` (an operation on a pool: release, confirm, remaining, resize,
 * cancel) and `inspectPools`, answered `claimed`, `count`, `done` or `pools`; sent only between peers
 * whose `hello` and `welcome` both said revision 4 (`POOLS`). `ping` (revision 5, `HEARTBEAT`) is answered
 * `done`. A `withdraw` (revision 6) names in its `value` the frame id of the `claim` whose answer it
 * takes back (revision 7, `NAMED_ASKS`; 0 before): the frames are the same. Pools are inspected page by
 * page (revision 8, `POOL_PAGES`): `inspectPoolsPage` asks for the pools after the name `after`
 * (empty: the first page), answered `poolsPage`.
 */

import {
  decodeClient as decodeClientFlat,
  decodeServer as decodeServerFlat,
  encodeBusy,
  encodeCancel,
  encodeClaim,
  encodeClaimed,
  encodeCount,
  encodeInspectPools,
  encodeInspectPoolsPage,
  encodePing,
  encodePool,
  encodePools,
  encodePoolsPage,
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
import { HEX_HIGH as HIGH, HEX_LOW as LOW, hexDigit, hexOfWords } from '../util/hex.js'

/** One busy key, as `inspected` lists it. */
export interface WireEntry {
  kind: 'lock' | 'semaphore'
  name: string
  key: string
  holders: { fence: number; heldMs: number }[]
  waiting: number
}

/** One pool, as `pools` lists it (revision 4). */
export interface WirePool {
  name: string
  capacity: number
  remaining: number
  claims: number
  waiting: number
}

/** The operations of a `pool` frame (revision 4). */
/** `withdraw`: revision 6 (`HANDED_BACK`), sent only when the welcome said it; its `value` a claim's frame id from revision 7 (`NAMED_ASKS`). */
export type PoolOp = 'release' | 'confirm' | 'remaining' | 'resize' | 'cancel' | 'withdraw'
const POOL_OPS: PoolOp[] = ['release', 'confirm', 'remaining', 'resize', 'cancel', 'withdraw']

export type ClientMessage =
  | { type: 'hello'; revision: number; token: string; client: string }
  | { type: 'hold'; semaphore: boolean; limit: number; name: string; key: string; ttl: number; maxHold: number; wait: number | null; request: string }
  | { type: 'renew'; lease: string }
  | { type: 'release'; lease: string }
  | { type: 'cancel'; request: string }
  | { type: 'inspect' }
  | { type: 'inspectPage'; kind: 'lock' | 'semaphore'; name: string; key: string }
  | { type: 'goodbye' }
  | { type: 'claim'; pool: string; capacity: number; n: number; claim: string; wait: number | null; ttl: number }
  | { type: 'pool'; op: PoolOp; pool: string; capacity: number; claim: string; value: number }
  | { type: 'inspectPools' }
  | { type: 'inspectPoolsPage'; after: string }
  | { type: 'ping' }

export type ServerMessage =
  | { type: 'welcome'; revision: number; maxFrame: number; connectionLimit: number }
  | { type: 'granted'; request: string; lease: string; fence: number; ttl: number; revokeIn: number }
  | { type: 'busy' }
  | { type: 'renewed'; ttl: number; revokeIn: number }
  | { type: 'done' }
  | { type: 'error'; code: ErrorCode | 'protocol'; message: string }
  | { type: 'inspected'; entries: WireEntry[] }
  | { type: 'inspectedPage'; more: boolean; entries: WireEntry[] }
  | { type: 'lost'; lease: string; code: 'lost' | 'closed' }
  | { type: 'claimed'; claimed: boolean; remaining: number }
  | { type: 'count'; value: number }
  | { type: 'pools'; pools: WirePool[] }
  | { type: 'poolsPage'; more: boolean; pools: WirePool[] }

export type ClientFrame = ClientMessage & { id: number }
export type ServerFrame = ServerMessage & { id: number }

// The scratch table and message types (crate/wasm/src/wire.rs, modules `slot` and `kind`).
const COUNT = 0
const FIRST = 1
const TYPE = 0
const ID = 1
const A = 2
const B = 3
const C = 4
const D = 5
const E = 6
const CUT1 = 7
const CUT2 = 8
const START = 9
const END = 10
const LEN = 11

const HELLO = 1
const HOLD = 2
const RENEW = 3
const RELEASE = 4
const CANCEL = 5
const INSPECT = 6
const GOODBYE = 7
const INSPECT_PAGE = 8
const CLAIM = 9
const POOL = 10
const INSPECT_POOLS = 20
const PING = 24
const INSPECT_POOLS_PAGE = 25
const WELCOME = 11
const GRANTED = 12
const BUSY = 13
const RENEWED = 14
const DONE = 15
const ERROR = 16
const INSPECTED = 17
const LOST = 18
const INSPECTED_PAGE = 19
const CLAIMED = 21
const COUNT_FRAME = 22
const POOLS_FRAME = 23
const POOLS_PAGE = 26

/** The revision of the protocol this build speaks (`docs/protocol.md` # Revisions; the codec's `wireRevision()`). */
export const REVISION = 8
/** The first revision with batches, and with the revision in `hello` and `welcome`. */
export const BATCHES = 3
/** The first revision with pools. */
export const POOLS = 4
/** The first revision with `ping` (the client's heartbeat). */
export const HEARTBEAT = 5
/**
 * The first revision whose pool `release` may be answered `count` 2 (it held nothing, its units
 * handed back before), and with the pool op `withdraw`.
 */
export const HANDED_BACK = 6
/**
 * The first revision whose pool `withdraw` names, in its `value`, the frame id of the `claim` whose
 * `claimed` answer it takes back (0: none, as in revision 6): a client withdraws exactly the answers
 * it did not hand to a caller, one lost with a dropped connection included.
 */
export const NAMED_ASKS = 7
/**
 * The first revision whose pools are inspected page by page (`inspectPoolsPage`, `poolsPage`), as
 * busy keys are from revision 2: no answer larger than a server's bound, however many pools.
 */
export const POOL_PAGES = 8
/** The largest frame a batch carries (its length is a `u16`); a larger one is sent alone. */
export const BATCHED_FRAME = 0xffff

let memory: WebAssembly.Memory | undefined
let view: Float64Array | undefined

/**
 * The scratch table of the last decode, of `count` frames: viewed anew when wasm memory grew (which
 * detaches the old view) or the table moved or grew.
 */
function table(): Float64Array {
  memory ??= wireMemory() as WebAssembly.Memory
  const at = wireSlots()
  if (view === undefined || view.length === 0 || view.byteOffset !== at || view.length < FIRST + view[COUNT]! * LEN) {
    view = new Float64Array(memory.buffer, at, FIRST)
    view = new Float64Array(memory.buffer, at, FIRST + view[COUNT]! * LEN)
  }
  return view
}

/**
 * Decodes a message a client sent: its frames, one or a batch's, in order. Throws a `protocol` error
 * (from wasm) for a bad message: nothing of it is answered.
 */
export function decodeClientAll(bytes: Uint8Array): ClientFrame[] {
  return holdFramesOf(bytes) ?? decodeClientByCodec(bytes)
}

/**
 * `decodeClientAll` through the codec only: for a message `readHeld` already refused (the server's
 * reading), which the hand reader would only refuse again.
 */
export function decodeClientByCodec(bytes: Uint8Array): ClientFrame[] {
  const text = decodeClientFlat(bytes)
  const s = table()
  const count = s[COUNT]!
  const frames = new Array<ClientFrame>(count)
  for (let i = 0; i < count; i++) frames[i] = clientFrame(s, FIRST + i * LEN, text)
  return frames
}

/** Decodes a message of one frame a client sent (a batch is refused). */
export function decodeClient(bytes: Uint8Array): ClientFrame {
  const frames = decodeClientAll(bytes)
  if (frames.length !== 1) throw Object.assign(new Error('bad frame: a batch where one frame was expected'), { code: 'protocol' })
  return frames[0]!
}

function clientFrame(s: Float64Array, at: number, all: string): ClientFrame {
  const id = s[at + ID]!
  const start = s[at + START]!
  const end = s[at + END]!
  switch (s[at + TYPE]) {
    case HOLD: {
      const nameEnd = s[at + CUT1]!
      const keyEnd = s[at + CUT2]!
      const wait = s[at + E]!
      return {
        id,
        type: 'hold',
        semaphore: s[at + A] === 1,
        limit: s[at + B]!,
        name: all.slice(start, nameEnd),
        key: all.slice(nameEnd, keyEnd),
        ttl: s[at + C]!,
        maxHold: s[at + D]!,
        wait: wait < 0 ? null : wait,
        request: all.slice(keyEnd, end),
      }
    }
    case RELEASE:
      return { id, type: 'release', lease: all.slice(start, end) }
    case RENEW:
      return { id, type: 'renew', lease: all.slice(start, end) }
    case CANCEL:
      return { id, type: 'cancel', request: all.slice(start, end) }
    case HELLO:
      return { id, type: 'hello', revision: s[at + A]!, token: all.slice(start, s[at + CUT1]), client: all.slice(s[at + CUT1], end) }
    case INSPECT:
      return { id, type: 'inspect' }
    case GOODBYE:
      return { id, type: 'goodbye' }
    case INSPECT_PAGE:
      return {
        id,
        type: 'inspectPage',
        kind: s[at + A] === 1 ? 'semaphore' : 'lock',
        name: all.slice(start, s[at + CUT1]),
        key: all.slice(s[at + CUT1], end),
      }
    case CLAIM: {
      const wait = s[at + C]!
      return {
        id,
        type: 'claim',
        pool: all.slice(start, s[at + CUT1]),
        capacity: s[at + A]!,
        n: s[at + B]!,
        claim: all.slice(s[at + CUT1], end),
        wait: wait < 0 ? null : wait,
        ttl: s[at + D]!,
      }
    }
    case POOL:
      return {
        id,
        type: 'pool',
        op: POOL_OPS[s[at + A]! - 1]!,
        pool: all.slice(start, s[at + CUT1]),
        capacity: s[at + B]!,
        claim: all.slice(s[at + CUT1], end),
        value: s[at + C]!,
      }
    case INSPECT_POOLS:
      return { id, type: 'inspectPools' }
    case INSPECT_POOLS_PAGE:
      return { id, type: 'inspectPoolsPage', after: all.slice(start, end) }
    case PING:
      return { id, type: 'ping' }
    default:
      throw new Error(`wire: unknown client message type ${s[at + TYPE]} from the codec`)
  }
}

/** Encodes a client's message under correlation id `id`. Throws `invalid` for a bad id. */
export function encodeClient(id: number, m: ClientMessage): Uint8Array {
  switch (m.type) {
    case 'hold':
      return holdFrame(id, m) ?? encodeHold(id, m.semaphore, m.limit, m.name, m.key, m.ttl, m.maxHold, m.wait ?? -1, m.request)
    case 'release':
      return idFrame(T_RELEASE, id, m.lease) ?? encodeRelease(id, m.lease)
    case 'renew':
      return idFrame(T_RENEW, id, m.lease) ?? encodeRenew(id, m.lease)
    case 'cancel':
      return encodeCancel(id, m.request)
    case 'hello':
      return encodeHello(id, m.revision, m.token, m.client)
    case 'inspect':
      return encodeInspect(id)
    case 'goodbye':
      return encodeGoodbye(id)
    case 'inspectPage':
      return encodeInspectPage(id, m.kind === 'semaphore', m.name, m.key)
    case 'claim':
      return encodeClaim(id, m.pool, m.capacity, m.n, m.claim, m.wait ?? -1, m.ttl)
    case 'pool':
      return encodePool(id, POOL_OPS.indexOf(m.op) + 1, m.pool, m.capacity, m.claim, m.value)
    case 'inspectPools':
      return encodeInspectPools(id)
    case 'inspectPoolsPage':
      return encodeInspectPoolsPage(id, m.after)
    case 'ping':
      return encodePing(id)
  }
}

/** Decodes a message a server sent: its frames, one or a batch's, in order. Throws a `protocol` error for a bad message. */
export function decodeServerAll(bytes: Uint8Array): ServerFrame[] {
  const granted = grantedOf(bytes)
  if (granted !== undefined) return granted
  const answer = decodeServerFlat(bytes) as string | [string, ...(WireEntry[] | WirePool[])[]]
  const s = table()
  const count = s[COUNT]!
  const text = typeof answer === 'string' ? answer : answer[0]
  let inspection = 1
  const frames = new Array<ServerFrame>(count)
  for (let i = 0; i < count; i++) {
    const at = FIRST + i * LEN
    const type = s[at + TYPE]
    if (type === POOLS_FRAME) frames[i] = { id: s[at + ID]!, type: 'pools', pools: (answer as WirePool[][])[inspection++]! }
    else if (type === POOLS_PAGE) frames[i] = { id: s[at + ID]!, type: 'poolsPage', more: s[at + A] === 1, pools: (answer as WirePool[][])[inspection++]! }
    else frames[i] = type === INSPECTED || type === INSPECTED_PAGE ? inspected(s, at, (answer as WireEntry[][])[inspection++]!) : serverFrame(s, at, text)
  }
  return frames
}

/** Decodes a message of one frame a server sent (a batch is refused). */
export function decodeServer(bytes: Uint8Array): ServerFrame {
  const frames = decodeServerAll(bytes)
  if (frames.length !== 1) throw Object.assign(new Error('bad frame: a batch where one frame was expected'), { code: 'protocol' })
  return frames[0]!
}

function inspected(s: Float64Array, at: number, entries: WireEntry[]): ServerFrame {
  const id = s[at + ID]!
  return s[at + TYPE] === INSPECTED ? { id, type: 'inspected', entries } : { id, type: 'inspectedPage', more: s[at + A] === 1, entries }
}

function serverFrame(s: Float64Array, at: number, all: string): ServerFrame {
  const id = s[at + ID]!
  const start = s[at + START]!
  const end = s[at + END]!
  switch (s[at + TYPE]) {
    case GRANTED:
      return {
        id,
        type: 'granted',
        request: all.slice(start, start + 32),
        lease: all.slice(start + 32, end),
        fence: s[at + A]!,
        ttl: s[at + B]!,
        revokeIn: s[at + C]!,
      }
    case RENEWED:
      return { id, type: 'renewed', ttl: s[at + A]!, revokeIn: s[at + B]! }
    case DONE:
      return { id, type: 'done' }
    case BUSY:
      return { id, type: 'busy' }
    case ERROR:
      return { id, type: 'error', code: all.slice(start, s[at + CUT1]) as ErrorCode, message: all.slice(s[at + CUT1], end) }
    case LOST:
      return { id, type: 'lost', code: all.slice(start, s[at + CUT1]) as 'lost' | 'closed', lease: all.slice(s[at + CUT1], end) }
    case WELCOME:
      return { id, type: 'welcome', revision: s[at + C]!, maxFrame: s[at + A]!, connectionLimit: s[at + B]! }
    case CLAIMED:
      return { id, type: 'claimed', claimed: s[at + A] === 1, remaining: s[at + B]! }
    case COUNT_FRAME:
      return { id, type: 'count', value: s[at + A]! }
    default:
      throw new Error(`wire: unknown server message type ${s[at + TYPE]} from the codec`)
  }
}

/** Encodes a server's message under correlation id `id` (a `lost` always goes under 0). */
export function encodeServer(id: number, m: ServerMessage): Uint8Array {
  switch (m.type) {
    case 'granted':
      return encodeGrantedFrame(id, m.request, m.lease, m.fence, m.ttl, m.revokeIn)
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
      return encodeWelcome(id, m.revision, m.maxFrame, m.connectionLimit)
    case 'inspected':
      return encodeInspected(id, m.entries)
    case 'inspectedPage':
      return encodeInspectedPage(id, m.more, m.entries)
    case 'claimed':
      return encodeClaimed(id, m.claimed, m.remaining)
    case 'count':
      return encodeCount(id, m.value)
    case 'pools':
      return encodePools(id, m.pools)
    case 'poolsPage':
      return encodePoolsPage(id, m.more, m.pools)
  }
}

// ---- the frames of every hold, encoded here (see the module doc) ----

/** The wire's version byte and the type bytes of the frames encoded here (crate/engine/src/wire/codec.rs). */
const WIRE_VERSION = 1
const T_HOLD = 0x02
const T_RENEW = 0x03
const T_RELEASE = 0x04
const T_GRANTED = 0x82

/** Where frames are written before they are copied out at their length (grown for a longer one). */
let out = new Uint8Array(256)
let outView = new DataView(out.buffer)
const utf8 = new TextEncoder()

/** Makes `out` at least `size` bytes, keeping what was written. */
function room(size: number): void {
  if (out.length >= size) return
  const grown = new Uint8Array(Math.max(size, 2 * out.length))
  grown.set(out)
  out = grown
  outView = new DataView(out.buffer)
}

/** The header: version, type, correlation id (`u32`, as wasm takes a number: modulo 2^32). */
function header(type: number, id: number): void {
  out[0] = WIRE_VERSION
  out[1] = type
  outView.setUint32(2, id >>> 0, true)
}

/** Writes a 128-bit id given as 32 hex digits, as the codec does (`u128` little-endian); false if it is not one. */
function putId(at: number, hex: string): boolean {
  if (hex.length !== 32) return false
  for (let i = 0; i < 16; i++) {
    const hi = hexDigit(hex, 30 - 2 * i)
    const lo = hexDigit(hex, 31 - 2 * i)
    if ((hi | lo) < 0) return false
    out[at + i] = (hi << 4) | lo
  }
  return true
}

/** Writes a count of ms as the codec's `u64` (negative and NaN are 0, fractions cut); false past 2^53. */
function putMs(at: number, value: number): boolean {
  const v = value > 0 ? Math.floor(value) : 0
  if (v > Number.MAX_SAFE_INTEGER) return false
  outView.setUint32(at, v % 0x1_0000_0000, true)
  outView.setUint32(at + 4, Math.floor(v / 0x1_0000_0000), true)
  return true
}

/** Writes a string after its `u16` byte length; answers where it ends, or -1 when it is longer than that. */
function putString(at: number, s: string): number {
  const n = s.length
  room(at + 2 + 3 * n)
  let i = 0
  // ASCII byte by byte (names and keys mostly are), the rest by the platform's encoder.
  for (; i < n; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0x80) break
    out[at + 2 + i] = c
  }
  let bytes = i
  if (i < n) bytes += utf8.encodeInto(s.slice(i), out.subarray(at + 2 + i)).written
  if (bytes > 0xffff) return -1
  outView.setUint16(at, bytes, true)
  return at + 2 + bytes
}

/** A `hold` frame, or `undefined` for the codec to encode (or refuse). */
function holdFrame(id: number, m: Extract<ClientMessage, { type: 'hold' }>): Uint8Array | undefined {
  const at = holdFields(id, m.semaphore, m.limit, m.name, m.key, m.ttl, m.maxHold, m.wait)
  return at >= 0 && putId(at, m.request) ? cut(at + 16) : undefined
}

/** Writes a `hold` frame up to its request id; answers where the id goes, or -1 for the codec. */
function holdFields(id: number, semaphore: boolean, limit: number, name: string, key: string, ttl: number, maxHold: number, wait: number | null): number {
  header(T_HOLD, id)
  out[6] = semaphore ? 1 : 0
  outView.setUint32(7, limit >>> 0, true)
  let at = putString(11, name)
  if (at < 0) return -1
  at = putString(at, key)
  if (at < 0) return -1
  room(at + 36)
  outView.setUint32(at, ttl >>> 0, true)
  if (!putMs(at + 4, maxHold)) return -1
  if (wait === null || wait < 0) {
    outView.setUint32(at + 12, 0xffff_ffff, true)
    outView.setUint32(at + 16, 0xffff_ffff, true)
  } else if (!putMs(at + 12, wait)) return -1
  return at + 20
}

/**
 * A client's `hold` frame, its request id given as four 32-bit words, most significant first (as
 * `idWords` reads one from hex, and `eachGranted` gives a lease id): a client keeps its ids so, and
 * makes no string of them for its every hold.
 */
export function encodeHoldOf(
  id: number,
  semaphore: boolean,
  limit: number,
  name: string,
  key: string,
  ttl: number,
  maxHold: number,
  wait: number | null,
  w0: number,
  w1: number,
  w2: number,
  w3: number,
): Uint8Array {
  const at = holdFields(id, semaphore, limit, name, key, ttl, maxHold, wait)
  if (at < 0) return encodeHold(id, semaphore, limit, name, key, ttl, maxHold, wait ?? -1, hexOfWords(w0, w1, w2, w3))
  putWords(at, w0, w1, w2, w3)
  return cut(at + 16)
}

/** A client's `release` frame of the lease id given as four words (see `encodeHoldOf`). */
export function encodeReleaseOf(id: number, w0: number, w1: number, w2: number, w3: number): Uint8Array {
  header(T_RELEASE, id)
  putWords(6, w0, w1, w2, w3)
  return out.slice(0, ID_FRAME_SIZE)
}

/** Writes an id given as four words, most significant first, as the codec writes it (`u128` little-endian). */
function putWords(at: number, w0: number, w1: number, w2: number, w3: number): void {
  outView.setInt32(at, w3, true)
  outView.setInt32(at + 4, w2, true)
  outView.setInt32(at + 8, w1, true)
  outView.setInt32(at + 12, w0, true)
}

/** A frame of one lease id (`release`, `renew`), or `undefined` for the codec. */
function idFrame(type: number, id: number, lease: string): Uint8Array | undefined {
  header(type, id)
  return putId(6, lease) ? out.slice(0, 22) : undefined
}

/**
 * A `granted` frame of a request and a lease whose ids are given as four words each (see
 * request.ts # Ids as words), as `encodeGrantedFrame` encodes it from their hex.
 */
export function encodeGrantedOf(id: number, r: IdWords, fence: number, ttl: number, revokeIn: number): Uint8Array {
  header(T_GRANTED, id)
  putWords(6, r.r0, r.r1, r.r2, r.r3)
  putWords(22, r.l0, r.l1, r.l2, r.l3)
  if (putMs(38, fence)) {
    outView.setUint32(46, ttl >>> 0, true)
    if (putMs(50, revokeIn)) return out.slice(0, GRANTED_SIZE)
  }
  return encodeGranted(id, hexOfWords(r.r0, r.r1, r.r2, r.r3), hexOfWords(r.l0, r.l1, r.l2, r.l3), fence, ttl, revokeIn)
}

/** A request's and its lease's ids as words, most significant first (request.ts `RemoteRequest`). */
export interface IdWords {
  readonly r0: number
  readonly r1: number
  readonly r2: number
  readonly r3: number
  readonly l0: number
  readonly l1: number
  readonly l2: number
  readonly l3: number
}

/**
 * A `granted` frame from its fields, ids as hex (`encodeServer`'s; the server's answer to a hold is
 * made from the ids' words, by `encodeGrantedOf`).
 */
function encodeGrantedFrame(id: number, request: string, lease: string, fence: number, ttl: number, revokeIn: number): Uint8Array {
  header(T_GRANTED, id)
  if (putId(6, request) && putId(22, lease) && putMs(38, fence)) {
    outView.setUint32(46, ttl >>> 0, true)
    if (putMs(50, revokeIn)) return out.slice(0, GRANTED_SIZE)
  }
  return encodeGranted(id, request, lease, fence, ttl, revokeIn)
}

/** The size of a `granted` frame: header, request, lease, fence, ttl, revokeIn. */
const GRANTED_SIZE = 58

/**
 * The id at `bytes[at]` (a u128 little-endian, as the codec writes it) as 32 hex digits, most
 * significant first: one flat string, made in one `String.fromCharCode` of its 32 digits given one by
 * one (as `randomId` makes one). Through `apply` over an array of the codes it cost about 40 ns more
 * an id, on Node 24 and on Bun.
 */
function hexOf(p: Uint8Array, at: number): string {
  const i = at
  // biome-ignore format: the 16 bytes from the last, two digits each
  return String.fromCharCode(
    HIGH[p[i + 15]!]!, LOW[p[i + 15]!]!, HIGH[p[i + 14]!]!, LOW[p[i + 14]!]!, HIGH[p[i + 13]!]!, LOW[p[i + 13]!]!, HIGH[p[i + 12]!]!, LOW[p[i + 12]!]!,
    HIGH[p[i + 11]!]!, LOW[p[i + 11]!]!, HIGH[p[i + 10]!]!, LOW[p[i + 10]!]!, HIGH[p[i + 9]!]!, LOW[p[i + 9]!]!, HIGH[p[i + 8]!]!, LOW[p[i + 8]!]!,
    HIGH[p[i + 7]!]!, LOW[p[i + 7]!]!, HIGH[p[i + 6]!]!, LOW[p[i + 6]!]!, HIGH[p[i + 5]!]!, LOW[p[i + 5]!]!, HIGH[p[i + 4]!]!, LOW[p[i + 4]!]!,
    HIGH[p[i + 3]!]!, LOW[p[i + 3]!]!, HIGH[p[i + 2]!]!, LOW[p[i + 2]!]!, HIGH[p[i + 1]!]!, LOW[p[i + 1]!]!, HIGH[p[i]!]!, LOW[p[i]!]!,
  )
}

/** The codec's bounds on what a client sends (crate/engine/src/wire/message.rs). */
const MAX_CLIENT_FRAME = 64 * 1024
const MAX_SERVER_FRAME = 16 * 1024 * 1024
const MAX_NAME_WIRE = 64
const MAX_KEY = 1024
const ID_FRAME_SIZE = 22

/**
 * A `hold`, `release` or `renew` frame read by hand (`readHeld`): as the codec's, but its id (the
 * request's, or the lease's) as four words, most significant first, where the codec's has 32 hex
 * digits. The server acts on these without making a string of either id (see util/hex.ts `Id`).
 */
export type HeldFrame =
  | {
      id: number
      type: 'hold'
      semaphore: boolean
      limit: number
      name: string
      key: string
      ttl: number
      maxHold: number
      wait: number | null
      w0: number
      w1: number
      w2: number
      w3: number
    }
  | { id: number; type: 'release' | 'renew'; w0: number; w1: number; w2: number; w3: number }

/**
 * A message a client sent of `hold`, `release` and `renew` frames only (the frames of every hold),
 * alone or in a batch, read here as the codec reads them; or `undefined` for the codec to decode
 * (another frame among them, a bad one, a name or key not ASCII): what it refuses
 * stays refused as before, and nothing of a message is answered before all of it is read.
 */
export function readHeld(bytes: Uint8Array): HeldFrame[] | undefined {
  return readAll(bytes, BATCH_CLIENT, MAX_CLIENT_FRAME, heldFrameAt)
}

/** `readHeld`'s frames as the codec's, ids in hex (for `decodeClientAll`). */
function holdFramesOf(bytes: Uint8Array): ClientFrame[] | undefined {
  return readHeld(bytes)?.map(clientFrameOf)
}

function clientFrameOf(frame: HeldFrame): ClientFrame {
  const { w0, w1, w2, w3, ...rest } = frame
  const hex = hexOfWords(w0, w1, w2, w3)
  return rest.type === 'hold' ? { ...rest, request: hex } : { id: rest.id, type: rest.type, lease: hex }
}

/**
 * The frames of a message (one, or a batch of type `batch`) when `read` reads every one of them,
 * else `undefined`; a batch is read as the codec's `batch_of` reads it (id 0, each frame after its
 * `u16` length, at least one).
 */
function readAll<F>(bytes: Uint8Array, batch: number, max: number, read: (bytes: Uint8Array, at: number, end: number) => F | undefined): F[] | undefined {
  const length = bytes.length
  if (length > max || length < 6 || bytes[0] !== WIRE_VERSION) return undefined
  if (bytes[1] !== batch) {
    const frame = read(bytes, 0, length)
    return frame === undefined ? undefined : [frame]
  }
  if (u32At(bytes, 2) !== 0) return undefined
  const frames: F[] = []
  let at = 6
  while (at < length) {
    if (at + 2 > length) return undefined
    const size = u16At(bytes, at)
    at += 2
    if (at + size > length) return undefined
    const frame = read(bytes, at, at + size)
    if (frame === undefined) return undefined
    frames.push(frame)
    at += size
  }
  return frames.length === 0 ? undefined : frames
}

// Read by hand rather than through a `DataView`: one made for each message cost more (about 60 ns
// on Node 24) than all the reads of a hold's frames through it.
/** The little-endian `u16` at `bytes[at]`. */
function u16At(bytes: Uint8Array, at: number): number {
  return bytes[at]! | (bytes[at + 1]! << 8)
}

/** The little-endian `u32` at `bytes[at]`. */
function u32At(bytes: Uint8Array, at: number): number {
  return (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0
}

/** The frame in `bytes[at, end)` when it is a `hold`, `release` or `renew` this reads, else `undefined`. */
function heldFrameAt(bytes: Uint8Array, at: number, end: number): HeldFrame | undefined {
  if (end - at < 6 || bytes[at] !== WIRE_VERSION) return undefined
  const type = bytes[at + 1]
  const id = u32At(bytes, at + 2)
  if (type === T_RELEASE || type === T_RENEW) {
    if (end - at !== ID_FRAME_SIZE) return undefined
    const w = at + 6
    return {
      id,
      type: type === T_RELEASE ? 'release' : 'renew',
      w0: u32At(bytes, w + 12),
      w1: u32At(bytes, w + 8),
      w2: u32At(bytes, w + 4),
      w3: u32At(bytes, w),
    }
  }
  if (type !== T_HOLD || end - at < 11) return undefined
  const semaphore = bytes[at + 6]!
  if (semaphore > 1) return undefined
  const limit = u32At(bytes, at + 7)
  const nameAt = at + 13
  if (nameAt > end) return undefined
  const nameLength = u16At(bytes, at + 11)
  const keyLengthAt = nameAt + nameLength
  if (nameLength > MAX_NAME_WIRE || keyLengthAt + 2 > end) return undefined
  const keyLength = u16At(bytes, keyLengthAt)
  const keyAt = keyLengthAt + 2
  const rest = keyAt + keyLength
  if (keyLength > MAX_KEY || rest + 36 !== end) return undefined
  const name = recent.read(bytes, nameAt, keyLengthAt)
  const key = recent.read(bytes, keyAt, rest)
  if (name === undefined || key === undefined) return undefined
  const forever = u32At(bytes, rest + 12) === 0xffff_ffff && u32At(bytes, rest + 16) === 0xffff_ffff
  return {
    id,
    type: 'hold',
    semaphore: semaphore === 1,
    limit,
    name,
    key,
    ttl: u32At(bytes, rest),
    maxHold: u64At(bytes, rest + 4),
    wait: forever ? null : u64At(bytes, rest + 12),
    // The request id, a u128 little-endian: its most significant word last.
    w0: u32At(bytes, rest + 32),
    w1: u32At(bytes, rest + 28),
    w2: u32At(bytes, rest + 24),
    w3: u32At(bytes, rest + 20),
  }
}

/**
 * The `u64` (little-endian) at `at` as a number, rounded to the nearest (ties to even) past 2^53 as
 * the codec's `as f64` rounds it: the product is exact, and the sum is rounded once.
 */
function u64At(bytes: Uint8Array, at: number): number {
  return u32At(bytes, at + 4) * 0x1_0000_0000 + u32At(bytes, at)
}

/**
 * Names and keys read lately, with their bytes: a frame that names one of them gets the same string,
 * made and hashed once (most holds name the name of the hold before, and keys come back: R3 of the
 * benchmark holds 100 keys in turn), for the cost of hashing and comparing its bytes. A string kept
 * is a flat one whose hash V8 already computed, so the store's lookups by key do not compute it again.
 *
 * Direct-mapped: a name or key goes in the slot its bytes hash to, in place of whatever was there, so
 * the table never holds more than `SLOTS` strings of at most `MAX_NAME_WIRE` bytes, and bytes that
 * collide (by chance or on purpose) only cost a string made anew, as every one was before.
 */
class RecentStrings {
  readonly #texts: (string | undefined)[] = new Array<string | undefined>(SLOTS).fill(undefined)
  readonly #bytes: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(SLOTS).fill(undefined)

  read(bytes: Uint8Array, from: number, to: number): string | undefined {
    const n = to - from
    // A long one is rarely named twice, and copying it costs.
    if (n > MAX_NAME_WIRE) return asciiOf(bytes, from, to)
    let h = n
    for (let i = from; i < to; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193)
    const slot = (h ^ (h >>> 15)) & (SLOTS - 1)
    const kept = this.#bytes[slot]
    if (kept !== undefined && kept.length === n) {
      let i = 0
      while (i < n && bytes[from + i] === kept[i]) i++
      if (i === n) return this.#texts[slot]
    }
    const text = asciiOf(bytes, from, to)
    if (text !== undefined) {
      this.#texts[slot] = text
      // A copy: a Buffer's slice would be a view of the message, keeping all of it.
      this.#bytes[slot] = new Uint8Array(bytes.subarray(from, to))
    }
    return text
  }
}
/** The slots of `RecentStrings` (a power of two). */
const SLOTS = 1024
const recent = new RecentStrings()

/** Strings this long or shorter are made a character at a time (see `asciiOf`). */
const SHORT = 12
const ascii = new TextDecoder()

/**
 * `bytes[from, to)` as a string when every byte is ASCII (valid UTF-8 as it is), else `undefined`.
 * A short one (most names and keys) is joined a character at a time: V8 keeps a string of up to 12
 * characters flat when it grows, and this cost half of `String.fromCharCode.apply` over a subarray
 * (Node 24, Bun); a longer one is decoded by the platform, which is then the cheaper.
 */
function asciiOf(bytes: Uint8Array, from: number, to: number): string | undefined {
  if (to - from <= SHORT) {
    let s = ''
    for (let i = from; i < to; i++) {
      const c = bytes[i]!
      if (c >= 0x80) return undefined
      s += String.fromCharCode(c)
    }
    return s
  }
  for (let i = from; i < to; i++) if (bytes[i]! >= 0x80) return undefined
  return ascii.decode(bytes.subarray(from, to))
}

/**
 * A message of `granted` frames (every hold's answer), one or a batch, read here as the codec reads
 * them; or `undefined` for the codec to decode (another frame among them, a bad one): what it refuses
 * stays refused as before.
 */
function grantedOf(bytes: Uint8Array): ServerFrame[] | undefined {
  return readAll(bytes, BATCH_SERVER, MAX_SERVER_FRAME, grantedAt)
}

/** The frame in `bytes[at, end)` when it is a `granted`, else `undefined`. */
function grantedAt(bytes: Uint8Array, at: number, end: number): ServerFrame | undefined {
  if (grantedStart(bytes, at, end) === undefined) return undefined
  return {
    id: u32At(bytes, at + 2),
    type: 'granted',
    request: hexOf(bytes, at + 6),
    lease: hexOf(bytes, at + 22),
    fence: u64At(bytes, at + 38),
    ttl: u32At(bytes, at + 46),
    revokeIn: u64At(bytes, at + 50),
  }
}

/** `at` when `bytes[at, end)` is a `granted` frame, else `undefined`. */
function grantedStart(bytes: Uint8Array, at: number, end: number): number | undefined {
  return end - at === GRANTED_SIZE && bytes[at] === WIRE_VERSION && bytes[at + 1] === T_GRANTED ? at : undefined
}

/** What a client is told of each `granted` frame: the lease id as four words, most significant first. */
export type OnGranted = (id: number, fence: number, ttl: number, revokeIn: number, l0: number, l1: number, l2: number, l3: number) => void

/**
 * A client's reading of a server's message of `granted` frames only, one or a batch (as
 * `decodeServerAll` reads it first): each frame's fields go to `on`, in order, with no object made
 * and no string (its request id is not read: a client knows its holds by frame id). False, and
 * nothing told, for any other message (for `decodeServerAll`): all of a message is checked first.
 */
export function eachGranted(bytes: Uint8Array, on: OnGranted): boolean {
  const starts = readAll(bytes, BATCH_SERVER, MAX_SERVER_FRAME, grantedStart)
  if (starts === undefined) return false
  for (const at of starts) {
    on(
      u32At(bytes, at + 2),
      u64At(bytes, at + 38),
      u32At(bytes, at + 46),
      u64At(bytes, at + 50),
      i32At(bytes, at + 34),
      i32At(bytes, at + 30),
      i32At(bytes, at + 26),
      i32At(bytes, at + 22),
    )
  }
  return true
}

/** The little-endian `u32` at `bytes[at]`, as a signed 32-bit number (a word of an id). */
function i32At(bytes: Uint8Array, at: number): number {
  return bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)
}

/** The type bytes of a batch (revision 3): a client's and a server's. */
const BATCH_CLIENT = 0x0a
const BATCH_SERVER = 0x8b

/** Whether a message is a batch (its type byte; it may still not decode). */
export function isBatch(bytes: Uint8Array): boolean {
  return bytes[1] === BATCH_CLIENT || bytes[1] === BATCH_SERVER
}

/**
 * One batch (revision 3) carrying `frames` (each encoded alone, at most `BATCHED_FRAME` bytes), sent
 * by a server when `server`: the header (version 1, the batch type, id 0), then each frame after its
 * length as a little-endian `u16`.
 */
export function batchOf(frames: readonly Uint8Array[], server: boolean): Uint8Array {
  let size = 6
  for (const f of frames) size += 2 + f.length
  const out = bytesOf(size)
  out[0] = 1
  out[1] = server ? BATCH_SERVER : BATCH_CLIENT
  let at = 6
  for (const f of frames) {
    out[at] = f.length & 0xff
    out[at + 1] = f.length >>> 8
    out.set(f, at + 2)
    at += 2 + f.length
  }
  return out
}

/**
 * `size` new bytes, zeroed: a batch (and any frame past 64 bytes) is made here. On V8 a typed array
 * of more than 64 bytes is not in the heap: each one made costs a backing store of its own (a
 * malloc, and its accounting and sweeping by the garbage collector), about 300 ns against 70 ns for
 * a view of a larger block (Node 24: a batch of a release and a hold, every hold of R1's client). So
 * one is cut from `SLAB` bytes made at once, front to back, never handed out twice; the block is
 * freed once no view of it is left. A view shows only its own bytes to whoever sends it (every
 * transport sends a view as its bytes: `byteOffset`, `byteLength`). On JavaScriptCore (Bun) a typed
 * array of any size is made as cheaply as a view (about 45 ns against 75), so it is made whole there.
 */
function bytesOf(size: number): Uint8Array {
  if (size <= IN_HEAP || WHOLE || size > SLAB / 8) return new Uint8Array(size)
  if (slabAt + size > slab.length) {
    slab = new Uint8Array(SLAB)
    slabAt = 0
  }
  const bytes = slab.subarray(slabAt, slabAt + size)
  slabAt += size
  return bytes
}
/** The first `size` bytes written to `out`, as a frame of their own (see `bytesOf`). */
function cut(size: number): Uint8Array {
  if (size <= IN_HEAP || WHOLE) return out.slice(0, size)
  const bytes = bytesOf(size)
  bytes.set(out.subarray(0, size))
  return bytes
}
/** V8's largest typed array kept in its heap; the block views are cut from; whether to make arrays whole (see `bytesOf`). */
const IN_HEAP = 64
const SLAB = 16 * 1024
const WHOLE = typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined'
let slab = new Uint8Array(0)
let slabAt = 0
