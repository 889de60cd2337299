// A store in a process of its own that claims a pool's units on fileStorage, for the tests of what a
// claim confirmed to its caller keeps across processes (filestorage-short-writes.test.js). Run with
// the runtime of the test (Node, Bun, or `deno run -A`).
//
//   claims-process.js DIR N PREFIX [apart]
//       opens a store on fileStorage(DIR), asks N claims of one unit of pool `seats` (capacity 1000) in
//       one turn (with `apart`: each once the one before was answered, a write each), ids PREFIX-0 to
//       PREFIX-(N-1) each made 100 bytes longer, so that 40 claims make a write of several KiB; prints
//       one line per claim, `claimed ID` or `refused ID CODE`, closes the store and prints `closed`.
import { openStore, fileStorage } from 'holdfast'

const [dir, n, prefix, apart] = process.argv.slice(2)
const say = line => process.stdout.write(`${line}\n`)
const store = await openStore({ storage: fileStorage(dir) })
const seats = store.pool('seats', { capacity: 1000 })
const ids = Array.from({ length: Number(n) }, (_, i) => `${prefix}-${i}-${'x'.repeat(100)}`)
const outcomes = []
// The store keeps a process alive by a timer alone (a claim's wait, the retry of a failed write:
// util/clock.ts `keepAlive`), and none need be set while its claims are written: this keeps it alive
// until every claim was answered.
const alive = setInterval(() => {}, 1 << 30)
if (apart === 'apart') for (const id of ids) outcomes.push(...(await Promise.allSettled([seats.claim(1, { id })])))
else outcomes.push(...(await Promise.allSettled(ids.map(id => seats.claim(1, { id })))))
outcomes.forEach((outcome, i) => {
  if (outcome.status === 'fulfilled' && outcome.value.claimed) say(`claimed ${ids[i]}`)
  else say(`refused ${ids[i]} ${outcome.status === 'rejected' ? outcome.reason?.code : 'none-left'}`)
})
clearInterval(alive)
await store.close()
say('closed')
