// A process that opens a store on an ioredis Cluster client of the nodes whose ports it is given, says
// `open`, and once its stdin ends (the test stopped the nodes meanwhile) and the client saw them gone,
// asks inspect(), closes the store and disconnects the client, then says `closed`: with nothing left
// open, it should exit at once. Anything unhandled is said too (`unhandled MESSAGE`).
//
//   cluster-closing.js PORT...
import { openRedisStore } from 'holdfast/redis'
import { Cluster } from 'ioredis'

const say = line => process.stdout.write(`${line}\n`)
process.on('unhandledRejection', e => say(`unhandled ${e?.message ?? e}`))
const client = new Cluster(process.argv.slice(2).map(port => ({ host: '127.0.0.1', port: Number(port) })))
client.on('error', () => {})
const store = await openRedisStore({ redis: client })
say('open')
process.stdin.resume()
await new Promise(resolve => process.stdin.once('end', resolve))
while (client.status === 'ready') await new Promise(resolve => setTimeout(resolve, 10))
const listing = store.inspect().then(
  () => 'answered',
  e => e.constructor.name,
)
await store.close()
client.disconnect()
say('closed')
say(`inspect ${await listing}`)
