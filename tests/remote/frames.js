// The wire protocol, written again in plain JavaScript from its description (crate/engine/src/wire),
// so that tests can speak to a server as a client in another language would, and send what no
// well-behaved client sends. Integers little-endian; a string is a u16 byte length and UTF-8; an id
// is 16 raw bytes; every frame starts with version (1), type, and a u32 correlation id.
import { randomBytes } from 'node:crypto'

export const CLIENT = { hello: 0x01, hold: 0x02, renew: 0x03, release: 0x04, cancel: 0x05, inspect: 0x06, goodbye: 0x07, inspectPage: 0x08, hello3: 0x09, batch: 0x0a, claim: 0x0b, pool: 0x0c, inspectPools: 0x0d, ping: 0x0e, inspectPoolsPage: 0x0f }
const SERVER = { 0x81: 'welcome', 0x82: 'granted', 0x83: 'busy', 0x84: 'renewed', 0x85: 'done', 0x86: 'error', 0x87: 'inspected', 0x88: 'lost', 0x89: 'inspectedPage', 0x8a: 'welcome', 0x8b: 'batch', 0x8c: 'claimed', 0x8d: 'count', 0x8e: 'pools', 0x8f: 'poolsPage' }
const CODES = [undefined, 'in_use', 'lost', 'closed', 'invalid', 'limit', 'cancelled', 'storage', 'permission', 'protocol']

class Writer {
  parts = []
  u8(v) { this.parts.push(Buffer.from([v])); return this }
  u32(v) { const b = Buffer.alloc(4); b.writeUInt32LE(v); this.parts.push(b); return this }
  u64(v) { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); this.parts.push(b); return this }
  id(v) { if (v.length !== 16) throw new Error('an id is 16 bytes'); this.parts.push(Buffer.from(v)); return this }
  str(s) { const b = Buffer.from(s, 'utf8'); this.u16(b.length); this.parts.push(b); return this }
  u16(v) { const b = Buffer.alloc(2); b.writeUInt16LE(v); this.parts.push(b); return this }
  bytes() { return Buffer.concat(this.parts) }
}

export const newId = () => randomBytes(16)

function header(type, id) {
  return new Writer().u8(1).u8(type).u32(id)
}

export const encode = {
  hello: (id, token, client = 'raw-test') => header(CLIENT.hello, id).str(token).str(client).bytes(),
  /** The hello of revision 3 or later, which says the revision (an old server cannot read it). */
  hello3: (id, token, revision = 3, client = 'raw-test') => header(CLIENT.hello3, id).u8(revision).str(token).str(client).bytes(),
  /** A batch (revision 3): the frames, each after its length as a u16. */
  batch: frames => {
    const w = header(CLIENT.batch, 0)
    for (const f of frames) w.u16(f.length).parts.push(Buffer.from(f))
    return w.bytes()
  },
  hold: (id, { semaphore = false, limit = 0, name, key, ttl = 30_000, maxHold = 0, wait = 2n ** 64n - 1n, request = newId() }) =>
    header(CLIENT.hold, id).u8(semaphore ? 1 : 0).u32(limit).str(name).str(key).u32(ttl).u64(maxHold).u64(wait).id(request).bytes(),
  renew: (id, lease) => header(CLIENT.renew, id).id(lease).bytes(),
  release: (id, lease) => header(CLIENT.release, id).id(lease).bytes(),
  cancel: (id, request) => header(CLIENT.cancel, id).id(request).bytes(),
  inspect: id => header(CLIENT.inspect, id).bytes(),
  inspectPage: (id, { semaphore = false, name = '', key = '' } = {}) => header(CLIENT.inspectPage, id).u8(semaphore ? 1 : 0).str(name).str(key).bytes(),
  goodbye: id => header(CLIENT.goodbye, id).bytes(),
  // Revision 4: pools.
  claim: (id, { pool, capacity = 0, n, claim, wait = 0, ttl = 0 }) =>
    header(CLIENT.claim, id).str(pool).u64(capacity).u64(n).str(claim).u64(wait).u64(ttl).bytes(),
  pool: (id, { op, pool, capacity = 0, claim = '', value = 0 }) =>
    header(CLIENT.pool, id).u8({ release: 1, confirm: 2, remaining: 3, resize: 4, cancel: 5, withdraw: 6 }[op]).str(pool).u64(capacity).str(claim).u64(value).bytes(),
  inspectPools: id => header(CLIENT.inspectPools, id).bytes(),
  // Revision 5: the client's heartbeat.
  ping: id => header(CLIENT.ping, id).bytes(),
  // Revision 8: the pools page by page, after the name of the last of the page before ('': the first).
  inspectPoolsPage: (id, after = '') => header(CLIENT.inspectPoolsPage, id).str(after).bytes(),
}

/** A server's frames (for a fake server of an older revision, or a wrong one): `welcome` (of `revision` 3 or more: the new one), an empty `inspected`, an empty `inspected page` or `pools page`, `error`, `done`, `count`, `pools` (of `{ name, capacity, remaining, claims, waiting }`). */
export const encodeServer = {
  welcome: (id, revision = 2, maxFrame = 65_536, connectionLimit = 0) =>
    revision >= 3
      ? new Writer().u8(1).u8(0x8a).u32(id).u8(revision).u32(maxFrame).u32(connectionLimit).bytes()
      : new Writer().u8(1).u8(0x81).u32(id).u32(maxFrame).u32(connectionLimit).bytes(),
  inspectedNone: id => new Writer().u8(1).u8(0x87).u32(id).u32(0).bytes(),
  error: (id, code, message) => new Writer().u8(1).u8(0x86).u32(id).u8(code).str(message).bytes(),
  done: id => new Writer().u8(1).u8(0x85).u32(id).bytes(),
  count: (id, value) => new Writer().u8(1).u8(0x8d).u32(id).u64(value).bytes(),
  /** An `inspected page` with no entries: `more` set or not (a wrong server sends it set). */
  inspectedPageNone: (id, more) => new Writer().u8(1).u8(0x89).u32(id).u8(more ? 1 : 0).u32(0).bytes(),
  /** A `pools page` with no pools: `more` set or not (a wrong server sends it set). */
  poolsPageNone: (id, more) => new Writer().u8(1).u8(0x8f).u32(id).u8(more ? 1 : 0).u32(0).bytes(),
  pools: (id, pools) => {
    const w = new Writer().u8(1).u8(0x8e).u32(id).u32(pools.length)
    for (const p of pools) w.str(p.name).u64(p.capacity).u64(p.remaining).u32(p.claims).u32(p.waiting)
    return w.bytes()
  },
}

/** Decodes a server's frame into `{ id, type, ... }` (enough of it for the tests). */
export function decodeServer(buf) {
  const b = Buffer.from(buf)
  let at = 0
  const u8 = () => b[at++]
  const u32 = () => ((at += 4), b.readUInt32LE(at - 4))
  const u64 = () => ((at += 8), Number(b.readBigUInt64LE(at - 8)))
  const id = () => ((at += 16), b.subarray(at - 16, at))
  const str = () => {
    const n = b.readUInt16LE(at)
    at += 2 + n
    return b.subarray(at - n, at).toString('utf8')
  }
  const pools = () => Array.from({ length: u32() }, () => ({ name: str(), capacity: u64(), remaining: u64(), claims: u32(), waiting: u32() }))
  if (u8() !== 1) throw new Error('not version 1')
  const kind = u8()
  const type = SERVER[kind]
  const frame = { id: u32(), type, bytes: b.length }
  switch (type) {
    case 'welcome': frame.revision = kind === 0x8a ? u8() : 2; frame.maxFrame = u32(); frame.connectionLimit = u32(); break
    case 'granted': frame.request = id(); frame.lease = id(); frame.fence = u64(); frame.ttl = u32(); frame.revokeIn = u64(); break
    case 'renewed': frame.ttl = u32(); frame.revokeIn = u64(); break
    case 'error': frame.code = CODES[u8()]; frame.message = str(); break
    case 'lost': frame.lease = id(); frame.code = CODES[u8()]; break
    case 'inspected': frame.count = u32(); break
    case 'inspectedPage': frame.more = u8() === 1; frame.count = u32(); break
    case 'claimed': frame.claimed = u8() === 1; frame.remaining = u64(); break
    case 'count': frame.value = u64(); break
    case 'pools': frame.pools = pools(); frame.count = frame.pools.length; break
    case 'poolsPage': frame.more = u8() === 1; frame.pools = pools(); frame.count = frame.pools.length; break
    case 'batch':
      frame.frames = []
      while (at < b.length) {
        const n = b.readUInt16LE(at)
        frame.frames.push(decodeServer(b.subarray(at + 2, at + 2 + n)))
        at += 2 + n
      }
      break
  }
  return frame
}

/** The frames a server's message carries: itself, or a batch's (revision 3). */
export function framesOf(buf) {
  const frame = decodeServer(buf)
  return frame.type === 'batch' ? frame.frames : [frame]
}

/** A client's WebSocket frame of `payload`, masked with a zero key (which RFC 6455 lets a test choose). */
export function masked(payload) {
  const len = payload.length
  const head = len > 125 ? Buffer.from([0x82, 0x80 | 126, len >> 8, len & 0xff, 0, 0, 0, 0]) : Buffer.from([0x82, 0x80 | len, 0, 0, 0, 0])
  return Buffer.concat([head, payload])
}

/**
 * Reads WebSocket frames out of one direction of a connection's bytes, as they are on the wire
 * (RFC 6455 §5.2): the HTTP head first (handed to `onHead` as text), then `onFrame({ fin, rsv, opcode,
 * masked, key, payload })` per frame, its payload unmasked. Returns the function to feed chunks to.
 */
export function wsStream(onFrame, onHead = () => {}) {
  let buf = Buffer.alloc(0)
  let upgraded = false
  return chunk => {
    buf = Buffer.concat([buf, chunk])
    if (!upgraded) {
      const end = buf.indexOf('\r\n\r\n')
      if (end < 0) return
      onHead(buf.subarray(0, end).toString())
      buf = buf.subarray(end + 4)
      upgraded = true
    }
    for (;;) {
      if (buf.length < 2) return
      let len = buf[1] & 0x7f
      let at = 2
      if (len === 126) {
        if (buf.length < 4) return
        len = buf.readUInt16BE(2)
        at = 4
      } else if (len === 127) {
        if (buf.length < 10) return
        len = Number(buf.readBigUInt64BE(2))
        at = 10
      }
      const masked = (buf[1] & 0x80) !== 0
      const key = masked ? Buffer.from(buf.subarray(at, at + 4)) : undefined
      if (masked) at += 4
      if (buf.length < at + len) return
      const payload = Buffer.from(buf.subarray(at, at + len))
      if (masked) for (let i = 0; i < len; i++) payload[i] ^= key[i & 3]
      const first = buf[0]
      buf = buf.subarray(at + len)
      onFrame({ fin: (first & 0x80) !== 0, rsv: first & 0x70, opcode: first & 0x0f, masked, key, payload })
    }
  }
}
