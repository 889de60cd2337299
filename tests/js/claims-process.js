// A store in a process of its own that claims a pool's units on fileStorage, for the tests of what a
// claim confirmed to its caller keeps across processes (filestorage-short-writes.test.js). Run with
// the runtime of the test (Node, Bun, or `deno run -A`).
//
//   claims-process.js DIR N PREFIX
//       opens a store on fileStorage(DIR), asks N claims of one unit of pool `seats` (capacity 1000) in
//       one turn, ids PREFIX-0 to PREFIX-(N-1) each made 100 bytes longer, so that 40 claims make a
//       write of several KiB; prints
//       one line per claim, `claimed ID` or `refused ID CODE`, closes the store and prints `closed`.
import { openStore, fileStorage } from 'holdfast'

const [dir, n, prefix] = process.argv.slice(2)
const say = line => process.stdout.write(`${line}\n`)
const store = await openStore({ storage: fileStorage(dir) })
const seats = store.pool('seats', { capacity: 1000 })
const ids = Array.from({ length: Number(n) }, (_, i) => `${prefix}-${i}-${'x'.repeat(100)}`)
const outcomes = await Promise.allSettled(ids.map(id => seats.claim(1, { id })))
outcomes.forEach((outcome, i) => {
  if (outcome.status === 'fulfilled' && outcome.value.claimed) say(`claimed ${ids[i]}`)
  else say(`refused ${ids[i]} ${outcome.status === 'rejected' ? outcome.reason?.code : 'none-left'}`)
})
await store.close()
say('closed')
