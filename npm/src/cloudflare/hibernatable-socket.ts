/**
 * A WebSocket that `HoldfastObject` accepted with hibernation, as the wire protocol's `Socket`, and
 * what it keeps of its session in its attachment while the object is out of memory.
 *
 * Invariants: the attachment is small (a few numbers, and a party of at most 64 characters; the
 * platform allows 2 KiB) and written only when it changes (accepted, welcomed, holds in line or
 * none, ended); one that says `ended` stays so, and its session is never rebuilt from it (a frame
 * that still comes on its socket acts on nothing: HoldfastObject `#resume`); sending on or closing a
 * socket that already closed is not an error (its close event ends the session).
 */

import type { Socket } from '../runtime/transport.js'
import type { HibernatableWebSocketLike } from './types.js'

/** What a WebSocket client's socket keeps while the object hibernates. */
export interface Attachment {
  /** The connection's number in the engine. */
  conn: number
  authed: boolean
  /** Whether it had holds in line (not kept anywhere else). */
  waiting: boolean
  /**
   * Came past the object's limit of connections (at its upgrade): no session until its hello, which
   * is admitted only if there is room then, or it takes its party's place (HoldfastObject `#admit`).
   * Once admitted, the attachment is written anew, without it; so it is once its number was let go
   * (its error or close event, whichever came first: `ended`, so that the other lets go nothing).
   */
  overLimit?: true
  /** The revision of its conversation, once welcomed (absent: 2, the old hello's). */
  revision?: number
  /** The party its hello named, if it named one (remote/session.ts `partyOf`: at most 64 characters). */
  party?: string
  /**
   * Its session ended (goodbye, a dropped connection, superseded by a newer connection of its party,
   * dropped when the object reopened its store) or was refused (its connection closing): no frame of
   * it acts any more, as from `serve()` (remote/session.ts `Protocol.frame`). The object forgets an
   * ended session while its socket may still bring a late frame (the close is not instant, a client
   * may send after its goodbye): such a frame, in memory or after a wake, must not rebuild the
   * session from the rest of this attachment (authed, its party) and act. Absent: it stands.
   */
  ended?: true
}

export function attachmentOf(ws: HibernatableWebSocketLike): Attachment | undefined {
  let a: Attachment | null
  try {
    a = ws.deserializeAttachment() as Attachment | null
  } catch {
    return undefined
  }
  return a && typeof a === 'object' && Number.isInteger(a.conn) ? a : undefined
}

export function closeQuietly(ws: HibernatableWebSocketLike, code: number, reason: string): void {
  try {
    ws.close(code, reason)
  } catch {
    // already closed
  }
}

/** A hibernatable WebSocket as the protocol's socket; its events come to the object, not here. */
export function socketOf(ws: HibernatableWebSocketLike): Socket {
  return {
    send: frame => {
      try {
        ws.send(frame)
      } catch {
        // closed meanwhile: its close event ends the session
      }
    },
    close: (code, reason) => closeQuietly(ws, code ?? 1000, reason ?? ''),
    onMessage: () => {},
    onClose: () => {},
  }
}
