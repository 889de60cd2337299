/**
 * How bytes move between a server and its clients: one WebSocket message per frame. Each runtime's
 * entry supplies a transport (`ws` on Node and Bun; Deno and workers their own), so that the server
 * and the client above it are the same everywhere.
 */

/** One end of a connection. */
export interface Socket {
  send(frame: Uint8Array): void
  /** Closes the connection; `code` and `reason` as WebSocket close frames have them. */
  close(code?: number, reason?: string): void
  /** Set by the user of the socket. */
  onMessage: (frame: Uint8Array) => void
  onClose: () => void
}

export interface ListenOptions {
  port?: number
  host?: string
  /** A Unix socket path, instead of a port. */
  path?: string
  tls?: { cert: string | Uint8Array; key: string | Uint8Array }
  /** Frames larger than this close the connection. */
  maxPayload: number
}

export interface Listener {
  /** Where clients connect: `ws://host:port`, `wss://…`, or `ws+unix:///path`. */
  readonly url: string
  close(): Promise<void>
}

export interface Transport {
  listen(options: ListenOptions, onSocket: (socket: Socket) => void): Promise<Listener>
  /** Connects to `url` (`ws://`, `wss://`, `ws+unix://PATH`); rejects when it cannot. `ca`: PEM
   * certificates to trust for `wss://`, besides the system's. */
  dial(url: string, options: { maxPayload: number; ca?: string | Uint8Array }): Promise<Socket>
}
