// A process holding keys of a store kept in Redis — Node 20, Node 24 or Bun, with ioredis,
// node-redis or (under Bun) Bun's own RedisClient — driven by the test through stdin (one JSON command a line) and reporting through
// stdout (one JSON event a line, each with `t`, Date.now(), and `who`). Arguments: name, client kind
// (ioredis | node-redis | bun), Redis URL, store options as JSON.
//
// Commands:
//   { op: 'hold', id, lock, key, ttl?, wait?, maxHold?, semaphore?: limit }
//        -> asked { id }; granted { id, fence } when fn starts; fn runs until { op: 'release', id };
//           lost { id, error } when lease.signal aborts; done { id, ok, value|error } when hold settles
//   { op: 'release', id }                             -> fn returns
//   { op: 'write', id, db, row, value }               -> within hold id, a fenced write to SQLite:
//        UPDATE items SET value = ?, fence = ? WHERE id = ? AND fence < ?  -> wrote { id, changes, fence }
//   { op: 'sql', db, run: [[sql, ...args]], query? }  -> sql { rows }
//   { op: 'loop', lock, keys, count | ms, dir, workers, ttl?, wait?, holdMs? } -> `workers` tasks hold
//        keys in turn, `count` each or for `ms`; each fn checks exclusion through the file system (an
//        exclusive create of dir/KEY, removed on leaving) -> looped { holds, violations, errors: { code: n },
//        fences: { key: [fence...] } } (each key's fences in the order this process's fns started)
//   { op: 'claim', id, pool, capacity, n, wait?, claimId?, ttl? } -> claimAsked { id }; answered
//        { id, claimed, remaining, claimId } or answered { id, error } when it settles
//   { op: 'claims', pool, capacity, workers, count | ms, n?, wait?, holdMs?, prefix } -> `workers`
//        tasks claim `n` units under ids PREFIX-WORKER-I, `count` each or for `ms`; with holdMs, each
//        claimed one is released after holdMs -> claimed { kept: [[claimId, n]...] (answered claimed
//        and not released), unknown: [[claimId, n]...] (without holdMs: failed with an error, so
//        kept or not), released, refused, errors: { code: n } }
//   { op: 'remaining', pool, capacity } -> remaining { remaining }
//   { op: 'close' } -> closed;  { op: 'exit' } -> exits at once
import { openRedisStore } from 'holdfast/redis'
import { redisClient } from './helpers.js'
import { createInterface } from 'node:readline'
import fs from 'node:fs'
import path from 'node:path'

const [who, kind, url, optionsJson] = process.argv.slice(2)
const say = event => process.stdout.write(JSON.stringify({ ...event, who, t: Date.now() }) + '\n')
const describe = e => (e && typeof e === 'object' ? { name: e.constructor?.name, code: e.code, message: String(e.message) } : { message: String(e) })
process.on('unhandledRejection', e => say({ ev: 'unhandled', error: describe(e) }))
process.on('uncaughtException', e => say({ ev: 'unhandled', error: describe(e) }))

async function openDb(file) {
  if (process.versions.bun) {
    const { Database } = await import('bun:sqlite')
    const db = new Database(file)
    return { run: (sql, ...args) => db.prepare(sql).run(...args).changes, all: (sql, ...args) => db.prepare(sql).all(...args), close: () => db.close() }
  }
  const { DatabaseSync } = await import('node:sqlite')
  const db = new DatabaseSync(file)
  return { run: (sql, ...args) => Number(db.prepare(sql).run(...args).changes), all: (sql, ...args) => db.prepare(sql).all(...args).map(r => ({ ...r })), close: () => db.close() }
}

const store = await openRedisStore({ redis: await redisClient(null, url, kind), ...JSON.parse(optionsJson || '{}') })
const holds = new Map()

function handle(cmd) {
  const options = {}
  if (cmd.ttl !== undefined) options.ttl = cmd.ttl
  if (cmd.maxHold !== undefined) options.maxHold = cmd.maxHold
  if (cmd.semaphore !== undefined) return store.semaphore(cmd.lock, { ...options, limit: cmd.semaphore })
  return store.lock(cmd.lock, options)
}

function hold(cmd) {
  let release
  const released = new Promise(r => (release = r))
  handle(cmd)
    .hold(cmd.key, { wait: cmd.wait ?? Infinity }, async lease => {
      holds.set(cmd.id, { lease, release })
      lease.signal.addEventListener('abort', () => say({ ev: 'lost', id: cmd.id, fence: lease.fence, error: describe(lease.signal.reason) }))
      say({ ev: 'granted', id: cmd.id, key: lease.key, fence: lease.fence })
      await released
      return lease.fence
    })
    .then(
      value => say({ ev: 'done', id: cmd.id, ok: true, value }),
      error => say({ ev: 'done', id: cmd.id, ok: false, error: describe(error) }),
    )
    .finally(() => holds.delete(cmd.id))
  say({ ev: 'asked', id: cmd.id })
}

async function loop(cmd) {
  const lock = store.lock(cmd.lock, { ttl: cmd.ttl ?? 10_000 })
  const until = cmd.ms === undefined ? Infinity : Date.now() + cmd.ms
  let holds = 0
  let violations = 0
  const errors = {}
  const fences = {}
  await Promise.all(
    Array.from({ length: cmd.workers ?? 1 }, async (_, w) => {
      for (let i = 0; i < (cmd.count ?? Infinity) && Date.now() < until; i++) {
        const key = cmd.keys[(i * 7 + w * 3) % cmd.keys.length]
        try {
          await lock.hold(key, { wait: cmd.wait ?? Infinity }, async lease => {
            const marker = cmd.dir && path.join(cmd.dir, key)
            try {
              if (marker) fs.writeFileSync(marker, who, { flag: 'wx' })
            } catch {
              violations++
            }
            ;(fences[key] ??= []).push(lease.fence)
            await new Promise(r => setTimeout(r, cmd.holdMs ?? 1))
            if (marker) fs.rmSync(marker, { force: true })
            holds++
          })
        } catch (error) {
          // A hold that failed (Redis restarting: a lost lease, a wait that ran out) is counted, and the loop goes on.
          errors[error.code ?? 'other'] = (errors[error.code ?? 'other'] ?? 0) + 1
          if (cmd.dir) fs.rmSync(path.join(cmd.dir, key), { force: true })
        }
      }
    }),
  )
  say({ ev: 'looped', holds, violations, fences, errors })
}

function claim(cmd) {
  const options = { wait: cmd.wait ?? 0 }
  if (cmd.claimId !== undefined) options.id = cmd.claimId
  if (cmd.ttl !== undefined) options.ttl = cmd.ttl
  store
    .pool(cmd.pool, { capacity: cmd.capacity })
    .claim(cmd.n ?? 1, options)
    .then(
      r => say({ ev: 'answered', id: cmd.id, claimed: r.claimed, remaining: r.remaining, claimId: r.claim?.id }),
      error => say({ ev: 'answered', id: cmd.id, error: describe(error) }),
    )
  say({ ev: 'claimAsked', id: cmd.id })
}

async function claims(cmd) {
  const pool = store.pool(cmd.pool, { capacity: cmd.capacity })
  const until = cmd.ms === undefined ? Infinity : Date.now() + cmd.ms
  const kept = []
  const unknown = []
  let released = 0
  let refused = 0
  const errors = {}
  await Promise.all(
    Array.from({ length: cmd.workers ?? 1 }, async (_, w) => {
      for (let i = 0; i < (cmd.count ?? Infinity) && Date.now() < until; i++) {
        const id = `${cmd.prefix}-${w}-${i}`
        try {
          const r = await pool.claim(cmd.n ?? 1, { id, wait: cmd.wait ?? 0 })
          if (!r.claimed) {
            refused++
            continue
          }
          if (cmd.holdMs === undefined) {
            kept.push([id, cmd.n ?? 1])
            continue
          }
          await new Promise(r => setTimeout(r, cmd.holdMs))
          if (await r.claim.release()) released++
          else errors.notReleased = (errors.notReleased ?? 0) + 1
        } catch (error) {
          errors[error.code ?? 'other'] = (errors[error.code ?? 'other'] ?? 0) + 1
          // Its outcome is unknown (Redis may have kept it and died before answering): asked again
          // by id later, it answers its first outcome (POOL-03).
          if (cmd.holdMs === undefined) unknown.push([id, cmd.n ?? 1])
        }
      }
    }),
  )
  say({ ev: 'claimed', kept, unknown, released, refused, errors })
}

const dbs = new Map()
async function db(file) {
  if (!dbs.has(file)) dbs.set(file, await openDb(file))
  return dbs.get(file)
}

createInterface({ input: process.stdin }).on('line', async line => {
  const cmd = JSON.parse(line)
  try {
    switch (cmd.op) {
      case 'hold':
        return hold(cmd)
      case 'release':
        return holds.get(cmd.id)?.release()
      case 'write': {
        const h = holds.get(cmd.id)
        const d = await db(cmd.db)
        const changes = d.run('UPDATE items SET value = ?, fence = ? WHERE id = ? AND fence < ?', cmd.value, h.lease.fence, cmd.row, h.lease.fence)
        return say({ ev: 'wrote', id: cmd.id, changes, fence: h.lease.fence })
      }
      case 'sql': {
        const d = await db(cmd.db)
        for (const [sql, ...args] of cmd.run ?? []) d.run(sql, ...args)
        return say({ ev: 'sql', rows: cmd.query ? d.all(cmd.query) : [] })
      }
      case 'loop':
        return await loop(cmd)
      case 'claim':
        return claim(cmd)
      case 'claims':
        return await claims(cmd)
      case 'remaining':
        return say({ ev: 'remaining', remaining: await store.pool(cmd.pool, { capacity: cmd.capacity }).remaining() })
      case 'inspect':
        return say({ ev: 'inspected', entries: await store.inspect() })
      case 'close':
        await store.close()
        return say({ ev: 'closed' })
      case 'exit':
        process.exit(0)
    }
  } catch (error) {
    say({ ev: 'error', op: cmd.op, error: describe(error) })
  }
})
say({ ev: 'ready', server: store.server })
