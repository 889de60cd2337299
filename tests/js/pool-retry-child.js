// A process whose pools' write fails once, for pools.test.js: a claim made then waits for the store's
// retry of the write (10 ms later), with nothing else alive in the process. Prints one JSON line: what
// the claim whose write failed and the claim made after it were answered.
import { openStore } from 'holdfast'

const values = new Map()
let failNext = false
const storage = {
  get: key => values.get(key),
  set: async (key, value) => {
    if (failNext && key.startsWith('holdfast.pools')) {
      failNext = false
      throw new Error('disk hiccup')
    }
    values.set(key, value)
  },
}
const store = await openStore({ storage })
const seats = store.pool('seats', { capacity: 3 })
await seats.remaining()
failNext = true
const failed = await seats.claim(1).then(
  r => r.claimed,
  e => e.code,
)
const retried = await seats.claim(1).then(
  r => r.claimed,
  e => e.code,
)
process.stdout.write(`${JSON.stringify({ failed, retried })}\n`)
await store.close()
