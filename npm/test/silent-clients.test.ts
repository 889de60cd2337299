import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CLOSE_SILENT, SWEEP, SilentClients } from '../src/remote/silent-clients.js'
import type { Protocol, Session } from '../src/remote/session.js'
import type { ServedStore } from '../src/remote/host.js'
import { manualClock } from '../src/testing.js'

/** Sessions as the sweep sees them, a store that says who waits, and what was dropped and closed. */
function served() {
  const sessions = new Set<Session>()
  const waiting = new Set<number>()
  const dropped: number[] = []
  const closes: [number, number][] = []
  const protocol = {
    dropped: (s: Session) => {
      dropped.push(s.conn)
      s.ended = true
      sessions.delete(s)
    },
  } as unknown as Protocol
  const store = { _connectionWaiting: (conn: number) => (waiting.has(conn) ? 1 : 0) } as unknown as ServedStore
  const session = (conn: number, revision: number, inLine: boolean) => {
    const s = {
      conn,
      revision,
      ended: false,
      closing: false,
      heard: true,
      unheard: 0,
      claims: new Map(),
      socket: { close: (code: number) => void closes.push([conn, code]) },
    } as unknown as Session
    sessions.add(s)
    if (inLine) waiting.add(conn)
    return s
  }
  return { sessions, dropped, closes, protocol, store, session }
}

test('LOCK-05 silent clients, the Durable Object way (poke, no timer): a look comes only at an event 10 s or more after the last; a session of revision 5 with a hold in line, silent at three looks in a row, is dropped and closed 4408; one that is heard, one of revision 4 and an idle one are not', () => {
  const clock = manualClock(0)
  const s = served()
  const silent = new SilentClients(
    clock,
    () => s.sessions,
    s.protocol,
    () => s.store,
  )
  const gone = s.session(1, 5, true)
  const pinging = s.session(2, 5, true)
  s.session(3, 4, true)
  s.session(4, 5, false)
  const look = (at: number, heard: Session[] = []) => {
    clock.advance(at - clock.now())
    for (const h of heard) h.heard = true
    silent.poke()
  }
  // Looks at 10, 20, 30 and 40 s; pokes in between (at 9,999 ms after a look) are not looks.
  look(SWEEP - 1)
  look(SWEEP, [pinging])
  look(2 * SWEEP - 1, [pinging])
  assert.equal(gone.unheard, 0, 'no look at 19,999 ms: the last was at 10,000')
  look(2 * SWEEP)
  look(3 * SWEEP, [pinging])
  assert.deepEqual(s.dropped, [], 'silent at two looks in a row: kept')
  look(4 * SWEEP - 1, [pinging])
  assert.deepEqual(s.dropped, [])
  look(4 * SWEEP)
  assert.deepEqual(s.dropped, [1], 'silent at the third look in a row, with a hold in line: dropped')
  assert.deepEqual(s.closes, [[1, CLOSE_SILENT]])
  assert.equal(gone.closing, true)
  // A minute more with pings: the rest stay (revision 4 and the idle one silent throughout).
  for (let i = 5; i < 11; i++) look(i * SWEEP, [pinging])
  assert.deepEqual(s.dropped, [1])
  assert.equal(clock.pending, 0, 'and it never set a timer')
})
