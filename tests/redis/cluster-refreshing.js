// A process that opens a store on an ioredis Cluster client of the nodes whose ports it is given (one
// that never refreshes its slots by itself: the refresh looked at is holdfast's sharded subscriber's,
// every second), holds a key and says `open`; once its stdin ends (the test stopped the nodes with
// SIGSTOP meanwhile), waits for that subscriber's next slots refresh to begin (it then waits on the
// stopped nodes, a second a node), closes the store during it, disconnects the client and says
// `closed`: with nothing left open, it should exit once that refresh ends. Anything unhandled is said
// too (`unhandled MESSAGE`).
//
//   cluster-refreshing.js PORT...
import { openRedisStore } from 'holdfast/redis'
import { Cluster } from 'ioredis'

const say = line => process.stdout.write(`${line}\n`)
process.on('unhandledRejection', e => say(`unhandled ${e?.message ?? e}`))
// ioredis's refreshSlotsCache, watched and left as it is: `refreshing()` resolves as the next slots
// refresh of holdfast's subscriber (a Cluster client other than the application's, ready) begins.
let client
let began = () => {}
const refreshing = () => new Promise(resolve => (began = resolve))
const refresh = Cluster.prototype.refreshSlotsCache
Cluster.prototype.refreshSlotsCache = function (...args) {
  const was = this.isRefreshing
  const answer = refresh.apply(this, args)
  if (this !== client && this.status === 'ready' && !was && this.isRefreshing) began()
  return answer
}
client = new Cluster(
  process.argv.slice(2).map(port => ({ host: '127.0.0.1', port: Number(port) })),
  { slotsRefreshInterval: 0 },
)
client.on('error', () => {})
const store = await openRedisStore({ redis: client })
await store.lock('refreshing').hold('k', () => {})
// Its subscriber connects by itself: ready once it refreshes its slots every second.
await refreshing()
say('open')
process.stdin.resume()
await new Promise(resolve => process.stdin.once('end', resolve))
await refreshing()
await store.close()
client.disconnect()
say('closed')
