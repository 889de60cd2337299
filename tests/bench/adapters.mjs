// Adapters: each library behind one small interface, so every workload runs the same code for all.
//
//   hold(key, fn)          uncontended hold: wait for key, run fn, let go; resolves to fn's result
//   holdWait(key, fn)      the same for contended holds (holdfast: { wait: Infinity }, so its 10 s default never fires)
//   semaphore(limit)       -> (key, fn) => Promise, or null when the library has no counting semaphore
//   tryHold(key, fn)       async; never waits: { acquired: false } or { acquired: true, value }
//   live()                 number of keys the library still keeps an entry for (0 once everything is released)
//   close()                async; frees the library's resources at the end of the child process
//
// Every adapter is created inside the child process that measures it, so no library shares a heap or a
// JIT profile with another. Only `makeAdapter(name)` and `makeRemoteAdapter(name, where)` (the remote
// workloads R1-R3, further down) load a library.

import { readFileSync, realpathSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const NOT = Object.freeze({ acquired: false })

export const ADAPTERS = ['bare', 'bare-context', 'plain-context-lock', 'async-lock', 'async-mutex', 'holdfast', 'holdfast-b', 'holdfast-slim']
/**
 * Run only when named in BENCH_ADAPTERS. `holdfast-slim` is holdfast without LOCK-04's async context
 * (the `holdfast/slim` entry: the same wrapper and engine, no AsyncLocalStorage): not a way to use the
 * library with every guarantee, but the measure of what the context costs, side by side.
 * `holdfast-redis-b` is holdfast/redis from another build (HOLDFAST_PKG_B, installed by run.sh as
 * `holdfast-b`): an A/B of two builds in one run. `redis-fifo-floor` is the least a FIFO lock with
 * fences costs on Redis; `plain-context-lock` is a lock that keeps LOCK-04's context and nothing else,
 * written plainly (see their descriptions).
 */
export const ON_REQUEST = ['holdfast-slim', 'plain-context-lock', 'holdfast-redis-b', 'redis-fifo-floor']

/**
 * `holdfast-b`: the package of HOLDFAST_PKG_B (run.sh installs it under that name), measured as
 * `holdfast` is, in the same run: the B of an A/B. It runs whenever it is installed.
 */
export const B = 'holdfast-b'

// What each adapter is, for the header of the report.
export const DESCRIPTIONS = {
  'bare': 'no lock: `async (k, fn) => await fn()` (promise round-trip floor; its checks are expected to fail)',
  'bare-context': 'no lock, but each hold runs fn in a context of its own, as LOCK-04 asks: `await als.run({ key }, fn)` with an AsyncLocalStorage (on Node 24, an AsyncResource with enterWith inside, which copies the context once where run copies it twice) — the floor of any lock that detects reentrancy that way; its checks are expected to fail',
  'plain-context-lock': 'a lock that keeps LOCK-04 and nothing else, written plainly (not tuned for the JIT as holdfast is): a Map of held keys, fn run in a context of its own entered as bare-context enters it, holding a lease {key, parent, held} (parent: the context\'s lease before, read as fn starts), the key let go when fn settles; a hold of a key its own caller holds refused; waiters in a FIFO array, each resumed by a promise (so it speaks of a free key\'s hold: W1, W2, W5). No fences, ttl, maxHold, signal, store or errors of its own',
  'async-lock': 'new AsyncLock({ maxPending: Infinity }).acquire(key, fn); try = isBusy(key) check',
  'async-mutex': 'Map<key,{Mutex,refs}> deleted when idle; Mutex.runExclusive; try = isLocked() check; Semaphore(limit).runExclusive',
  'holdfast': 'openStore({ storage: memoryStorage() }); lock(\'bench\').hold(key, fn) / hold(key, { wait: Infinity }, fn); tryHold(key, fn); semaphore(\'bench\', { limit }).hold(\'k\', { wait: Infinity }, fn)',
  'holdfast-b': 'as holdfast, from the package of HOLDFAST_PKG_B (installed as holdfast-b): the B of an A/B in one run',
  'holdfast-slim': 'as holdfast, from holdfast/slim (init(wasm bytes) first): no AsyncLocalStorage, so no LOCK-04 — what the async context costs, not a way to use holdfast',
}

/** Version and location of an installed package, or null when it is not installed. */
export function packageInfo(name) {
  try {
    const file = require.resolve(`${name}/package.json`)
    return { version: JSON.parse(readFileSync(file, 'utf8')).version, dir: realpathSync(file).replace(/\/package\.json$/, '') }
  } catch {
    try {
      // A package whose `exports` hides package.json: find it beside node_modules instead.
      const file = new URL(`./node_modules/${name}/package.json`, import.meta.url)
      return { version: JSON.parse(readFileSync(file, 'utf8')).version, dir: realpathSync(file).replace(/\/package\.json$/, '') }
    } catch {
      return null
    }
  }
}

/**
 * Whether `als` keeps its context in an AsyncContextFrame (Node 24 and later: no `_enable`), where
 * `run()` copies the context twice and an AsyncResource with `enterWith()` inside once; elsewhere
 * (Node 20's hooks, Bun) `run()` copies nothing.
 */
const isFramed = (als) => typeof als._enable !== 'function' && typeof process.versions.bun !== 'string'

/** A no-lock floor: every hold is `hold`, a try never takes the key, nothing is kept. */
function floor(hold) {
  return {
    hold,
    holdWait: hold,
    semaphore: () => hold,
    tryHold: async () => NOT,
    live: () => 0,
    close: async () => {},
  }
}

export async function makeAdapter(name) {
  switch (name) {
    case 'bare':
      return floor(async (key, fn) => await fn())

    case 'bare-context': {
      // LOCK-04 (a hold of a key inside its own hold is refused) needs each hold's fn to run in a
      // context of its own, which the code fn calls can read back after any await. This is that and
      // nothing else: a new store object per hold (siblings must not share one), entered the cheapest
      // way known per runtime, as holdfast enters it (npm/src/node-runtime.ts): where the context is
      // an AsyncContextFrame (Node 24: no `_enable`), run() copies it twice and an AsyncResource with
      // enterWith() inside once; elsewhere run() copies nothing. On Node 20 the first run() also turns
      // on promise hooks for the whole process.
      const { AsyncLocalStorage, AsyncResource } = await import('node:async_hooks')
      const als = new AsyncLocalStorage()
      const framed = isFramed(als)
      const hold = framed
        ? async (key, fn) =>
            await new AsyncResource('bare-context').runInAsyncScope(() => {
              als.enterWith({ key })
              return fn()
            })
        : async (key, fn) => await als.run({ key }, fn)
      return floor(hold)
    }

    case 'plain-context-lock':
      return plainContextLock()

    case 'async-lock': {
      const { default: AsyncLock } = await import('async-lock')
      const lock = new AsyncLock({ maxPending: Infinity })
      const hold = (key, fn) => lock.acquire(key, fn)
      return {
        hold,
        holdWait: hold,
        semaphore: () => null,
        // isBusy then acquire is not atomic in general, but nothing runs between the two here.
        tryHold: async (key, fn) => (lock.isBusy(key) ? NOT : { acquired: true, value: await lock.acquire(key, fn) }),
        live: () => Object.keys(lock.queues).length,
        close: async () => {},
      }
    }

    case 'async-mutex': {
      const { Mutex, Semaphore } = await import('async-mutex')
      // async-mutex has no keyed lock: the usual pattern is a map of mutexes, deleted when idle so
      // that 100,000 distinct keys do not stay in memory.
      const mutexes = new Map()
      const hold = async (key, fn) => {
        let entry = mutexes.get(key)
        if (entry === undefined) mutexes.set(key, (entry = { mutex: new Mutex(), refs: 0 }))
        entry.refs++
        try {
          return await entry.mutex.runExclusive(fn)
        } finally {
          if (--entry.refs === 0) mutexes.delete(key)
        }
      }
      return {
        hold,
        holdWait: hold,
        semaphore: (limit) => {
          const s = new Semaphore(limit)
          return (key, fn) => s.runExclusive(() => fn())
        },
        tryHold: async (key, fn) => {
          const entry = mutexes.get(key)
          return entry !== undefined && entry.mutex.isLocked() ? NOT : { acquired: true, value: await hold(key, fn) }
        },
        live: () => mutexes.size,
        close: async () => {},
      }
    }

    case 'holdfast':
    case 'holdfast-b':
    case 'holdfast-slim': {
      const mod = await import(name === 'holdfast-slim' ? 'holdfast/slim' : name)
      if (name === 'holdfast-slim') mod.init(readFileSync(`${packageInfo('holdfast').dir}/wasm/holdfast_wasm_bg.wasm`))
      const { openStore, memoryStorage } = mod
      const store = await openStore({ storage: memoryStorage() })
      const l = store.lock('bench')
      const WAIT = { wait: Infinity } // one object for every contended hold: no allocation per call
      return {
        hold: (key, fn) => l.hold(key, fn),
        holdWait: (key, fn) => l.hold(key, WAIT, fn),
        semaphore: (limit) => {
          const s = store.semaphore('bench', { limit })
          return (key, fn) => s.hold(key, WAIT, fn)
        },
        tryHold: (key, fn) => l.tryHold(key, fn),
        live: () => store.inspect().length,
        close: () => store.close(),
      }
    }

    default:
      throw new Error(`unknown adapter ${JSON.stringify(name)} (known: ${ADAPTERS.join(', ')})`)
  }
}

/**
 * `plain-context-lock`: a lock that keeps what LOCK-04 asks of a hold — fn in a context of its own,
 * which knows the hold around it, so that a hold of a key inside its own hold can be refused — and
 * nothing else: no fences, ttl, maxHold, signal, store, wasm or errors of its own. A free key's hold
 * (W1, W2, W5) is what such a lock needs at least, written plainly: a Map entry, a lease object, the
 * context entered as `bare-context` enters it, one `then` on fn's promise. Not tuned for the JIT's
 * warm-up as holdfast is (its shapes kept, its path split where V8 and JSC tier up), so it measures
 * what the work costs written the obvious way, not a floor. A waiter waits on a promise of its own.
 */
async function plainContextLock() {
  const { AsyncLocalStorage, AsyncResource } = await import('node:async_hooks')
  const als = new AsyncLocalStorage()
  const framed = isFramed(als)
  function enterAndRun(lease) {
    als.enterWith(lease)
    return this(lease)
  }
  const inContext = framed
    ? (lease, fn) => new AsyncResource('plain-context-lock').runInAsyncScope(enterAndRun, fn, lease)
    : (lease, fn) => als.run(lease, fn, lease)
  // A held key's line: the resolvers of the holds waiting for it, first first.
  const lines = new Map()
  const release = (lease) => {
    lease.held = false
    const line = lines.get(lease.key)
    if (line.length === 0) lines.delete(lease.key)
    else line.shift()()
  }
  const runHeld = (key, fn) => {
    const lease = { key, parent: als.getStore(), held: true }
    let result
    try {
      result = inContext(lease, fn)
    } catch (error) {
      release(lease)
      return Promise.reject(error)
    }
    return Promise.resolve(result).then(
      (value) => {
        release(lease)
        return value
      },
      (error) => {
        release(lease)
        throw error
      },
    )
  }
  const hold = (key, fn) => {
    const line = lines.get(key)
    if (line === undefined) {
      lines.set(key, [])
      return runHeld(key, fn)
    }
    for (let l = als.getStore(); l !== undefined; l = l.parent) {
      if (l.key === key && l.held) return Promise.reject(new Error(`key ${key} is held by its own caller`))
    }
    return new Promise((resolve) => line.push(resolve)).then(() => runHeld(key, fn))
  }
  return {
    hold,
    holdWait: hold,
    semaphore: () => null,
    tryHold: async (key, fn) => (lines.has(key) ? NOT : { acquired: true, value: await hold(key, fn) }),
    live: () => lines.size,
    close: async () => {},
  }
}

// ---------------------------------------------------------------- remote adapters (R1-R3)
//
// A lock service reached over loopback, from a client process. The interface of the remote workloads:
//
//   hold(key, fn)          waits for key as long as it takes, runs fn, lets go; resolves to fn's result
//   tryHold(key, fn)       never waits: { acquired: false } or { acquired: true, value }
//   sync(key, count)       resolves once everything this client sent before has reached the server
//                          (a round trip on the same connection, answered in order, through the
//                          client's hold path where it can); with `count`, for holdfast, to the number
//                          of holds waiting in line for key as the server then saw it
//   fifo                   whether the library promises first-come, first-served (a FIFO violation
//                          fails only such a library; for the others it is reported)
//   close()                async; ends the client (holdfast: says goodbye, which lets its leases go)
//
// Lock keys live under one name: holdfast's lock 'bench', Redis keys 'bench:KEY' (redis-semaphore adds
// its own 'mutex:' prefix), so that the parent can count what is left on the server after a measurement.

export const REMOTE_ADAPTERS = ['ws-echo', 'ws-lock', 'holdfast', 'holdfast-b', 'holdfast-redis', 'holdfast-redis-b', 'redis-fifo-floor', 'redis-semaphore', 'redlock']

/** The remote adapters that need redis-server. */
export const usesRedis = (name) => name === 'redis-semaphore' || name === 'redlock' || name.startsWith('holdfast-redis') || name === 'redis-fifo-floor'

export const REMOTE_DESCRIPTIONS = {
  'ws-echo': 'no lock: one round trip of a 40-byte binary WebSocket message (ws for the handshake; a turn\'s messages framed by hand into one write, both ways, as holdfast\'s Node transport does) to an echo server in its own process, then fn (the floor of a lock service with one round trip per hold; its checks are expected to fail)',
  'ws-lock': 'the simplest FIFO lock service over the same transport as ws-echo: a hold is one round trip (the server answers when the key is free, holders in line in the order they came), its release one message without an answer; no fences, ttl, renewal, token or codec (the floor of a FIFO lock service with one round trip per hold, under key contention too)',
  'holdfast': "connect(url, { token }); lock('bench', { ttl: '30s', wait: Infinity }).hold(key, fn); try = tryHold; server: openStore({ storage: memoryStorage() }).serve() in its own process",
  'holdfast-b': 'as holdfast, server and client from the package of HOLDFAST_PKG_B (installed as holdfast-b): the B of an A/B in one run',
  'holdfast-redis': "openRedisStore({ redis: ioredis client, prefix: 'bench' }) (holdfast/redis, on the same redis-server as the Redis libraries); lock('bench', { ttl: '30s', wait: Infinity }).hold(key, fn); try = tryHold",
  'holdfast-redis-b': 'as holdfast-redis, from the build in HOLDFAST_PKG_B (installed as holdfast-b): an A/B of two builds in one run',
  'redis-fifo-floor':
    "the least a FIFO lock with fences costs on Redis, as a floor: two Redis Functions (FUNCTION LOAD once, FCALL), acquire = HMGET, then TIME + HSET (free: holder, fence max(last + 1, ms × 1024)) or RPUSH + HINCRBY (in line); release = HMGET, then HDEL (nobody waits) or LPOP + TIME + HSET + PUBLISH to the next holder's process (one subscriber connection a process); no ttl, lease expiry, request ids asked again, tombstones, maxHold, key expiry or LOCK-04 context: not a lock to use, the floor of what those cost",
  'redis-semaphore': 'new Mutex(client, key, { lockTimeout: 10s, acquireTimeout: 60s, retryInterval: 10ms }) per hold; acquire/release; try = tryAcquire()',
  'redlock': 'new Redlock([client], { retryCount: -1, retryDelay: 10, retryJitter: 5 }); acquire([key], 10s)/release; try = { retryCount: 0 }',
}

/**
 * `ws.send` as holdfast's Node transport sends (npm/src/transport-ws.ts): the messages of one
 * event-loop turn are framed by hand (RFC 6455; a client's masked, a key per message from a crypto
 * pool) into one buffer, written once in the turn's check phase, so that the floor gets the same
 * batching and the same cost per message. Kept apart from holdfast's code so that the floor stays the
 * same whichever build is measured.
 */
export function corkedSend(ws) {
  // Bun's net sockets under ws have no cork: there, each message is its own write, as in holdfast.
  const raw = ws._socket
  if (typeof raw?.cork !== 'function' || Object.keys(ws._extensions ?? {}).length > 0) return (data) => ws.send(data)
  const masked = !ws._isServer
  let pool = Buffer.alloc(0)
  let used = 0
  let queue = []
  const flush = () => {
    const messages = queue
    queue = []
    let size = 0
    for (const m of messages) size += m.length + (m.length > 125 ? 4 : 2) + (masked ? 4 : 0)
    const out = Buffer.allocUnsafe(size)
    let at = 0
    for (const m of messages) {
      out[at++] = 0x82
      if (m.length > 125) {
        out[at++] = (masked ? 0x80 : 0) | 126
        out.writeUInt16BE(m.length, at)
        at += 2
      } else out[at++] = (masked ? 0x80 : 0) | m.length
      if (!masked) {
        out.set(m, at)
        at += m.length
        continue
      }
      if (used === pool.length) {
        pool = crypto.getRandomValues(Buffer.alloc(4096))
        used = 0
      }
      const key = pool.subarray(used, (used += 4))
      out.set(key, at)
      at += 4
      for (let i = 0; i < m.length; i++) out[at + i] = m[i] ^ key[i & 3]
      at += m.length
    }
    if (ws.readyState === 1) raw.write(out)
  }
  return (data) => {
    if (data.length > 16 * 1024) throw new Error('corkedSend: the floor sends small messages only')
    if (queue.length === 0) setImmediate(flush)
    queue.push(data)
  }
}

/**
 * ws-lock's messages: `[op: u8][id: u32 LE][key: UTF-8]` from a client; `[id: u32 LE][granted: u8]`
 * from the server, for every op but a release (which is not answered).
 */
export const WS_LOCK = { hold: 1, try: 2, release: 3, sync: 4 }

const utf8 = new TextEncoder()

function wsLockMessage(op, id, key) {
  const k = utf8.encode(key)
  const m = Buffer.allocUnsafe(5 + k.length)
  m[0] = op
  m.writeUInt32LE(id, 1)
  m.set(k, 5)
  return m
}

/**
 * `ws-lock`'s client over `send` (a connection's sender): one round trip a hold, the server answering
 * it (by its id) once the key is this holder's; a release is one message without an answer. `message`
 * takes the server's messages (Buffers). Also what `client.mjs floor` times.
 */
export function wsLockClient(send) {
  const answers = new Map() // id -> resolve(granted)
  let next = 1
  const ask = (op, key) =>
    new Promise((resolve) => {
      const id = next++
      answers.set(id, resolve)
      send(wsLockMessage(op, id, key))
    })
  const release = (key) => send(wsLockMessage(WS_LOCK.release, 0, key))
  return {
    fifo: true,
    message: (data) => {
      const id = data.readUInt32LE(0)
      const resolve = answers.get(id)
      answers.delete(id)
      resolve(data[4] === 1)
    },
    hold: async (key, fn) => {
      await ask(WS_LOCK.hold, key)
      try {
        return await fn()
      } finally {
        release(key)
      }
    },
    tryHold: async (key, fn) => {
      if (!(await ask(WS_LOCK.try, key))) return NOT
      try {
        return { acquired: true, value: await fn() }
      } finally {
        release(key)
      }
    },
    sync: async (key) => {
      await ask(WS_LOCK.sync, key)
      return undefined
    },
  }
}

/** Version text of a remote adapter's packages, or null when one is not installed. */
export function remoteVersion(name) {
  if (name === 'holdfast' || name === B) return packageInfo(name)?.version ?? null
  if (name === 'holdfast-redis') return packageInfo('holdfast') && packageInfo('ioredis') ? `${packageInfo('holdfast').version} + ioredis ${packageInfo('ioredis').version}` : null
  if (name === 'holdfast-redis-b') return packageInfo('holdfast-b') && packageInfo('ioredis') ? `${packageInfo('holdfast-b').version} (B) + ioredis ${packageInfo('ioredis').version}` : null
  if (name === 'redis-fifo-floor') return packageInfo('ioredis') ? `- + ioredis ${packageInfo('ioredis').version}` : null
  if (name === 'ws-echo' || name === 'ws-lock') return packageInfo('ws')?.version ?? null
  const lib = packageInfo(name)
  const ioredis = packageInfo('ioredis')
  return lib && ioredis ? `${lib.version} + ioredis ${ioredis.version}` : null
}

/** A `ws` WebSocket to `url` of a floor's server, once open. */
async function openWebSocket(url) {
  const { WebSocket } = await import('ws')
  const ws = new WebSocket(url)
  await new Promise((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('error', reject)
  })
  return ws
}

/** A remote adapter, made inside the client process that uses it: `{ url, token }` for holdfast, `{ redis }` (a redis:// URL) for the others. */
export async function makeRemoteAdapter(name, { url, token, redis }) {
  switch (name) {
    case 'ws-echo': {
      // Echoes come back in the order the messages were sent: answer the oldest waiter.
      const ws = await openWebSocket(url)
      const waiting = []
      let head = 0
      ws.on('message', () => {
        const resolve = waiting[head]
        waiting[head++] = undefined
        if (head === waiting.length) waiting.length = head = 0
        resolve()
      })
      const message = new Uint8Array(40)
      const send = corkedSend(ws)
      const roundTrip = () =>
        new Promise((resolve) => {
          waiting.push(resolve)
          send(message)
        })
      return {
        fifo: false,
        hold: async (key, fn) => {
          await roundTrip()
          return await fn()
        },
        tryHold: async (key, fn) => {
          await roundTrip()
          return { acquired: true, value: await fn() }
        },
        sync: async () => {
          await roundTrip()
          return undefined
        },
        close: async () => {
          ws.close()
        },
      }
    }

    case 'ws-lock': {
      const ws = await openWebSocket(url)
      const client = wsLockClient(corkedSend(ws))
      ws.on('message', client.message)
      return { ...client, close: async () => ws.close() }
    }

    case 'holdfast':
    case 'holdfast-b': {
      const { connect } = await import(name)
      const remote = await connect(url, { token })
      const l = remote.lock('bench', { ttl: '30s', wait: Infinity })
      return {
        fifo: true,
        hold: (key, fn) => l.hold(key, fn),
        tryHold: (key, fn) => l.tryHold(key, fn),
        // Both round trips travel on the same connection as the holds sent before them, and the
        // server answers the frames of one connection in order: the answer comes after theirs were
        // handled. The plain one is a tryHold of another key, so that, as `ws-lock`'s sync runs its
        // client's hold path, this one runs holdfast's: an inspect() after every holder (until
        // session 22) left the hold path to be compiled inside R2's timed batches, 1.1x slower on
        // Bun (tests/bench/README.md, session 22). With `count`, an inspect() reads the line too.
        sync: async (key, count) => {
          if (!count) {
            await l.tryHold(`sync:${key}`, () => {})
            return undefined
          }
          const entries = await remote.inspect()
          return entries.find((e) => e.name === 'bench' && e.key === key)?.waiting ?? 0
        },
        close: () => remote.close(),
      }
    }

    case 'holdfast-redis':
    case 'holdfast-redis-b': {
      const { openRedisStore } = await import(name === 'holdfast-redis' ? 'holdfast/redis' : 'holdfast-b/redis')
      const { default: Redis } = await import('ioredis')
      const client = new Redis(redis, { lazyConnect: true })
      await client.connect()
      const store = await openRedisStore({ redis: client, prefix: 'bench' })
      const l = store.lock('bench', { ttl: '30s', wait: Infinity })
      return {
        fifo: true,
        hold: (key, fn) => l.hold(key, fn),
        tryHold: (key, fn) => l.tryHold(key, fn),
        // inspect() goes on the client's one connection after the holds sent before it: Redis runs
        // them first, so its answer counts them.
        sync: async (key) => {
          const entries = await store.inspect()
          return entries.find((e) => e.name === 'bench' && e.key === key)?.waiting ?? 0
        },
        close: async () => {
          await store.close()
          await client.quit()
        },
      }
    }

    case 'redis-fifo-floor':
      return fifoFloor(redis)

    case 'redis-semaphore':
    case 'redlock': {
      const { default: Redis } = await import('ioredis')
      const client = new Redis(redis, { lazyConnect: true, maxRetriesPerRequest: 1 })
      await client.connect()
      // ioredis sends each command at once, in order, on one connection: a PING answered after a
      // command was sent means that command reached the server first.
      const sync = async () => {
        await client.ping()
        return undefined
      }
      const close = async () => {
        await client.quit()
      }
      if (name === 'redis-semaphore') {
        const { Mutex } = await import('redis-semaphore')
        const OPTIONS = { lockTimeout: 10_000, acquireTimeout: 60_000, retryInterval: 10 }
        const TRY = { ...OPTIONS, acquireAttemptsLimit: 1 }
        return {
          fifo: false,
          hold: async (key, fn) => {
            const m = new Mutex(client, `bench:${key}`, OPTIONS)
            await m.acquire()
            try {
              return await fn()
            } finally {
              await m.release()
            }
          },
          tryHold: async (key, fn) => {
            const m = new Mutex(client, `bench:${key}`, TRY)
            if (!(await m.tryAcquire())) return NOT
            try {
              return { acquired: true, value: await fn() }
            } finally {
              await m.release()
            }
          },
          sync,
          close,
        }
      }
      const { default: Redlock, ExecutionError } = await import('redlock')
      const redlock = new Redlock([client], { retryCount: -1, retryDelay: 10, retryJitter: 5 })
      // Redlock emits 'error' for every attempt that found the key locked; unheard, an EventEmitter
      // would throw it (redlock's README says to listen).
      redlock.on('error', () => {})
      const TRY = { retryCount: 0 }
      return {
        fifo: false,
        hold: async (key, fn) => {
          const lock = await redlock.acquire([`bench:${key}`], 10_000)
          try {
            return await fn()
          } finally {
            await lock.release()
          }
        },
        tryHold: async (key, fn) => {
          let lock
          try {
            lock = await redlock.acquire([`bench:${key}`], 10_000, TRY)
          } catch (error) {
            if (error instanceof ExecutionError) return NOT
            throw error
          }
          try {
            return { acquired: true, value: await fn() }
          } finally {
            await lock.release()
          }
        },
        sync,
        close,
      }
    }

    default:
      throw new Error(`unknown remote adapter ${JSON.stringify(name)} (known: ${REMOTE_ADAPTERS.join(', ')})`)
  }
}

/**
 * redis-fifo-floor's Functions: a key's hash K (h: holder id, f: last fence, q: how many wait) and its
 * line L (a list of "id channel"). Fences as holdfast's: max(last + 1, server ms × 1024).
 */
export const FLOOR_LIBRARY = `#!lua name=benchfloor
local function fence(last)
  local t = redis.call('TIME')
  return math.max((tonumber(last) or 0) + 1, (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) * 1024)
end
redis.register_function('floor_acquire', function(keys, args)
  local g = redis.call('HMGET', keys[1], 'h', 'f', 'q')
  if not g[1] and not g[3] then
    local f = fence(g[2])
    redis.call('HSET', keys[1], 'h', args[1], 'f', f)
    return f
  end
  if args[3] == 'try' then return -1 end
  redis.call('RPUSH', keys[2], args[1] .. ' ' .. args[2])
  redis.call('HINCRBY', keys[1], 'q', 1)
  return 0
end)
redis.register_function('floor_release', function(keys, args)
  local g = redis.call('HMGET', keys[1], 'h', 'f', 'q')
  if g[1] ~= args[1] then return 0 end
  if not g[3] then
    redis.call('HDEL', keys[1], 'h')
    return 1
  end
  local rid, chan = string.match(redis.call('LPOP', keys[2]), '^(%S+) (%S+)$')
  local f = fence(g[2])
  local q = tonumber(g[3]) - 1
  if q == 0 then
    redis.call('HDEL', keys[1], 'q')
    redis.call('HSET', keys[1], 'h', rid, 'f', f)
  else
    redis.call('HSET', keys[1], 'h', rid, 'f', f, 'q', q)
  end
  redis.call('PUBLISH', chan, rid .. ' ' .. string.format('%.0f', f))
  return 1
end)
`

/** redis-fifo-floor: see its description. */
async function fifoFloor(url) {
  const { default: Redis } = await import('ioredis')
  const client = new Redis(url, { lazyConnect: true })
  await client.connect()
  try {
    await client.call('FUNCTION', 'LOAD', FLOOR_LIBRARY)
  } catch (error) {
    if (!/already exists/.test(error.message)) throw error
  }
  const channel = `floor:w:${process.pid}:${Math.random().toString(36).slice(2)}`
  const woken = new Map() // id -> resolve
  const sub = client.duplicate()
  sub.on('message', (_, text) => {
    const [id] = text.split(' ')
    const resolve = woken.get(id)
    woken.delete(id)
    resolve?.()
  })
  await sub.subscribe(channel)
  let next = 0
  const keys = (key) => [`bench:{f:${key}}:k`, `bench:{f:${key}}:l`]
  const take = async (key, id) => {
    const k = keys(key)
    const waited = new Promise((resolve) => woken.set(id, resolve))
    if ((await client.call('FCALL', 'floor_acquire', 2, ...k, id, channel)) !== 0) woken.delete(id)
    else await waited
    return k
  }
  const run = async (k, id, fn) => {
    try {
      return await fn()
    } finally {
      void client.call('FCALL', 'floor_release', 2, ...k, id)
    }
  }
  return {
    fifo: true,
    hold: async (key, fn) => {
      const id = `${process.pid}-${++next}`
      return run(await take(key, id), id, fn)
    },
    tryHold: async (key, fn) => {
      const id = `${process.pid}-${++next}`
      const k = keys(key)
      if ((await client.call('FCALL', 'floor_acquire', 2, ...k, id, channel, 'try')) === -1) return NOT
      return { acquired: true, value: await run(k, id, fn) }
    },
    sync: async () => {
      await client.ping()
      return undefined
    },
    close: async () => {
      sub.disconnect()
      await client.quit()
    },
  }
}
