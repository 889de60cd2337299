// A script that awaits what only one of holdfast's timers settles, then ends without closing its store,
// run by keep-alive.test.js: the timer must keep the process alive until that answer (and no longer).
// Prints one JSON line per answer awaited. Durations are short (250 ms): real time is the point here.
//   RUNTIME keep-alive-child.js CASE
import { openStore, memoryStorage } from 'holdfast'

const which = process.argv[2]
const store = await openStore({ storage: memoryStorage() })
const print = (what, value) => console.log(JSON.stringify({ what, value }))
const outcome = promise =>
  promise.then(
    value => ({ ok: value }),
    e => ({ error: e?.code ?? String(e) }),
  )
const lost = lease => new Promise(resolve => lease.signal.addEventListener('abort', resolve, { once: true }))

switch (which) {
  case 'wait': {
    // LOCK-06: a wait that runs out rejects InUseError, at its end.
    const locks = store.lock('keep-alive')
    await locks.acquire('k') // held, never released
    print('hold', await outcome(locks.hold('k', { wait: 250 }, () => 'ran')))
    break
  }
  case 'forgotten': {
    // A lease acquired and forgotten keeps nothing alive for its maxHold.
    await store.lock('keep-alive', { maxHold: '60s' }).acquire('k')
    print('acquired', true)
    break
  }
  case 'forgotten-after-waits': {
    // The same once a waiter left the line (its wait ran out) and a hold under a maxHold ended:
    // nothing awaits the timer any more.
    const locks = store.lock('keep-alive', { maxHold: '60s' })
    await locks.acquire('k')
    print('waited', await outcome(locks.acquire('k', { wait: 250 })))
    print('held', await outcome(locks.hold('other', () => 'ran')))
    break
  }
  case 'maxhold': {
    // LOCK-03: fn awaits its lease's signal, which the maxHold aborts; the hold rejects LostError.
    const locks = store.lock('keep-alive', { maxHold: 250 })
    print('hold', await outcome(locks.hold('k', lease => lost(lease))))
    break
  }
  case 'expiry': {
    // LOCK-03: the lease ahead is revoked at its maxHold and the key goes to the waiter, which waits
    // without a limit.
    const locks = store.lock('keep-alive', { maxHold: 250 })
    await locks.acquire('k') // never released: revoked at 250 ms
    print('hold', await outcome(locks.hold('k', { wait: Infinity }, () => 'ran')))
    break
  }
  case 'semaphore-expiry': {
    const permits = store.semaphore('keep-alive', { limit: 1, maxHold: 250 })
    await permits.acquire('k')
    print('hold', await outcome(permits.hold('k', { wait: Infinity }, () => 'ran')))
    break
  }
  case 'pool-wait': {
    // POOL-04: a claim that waits in line with a wait is answered { claimed: false } at its end.
    const seats = store.pool('keep-alive', { capacity: 1 })
    await seats.claim(1) // never released
    const c = await outcome(seats.claim(1, { wait: 250 }))
    print('claim', { claimed: c.ok?.claimed, error: c.error })
    break
  }
  case 'pool-ttl': {
    // A claim waiting without a limit is served when the ttl of the claim ahead of it runs out.
    const seats = store.pool('keep-alive', { capacity: 1 })
    await seats.claim(1, { ttl: 250 })
    const c = await outcome(seats.claim(1, { wait: Infinity }))
    print('claim', { claimed: c.ok?.claimed, error: c.error })
    break
  }
  case 'pool-joined': {
    // POOL-03: an ask joined to a claim that waits longer is answered by a timer of its own.
    const seats = store.pool('keep-alive', { capacity: 1 })
    await seats.claim(1)
    void seats.claim(1, { id: 'order-1', wait: Infinity }) // not awaited: it waits for good
    const c = await outcome(seats.claim(1, { id: 'order-1', wait: 250 }))
    print('claim', { claimed: c.ok?.claimed, error: c.error })
    break
  }
  default:
    throw new Error(`no case ${which}`)
}
print('end', which)
