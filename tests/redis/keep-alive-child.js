// A script on holdfast/redis that awaits what only a timer settles, run by keep-alive.test.js: it must
// be answered, and then exit at once once it closed its store and quit its client (no timer of a
// lease it forgot, renewed every ttl/3, keeps it alive). Prints one JSON line per answer. Case `quit`
// leaves its store open and quits its client alone: the store's own connection, its subscriber's, goes
// with the client, and the process ends all the same.
//   RUNTIME keep-alive-child.js CLIENT URL CASE     (CLIENT: ioredis | node-redis | bun)
import { openRedisStore } from 'holdfast/redis'
import { redisClient } from './helpers.js'

const [kind, url, which] = process.argv.slice(2)
const print = (what, value) => console.log(JSON.stringify({ what, value }))
const outcome = promise =>
  promise.then(
    value => ({ ok: value }),
    e => ({ error: e?.code ?? String(e) }),
  )

/** A client of this run's kind (helpers.js: closed by this script, not by a test). */
const client = () => redisClient(undefined, url, kind)

const redis = await client()
const store = await openRedisStore({ redis })
const prefix = `keep-alive-${process.pid}`
switch (which) {
  case 'wait': {
    // LOCK-06: a wait that runs out rejects InUseError, at its end.
    const locks = store.lock(prefix, { ttl: '30s' })
    await locks.acquire('k') // held, never released
    print('hold', await outcome(locks.hold('k', { wait: 250 }, () => 'ran')))
    break
  }
  case 'forgotten': {
    // A lease acquired and forgotten (renewed every 10 s while the client is open) keeps nothing alive.
    await store.lock(prefix, { ttl: '30s' }).acquire('k')
    print('acquired', true)
    break
  }
  case 'expiry': {
    // LOCK-05: a holder that went away (its client cut, its lease not released) loses the key at its
    // ttl, and the waiter is handed it then, with nobody else asking.
    const other = await client()
    const gone = await openRedisStore({ redis: other })
    await gone.lock(prefix, { ttl: '1s' }).acquire('k')
    if (other.disconnect) other.disconnect()
    else if (other.destroy) other.destroy()
    else other.close()
    print('hold', await outcome(store.lock(prefix, { ttl: '1s' }).hold('k', { wait: Infinity }, () => 'ran')))
    await gone.close() // its subscriber's connection, still open, would keep the process alive
    break
  }
  case 'quit': {
    // A hold and a claim (the subscriber in use), then the client quit, the store never closed.
    print('held', await store.lock(prefix).hold('k', lease => lease.fence > 0))
    print('claimed', (await store.pool(prefix, { capacity: 2 }).claim(1)).claimed)
    break
  }
  default:
    throw new Error(`no case ${which}`)
}
if (which !== 'quit') await store.close()
if (redis.quit) await redis.quit()
else redis.close()
print('end', which)
