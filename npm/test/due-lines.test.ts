import { test } from 'node:test'
import assert from 'node:assert/strict'
import { DueLines, type Due, type DueLine } from '../src/util/due-lines.js'
import { manualClock } from '../src/testing.js'

class Thing implements Due<Thing> {
  dueLine: DueLine<Thing> | undefined = undefined
  duePrev: Thing | undefined = undefined
  dueNext: Thing | undefined = undefined
  constructor(
    readonly name: string,
    readonly startedAt: number,
  ) {}
}

test('#17: DueLines calls each thing kept once, at its interval after its start, in order within a line; things removed (first, middle, last) never', () => {
  const clock = manualClock(0)
  const called: string[] = []
  const lines = new DueLines<Thing>(
    clock,
    t => t.startedAt,
    t => {
      // It left its line before it is called.
      assert.equal(t.dueLine, undefined)
      called.push(`${t.name}@${clock.now()}`)
    },
  )
  const things: Thing[] = []
  for (let i = 0; i < 6; i++) {
    clock.advance(i === 0 ? 0 : 10)
    const t = new Thing(`a${i}`, clock.now())
    things.push(t)
    lines.add(t, 100)
  }
  const b = new Thing('b', clock.now())
  lines.add(b, 30)
  assert.equal(lines.delete(things[0]!), true)
  assert.equal(lines.delete(things[0]!), false)
  assert.equal(lines.delete(things[3]!), true)
  assert.equal(lines.delete(things[5]!), true)
  clock.advance(1_000)
  assert.deepEqual(called, ['b@80', 'a1@110', 'a2@120', 'a4@140'])
  // Emptied, the lines take new things (and the timer is set for them).
  const c = new Thing('c', clock.now())
  lines.add(c, 100)
  clock.advance(99)
  assert.deepEqual(called.length, 4)
  clock.advance(1)
  assert.deepEqual(called.slice(4), ['c@1150'])
  assert.equal(clock.pending, 0)
})

test('#17: DueLines keeps what a model keeps through long runs of adds and deletes anywhere, and calls the rest in start order', () => {
  let x = 7
  const pick = (n: number) => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) % n
  }
  const clock = manualClock(0)
  const called: Thing[] = []
  const lines = new DueLines<Thing>(
    clock,
    t => t.startedAt,
    t => called.push(t),
  )
  const kept: Thing[] = []
  for (let i = 0; i < 5_000; i++) {
    if (pick(3) > 0 || kept.length === 0) {
      const t = new Thing(`t${i}`, clock.now())
      lines.add(t, 1_000_000)
      kept.push(t)
    } else {
      const [t] = kept.splice(pick(kept.length), 1)
      assert.equal(lines.delete(t!), true)
    }
    if (i % 10 === 0) clock.advance(1)
  }
  clock.advance(2_000_000)
  assert.deepEqual(
    called.map(t => t.name),
    kept.map(t => t.name),
  )
})
