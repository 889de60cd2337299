// A process that holds keys whose deadlines are past 2^31−1 ms, on the real clock (#13 item 9), run by
// long-deadlines.test.js: a lease with a maxHold of 30 days and a hold waiting with a wait of 25 days,
// in this process's store and (unless `local`) over a connection to it. It measures its own CPU time
// over a few quiet seconds (`process.cpuUsage`) and prints one JSON line; whatever the runtime warns
// goes to stderr. With `bare` it opens nothing: the CPU an idle process of this runtime spends on this
// machine, the baseline the test compares with.
//   RUNTIME long-deadlines-child.js [seconds] [local|bare]
import { openStore, memoryStorage, connect } from 'holdfast'

const seconds = Number(process.argv[2] ?? 3)
const localOnly = process.argv[3] === 'local'
const bare = process.argv[3] === 'bare'
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))
const token = 'long-deadlines-token-0123456789'
const errors = []
const describe = e => `${e?.name}: ${e?.message}`

const store = bare ? undefined : await openStore({ storage: memoryStorage() })
const locks = bare ? [] : [store.lock('long', { maxHold: '30d', wait: '25d' })]
let remote
if (!localOnly && !bare) {
  const server = await store.serve({ port: 0, token })
  remote = await connect(server.url, { token })
  locks.push(remote.lock('far', { maxHold: '30d', wait: '25d' }))
}
const held = []
for (const lock of locks) held.push(await lock.acquire('k').catch(e => void errors.push(`acquire ${lock.name}: ${describe(e)}`)))
const settled = []
const waiting = localOnly || bare ? [] : locks.map(lock => lock.acquire('k').then(() => settled.push(`${lock.name}: granted`), e => settled.push(`${lock.name}: ${describe(e)}`)))
// Startup's work (compiling, the connection) is done before the quiet seconds are measured.
await sleep(300)
const before = process.cpuUsage()
const start = performance.now()
await sleep(seconds * 1_000)
const used = process.cpuUsage(before)
process.stdout.write(
  JSON.stringify({
    cpuMs: (used.user + used.system) / 1_000,
    wallMs: performance.now() - start,
    lost: held.map(l => l?.lost),
    settled,
    errors,
  }) + '\n',
)
await remote?.close()
await store?.close()
await Promise.all(waiting)
process.exit(0)
