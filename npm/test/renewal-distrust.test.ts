// Renewal.distrust (remote/renewal.ts): answers that came from a node no longer the primary (a
// Sentinel client that had not moved, redis/adapter.ts PrimaryWatch) stop counting, back to `since`.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Renewal, type Renewed } from '../src/remote/renewal.js'
import { LostError } from '../src/errors.js'
import type { Lease } from '../src/handle/lease.js'
import { manualClock } from '../src/testing.js'

/** A renewal of a lease of ttl 3 s granted at 0, whose renewals answer `ttl` at once; what it lost, and when. */
function renewing(recall = 5_000) {
  const clock = manualClock(0)
  const lease = { kind: 'lock', name: 'n', key: 'k', _deadline: 0 } as unknown as Lease
  const lost: { at: number; reason: LostError }[] = []
  let answer: Renewed = { ttl: 3_000 }
  const renewal = new Renewal(
    clock,
    { renew: async () => answer, lose: reason => void lost.push({ at: clock.now(), reason }) },
    lease,
    3_000,
    3_000,
    0,
    0,
    recall,
  )
  return { clock, lease, lost, renewal, answers: (next: Renewed) => void (answer = next) }
}

/** Moves the clock ms by ms, letting each renewal's answer (a promise) land at the ms it was asked. */
async function advance(clock: ReturnType<typeof manualClock>, ms: number) {
  for (let i = 0; i < ms; i++) {
    clock.advance(1)
    for (let j = 0; j < 3; j++) await Promise.resolve()
  }
}

test('LOCK-01 renewal distrust: the deadline goes back to the one answers before `since` set, and the lease is lost there, not a ms later, if nothing counts after', async () => {
  const { clock, lease, lost, renewal, answers } = renewing()
  await advance(clock, 2_500) // renewed at 1000 (deadline 3400) and 2000 (deadline 4400)
  assert.equal(lease._deadline, 4_400)
  answers(undefined) // from now on no renewal is answered
  renewal.distrust(1_500, 'the old primary answered')
  assert.equal(lease._deadline, 3_400, 'back to the deadline the renewal answered at 1000 set')
  await advance(clock, 3_400 - 2_500 - 1)
  assert.equal(lost.length, 0)
  await advance(clock, 1)
  assert.equal(lost.length, 1)
  assert.equal(lost[0]!.at, 3_400)
  assert.ok(lost[0]!.reason instanceof LostError)
  assert.equal(lost[0]!.reason.message, 'lock n: key "k": the old primary answered', 'the loss says why')
})

test('LOCK-01 renewal distrust: never before the grant (a lease renewed only since keeps the deadline its grant set); lost at once when that passed, with the reason given; then nothing changes it', async () => {
  const { clock, lease, lost, renewal, answers } = renewing()
  await advance(clock, 1_500) // renewed at 1000: deadline 3400
  answers(undefined)
  renewal.distrust(0, 'the old primary answered')
  assert.equal(lease._deadline, 2_400, 'the grant at 0 set 2400')
  assert.equal(lost.length, 0)
  await advance(clock, 2_400 - 1_500)
  assert.equal(lost.length, 1)
  assert.equal(lost[0]!.at, 2_400)
  const late = renewing()
  await advance(late.clock, 2_500) // renewed at 1000 (3400) and 2000 (4400)
  late.renewal.distrust(500, 'the old primary answered')
  assert.equal(late.lost.length, 1, 'the grant set 2400, past')
  assert.equal(late.lost[0]!.at, 2_500)
  assert.match(late.lost[0]!.reason.message, /^lock n: key "k": the old primary answered$/)
  late.renewal.distrust(0, 'again')
  late.renewal.extend(2_500, 3_000)
  await advance(late.clock, 5_000)
  assert.equal(late.lost.length, 1)
})

test('LOCK-01 renewal distrust: answers after it count again (a renewal the new primary answered moves the deadline on)', async () => {
  const { clock, lease, lost, renewal, answers } = renewing()
  await advance(clock, 2_500)
  renewal.distrust(1_500, 'the old primary answered')
  assert.equal(lease._deadline, 3_400)
  await advance(clock, 600) // the renewal due at 3000 is answered: from 3000, 5400
  assert.equal(lease._deadline, 5_400)
  assert.equal(lost.length, 0)
  answers(undefined)
  await advance(clock, 5_400 - 3_100)
  assert.equal(lost.length, 1)
  assert.equal(lost[0]!.reason.message, 'lock n: key "k": lease not renewed within its ttl', 'lost as any lease not renewed, once an answer counted')
})

test('renewal distrust: without `recall` nothing is kept, and distrust changes nothing', async () => {
  const { clock, lease, lost, renewal } = renewing(0)
  await advance(clock, 2_500)
  renewal.distrust(0, 'the old primary answered')
  assert.equal(lease._deadline, 4_400)
  assert.equal(lost.length, 0)
})

test('renewal distrust: answers older than `recall` are forgotten but the last of them, which `since` at `recall` back still finds', async () => {
  const { clock, lease, renewal } = renewing(2_000)
  await advance(clock, 10_500) // renewed every 1000: the last at 10000 (deadline 12400)
  renewal.distrust(10_500 - 2_000, 'the old primary answered')
  assert.equal(lease._deadline, 8_000 + 2_400, 'the renewal answered at 8000')
})
