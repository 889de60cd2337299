// The process the torture kills: a store on the storage its arguments name, granting leases as fast
// as it can, and writing every fence it sees to stdout the moment its lease is granted (in batches of
// 8-byte little-endian doubles: a fence is *observed* once it is in the pipe, where a kill -9 of this
// process cannot take it back). Negative numbers report events: -1 an open that failed, -2 a hold
// that failed (both with a StorageError, on a storage that fails on purpose).
//
//   node child.mjs MODE DIR SEED        (MODE: file, slow or flaky; see storages.mjs)
//
// Every grant is of a free key (a key of its own per worker, and a semaphore with room for all), so
// each lease's fn runs within the call that granted it: the order fences are written in is the order
// they were handed out in, and the torture can check the whole stream is strictly increasing.
import { openStore, StorageError } from 'holdfast'
import { makeStorage } from './storages.mjs'

const [mode, dir, seed] = process.argv.slice(2)
const storage = makeStorage(mode, dir, Number(seed))

const batch = new Float64Array(512)
let n = 0
function flush() {
  if (n === 0) return
  process.stdout.write(Buffer.from(batch.buffer.slice(0, n * 8)))
  n = 0
}
function see(value) {
  batch[n++] = value
  if (n === batch.length) flush()
}

let store
for (;;) {
  try {
    store = await openStore({ storage })
    break
  } catch (error) {
    if (!(error instanceof StorageError) || mode === 'file') throw error
    see(-1)
    flush()
    await new Promise(resolve => setTimeout(resolve, 5))
  }
}

const lock = store.lock('torture')
const permits = store.semaphore('permits', { limit: 4 })
const fence = lease => {
  see(lease.fence)
  return lease.fence
}

async function worker(handle, key) {
  for (let i = 1; ; i++) {
    try {
      await handle.hold(key, fence)
    } catch (error) {
      if (!(error instanceof StorageError)) throw error
      see(-2)
    }
    // Let timers and I/O (the storage's writes) run between batches of grants.
    if (i % 256 === 0) {
      flush()
      await new Promise(resolve => setImmediate(resolve))
    }
  }
}

await Promise.all([worker(lock, 'a'), worker(lock, 'b'), worker(lock, 'c'), worker(permits, 'p'), worker(permits, 'p')])
