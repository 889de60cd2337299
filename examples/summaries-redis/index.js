// Three processes writing summaries through one Redis, the fence kept in SQLite beside the row; a
// stalled holder refused. Starts its own redis-server unless REDIS_URL is set. Exits 0 only if every
// check held. See README.md.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { openRedisStore } from 'holdfast/redis'
import { openDb, saveSummary } from './db.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const runtime = typeof Bun !== 'undefined' ? `Bun ${Bun.version}` : `Node ${process.versions.node}`
const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-summaries-redis-'))
const children = []

function freePort() {
  return new Promise(resolve => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })
}

async function startRedis() {
  const port = await freePort()
  const redis = spawn(process.env.REDIS_SERVER || 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', ''], { stdio: 'ignore' })
  children.push(redis)
  let failed // redis-server could not be run (ENOENT: not installed)
  redis.on('error', error => (failed = error))
  const url = `redis://127.0.0.1:${port}`
  for (let i = 0; i < 200 && !failed; i++) {
    try {
      const store = await openRedisStore({ url })
      await store.close()
      return url
    } catch (error) {
      if (error.code !== 'closed') throw error // 'closed': not listening yet; anything else is ours to see
      await new Promise(r => setTimeout(r, 25))
    }
  }
  throw new Error(`redis-server did not start on ${url}`, { cause: failed })
}

/** Runs a worker process; resolves to its events once it is done. */
function worker(name, url, db, mode, onEvent = () => {}) {
  const child = spawn(process.execPath, [path.join(here, 'worker.js'), name, url, db, mode], { stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(child)
  const events = []
  createInterface({ input: child.stdout }).on('line', line => {
    const event = JSON.parse(line)
    events.push(event)
    onEvent(event)
  })
  return new Promise((resolve, reject) => child.on('exit', code => (code === 0 ? resolve(events) : reject(new Error(`${name} exited ${code}`)))))
}

try {
  const url = process.env.REDIS_URL || (await startRedis())
  const file = path.join(dir, 'summaries.db')
  const db = await openDb(file)
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('CREATE TABLE summaries (chat_id TEXT PRIMARY KEY, body TEXT, fence INTEGER NOT NULL)')
  db.exec('CREATE TABLE inside (chat TEXT PRIMARY KEY, who TEXT)') // one writer a chat, or the INSERT fails
  console.log(`holdfast summaries-redis example on ${runtime}, Redis at ${url}`)

  console.log('\n1) three processes, three chats, four rounds each: one writer per chat at a time')
  const runs = await Promise.all(['worker-a', 'worker-b', 'worker-c'].map(name => worker(name, url, file, 'summarise')))
  const writes = runs.flat().filter(e => e.ev === 'wrote')
  assert.equal(writes.length, 3 * 3 * 4)
  assert.ok(writes.every(w => w.ok), 'every current holder\'s write was accepted')
  for (const chat of ['chat-1', 'chat-2', 'chat-3']) {
    const fences = writes.filter(w => w.chat === chat).map(w => w.fence).sort((a, b) => a - b)
    assert.equal(new Set(fences).size, fences.length, `${chat}: no fence given twice`)
    assert.equal(db.get('SELECT fence FROM summaries WHERE chat_id = ?', [chat]).fence, fences.at(-1), `${chat}: the row has the last fence`)
  }
  console.log(`   ${writes.length} summaries written, each with a larger fence than the row had`)

  console.log('\n2) a holder frozen past its ttl loses the chat; its late write is refused by the fence')
  let next
  const stalled = worker('stalled', url, file, 'stall', event => {
    // Once it froze, another process asks for the chat: Redis gives it at the frozen lease's ttl.
    if (event.ev === 'freezing') {
      next = (async () => {
        const store = await openRedisStore({ url })
        try {
          return await store.lock('summaries').hold('chat-stall', { wait: '10s' }, lease => {
            assert.ok(saveSummary(db, 'chat-stall', 'written by the next holder', lease.fence))
            return lease.fence
          })
        } finally {
          await store.close() // closed whatever the hold answered
        }
      })()
      next.catch(() => {}) // awaited below, after the stalled worker: a failure is thrown there, not unhandled
    }
  })
  const events = await stalled
  const late = events.find(e => e.ev === 'late-write')
  const nextFence = await next
  assert.ok(nextFence > late.fence, 'the next holder has a larger fence')
  assert.equal(late.ok, false, 'the late write was refused')
  assert.equal(db.get('SELECT body FROM summaries WHERE chat_id = ?', ['chat-stall']).body, 'written by the next holder')
  console.log(`   the stalled holder (fence ${late.fence}) wrote late: refused; the row keeps fence ${nextFence}`)
  console.log('\nall checks passed')
} finally {
  for (const c of children) c.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
}
