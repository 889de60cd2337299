import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Heartbeat, PING_AFTER, SILENCE_LIMIT, type HeartbeatHost } from '../src/remote/heartbeat.js'
import { manualClock } from '../src/testing.js'

/** A client as the heartbeat sees it: answers awaited, the last message heard, what it was told to do. */
function host(clock: ReturnType<typeof manualClock>) {
  const h = {
    awaited: 0,
    heardAt: clock.now(),
    pings: [] as number[],
    silentAt: [] as number[],
  }
  const asHost: HeartbeatHost = {
    heard: () => h.heardAt,
    awaiting: () => h.awaited > 0,
    ping: () => {
      h.pings.push(clock.now())
      // The ping is sent as any frame: its own `awaited` must leave the beat as it is.
      h.awaited++
      beat.awaited()
    },
    silent: () => void h.silentAt.push(clock.now()),
  }
  const beat = new Heartbeat(clock, asHost)
  return { h, beat }
}

test('heartbeat: awaiting an answer with nothing heard, one ping at 5 s and the connection dropped at 15 s, not a ms before; then it stops', () => {
  const clock = manualClock(1_000)
  const { h, beat } = host(clock)
  h.awaited = 1
  beat.awaited()
  clock.advance(PING_AFTER - 1)
  assert.deepEqual(h.pings, [])
  clock.advance(1)
  assert.deepEqual(h.pings, [1_000 + PING_AFTER])
  clock.advance(SILENCE_LIMIT - PING_AFTER - 1)
  assert.deepEqual(h.pings.length, 1, 'one ping, however long the silence')
  assert.deepEqual(h.silentAt, [])
  clock.advance(1)
  assert.deepEqual(h.silentAt, [1_000 + SILENCE_LIMIT])
  assert.equal(clock.pending, 0, 'no timer left once it said so')
})

test('heartbeat: silence counts from the last message heard or from the start, whichever is later; once a message came after a ping, the next silence is pinged again, at least 5 s before its drop', () => {
  const clock = manualClock(0)
  const { h, beat } = host(clock)
  // Idle for an hour: the first answer awaited is given its 5 s like any other.
  clock.advance(3_600_000)
  h.awaited = 1
  beat.awaited()
  clock.advance(3_000)
  h.heardAt = clock.now() // a message (another answer) at 3 s
  clock.advance(PING_AFTER - 1)
  assert.deepEqual(h.pings, [], 'quiet for 4,999 ms since the message')
  clock.advance(1)
  assert.equal(h.pings.length, 1)
  clock.advance(2_000)
  const answered = clock.now()
  h.heardAt = answered // the ping answered, 2 s after it went
  // The new silence is pinged 5 s into it (the beat after a ping comes 5 s later, not at the first
  // silence's end, which left 10 s between pings), then dropped 15 s into it.
  clock.advance(PING_AFTER - 1)
  assert.equal(h.pings.length, 1)
  clock.advance(1)
  assert.deepEqual(h.pings.slice(1), [answered + PING_AFTER], 'the new silence pinged 5 s into it')
  clock.advance(SILENCE_LIMIT - PING_AFTER - 1)
  assert.equal(h.pings.length, 2, 'one ping for that silence')
  assert.deepEqual(h.silentAt, [], 'not dropped at 14,999 ms of quiet')
  clock.advance(1)
  assert.deepEqual(h.silentAt, [answered + SILENCE_LIMIT])
})

test("heartbeat: pings answered at once go every 5 s (and the answer's time), never 10 s apart: a Durable Object hibernates after 10 s without an event", () => {
  const clock = manualClock(0)
  const { h, beat } = host(clock)
  h.awaited = 1
  beat.awaited()
  for (let ms = 0; ms < 60_000; ms++) {
    clock.advance(1)
    // Each ping answered 20 ms after it went.
    if (h.pings.length > 0 && clock.now() === h.pings.at(-1)! + 20) h.heardAt = clock.now()
  }
  const gaps = h.pings.slice(1).map((at, i) => at - h.pings[i]!)
  assert.ok(gaps.length >= 10, `pings: ${h.pings.join(', ')}`)
  assert.ok(
    gaps.every(gap => gap === PING_AFTER + 20),
    `gaps: ${gaps.join(', ')}`,
  )
  assert.deepEqual(h.silentAt, [], 'never dropped')
})

test('heartbeat: nothing awaited, no ping, no drop and no timer left; stop() clears the timer', () => {
  const clock = manualClock(0)
  const { h, beat } = host(clock)
  h.awaited = 1
  beat.awaited()
  h.awaited = 0 // answered
  clock.advance(60_000)
  assert.deepEqual([h.pings, h.silentAt, clock.pending], [[], [], 0])
  h.awaited = 1
  beat.awaited()
  assert.equal(clock.pending, 1)
  beat.stop()
  assert.equal(clock.pending, 0)
  clock.advance(60_000)
  assert.deepEqual([h.pings, h.silentAt], [[], []])
})
