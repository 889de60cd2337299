// The store of the pools' torture (pools.mjs): opens a store on fileStorage(DIR) (with `lying`, one
// that acknowledges the pools' writes and never makes them: the control), makes pool `seats` of
// CAPACITY units, prints `open`, then takes commands on stdin, one a line, all at once (each answered
// when the store answers it, so that claims of one turn share one write):
//   c ID N  -> claim N units with claim id ID: `c ID 1 REMAINING` (claimed) or `c ID 0 REMAINING`
//   r ID    -> release claim ID: `r ID 1` (released) or `r ID 0` (it held nothing)
//   q       -> `q REMAINING`
// An error answers `e ID CODE MESSAGE`. The parent kills it with SIGKILL at any moment.
import { createInterface } from 'node:readline'
import { openStore, fileStorage } from 'holdfast'

const [dir, capacity, mode] = process.argv.slice(2)
const say = line => process.stdout.write(`${line}\n`)
const file = fileStorage(dir)
const lying = { get: key => file.get(key), set: (key, value) => (key.startsWith('holdfast.pools') ? undefined : file.set(key, value)) }
const store = await openStore({ storage: mode === 'lying' ? lying : file })
const seats = store.pool('seats', { capacity: Number(capacity) })
say('open')
createInterface({ input: process.stdin }).on('line', line => {
  const [op, id, n] = line.split(' ')
  const failed = error => say(`e ${id} ${error?.code ?? 'crash'} ${String(error?.message).replace(/\n/g, ' ')}`)
  if (op === 'c') seats.claim(Number(n), { id }).then(r => say(`c ${id} ${r.claimed ? 1 : 0} ${r.remaining}`), failed)
  else if (op === 'r') seats.release(id).then(r => say(`r ${id} ${r ? 1 : 0}`), failed)
  else if (op === 'q') seats.remaining().then(r => say(`q ${r}`), failed)
})
