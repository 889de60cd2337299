/**
 * How bytes move between a server and its clients: one WebSocket message per frame. Each runtime's
 * entry supplies a transport (`ws` on Node and Bun; Deno and workers their own), so that the server
 * and the client above it are the same everywhere.
 *
 * A server's transport bounds what one peer can make it keep: bytes not yet written to a connection
 * (`maxBuffered`: past it the connection is cut at once), and a connection it closed, whose peer
 * never answers the close, is cut after `CLOSE_GRACE` rather than kept for the runtime's own wait.
 */

/** How long a server waits for its peer to answer a close before it cuts the connection. */
export const CLOSE_GRACE = 1_000

/** One end of a connection. */
export interface Socket {
  send(frame: Uint8Array): void
  /**
   * Set by the user of the socket once its peer takes batches (protocol revision 3): packs frames
   * into one message. A transport that sends the frames of a turn together (Node's, Bun's server)
   * then sends them as one message rather than one each (`packed`); others ignore it.
   */
  pack?: (frames: Uint8Array[]) => Uint8Array
  /** Closes the connection; `code` and `reason` as WebSocket close frames have them. */
  close(code?: number, reason?: string): void
  /** Set by the user of the socket. */
  onMessage: (frame: Uint8Array) => void
  onClose: () => void
  /**
   * Set by a server's user of the socket: a text message came, which no frame is, and it refuses it
   * as the protocol says (`textMessage`). Unset, the transport closes the connection (1003).
   */
  onText?: () => void
}

/** A text message came on `socket`: its user refuses it (`onText`), else the connection is closed (1003). */
export function textMessage(socket: Socket): void {
  if (socket.onText !== undefined) return socket.onText()
  socket.close(1003, 'holdfast speaks binary frames')
}

export interface ListenOptions {
  port?: number
  host?: string
  /** A Unix socket path, instead of a port; created with `mode` (default: the process's umask). */
  path?: string
  mode?: number
  tls?: { cert: string | Uint8Array; key: string | Uint8Array }
  /** Frames larger than this close the connection. */
  maxPayload: number
  /**
   * Bytes sent to one connection and not yet written to its socket: past this, the connection is
   * closed at once (its peer does not read), and what it had buffered is let go. Where the runtime
   * does not tell (a hibernatable socket), nothing is bounded here.
   */
  maxBuffered?: number
  /** ms a connection may take to finish its WebSocket upgrade (where the runtime lets it be set: Node). */
  handshakeTimeout?: number
}

export interface Listener {
  /** Where clients connect: `ws://host:port`, `wss://…`, or `ws+unix:///path`. */
  readonly url: string
  close(): Promise<void>
}

export interface Transport {
  listen(options: ListenOptions, onSocket: (socket: Socket) => void): Promise<Listener>
  /** Connects to `url` (`ws://`, `wss://`, `ws+unix://PATH`); rejects when it cannot. `ca`: PEM
   * certificates to trust for `wss://`, besides the system's. `signal`, once aborted, abandons a dial
   * not open yet: its connection is cut and it rejects. */
  dial(url: string, options: DialOptions): Promise<Socket>
  /** Rejects `InvalidError` unless `ca` is PEM certificates (runtime/tls.ts `checkCa`): `connect()` asks before it dials. */
  checkCa?(ca: string | Uint8Array): Promise<void>
}

export interface DialOptions {
  maxPayload: number
  ca?: string | Uint8Array
  signal?: AbortSignal
}

/**
 * Once `signal` aborts, a dial whose WebSocket `ws` is still connecting rejects and is cut (`cut`);
 * one open or closed already is left as it is.
 */
export function onAbandon(signal: AbortSignal | undefined, ws: { readonly readyState: number }, reject: (error: Error) => void, cut: () => void): void {
  if (signal === undefined) return
  const abandon = (): void => {
    if (ws.readyState !== 0) return // CONNECTING is 0 in every WebSocket
    reject(new Error('no answer to the WebSocket upgrade'))
    cut()
  }
  if (signal.aborted) abandon()
  else signal.addEventListener('abort', abandon, { once: true })
}

/**
 * A socket's handlers, for a socket whose events may come before its user set them: a client's first
 * frames from the server can arrive in the read that carries the upgrade's answer, and `ws` emits them
 * at once, before the code that awaited the connection runs (a server refusing at once sends its
 * reason and closes). Until `onMessage` and `onClose` are set, frames are kept and a close is
 * remembered; setting them hands over what came, in order. `message` and `closed` are what the
 * transport calls.
 */
export function withHandlers(socket: Pick<Socket, 'send' | 'close'>): { socket: Socket; message: (frame: Uint8Array) => void; closed: () => void } {
  let early: Uint8Array[] = []
  let closedEarly = false
  let onMessage = (frame: Uint8Array): void => void early.push(frame)
  let onClose = (): void => void (closedEarly = true)
  const full = Object.defineProperties(socket, {
    onMessage: {
      get: () => onMessage,
      set: (fn: (frame: Uint8Array) => void) => {
        onMessage = fn
        const kept = early
        early = []
        for (const frame of kept) fn(frame)
      },
    },
    onClose: {
      get: () => onClose,
      set: (fn: () => void) => {
        onClose = fn
        if (closedEarly) fn()
      },
    },
  }) as Socket
  return { socket: full, message: frame => onMessage(frame), closed: () => onClose() }
}

/**
 * The messages that carry `frames`, sent in one turn, in order: runs of frames packed by `pack` into
 * messages of at most `max` bytes; a frame that does not fit with another goes alone, as it is. `pack`
 * adds `overhead` bytes to a message and `each` to a frame.
 */
export function packed(frames: Uint8Array[], pack: (frames: Uint8Array[]) => Uint8Array, max: number, overhead = 6, each = 2): Uint8Array[] {
  const out: Uint8Array[] = []
  let run: Uint8Array[] = []
  let size = overhead
  const end = () => {
    if (run.length === 1) out.push(run[0]!)
    else if (run.length > 1) out.push(pack(run))
    run = []
    size = overhead
  }
  for (const frame of frames) {
    if (run.length > 0 && size + each + frame.length > max) end()
    run.push(frame)
    size += each + frame.length
  }
  end()
  return out
}
