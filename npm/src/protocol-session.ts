/**
 * The server's side of the wire protocol (`crate/PROTOCOL.md`), whatever carries the frames: one
 * `Session` per connection, and `Protocol`, which decodes a connection's frames and acts on its store.
 * `store.serve()` (server.ts) feeds it from its listener's sockets; `HoldfastObject` (cloudflare/
 * object.ts) from hibernatable WebSockets, with hooks that keep each lease in durable storage.
 *
 * Invariants:
 * - Nothing reaches the store before a good `hello`: the first frame must be `hello` with the token,
 *   compared in constant time; anything else is answered `error` `permission` and the connection closed
 *   (4401). A frame that does not decode is answered `protocol` and closed (4400).
 * - Every lease a session is granted, renews or ends passes through the hooks (`granted`, `renewed`,
 *   `ended`), so that a host that keeps leases never misses one; `granted` answers the fence to tell.
 * - A session ends once: `goodbye` ends its leases and waiting holds at once; a dropped connection
 *   (`dropped`) ends only its waiting holds, which keep their place for their ttl, while its leases
 *   live until their ttl (LOCK-05).
 * - A host that can lose the engine's memory while a connection stays open (a Durable Object that
 *   hibernates) learns through `waiting` when a session starts or stops having holds in line, since
 *   those are not kept anywhere else.
 */

import { InvalidError, type ErrorCode } from './errors.js'
import type { Lock } from './lock.js'
import { RemoteRequest, type RemoteSink } from './remote-request.js'
import { randomId } from './random.js'
import type { Store } from './store.js'
import type { Socket } from './transport.js'
import { decodeClient, encodeServer, type ClientFrame, type ServerMessage } from './wire.js'

/** The largest frame a server accepts. */
export const MAX_FRAME = 64 * 1024

/** Close codes: a refused token or hello; a frame that breaks the protocol (or any other refusal). */
export const CLOSE_PERMISSION = 4401
export const CLOSE_PROTOCOL = 4400

const encoder = new TextEncoder()

/** Compares tokens in constant time (for their length): no early exit on the first difference. */
export function sameToken(given: string, expected: Uint8Array): boolean {
  const a = encoder.encode(given)
  let diff = a.length ^ expected.length
  for (let i = 0; i < expected.length; i++) diff |= (a[i] ?? 0) ^ expected[i]!
  return diff === 0
}

/** What a host learns of its sessions' leases; every hook is optional. */
export interface SessionHooks {
  /** A hold was granted (or granted again to a request asked again): answers the fence its holder is told. */
  granted?(record: RemoteRequest, fence: number): number
  /** A lease was renewed for `ttl` ms from now. */
  renewed?(lease: string, ttl: number): void
  /** A lease ended (released, cancelled, lost, or found lost at a renewal). */
  ended?(lease: string): void
  /** A session said hello with the right token. */
  welcomed?(session: Session): void
  /** A session started (`true`) or stopped (`false`) having holds in line. */
  waiting?(session: Session, waiting: boolean): void
  /** A session ended (goodbye, or its connection dropped), after the store ended what it ends. */
  closed?(session: Session, goodbye: boolean): void
}

/** One client's connection. */
export class Session implements RemoteSink {
  authed = false
  ended = false
  /** Request ids of this session's holds that wait in line. */
  readonly #waiting = new Set<string>()

  constructor(
    /** The connection's number in the engine (u32). */
    readonly conn: number,
    readonly socket: Socket,
    readonly protocol: Protocol,
  ) {}

  get waiting(): boolean {
    return this.#waiting.size > 0
  }

  send(frame: number, message: ServerMessage): void {
    this.socket.send(encodeServer(frame, message))
  }

  granted(record: RemoteRequest, fence: number, revokeIn: number): void {
    if (record.sink !== this) return
    this._leftLine(record.request)
    const told = this.protocol.hooks.granted?.(record, fence) ?? fence
    this.send(record.frame, { type: 'granted', request: record.request, lease: record.lease, fence: told, ttl: record.ttl, revokeIn })
  }

  busy(record: RemoteRequest): void {
    this._leftLine(record.request)
    this.send(record.frame, { type: 'busy' })
  }

  failed(record: RemoteRequest, code: ErrorCode, message: string): void {
    this._leftLine(record.request)
    this.send(record.frame, { type: 'error', code, message })
  }

  lost(record: RemoteRequest, code: 'lost' | 'closed'): void {
    this.protocol.hooks.ended?.(record.lease)
    this.send(0, { type: 'lost', lease: record.lease, code })
  }

  /** Refuses and disconnects a misbehaving client. */
  refuse(frame: number, code: ErrorCode | 'protocol', message: string): void {
    this.send(frame, { type: 'error', code, message })
    this.socket.close(code === 'permission' ? CLOSE_PERMISSION : CLOSE_PROTOCOL, message.slice(0, 120))
  }

  /** @internal A hold of this session went into line. */
  _wait(request: string): void {
    const was = this.waiting
    this.#waiting.add(request)
    if (!was) this.protocol.hooks.waiting?.(this, true)
  }

  /** @internal A hold of this session is no longer in line here: answered, or asked again on another connection. */
  _leftLine(request: string): void {
    if (this.#waiting.delete(request) && !this.waiting) this.protocol.hooks.waiting?.(this, false)
  }
}

/** Answers the first frame of a connection that is refused before hello (at a limit, or closing). */
export function refuseHello(session: Session, bytes: Uint8Array, code: ErrorCode, message: string): void {
  let id = 0
  try {
    id = decodeClient(bytes).id
  } catch {
    // a bad frame: refused all the same
  }
  session.refuse(id, code, message)
}

/** The protocol over one store: decodes each session's frames and acts on the store. */
export class Protocol {
  readonly #store: () => Store
  readonly #token: Uint8Array | undefined
  readonly hooks: SessionHooks

  /**
   * `store`: the store (a function, for hosts that reopen theirs). `token`: what hello must present;
   * `undefined` refuses every hello (the host has none configured), with `unset` as the reason.
   */
  constructor(store: () => Store, token: string | undefined, hooks: SessionHooks = {}, readonly unset = 'server: no token is configured') {
    this.#store = store
    this.#token = token === undefined ? undefined : encoder.encode(token)
    this.hooks = hooks
  }

  /** A frame from `session`'s connection. */
  frame(session: Session, bytes: Uint8Array): void {
    if (session.ended) return
    let frame: ClientFrame
    try {
      frame = decodeClient(bytes)
    } catch (error) {
      return session.refuse(0, 'protocol', String((error as Error).message))
    }
    if (!session.authed) {
      if (this.#token === undefined) return session.refuse(frame.id, 'closed', this.unset)
      if (frame.type !== 'hello' || !sameToken(frame.token, this.#token)) {
        return session.refuse(frame.id, 'permission', 'server: token refused')
      }
      session.authed = true
      this.hooks.welcomed?.(session)
      return session.send(frame.id, { type: 'welcome', maxFrame: MAX_FRAME, connectionLimit: 0 })
    }
    try {
      this.#dispatch(session, frame)
    } catch (error) {
      const e = error as { code?: unknown; message?: unknown }
      const code = typeof e?.code === 'string' ? (e.code as ErrorCode) : 'closed'
      session.send(frame.id, { type: 'error', code, message: String(e?.message ?? error) })
    }
  }

  /** `session`'s connection ended without goodbye: its waiting holds step aside, its leases live on. */
  dropped(session: Session): void {
    this.#end(session, false)
  }

  #end(session: Session, goodbye: boolean): void {
    if (session.ended) return
    session.ended = true
    try {
      this.#store()._connectionEnded(session.conn, goodbye)
    } catch {
      // the store closed
    }
    this.hooks.closed?.(session, goodbye)
  }

  #dispatch(session: Session, frame: ClientFrame): void {
    const store = this.#store()
    const hooks = this.hooks
    switch (frame.type) {
      case 'hold': {
        const name = frame.name
        const key = frame.key
        const kind = frame.semaphore ? 'semaphore' : 'lock'
        if (key.length === 0) throw new InvalidError(`${kind} ${name}: key "" must be 1 to 1024 bytes`)
        const handle = this.handle(kind, name, frame.limit)
        const request = frame.request
        const record = new RemoteRequest(kind, name, key, request, randomId(), frame.ttl, frame.maxHold, session.conn, frame.id, session, handle._resource.limit)
        const wait = frame.wait ?? Infinity
        // Asked again on this connection while the one it was asked on is still open: it moves here.
        const earlier = store._remoteRequest(request)
        if (earlier && earlier.sink instanceof Session && earlier.sink !== session) earlier.sink._leftLine(request)
        store._remoteHold(handle, record, wait)
        store._letGo(handle)
        // Still in line (new, or asked again and back in its place): the session has a hold waiting.
        const live = store._remoteRequest(request)
        if (live && live.sink === session && !live.holding) session._wait(request)
        return
      }
      case 'renew': {
        const lease = frame.lease
        const renewed = store._renew(lease)
        if (renewed) {
          hooks.renewed?.(lease, renewed.ttl)
          return session.send(frame.id, { type: 'renewed', ttl: renewed.ttl, revokeIn: Math.max(0, renewed.revokeIn) })
        }
        hooks.ended?.(lease)
        return session.send(frame.id, { type: 'error', code: 'lost', message: 'lease lost: past its ttl, revoked, released, or never granted' })
      }
      case 'release': {
        const lease = frame.lease
        const record = store._remoteLease(lease)
        if (record) store._endRemote(record)
        hooks.ended?.(lease)
        // Id 0 asks for no answer: a hold's release need not cost a second frame.
        if (frame.id !== 0) session.send(frame.id, { type: 'done' })
        return
      }
      case 'cancel': {
        const record = store._remoteRequest(frame.request)
        if (record) {
          const waiting = !record.holding
          store._endRemote(record)
          if (waiting) record.sink.failed(record, 'cancelled', `${record.place()}: cancelled while waiting`)
          else hooks.ended?.(record.lease)
        }
        return session.send(frame.id, { type: 'done' })
      }
      case 'inspect': {
        const entries = store.inspect().map(k => ({ kind: k.kind, name: k.name, key: k.key, holders: k.holders, waiting: k.waiting }))
        return session.send(frame.id, { type: 'inspected', entries })
      }
      case 'goodbye': {
        this.#end(session, true)
        session.send(frame.id, { type: 'done' })
        return session.socket.close(1000, 'goodbye')
      }
      case 'hello':
        return session.send(frame.id, { type: 'welcome', maxFrame: MAX_FRAME, connectionLimit: 0 })
    }
  }

  /**
   * A handle of the current store for one hold (it checks the name, and a semaphore's limit). None is
   * kept: a name only clients use costs nothing once idle (the store forgets it at `_letGo`, or when
   * the hold leaves it idle).
   */
  handle(kind: 'lock' | 'semaphore', name: string, limit: number): Lock {
    return this.#store()._serverHandle(kind, name, limit)
  }
}
