// The Redis scripts held to a reference model by a seeded random driver, against a real redis-server:
// acquires (new requests that wait or not, and the same request asked again), releases, cancels and
// renewals of any request, on keys of locks and semaphores. Every answer is checked against the model:
// who holds, who waits in what order, how each request ended; fences grow on every grant and are the
// same when asked again; and every grant the model makes inside a release is the one Redis published,
// in order; a request ended without a tombstone is forgotten. Deadlines are an hour away, so the model has no clock: the ttl's part is tested elsewhere.
// A failure names its seed and ops; replay one with HOLDFAST_REDIS_SEED=N (and HOLDFAST_REDIS_SEEDS
// for how many seeds, default 300).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { startRedis, redisClient, sleep } from './helpers.js'

const SEEDS = process.env.HOLDFAST_REDIS_SEED ? [Number(process.env.HOLDFAST_REDIS_SEED)] : Array.from({ length: Number(process.env.HOLDFAST_REDIS_SEEDS || 300) }, (_, i) => i + 1)
const OPS = 40
const HOUR = 3_600_000

function mulberry32(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

test(`#15 model: ${SEEDS.length} seeds x ${OPS} random script calls agree with the reference model (FIFO, limit, one grant a request, tombstones, fences, wake-ups)`, async t => {
  const server = await startRedis(t, { appendonly: 'no' })
  const client = await redisClient(t, server.url)
  const subscriber = await redisClient(t, server.url)
  const { scriptsFor, keysOf, constants } = await import(pathToFileURL(path.join(process.cwd(), 'node_modules/holdfast/dist/redis/scripts.js')).href)
  const { library, scripts } = scriptsFor(true)
  const send = args => (client.call ? client.call(...args) : client.sendCommand(args.map(String)))
  await send(['FUNCTION', 'LOAD', 'REPLACE', library.source])
  for (const script of Object.values(scripts)) await send(['SCRIPT', 'LOAD', script.source])
  const published = []
  const channel = 'model-wakeups'
  if (subscriber.call) {
    subscriber.on('message', (_, text) => published.push(text))
    await subscriber.subscribe(channel)
  } else await subscriber.subscribe(channel, text => published.push(text))

  for (const seed of SEEDS) {
    const random = mulberry32(seed)
    const pick = list => list[Math.floor(random() * list.length)]
    const log = []
    const fail = message => assert.fail(`seed ${seed}: ${message}\nops:\n${log.join('\n')}`)
    published.length = 0
    const expectedWakeups = []
    // Two keys: a lock's, and a semaphore's with a limit of 1 to 3.
    const keys = [
      { redis: keysOf(`m${seed}`, 'lock', 'l', 'k'), limit: 1, holders: new Map(), line: [], ended: new Map(), last: 0 },
      { redis: keysOf(`m${seed}`, 'semaphore', 's', 'k'), limit: 1 + Math.floor(random() * 3), holders: new Map(), line: [], ended: new Map(), last: 0 },
    ]
    const known = [] // [key, id] of every request made
    let next = 1
    // Odd seeds call the Functions (FCALL), even ones the same Lua as scripts (EVALSHA), as a store does where Functions are missing.
    // The answers in one shape: an acquire that grants at once answers the fence alone ('new', below);
    // a release answers one word (h, w, u, or e and why).
    const run = async (op, k, args) => {
      const got = await send(seed % 2 ? ['FCALL', library.functions[op], k.redis.length, ...k.redis, ...args] : ['EVALSHA', scripts[op].sha, k.redis.length, ...k.redis, ...args])
      if (op === 'acquire' && !Array.isArray(got)) return ['new', Number(got)]
      if (op === 'release') return got[0] === 'e' ? ['e', got.slice(1)] : [got]
      return got
    }
    const standing = (k, id) => (k.holders.has(id) ? ['g', k.holders.get(id)] : k.line.includes(id) ? ['w'] : k.ended.has(id) ? ['e', k.ended.get(id)] : ['u'])
    const grantFence = (k, id, fence) => {
      if (!(fence > k.last)) fail(`${id}: fence ${fence} not above ${k.last}`)
      k.last = fence
      k.holders.set(id, fence)
    }
    const serve = k => {
      while (k.holders.size < k.limit && k.line.length > 0) {
        const id = k.line.shift()
        k.holders.set(id, undefined) // its fence comes with its wake-up
        expectedWakeups.push({ k, id })
      }
    }
    const check = (what, got, want) => {
      if (got[0] !== want[0] || (want[0] !== 'g' && want[1] !== undefined && String(got[1]) !== String(want[1])) || (want[0] === 'g' && want[1] !== undefined && got[1] !== want[1])) {
        fail(`${what}: answered ${JSON.stringify(got)}, the model says ${JSON.stringify(want)}`)
      }
    }
    // Grants made inside a release are published; read them back now and give them their fences.
    const wakeups = async () => {
      for (let i = 0; i < 50 && published.length < expectedWakeups.length; i++) await sleep(2)
      if (published.length !== expectedWakeups.length) fail(`${published.length} wake-ups published, the model granted ${expectedWakeups.length}`)
      for (const [i, w] of expectedWakeups.entries()) {
        const [g, id, fence] = published[i].split(' ')
        if (g !== 'g' || id !== w.id) fail(`wake-up ${i}: ${published[i]}, the model granted ${w.id}`)
        grantFence(w.k, id, Number(fence))
      }
      published.length = expectedWakeups.length = 0
    }

    for (let op = 0; op < OPS; op++) {
      const roll = random()
      if (roll < 0.4 || known.length === 0) {
        const k = pick(keys)
        const id = `r${next++}`
        const wait = random() < 0.3 ? 0 : -1
        known.push([k, id])
        log.push(`acquire ${id} on ${k.limit > 1 ? 'semaphore' : 'lock'} wait ${wait}`)
        const got = await run('acquire', k, [id, wait, constants(60_000, 'PUBLISH', HOUR, 0, k.limit, channel)])
        if (k.holders.size < k.limit && k.line.length === 0) {
          check(`acquire ${id}`, got, ['new'])
          grantFence(k, id, got[1])
        } else if (wait === 0) check(`acquire ${id}`, got, ['b'])
        else {
          check(`acquire ${id}`, got, ['w'])
          k.line.push(id)
        }
        if (got[0] === 'b') known.pop()
        continue
      }
      const [k, id] = pick(known)
      if (roll < 0.55) {
        log.push(`acquire ${id} again`)
        const got = await run('acquire', k, [id, -1, constants(60_000, 'PUBLISH', HOUR, 0, k.limit, channel)])
        const was = standing(k, id)
        if (was[0] !== 'u') check(`acquire ${id} again`, got, was)
        else if (k.holders.size < k.limit && k.line.length === 0) {
          // Forgotten (ended without a tombstone): asked again, it is a new request.
          check(`acquire ${id} again (forgotten)`, got, ['new'])
          grantFence(k, id, got[1])
        } else {
          check(`acquire ${id} again (forgotten)`, got, ['w'])
          k.line.push(id)
        }
      } else if (roll < 0.7) {
        log.push(`renew ${id}`)
        check(`renew ${id}`, await run('renew', k, [id, '', constants(60_000, 'PUBLISH', HOUR, 0, k.limit, channel)]), standing(k, id))
      } else {
        const why = roll < 0.85 ? 'R' : 'C'
        // A tombstone is kept when asked (a copy of the acquire may still come), else the request is forgotten.
        const tomb = random() < 0.5 ? 1 : 0
        log.push(`${why === 'R' ? 'release' : 'cancel'} ${id} tomb ${tomb}`)
        const got = await run('release', k, [id, why + tomb, constants(60_000, 'PUBLISH', HOUR, 0, k.limit, channel)])
        const was = standing(k, id)
        check(`end ${id}`, got, was[0] === 'g' ? ['h'] : was)
        if (was[0] === 'g') k.holders.delete(id)
        if (was[0] === 'w') k.line.splice(k.line.indexOf(id), 1)
        if ((was[0] === 'g' || was[0] === 'w') && tomb) k.ended.set(id, why)
        serve(k)
        await wakeups()
      }
    }
  }
})
