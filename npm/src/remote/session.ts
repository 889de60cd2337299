/**
 * The server's side of the wire protocol (`docs/protocol.md`), whatever carries the frames: one
 * `Session` per connection, and `Protocol`, which decodes a connection's frames and acts on its store.
 * `store.serve()` (server.ts) feeds it from its listener's sockets; `HoldfastObject` (cloudflare/
 * object.ts) from hibernatable WebSockets, with hooks that keep each lease in durable storage.
 *
 * Invariants:
 * - Nothing reaches the store before a good `hello`: the first frame must be `hello` with the token,
 *   compared in constant time; anything else is answered `error` `permission` and the connection closed
 *   (4401). A frame that does not decode, a text message (`text`), or a second `hello`, is answered
 *   `protocol` and closed (4400), and nothing the connection sends after it acts;
 *   a refusal at a limit closes with 4429.
 * - No inspection frame is larger than `maxAnswer` (inspect-pages.ts): a larger `inspect` is refused
 *   `limit`, naming its size, and a client of revision 2 asks page by page instead. Likewise a larger
 *   `inspectPools`, naming the count of pools: a client of revision 8 (`POOL_PAGES`) asks their
 *   pages instead, which a client of an older revision never sent (refused `protocol`, as a pool frame
 *   from a client older than pools).
 * - The conversation's revision is the lower of the two sides' (`Session.revision`: 2 for a client
 *   that said the old hello). Only when it is 3 or more are batches taken and sent: a batch from a
 *   client that did not say revision 3 is refused `protocol`, and frames to it go one a message. A
 *   message is decoded whole before any frame of it is acted on: a bad frame in a batch refuses it all.
 * - Every lease a session is granted, renews or ends passes through the hooks (`granted`, `renewed`,
 *   `ended`), so that a host that keeps leases never misses one; `granted` answers the fence to tell,
 *   or a promise of it when the host must keep the lease first: the grant is sent once it resolves,
 *   and an error frame in its place if it rejects (the host let the lease go).
 * - A host that keeps leases forgets one before its client's release lets it go (`releasing`: a
 *   `release`, or a `cancel` of a granted hold): the key is let go and the frame answered once that
 *   resolved; if it rejects, nothing is let go, the lease stays held (until its ttl, unless asked
 *   again) and the frame is answered the error (a release of id 0, as `connect()` sends, is answered
 *   nothing either way). Meanwhile the session's later frames, of the same message or later ones,
 *   wait (`Session.queue`): they act after the release, in the order sent, as they would at once.
 *   A `goodbye` likewise (`leaving`): the leases the host forgot are let go; if it failed to forget
 *   one, the session ends as a dropped connection, which leaves that lease to its ttl.
 * - A session ends once: `goodbye` ends its leases and waiting holds at once (its `done`, and the
 *   close, wait for the answers of its pool frames other than claims asked before it: `Session.owe`);
 *   a dropped connection (`dropped`) ends only its waiting holds, which keep their place for their
 *   ttl, while its leases live until their ttl (LOCK-05). Frames that wait behind a release
 *   (`Session.queue`) when the connection drops and let go (a release, a cancel, a goodbye, a pool
 *   release or withdraw) still act once it is done, answered nothing: a goodbye there ends the
 *   leases all the same.
 * - A host that can lose the engine's memory while a connection stays open (a Durable Object that
 *   hibernates) learns through `waiting` when a session starts or stops having holds in line, since
 *   those are not kept anywhere else.
 * - Pools (revision 4): only a conversation of revision 4 or more (`POOLS`) carries pool frames; a
 *   client of an older revision never sent one, so one from it is refused `protocol`, and it is never
 *   sent a pool answer. A claim is answered when the store answers it (once storage kept it); claims
 *   of a connection still unanswered when it ends are cancelled — a claim that took its units is
 *   undone as if it never was — so that its client, asking again with the same claim id after
 *   reconnecting, gets either the claim it was answered or a new one, never units it was not told of.
 *   A client of revision 5 or older releases a claim whose `claimed` answer crossed its cancel: such
 *   a release is read as its withdraw (crossed-releases.ts). From revision 7 each `claimed` answer is
 *   kept as told to its frame id, which the client's withdraw names: it takes back that answer alone.
 *   A withdraw answered `storage` (its write failed), asked again by its party, is answered `storage`
 *   while the pools' next write is owed, 1 once it landed (unkept-withdraws.ts).
 *   A pool frame's answer is counted until sent (`answered`): a store that closes sends those its last
 *   writes gave before it closes the connections.
 * - A party's connections (revision 6: a hello naming its party, `partyOf`) are one client's, which
 *   has one connection at a time: its newest (the one accepted last, by connection number) supersedes
 *   the others, which end as dropped connections (`dropped`: their waiting holds step aside, their
 *   unanswered claims are cancelled, their leases live on, for the new one to ask again and renew)
 *   and are closed (`CLOSE_SUPERSEDED`) — at the newer hello, before any frame of the new connection
 *   acts. So a connection the client gave up but the server still holds open (half-open: cut on the
 *   client's side only) never answers a claim there after the client, reconnected, withdrew that
 *   claim's frame on the new one: the claim is cancelled instead. An older connection's hello read
 *   after the newer one's (it was delayed) is superseded at once. A host that takes back its sessions
 *   (a Durable Object woken up) tells each (`resumed`), and the same rule applies. A host at its
 *   limit of connections (`serve()`'s `maxConnections`, the Durable Object's WebSocket clients) still
 *   admits a hello of a party that has a live connection (`admits`, from its `admit` hook): one of the
 *   two is superseded at once, so the half-open connection gives its place to its client's new one
 *   rather than keep it out, and the count is back at the limit before anything else runs.
 * - A `ping` (revision 5, the client's heartbeat) is answered `done` at once, whatever the client said.
 *   Every message marks its session `heard`: a host (`serve()`, the Durable Object) drops a session of
 *   revision 5 silent for 30 s with a hold in line or a claim awaited (silent-clients.ts).
 */

import { InvalidError, isErrorCode, type ErrorCode } from '../errors.js'
import { CrossedReleases } from './crossed-releases.js'
import { MAX_ANSWER, answerSize, pageAfter, poolsAnswerSize, poolsPageAfter, sizeText } from './inspect-pages.js'
import type { Lock } from '../handle/lock.js'
import type { Party } from '../pool/pool.js'
import { RemoteRequest, type RemoteSink } from './request.js'
import { hexOfId } from '../util/hex.js'
import type { ServedStore } from './host.js'
import type { KeyInfo } from '../types.js'
import type { Socket } from '../runtime/transport.js'
import { UnkeptWithdraws, withdrawKey } from './unkept-withdraws.js'
import {
  BATCHES,
  POOLS,
  HANDED_BACK,
  NAMED_ASKS,
  POOL_PAGES,
  REVISION,
  batchOf,
  decodeClientByCodec,
  encodeGrantedOf,
  encodeServer,
  isBatch,
  readHeld,
  type ClientFrame,
  type HeldFrame,
  type ServerMessage,
  type WireEntry,
} from './wire.js'

/** The largest frame a server accepts. */
export const MAX_FRAME = 64 * 1024

/** Close codes: a refused token or hello; a limit reached; a frame that breaks the protocol (or any other refusal). */
export const CLOSE_PERMISSION = 4401
export const CLOSE_LIMIT = 4429
export const CLOSE_PROTOCOL = 4400
/** Close code of a connection superseded by a newer one of its client (its party: see the module doc). */
export const CLOSE_SUPERSEDED = 4409

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
  /**
   * A hold was granted (or granted again to a request asked again): answers the fence its holder is
   * told, or a promise of it, resolved once the host kept the lease, rejected if it could not (and let
   * the lease go): the grant is answered only then.
   */
  granted?(record: RemoteRequest, fence: number): number | Promise<number>
  /**
   * A lease was renewed for `ttl` ms from now. A promise when the host keeps the renewal first: the
   * renewal is answered once it resolves, an error frame if it rejects (its client asks again).
   */
  renewed?(lease: string, ttl: number): void | Promise<void>
  /** A lease ended (released, cancelled, lost, or found lost at a renewal). */
  ended?(lease: string): void
  /**
   * A lease is to be released by its client (a `release` frame, or a `cancel` of a granted hold): a
   * promise when the host must forget what it kept of it first. The key is let go (and `ended` told)
   * once it resolves; if it rejects, the lease stays held and the frame is answered the error.
   */
  releasing?(lease: string): Promise<void> | undefined
  /**
   * A session says goodbye: a promise when the host must forget what it kept of the session's leases
   * first, resolved with whether it forgot every one. The host lets go those it forgot; if it failed
   * to forget one, the session ends as a dropped connection (that lease lives until its ttl), else
   * as goodbye does.
   */
  leaving?(session: Session): Promise<boolean> | undefined
  /**
   * A session presents the right token (its revision and party read, for `Protocol.admits`): answers
   * why it is refused (a limit reached, the host closing), or nothing to welcome it.
   */
  admit?(session: Session): Refusal | undefined
  /** A session said hello with the right token. */
  welcomed?(session: Session): void
  /** A session started (`true`) or stopped (`false`) having holds in line. */
  waiting?(session: Session, waiting: boolean): void
  /** A session ended (goodbye, or its connection dropped), after the store ended what it ends. */
  closed?(session: Session, goodbye: boolean): void
}

/** Why a host refuses a hello (`SessionHooks.admit`): a limit reached, or the host closing. */
export interface Refusal {
  code: 'limit' | 'closed'
  message: string
}

/** One client's connection. */
export class Session implements RemoteSink {
  authed = false
  ended = false
  /** Refused: its connection is closing, and no frame of its is read any more. */
  closing = false
  /** The revision of the conversation, once welcomed: 2 for a client that said the old hello. */
  revision = 2
  /** A message came since the last sweep for silent clients (silent-clients.ts). */
  heard = true
  /** Sweeps in a row that found nothing heard since the one before. */
  unheard = 0
  /** Request ids of this session's holds that wait in line (kept only when the host listens: `hooks.waiting`). */
  readonly #waiting = new Set<string>()
  /** This session's claims not yet answered, by pool and claim id: aborting one cancels it. */
  readonly claims = new Map<string, ClaimAsks>()
  /** Revision 5 or older: its releases that stand for a withdraw (crossed-releases.ts), once it was answered a claim. */
  crossed: CrossedReleases | undefined
  /** Its client, as the pools tell who was answered a claim: the party its hello named (`partyOf`), else this session. */
  party: Party = this
  /**
   * While a release (or goodbye) of this session waits for its host (`SessionHooks.releasing`,
   * `leaving`): the frames read since, which act once it is answered, in order; `ran` resolves once
   * none is left. A host that reopens its store ends such a session rather than let it drain into the
   * new store beside the session it makes anew for the connection (cloudflare/object.ts `#open`).
   */
  queue: { frames: (ClientFrame | HeldFrame)[]; ran: Promise<void>; done: () => void } | undefined
  /**
   * Its connection ended (`Protocol.dropped`) while frames waited in `queue`: those that let go still
   * act, answered nothing (see `Protocol.dropped`), and nothing more is sent.
   */
  gone = false
  /**
   * Said goodbye and ended, while answers of its pool frames asked before the goodbye are still owed
   * (`owe`): those go out all the same, then the goodbye's `done` (`Protocol.#farewell`).
   */
  leaving = false
  /** How many answers of its pool frames other than claims are under way (`owe`). */
  #owing = 0
  /** Who waits for those to be sent (`owed`). */
  #paid: (() => void)[] = []

  constructor(
    /** The connection's number in the engine (u32). */
    readonly conn: number,
    readonly socket: Socket,
    readonly protocol: Protocol,
  ) {}

  /** Whether a hold of this session waits in line (known only to a host with `hooks.waiting`; else false). */
  get waiting(): boolean {
    return this.#waiting.size > 0
  }

  send(frame: number, message: ServerMessage): void {
    if (this.gone) return
    this.socket.send(encodeServer(frame, message))
  }

  /** Sends an answer that comes later (a claim's): nothing once the connection ended. */
  later(frame: number, message: ServerMessage): void {
    this.#later(() => this.send(frame, message))
  }

  /**
   * An answer of a pool frame other than a claim (a release, confirm, resize, remaining, withdraw) is
   * under way: what it reports is done on the server, or will be, whatever the client does next. Its
   * goodbye answers after it (`owed`), as `store.close()` answers such frames before it resolves; a
   * claim is not owed: the goodbye cancels it. Answers the function to call once it was sent (or failed).
   */
  owe(): () => void {
    this.#owing++
    return () => {
      if (--this.#owing !== 0) return
      const waiting = this.#paid
      this.#paid = []
      for (const resolve of waiting) resolve()
    }
  }

  /** Resolves once no answer it owes (`owe`) is under way; `undefined` when none is. Never rejects. */
  owed(): Promise<void> | undefined {
    if (this.#owing === 0) return undefined
    return new Promise(resolve => this.#paid.push(resolve))
  }

  /** Sends an owed answer (`owe`): once the session ended too, while it is `leaving`. */
  pay(frame: number, message: ServerMessage): void {
    if (!this.leaving) return this.later(frame, message)
    if (this.closing) return
    try {
      this.send(frame, message)
    } catch {
      // the connection went away meanwhile
    }
  }

  #later(send: () => void): void {
    if (this.ended || this.closing) return
    try {
      send()
    } catch {
      // the connection went away meanwhile
    }
  }

  granted(record: RemoteRequest, fence: number, revokeIn: number): void {
    if (record.sink !== this) return
    // (Most sessions have no hold in line kept: see `_leftLine`.)
    if (this.#waiting.size !== 0) this._leftLine(record)
    const told = this.protocol.hooks.granted?.(record, fence) ?? fence
    if (typeof told === 'number') return this.socket.send(encodeGrantedOf(record.frame, record, told, record.ttl, revokeIn))
    // The frame granted now: the same hold asked again later answers its own frame.
    const frame = record.frame
    told.then(
      fence => this.#later(() => this.socket.send(encodeGrantedOf(frame, record, fence, record.ttl, revokeIn))),
      error => this.later(frame, errorMessage(error)),
    )
  }

  busy(record: RemoteRequest): void {
    this._leftLine(record)
    this.send(record.frame, { type: 'busy' })
  }

  failed(record: RemoteRequest, code: ErrorCode, message: string): void {
    this._leftLine(record)
    this.send(record.frame, { type: 'error', code, message })
  }

  lost(record: RemoteRequest, code: 'lost' | 'closed'): void {
    this.protocol.hooks.ended?.(record.lease)
    this.send(0, { type: 'lost', lease: record.lease, code })
  }

  /**
   * Refuses and disconnects a client (with frame id 0 when no frame of its is answered). Past hello,
   * it ends at once as a dropped connection (LOCK-05), as a silent or superseded one does, not when
   * its socket closes: its client reads nothing more, and may take a while to answer the close, or
   * never answer (the transport cuts it after a grace), while a key handed on meanwhile would be
   * granted to its hold in line, for nobody, until the lease's ttl.
   */
  refuse(frame: number, code: ErrorCode | 'protocol', message: string): void {
    if (this.closing) return
    this.closing = true
    this.send(frame, { type: 'error', code, message })
    this.socket.close(code === 'permission' ? CLOSE_PERMISSION : code === 'limit' ? CLOSE_LIMIT : CLOSE_PROTOCOL, message.slice(0, 120))
    // (Frames waiting behind a release act on nothing: it is closing.)
    if (this.authed) this.protocol.dropped(this, false)
  }

  /** @internal A hold of this session went into line. */
  _wait(request: string): void {
    // Kept only for a host that listens: a `Set` gaining and losing an entry a hold costs the
    // garbage collector as a `Map` does (see util/hash-table.ts).
    const hook = this.protocol.hooks.waiting
    if (hook === undefined) return
    const was = this.waiting
    this.#waiting.add(request)
    if (!was) hook(this, true)
  }

  /**
   * @internal Its holds in line leave their lines (a goodbye, before its leases are let go): cancelled
   * in the store, answered nothing (its client is leaving). Known only to a host with `hooks.waiting`.
   */
  _leaveLines(store: ServedStore): void {
    for (const request of [...this.#waiting]) {
      const record = store._remoteRequest(request)
      if (record === undefined || record.holding) continue
      store._endRemote(record)
      this._leftLine(record)
    }
  }

  /** @internal A hold of this session is no longer in line here: answered, or asked again on another connection. */
  _leftLine(record: RemoteRequest): void {
    // Most holds are granted without waiting: nothing to look up then (nor a request id to spell).
    if (this.#waiting.size !== 0 && this.#waiting.delete(record.request) && !this.waiting) this.protocol.hooks.waiting?.(this, false)
  }
}

/** The protocol over one store: decodes each session's frames and acts on the store. */
export class Protocol {
  readonly #store: () => ServedStore
  readonly #token: Uint8Array | undefined
  readonly hooks: SessionHooks
  /** How many answers of pool frames are under way: asked, not yet sent (see `answered`). */
  #answering = 0
  /** Who waits for them all to be sent (`answered`): resolved when `#answering` comes back to 0. */
  #allAnswered: (() => void)[] = []
  /** Each party's newest session (a hello of revision 6 or later naming one): see the module doc. */
  readonly #parties = new Map<string, Session>()
  /** Withdraws answered `storage`, which their clients ask again until kept (unkept-withdraws.ts). */
  readonly #unkept = new UnkeptWithdraws()
  /** What the welcome says of the leases and waiting holds one connection may have (0: the default). */
  connectionLimit = 0

  /**
   * `store`: the store (a function, for hosts that reopen theirs). `token`: what hello must present;
   * `undefined` refuses every hello (the host has none configured), with `unset` as the reason.
   * `maxAnswer`: the largest inspection frame to send, in bytes. `revision`: the highest revision
   * this host speaks (a host without pools yet, the Durable Object's, says 3: its clients then refuse
   * pools clearly, as with an older server).
   */
  constructor(
    store: () => ServedStore,
    token: string | undefined,
    hooks: SessionHooks = {},
    readonly unset = 'server: no token is configured',
    readonly maxAnswer = MAX_ANSWER,
    readonly revision: number = REVISION,
  ) {
    this.#store = store
    this.#token = token === undefined ? undefined : encoder.encode(token)
    this.hooks = hooks
  }

  /**
   * A message from `session`'s connection: one frame, or a batch of them (revision 3). Answers a
   * promise when some of its frames wait behind a release (see `Session.queue`), resolved once they acted.
   */
  frame(session: Session, bytes: Uint8Array): void | Promise<void> {
    if (session.ended || session.closing) return
    session.heard = true
    let frames: (ClientFrame | HeldFrame)[]
    try {
      // A hold's frames are read by hand, their ids kept as words; any other by the codec.
      frames = readHeld(bytes) ?? decodeClientByCodec(bytes)
    } catch (error) {
      return session.refuse(0, 'protocol', String((error as Error).message))
    }
    if (!session.authed) {
      const frame = frames[0]!
      if (this.#token === undefined) return session.refuse(frame.id, 'closed', this.unset)
      if (frames.length !== 1 || frame.type !== 'hello' || !sameToken(frame.token, this.#token)) {
        return session.refuse(frame.id, 'permission', 'server: token refused')
      }
      // The old hello says no revision (2); the new one the client's highest: the lower side's is used.
      session.revision = Math.min(frame.revision, this.revision)
      // Read before `admit`: a host at its limit admits a hello that takes its party's place (`admits`).
      session.party = partyOf(frame.client) ?? session
      const refusal = this.hooks.admit?.(session)
      if (refusal !== undefined) return session.refuse(frame.id, refusal.code, refusal.message)
      session.authed = true
      // An older connection of its client ends before anything of this one acts (or this one, if older).
      if (!this.resumed(session)) return
      if (session.revision >= BATCHES) session.socket.pack = packServer
      this.hooks.welcomed?.(session)
      return session.send(frame.id, { type: 'welcome', revision: session.revision, maxFrame: MAX_FRAME, connectionLimit: this.connectionLimit })
    }
    if (session.revision < BATCHES && isBatch(bytes)) {
      return session.refuse(0, 'protocol', `server: a batch from a client of revision ${session.revision} (batches need revision ${BATCHES}, said in hello)`)
    }
    const queue = session.queue
    if (queue === undefined) return this.#run(session, frames)
    // Behind a release the host is keeping: these act after it, in order.
    for (const frame of frames) queue.frames.push(frame)
    return queue.ran
  }

  /**
   * A text message from `session`'s connection: no frame is one, so it is refused as a frame that
   * does not decode (`protocol`, 4400), and nothing the connection sends after it is read (`closing`):
   * `ws` still hands over the messages of the read that carried it, which would act for a client
   * whose connection is closing (a hold granted to nobody, kept until its ttl).
   */
  text(session: Session): void {
    if (session.ended || session.closing) return
    session.refuse(0, 'protocol', 'server: text messages are not frames (send binary)')
  }

  /**
   * Acts on `frames` in order. A release the host keeps first (`SessionHooks.releasing`) holds back
   * the rest, and what comes meanwhile (`Session.queue`), until it is answered: answers the queue's
   * `ran` then.
   */
  #run(session: Session, frames: (ClientFrame | HeldFrame)[]): Promise<void> | undefined {
    for (let i = 0; i < frames.length; i++) {
      if (session.closing) return undefined
      const frame = frames[i]!
      if (session.ended) {
        // Its connection dropped while these waited (`dropped`): only what lets go acts.
        if (!session.gone) return undefined
        if (!letsGo(frame)) continue
      }
      // Whatever its token, a second hello could only be a confused or probing client.
      if (frame.type === 'hello') {
        session.refuse(frame.id, 'protocol', 'server: a second hello on this connection (a connection says hello once, first)')
        return undefined
      }
      let held: void | Promise<void>
      try {
        held = this.#dispatch(session, frame)
      } catch (error) {
        session.send(frame.id, errorMessage(error))
        continue
      }
      // (Every other frame answers nothing: a socket's `close` returned, at most.)
      if (!(held instanceof Promise)) continue
      let queue = session.queue
      if (queue === undefined) {
        let done!: () => void
        const ran = new Promise<void>(resolve => (done = resolve))
        queue = session.queue = { frames: [], ran, done }
      }
      // The rest of this message go before what came since.
      queue.frames.unshift(...frames.slice(i + 1))
      const waited = queue
      void held.then(() => this.#drain(session, waited))
      return queue.ran
    }
    return undefined
  }

  /** The release the frames of `queue` waited for was answered: they act now (until another holds them back). */
  #drain(session: Session, queue: NonNullable<Session['queue']>): void {
    const frames = queue.frames
    queue.frames = []
    let again: Promise<void> | undefined
    try {
      again = this.#run(session, frames)
    } catch {
      // the connection went away meanwhile
    }
    if (again !== undefined) return
    if (session.queue === queue) session.queue = undefined
    queue.done()
  }

  /**
   * Resolves once no answer of a pool frame is under way: those asked so far, and any asked
   * meanwhile, were sent (or found their connection gone, or could not be made). Never rejects. A
   * closing store calls it once its pools' writes landed, when every such answer is settled (and a
   * frame asked after that finds the store closed, answered at once), before it closes the
   * connections: without it, those answers are dropped with them (see store.ts `close`). Anything
   * else may still be waiting for its answer, so nothing else calls it.
   */
  answered(): Promise<void> {
    if (this.#answering === 0) return Promise.resolve()
    return new Promise(resolve => this.#allAnswered.push(resolve))
  }

  /** An answer under way was sent (or failed): the last one lets `answered()` resolve. */
  readonly #sent = (): void => {
    if (--this.#answering !== 0) return
    const waiting = this.#allAnswered
    this.#allAnswered = []
    for (const resolve of waiting) resolve()
  }

  /**
   * `session`'s connection ended without goodbye: its waiting holds step aside, its leases live on.
   * Frames of its that wait behind a release its host is keeping (`Session.queue`) and let go — a
   * `release`, a `cancel`, a `goodbye`, a pool `release` or `withdraw` (`letsGo`) — still act once it
   * is done, answered nothing: a client's goodbye sent behind a slow release, whose client gave up
   * waiting for its answer and closed, still ends its leases, rather than leave them until their
   * ttl. The others act on nothing (a hold would wait, or be granted, for nobody). `queued` false
   * drops them all: a host that reopened its store, where they would act after what the client sends
   * on its next connection.
   */
  dropped(session: Session, queued = true): void {
    if (queued && session.queue !== undefined && !session.ended) session.gone = true
    this.#end(session, false)
  }

  /**
   * `session`, welcomed (at its hello, or taken back by a host after a restart), is its party's:
   * whichever of it and the party's session known so far is the older connection (the lower
   * connection number, counted past a wrap) is superseded — ended as a dropped connection and closed
   * (`CLOSE_SUPERSEDED`). Answers whether `session` stands. A session of revision 5 or older, or that
   * names no party, stands alone.
   */
  resumed(session: Session): boolean {
    if (typeof session.party !== 'string' || session.revision < HANDED_BACK) return true
    const known = this.#rival(session)
    if (known !== undefined) {
      if (newer(known.conn, session.conn)) {
        this.#supersede(session)
        return false
      }
      this.#supersede(known)
    }
    this.#parties.set(session.party, session)
    return true
  }

  /**
   * Whether a host with `count` connections, of `max` at most, admits `session`'s hello (read: its
   * revision and party): there is room for one more, or welcoming it adds no connection — its party
   * has another live one, and `resumed` supersedes one of the two in the same turn: the older, which
   * is mostly the other (its client's connection gone half-open, say), else `session` itself, closed
   * unanswered. So its client's own old connection never keeps it out, and the count is back at most
   * `max` before anything else runs. The rule of `serve()`'s `maxConnections` and of the Durable
   * Object's WebSocket clients alike (their `admit` hooks).
   */
  admits(session: Session, count: number, max: number): boolean {
    return count < max || (session.revision >= HANDED_BACK && this.#rival(session) !== undefined)
  }

  /** The live session of `session`'s party other than it, if any (a party's newest: see `resumed`). */
  #rival(session: Session): Session | undefined {
    if (typeof session.party !== 'string') return undefined
    const known = this.#parties.get(session.party)
    // (A session taken back anew for the same connection replaces the one kept for it.)
    return known !== undefined && known !== session && !known.ended && known.conn !== session.conn ? known : undefined
  }

  /** Ends `session` as a dropped connection, and closes it: a newer connection of its client took its place. */
  #supersede(session: Session): void {
    this.#end(session, false)
    if (session.closing) return
    session.closing = true
    try {
      session.socket.close(CLOSE_SUPERSEDED, 'server: superseded by a newer connection of this client (party)')
    } catch {
      // the connection went away meanwhile
    }
  }

  #end(session: Session, goodbye: boolean): void {
    if (session.ended) {
      // A goodbye that waited behind a release while its connection dropped (`dropped`): its leases,
      // which the drop left, end now. (Its number is not given again while they live: remote-holds.ts.)
      if (goodbye && session.gone) this.#endLeases(session)
      return
    }
    session.ended = true
    if (typeof session.party === 'string' && this.#parties.get(session.party) === session) this.#parties.delete(session.party)
    // Its claims not yet answered are cancelled (undone, if they took their units): see the module doc.
    const claims = [...session.claims.values()]
    session.claims.clear()
    for (const controller of claims) controller.abort('the connection ended')
    try {
      this.#store()._connectionEnded(session.conn, goodbye)
    } catch {
      // the store closed
    }
    this.hooks.closed?.(session, goodbye)
  }

  /** Ends the leases of `session`, whose connection ended already as a drop (`#end`). */
  #endLeases(session: Session): void {
    try {
      this.#store()._connectionEnded(session.conn, true)
    } catch {
      // the store closed
    }
    this.hooks.closed?.(session, true)
  }

  /** Acts on one frame: a promise when it is a release (or goodbye) that waits for its host (see `#released`). */
  #dispatch(session: Session, frame: ClientFrame | HeldFrame): void | Promise<void> {
    const store = this.#store()
    const hooks = this.hooks
    switch (frame.type) {
      case 'hold': {
        const name = frame.name
        const key = frame.key
        const kind = frame.semaphore ? 'semaphore' : 'lock'
        if (key.length === 0) throw new InvalidError(`${kind} ${name}: key "" must be 1 to 1024 bytes`)
        const handle = this.handle(kind, name, frame.limit)
        const request = 'w0' in frame ? frame : frame.request
        const record = new RemoteRequest(kind, name, key, request, undefined, frame.ttl, frame.maxHold, session.conn, frame.id, session, handle._resource.limit)
        const wait = frame.wait ?? Infinity
        // Which session has holds in line is kept only for a host that listens (see `_wait`).
        const listens = hooks.waiting !== undefined
        // Asked again on this connection while the one it was asked on is still open: it moves here.
        const earlier = listens ? store._remoteRequest(request) : undefined
        if (earlier && earlier.sink instanceof Session && earlier.sink !== session) earlier.sink._leftLine(earlier)
        store._remoteHold(handle, record, wait)
        store._letGo(handle)
        if (!listens) return
        // Still in line (new, or asked again and back in its place): the session has a hold waiting.
        const live = store._remoteRequest(request)
        if (live && live.sink === session && !live.holding) session._wait(live.request)
        return
      }
      case 'renew': {
        const lease = 'w0' in frame ? hexOfId(frame) : frame.lease
        const renewed = store._renew(lease)
        if (renewed) {
          const answer: ServerMessage = { type: 'renewed', ttl: renewed.ttl, revokeIn: Math.max(0, renewed.revokeIn) }
          const kept = hooks.renewed?.(lease, renewed.ttl)
          if (kept === undefined) return session.send(frame.id, answer)
          const id = frame.id
          return void kept.then(
            () => session.later(id, answer),
            error => session.later(id, errorMessage(error)),
          )
        }
        hooks.ended?.(lease)
        return session.send(frame.id, { type: 'error', code: 'lost', message: 'lease lost: past its ttl, revoked, released, or never granted' })
      }
      case 'release': {
        const lease = 'w0' in frame ? frame : frame.lease
        // A host that keeps leases forgets it first (spelt only for such a host, as for `ended`).
        const unkeeping = hooks.releasing?.(hexOfId(lease))
        if (unkeeping !== undefined) return this.#released(session, frame.id, unkeeping, () => this.#store()._releaseRemote(lease), hexOfId(lease))
        store._releaseRemote(lease)
        // Spelt only for a host that listens (a call through `?.` reads no argument when it has none).
        hooks.ended?.(hexOfId(lease))
        // Id 0 asks for no answer: a hold's release need not cost a second frame.
        if (frame.id !== 0) session.send(frame.id, { type: 'done' })
        return
      }
      case 'cancel': {
        const record = store._remoteRequest(frame.request)
        // A granted hold is released: as by `release`, once its host forgot it.
        const unkeeping = record?.holding ? hooks.releasing?.(record.lease) : undefined
        if (record && unkeeping !== undefined) {
          // Found again by its request and lease, not as this record: a host that reopened its store
          // meanwhile (the Durable Object's, after an internal error) took the lease back as a record
          // of its own, which the cancel lets go as a release would.
          const lease = record.lease
          const end = () => {
            const store = this.#store()
            const live = store._remoteRequest(frame.request)
            if (live?.holding && live.lease === lease) store._endRemote(live)
          }
          return this.#released(session, frame.id, unkeeping, end, record.lease)
        }
        if (record) {
          const waiting = !record.holding
          store._endRemote(record)
          if (waiting) record.sink.failed(record, 'cancelled', `${record.place()}: cancelled while waiting`)
          else hooks.ended?.(record.lease)
        }
        return session.send(frame.id, { type: 'done' })
      }
      case 'inspect': {
        const entries = wireEntries(store.inspectKeys())
        const size = answerSize(entries)
        if (size > this.maxAnswer) {
          const message = `inspect: the answer is ${sizeText(size)} (${entries.length} busy keys), more than the ${sizeText(this.maxAnswer)} a frame of this server carries: ask page by page (inspect page, protocol revision 2)`
          return session.send(frame.id, { type: 'error', code: 'limit', message })
        }
        return session.send(frame.id, { type: 'inspected', entries })
      }
      case 'inspectPage': {
        const page = pageAfter(wireEntries(store.inspectKeys()), frame, this.maxAnswer)
        return session.send(frame.id, { type: 'inspectedPage', more: page.more, entries: page.entries })
      }
      case 'ping':
        // The client's heartbeat (revision 5): any client's is answered, with a type every client knows.
        return session.send(frame.id, { type: 'done' })
      case 'goodbye': {
        // Its holds in line leave first, as the engine's goodbye has them: a lease let go below must
        // never hand its key to a hold of this very client, which nobody would renew or release (one
        // delete refused, the session ends as a drop, and that hold keeps the key to its ttl).
        if (hooks.leaving !== undefined) session._leaveLines(store)
        // A host that keeps leases forgets the session's first (as for a release).
        const leaving = hooks.leaving?.(session)
        if (leaving !== undefined) {
          const id = frame.id
          const bye = (all: boolean) => {
            // Its connection dropped meanwhile: its leases end all the same (if all were forgotten).
            if (session.gone) return this.#end(session, all)
            if (session.ended) return
            this.#end(session, all)
            this.#farewell(session, id)
          }
          return leaving.then(bye, () => bye(false))
        }
        this.#end(session, true)
        const owed = session.owed()
        if (owed === undefined) {
          session.send(frame.id, { type: 'done' })
          return session.socket.close(1000, 'goodbye')
        }
        return this.#farewell(session, frame.id, owed)
      }
      case 'inspectPoolsPage':
        if (session.revision < POOL_PAGES) {
          return session.refuse(
            frame.id,
            'protocol',
            `server: a page of pools from a client of revision ${session.revision} (pages of pools need revision ${POOL_PAGES}, said in hello)`,
          )
        }
        return this.#inspectPools(session, frame, store)
      case 'claim':
      case 'pool':
      case 'inspectPools':
        if (session.revision < POOLS) {
          return session.refuse(
            frame.id,
            'protocol',
            `server: a pool frame from a client of revision ${session.revision} (pools need revision ${POOLS}, said in hello)`,
          )
        }
        return this.#pool(session, frame, store)
    }
  }

  /**
   * A goodbye (frame `id`) ended `session`: answered `done`, and the connection closed, once the answers
   * it owes (`Session.owe`: a pool release, confirm, resize... asked before it, answered once storage
   * kept it) were sent, so that its client, which awaits the goodbye's answer, is told them first
   * rather than `ClosedError` for what the server did. Its leases ended at once all the same. Later
   * frames act on nothing meanwhile (the session ended).
   */
  #farewell(session: Session, id: number, owed = session.owed()): void {
    const bye = () => {
      session.leaving = false
      if (session.closing) return
      try {
        session.send(id, { type: 'done' })
        session.socket.close(1000, 'goodbye')
      } catch {
        // the connection went away meanwhile
      }
    }
    if (owed === undefined) return bye()
    session.leaving = true
    void owed.then(bye)
  }

  /**
   * A release (or a cancel of a granted hold) that waits for its host to forget the lease
   * (`unkeeping`): once that resolved, `release` lets the key go and the frame `id` is answered
   * `done`; if it rejected, nothing is let go and the frame is answered the error. Resolves either
   * way (the session's frames held back behind it go on then).
   */
  #released(session: Session, id: number, unkeeping: Promise<void>, release: () => void, lease: string): Promise<void> {
    return unkeeping.then(
      () => {
        try {
          release()
        } catch {
          // the store closed meanwhile: it holds nothing
        }
        this.hooks.ended?.(lease)
        if (id !== 0) session.later(id, { type: 'done' })
      },
      error => {
        if (id !== 0) session.later(id, errorMessage(error))
      },
    )
  }

  /**
   * An inspection of pools: whole (revision 4), refused `limit` when that is larger than `maxAnswer`
   * (rather than a frame that would cut the connection at `maxBuffered`, or past what a client
   * takes), or one page of it (revision 8), which is never larger.
   */
  #inspectPools(session: Session, frame: ClientFrame & { type: 'inspectPools' | 'inspectPoolsPage' }, store: ServedStore): void {
    const pools = store.inspectPools().map(({ kind: _, ...p }) => p)
    if (frame.type === 'inspectPoolsPage') {
      const page = poolsPageAfter(pools, frame.after, this.maxAnswer)
      return session.send(frame.id, { type: 'poolsPage', more: page.more, pools: page.pools })
    }
    const size = poolsAnswerSize(pools)
    if (size > this.maxAnswer) {
      const message = `inspect pools: the answer is ${sizeText(size)} (${pools.length} pools), more than the ${sizeText(this.maxAnswer)} a frame of this server carries: ask page by page (inspect pools page, protocol revision ${POOL_PAGES}: a newer holdfast client)`
      return session.send(frame.id, { type: 'error', code: 'limit', message })
    }
    return session.send(frame.id, { type: 'pools', pools })
  }

  /** A pool frame (revision 4): its answer comes when the store's (`later`). */
  #pool(session: Session, frame: ClientFrame & { type: 'claim' | 'pool' | 'inspectPools' }, store: ServedStore): void {
    if (frame.type === 'inspectPools') return this.#inspectPools(session, frame, store)
    const pool = store._servedPool(frame.pool, frame.capacity)
    // Every answer but a claim's is owed to a goodbye that comes after it (`Session.owe`).
    const owed = frame.type !== 'claim'
    const answer = (p: Promise<unknown>, message: (value: unknown) => ServerMessage) => {
      // Counted until sent, for a closing store to wait for (`answered`), and for a goodbye when
      // owed: counted down however it ends, a `message` that throws included.
      this.#answering++
      const paid = owed ? session.owe() : undefined
      const send = (message: ServerMessage) => (owed ? session.pay(frame.id, message) : session.later(frame.id, message))
      const sent = () => {
        this.#sent()
        paid?.()
      }
      p.then(
        value => send(message(value)),
        error => send(errorMessage(error)),
      ).then(sent, sent)
    }
    if (frame.type === 'claim') {
      const key = `${frame.pool}\0${frame.claim}`
      // Asked again on this connection while the first is unanswered: it joins the first (and its
      // cancel), as the store joins them; each ask is answered by its own wait (the store's).
      let mine = session.claims.get(key)
      if (!mine) session.claims.set(key, (mine = new ClaimAsks()))
      session.crossed?.asked(frame.pool, frame.claim)
      mine.open++
      const asks = mine
      const options = { id: frame.claim, wait: frame.wait ?? Infinity, signal: asks.signal, ...(frame.ttl > 0 ? { ttl: frame.ttl } : {}) }
      // Once every ask of it was answered (either way), it is no longer this session's to cancel: not
      // after the first answer alone (a joined ask's own wait ran out), or a cancel would miss the rest.
      const forget = <T>(value: T): T => {
        if (--asks.open === 0 && session.claims.get(key) === asks) session.claims.delete(key)
        return value
      }
      // From revision 7 a withdraw may name this frame: its `claimed` answer is kept as told to it.
      const ask = session.revision >= NAMED_ASKS && frame.id !== 0 ? frame.id : undefined
      return answer(
        pool._claimFor(frame.n, options, session.party, ask).then(forget, error => Promise.reject(forget(error))),
        r => {
          const { claimed, remaining } = r as { claimed: boolean; remaining: number }
          // A client of revision 5 or older lets a claimed answer that crossed its cancel go with a
          // release: counted here, so that such a release is read as its withdraw (crossed-releases.ts).
          if (claimed && session.revision < HANDED_BACK) {
            session.crossed ??= new CrossedReleases((name, id) => store._claimOpen(name, id))
            session.crossed.told(frame.pool, frame.claim)
          }
          return { type: 'claimed', claimed, remaining }
        },
      )
    }
    switch (frame.op) {
      case 'release':
        // A client of revision 6 is told 2 when the claim had given its units back before: asking
        // again a release whose answer a dropped connection lost, it learns that they are back.
        if (session.revision >= HANDED_BACK) return answer(store._releaseServed(pool, frame.claim), released => ({ type: 'count', value: released as number }))
        // An older client's release of a claimed answer that crossed its cancel is its withdraw: the
        // claim is kept if another connection, or a caller in this process, was told it (POOL-01).
        if (session.crossed?.released(frame.pool, frame.claim)) {
          return answer(store._withdrawServed(pool, frame.claim, session.party), undone => ({ type: 'count', value: undone ? 1 : 0 }))
        }
        return answer(pool.release(frame.claim), released => ({ type: 'count', value: released ? 1 : 0 }))
      case 'withdraw': {
        if (session.revision < HANDED_BACK) {
          throw new InvalidError(`pool ${frame.pool}: withdraw is a frame of revision ${HANDED_BACK}; this client said ${session.revision}`)
        }
        // Revision 7: the frame id of the claim whose answer it takes back (0: any one of this client's).
        const ask = frame.value
        if (ask !== 0 && session.revision < NAMED_ASKS) {
          throw new InvalidError(
            `pool ${frame.pool}: a withdraw naming a claim frame (value ${ask}) is of revision ${NAMED_ASKS}; this client said ${session.revision}`,
          )
        }
        // Asked again after its write failed: answered whether the undo is kept (unkept-withdraws.ts).
        const key = withdrawKey(frame.pool, frame.claim, ask)
        const again = this.#unkept.again(store, session.party, key, `pool ${frame.pool}: claim ${JSON.stringify(frame.claim)}`)
        // Undone only if nobody but this client was answered `claimed` for it, and this takes back
        // its last such answer (0 else: another client, or a caller in the server's process, holds
        // it, or this client from another answer; or the frame named was never answered `claimed`).
        const undoing =
          again ??
          store._withdrawServed(pool, frame.claim, session.party, ask === 0 ? undefined : ask).catch(error => {
            this.#unkept.failed(store, session.party, key, error)
            throw error
          })
        return answer(undoing, undone => ({ type: 'count', value: undone ? 1 : 0 }))
      }
      case 'confirm':
        return answer(pool.confirm(frame.claim), () => ({ type: 'done' }))
      case 'remaining':
        return answer(pool.remaining(), remaining => ({ type: 'count', value: remaining as number }))
      case 'resize':
        return answer(pool.resize(frame.value), () => ({ type: 'done' }))
      case 'cancel': {
        const key = `${frame.pool}\0${frame.claim}`
        const controller = session.claims.get(key)
        session.claims.delete(key)
        controller?.abort('cancelled by the client')
        session.crossed?.cancelled(frame.pool, frame.claim)
        return session.send(frame.id, { type: 'done' })
      }
    }
  }

  /**
   * A handle of the current store for one hold (it checks the name, and a semaphore's limit). It pins
   * nothing: a name only clients use costs nothing once idle (the store forgets it at the end of the
   * turn that left it idle: see remote-holds.ts `#keep`).
   */
  handle(kind: 'lock' | 'semaphore', name: string, limit: number): Lock {
    return this.#store()._serverHandle(kind, name, limit)
  }
}

/**
 * The party a client's hello names in its `client` text (` party=` and 16 to 64 letters, digits, `-`
 * or `_`; holdfast's client says `holdfast-js party=` and 32 hex digits, drawn for each client): its
 * connections are one party to the pools (`Party`), so that a withdraw its client sends again on a
 * new connection, after the one it was sent on dropped, undoes a claim it alone was told. A hello
 * without one: `undefined` (the connection is its own party).
 */
export function partyOf(client: string): string | undefined {
  return /(?:^| )party=([0-9A-Za-z_-]{16,64})(?: |$)/.exec(client)?.[1]
}

/** Whether connection number `a` (u32) was counted after `b`, past a wrap. */
function newer(a: number, b: number): boolean {
  return a !== b && (a - b) >>> 0 < 0x8000_0000
}

/** The asks of one claim id on one connection not yet answered: aborted, they are all cancelled. */
class ClaimAsks extends AbortController {
  /** How many of its `claim` frames are not yet answered. */
  open = 0
}

/**
 * Whether `frame` lets go what its session holds, so that it acts even once its connection dropped
 * behind a release (`Protocol.dropped`): a lock's release or cancel, a goodbye, and a pool claim's
 * release or withdraw. The client asks those last two again only on a connection it gets back, which
 * one that closed (its goodbye's answer given up) never does: dropped here, the claim kept its units
 * until its ttl, or for good.
 */
function letsGo(frame: ClientFrame | HeldFrame): boolean {
  // A withdraw only when it names the claim frame whose answer it takes back (revision 7): one that
  // names none (revision 6) would undo whichever claim of the id this client holds, and acting late
  // (after its client, back, asked the id again and was told `claimed`) it could undo that one.
  if (frame.type === 'pool') return frame.op === 'release' || (frame.op === 'withdraw' && frame.value !== 0)
  return LETS_GO.has(frame.type)
}

/** The frames of the locks that let go (see `letsGo`). */
const LETS_GO = new Set<string>(['release', 'cancel', 'goodbye'])

/** A server's batch of `frames` (for `Socket.pack`). */
const packServer = (frames: Uint8Array[]): Uint8Array => batchOf(frames, true)

/**
 * An error as the wire answers it. One with no code, or a code of the runtime's (a storage's `EIO`, an
 * `ERR_…`), goes as `closed`, its own code in the message: the wire's codec refuses a code it does not
 * know, which left the frame unanswered (its client waiting for good) or broke out of its dispatch.
 */
function errorMessage(error: unknown): ServerMessage & { type: 'error' } {
  const e = error as { code?: unknown; message?: unknown }
  const message = String(e?.message ?? error)
  if (isErrorCode(e?.code)) return { type: 'error', code: e.code, message }
  return { type: 'error', code: 'closed', message: typeof e?.code === 'string' ? `${message} (${e.code})` : message }
}

/** The store's busy keys as the codec takes them (only the fields on the wire). */
function wireEntries(keys: KeyInfo[]): WireEntry[] {
  return keys.map(k => ({ kind: k.kind, name: k.name, key: k.key, holders: k.holders, waiting: k.waiting }))
}
