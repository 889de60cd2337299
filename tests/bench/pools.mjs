// Pools benchmark (#16): claims per second on one pool, holdfast's in-process store beside the obvious
// alternative a user writes, SQLite: one `UPDATE pools SET remaining = remaining - ? WHERE name = ? AND
// remaining >= ?` a claim, in a database in WAL mode with synchronous=FULL (every answered claim on
// disk, as holdfast's). Run with `bash tests/bench/pools.sh` (installs holdfast as run.sh does).
//
// Method
//   - The workload, P1 "tickets": a pool of N units sold out by K buyers at once, each claiming 1 unit
//     at a time with an id of its own (an order id), until none is left. Every claim answered
//     `claimed: true` is durable when answered. Checks: exactly N claims succeed, none oversold, the
//     pool ends at 0 (and, for holdfast, reads back N claims after a reopen).
//   - Each measurement is a fresh child process (`pools.mjs --child ADAPTER`), timed with
//     performance.now() from the first claim to the last answer; rounds interleave the adapters, the
//     order reversed every other round; claims/s is the median over rounds, with [min..max].
//   - Adapters: `holdfast` (fileStorage in a temp dir: group commit, one write a turn), `holdfast-memory`
//     (memoryStorage: no disk, the engine's own cost), `holdfast-served` (the same store on fileStorage,
//     served on 127.0.0.1, and the K buyers claiming through one `connect()` from the same process: the
//     cost of the connection on top), `sqlite` (node:sqlite on Node 24, bun:sqlite on
//     Bun: the same SQLite; a claim is one autocommit transaction), and `better-sqlite3` (the same, through
//     better-sqlite3, when it is installed in tests/bench: a native module, so not in package.json). SQLite's calls are synchronous, so K
//     buyers at once do not share its commits: that is the alternative as users write it.
//   - Speeds are printed, never asserted. A failed check exits 1.
//
// Environment: BENCH_ROUNDS (default 3), BENCH_POOL_N (units, default 20000), BENCH_POOL_K (buyers at
// once, default 100), BENCH_ADAPTERS (default holdfast,holdfast-memory,holdfast-served,sqlite).
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const env = process.env
const N = Number(env.BENCH_POOL_N ?? 20_000)
const K = Number(env.BENCH_POOL_K ?? 100)
const isBun = typeof process.versions.bun === 'string'

if (process.argv[2] === '--child') await child(process.argv[3])
else process.exitCode = parent()

async function child(name) {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-bench-pools-'))
  try {
    const adapter = await open(name, dir)
    let next = 0
    let claimed = 0
    let refused = 0
    const buyer = async () => {
      for (;;) {
        const id = `order-${next++}`
        const ok = await adapter.claim(id)
        if (ok) claimed++
        else {
          refused++
          return
        }
      }
    }
    const started = performance.now()
    await Promise.all(Array.from({ length: K }, buyer))
    const ms = performance.now() - started
    const remaining = await adapter.remaining()
    const readBack = await adapter.reopen?.()
    await adapter.close()
    const checks = {
      'sold out exactly': claimed === N && remaining === 0,
      'every buyer told once': refused === K,
      ...(readBack === undefined ? {} : { 'read back after a reopen': readBack === 0 }),
    }
    process.stdout.write(`RESULT ${JSON.stringify({ name, ms, claims: claimed, checks })}\n`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function open(name, dir) {
  if (name === 'sqlite' || name === 'better-sqlite3') return openSqlite(dir, name)
  const { openStore, fileStorage, memoryStorage, connect } = await import('holdfast')
  const storage = () => (name === 'holdfast-memory' ? memoryStorage() : fileStorage(dir))
  let store = await openStore({ storage: storage() })
  let pool = store.pool('tickets', { capacity: N })
  if (name === 'holdfast-served') {
    const token = 'bench-token-0123456789abcdef'
    const server = await store.serve({ port: 0, token })
    const remote = await connect(server.url, { token })
    const remotePool = remote.pool('tickets', { capacity: N })
    return {
      claim: async id => (await remotePool.claim(1, { id })).claimed,
      remaining: () => remotePool.remaining(),
      close: async () => (await remote.close(), await store.close()),
    }
  }
  return {
    claim: async id => (await pool.claim(1, { id })).claimed,
    remaining: () => pool.remaining(),
    reopen:
      name === 'holdfast'
        ? async () => {
            await store.close()
            store = await openStore({ storage: storage() })
            pool = store.pool('tickets', { capacity: N })
            return pool.remaining()
          }
        : undefined,
    close: () => store.close(),
  }
}

async function openSqlite(dir, name) {
  const file = join(dir, 'pools.db')
  let db
  if (name === 'better-sqlite3') {
    const { default: Database } = await import('better-sqlite3')
    db = new Database(file)
  } else if (isBun) {
    const { Database } = await import('bun:sqlite')
    db = new Database(file)
    db.exec = db.exec ?? db.run
  } else {
    const { DatabaseSync } = await import('node:sqlite')
    db = new DatabaseSync(file)
  }
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('PRAGMA synchronous = FULL')
  db.exec('CREATE TABLE pools (name TEXT PRIMARY KEY, remaining INTEGER NOT NULL)')
  db.prepare('INSERT INTO pools (name, remaining) VALUES (?, ?)').run('tickets', N)
  const update = db.prepare('UPDATE pools SET remaining = remaining - ? WHERE name = ? AND remaining >= ?')
  const read = db.prepare('SELECT remaining FROM pools WHERE name = ?')
  return {
    // An async function, as a user's claim handler is; the statement itself is synchronous.
    claim: async () => Number(update.run(1, 'tickets', 1).changes) === 1,
    remaining: async () => Number(read.get('tickets').remaining),
    close: async () => db.close(),
  }
}

function parent() {
  const rounds = Number(env.BENCH_ROUNDS ?? 3)
  const adapters = (env.BENCH_ADAPTERS ?? `holdfast,holdfast-memory,holdfast-served,sqlite${hasBetterSqlite() ? ',better-sqlite3' : ''}`).split(',')
  const runtime = process.execPath
  const results = Object.fromEntries(adapters.map(a => [a, []]))
  let failed = false
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? adapters : [...adapters].reverse()
    for (const name of order) {
      const run = spawnSync(runtime, [fileURLToPath(import.meta.url), '--child', name], { encoding: 'utf8', env })
      const line = run.stdout.split('\n').find(l => l.startsWith('RESULT '))
      if (!line) {
        failed = true
        console.error(`${name}: no result (exit ${run.status}): ${run.stderr}`)
        continue
      }
      const r = JSON.parse(line.slice(7))
      for (const [check, ok] of Object.entries(r.checks)) {
        if (!ok) {
          failed = true
          console.error(`${name}: check FAILED: ${check}`)
        }
      }
      results[name].push((r.claims / r.ms) * 1000)
    }
  }
  const median = xs => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const runtimeName = isBun ? `bun ${process.versions.bun}` : `node ${process.version}`
  console.log(`P1 tickets: ${N} units sold out by ${K} buyers at once, 1 unit a claim with an order id; ${rounds} rounds, ${runtimeName}`)
  for (const name of adapters) {
    const xs = results[name]
    if (xs.length === 0) continue
    const fmt = x => Math.round(x).toLocaleString('en')
    console.log(`  ${name.padEnd(16)} ${fmt(median(xs)).padStart(10)} claims/s  [${fmt(Math.min(...xs))}..${fmt(Math.max(...xs))}]`)
  }
  if (results.holdfast?.length && results.sqlite?.length) {
    console.log(`  holdfast (fileStorage) / sqlite (WAL, synchronous=FULL): ${(median(results.holdfast) / median(results.sqlite)).toFixed(1)}x`)
  }
  if (results.holdfast?.length && results['better-sqlite3']?.length) {
    console.log(`  holdfast (fileStorage) / better-sqlite3 (WAL, synchronous=FULL): ${(median(results.holdfast) / median(results['better-sqlite3'])).toFixed(1)}x`)
  }
  if (results['holdfast-served']?.length && results.sqlite?.length) {
    console.log(`  holdfast served (fileStorage, one connection) / sqlite: ${(median(results['holdfast-served']) / median(results.sqlite)).toFixed(1)}x`)
  }
  return failed ? 1 : 0
}

/** Whether better-sqlite3 is installed (a native module: `npm install --no-save better-sqlite3` in tests/bench; not on Bun). */
function hasBetterSqlite() {
  if (isBun) return false
  try {
    createRequire(import.meta.url).resolve('better-sqlite3')
    return true
  } catch {
    return false
  }
}
