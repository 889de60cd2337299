// For trapped-store.test.js, run as a process of its own: a serve() that cannot listen (its socket's
// directory does not exist), its promise awaited by nobody. Like any promise nobody handles, its
// rejection must be reported (the process fails with it): the store's own note of the serve() under
// way (kept for a close() to wait for) must not handle it in the caller's place.
import { memoryStorage, openStore } from 'holdfast'

const store = await openStore({ storage: memoryStorage() })
void store.serve({ path: process.argv[2], token: 'a-token-of-a-serve-nobody-awaits' })
setTimeout(() => {
  process.stdout.write('nothing reported\n')
  process.exit(0)
}, 3_000)
