// A client of a store's server in its own process — Node 20, Node 24, Node 26 or Bun — driven by the test
// through stdin, one JSON command a line, and reporting through stdout, one JSON event a line (each
// with `t`, Date.now(), and `who`, the agent's name). It uses the package as a user would:
// `connect(url, { token })`, `lock(...).hold(key, fn)`, `lease.signal`, `close()`.
//
// Commands:
//   { op: 'connect', url, token? }                   -> connected | connect-error { error }
//   { op: 'hold', id, lock, key, ttl?, wait?, maxHold?, semaphore?: limit }
//        holds the key: granted { id, fence } when fn starts; fn runs until { op: 'release', id };
//        lost { id, error, aborted } when lease.signal aborts; done { id, ok, value|error } when hold settles
//   { op: 'release', id }                             -> fn returns
//   { op: 'watch', id, every?, gap? }                  -> within hold id, a tick every `every` ms (10); the
//        first tick that comes `gap` ms (300) or more after the one before (the first after a pause)
//        reads the lease as a holder's loop would — a signal kept from before, then lease.lost — and
//        says tick { id, gap, aborted, lost }; ticking stops then
//   { op: 'write', id, db, row, value }               -> within hold id, a fenced write to SQLite:
//        UPDATE items SET value = ?, fence = ? WHERE id = ? AND fence < ?  -> wrote { id, changes, fence, aborted }
//   { op: 'sql', db, run: [[sql, ...args]], query? }  -> sql { rows } (setting up and reading the database)
//   { op: 'loop', lock, keys, count, dir, offset, ttl? } -> holds `count` keys in turn (from `offset`), each
//        fn checks exclusion through the file system (see below) -> looped { holds, violations }
//   { op: 'inspect' }                                 -> inspected { entries }
//   { op: 'close' }                                   -> closed (after remote.close(): goodbye)
//   { op: 'exit' }                                    -> exits at once
import { connect } from 'holdfast'
import { createInterface } from 'node:readline'
import fs from 'node:fs'
import path from 'node:path'

const who = process.argv[2] ?? `agent-${process.pid}`
const say = event => process.stdout.write(JSON.stringify({ ...event, who, t: Date.now() }) + '\n')
const describe = e => (e && typeof e === 'object' ? { name: e.constructor?.name, code: e.code, message: String(e.message) } : { message: String(e) })
const sleep = ms => new Promise(r => setTimeout(r, ms))

let remote
const holds = new Map() // id -> { lease, release() }

process.on('unhandledRejection', e => say({ ev: 'unhandled', error: describe(e) }))
process.on('uncaughtException', e => say({ ev: 'unhandled', error: describe(e) }))

/** SQLite: node:sqlite (Node 22.5+), bun:sqlite (Bun), or better-sqlite3 (Node 20), whichever there is. */
async function openDb(file) {
  if (process.versions.bun) {
    const { Database } = await import('bun:sqlite')
    const db = new Database(file)
    return { run: (sql, ...args) => db.prepare(sql).run(...args).changes, all: (sql, ...args) => db.prepare(sql).all(...args), close: () => db.close() }
  }
  try {
    const { DatabaseSync } = await import('node:sqlite')
    const db = new DatabaseSync(file)
    return { run: (sql, ...args) => Number(db.prepare(sql).run(...args).changes), all: (sql, ...args) => db.prepare(sql).all(...args).map(r => ({ ...r })), close: () => db.close() }
  } catch {
    const { default: Database } = await import('better-sqlite3')
    const db = new Database(file)
    return { run: (sql, ...args) => db.prepare(sql).run(...args).changes, all: (sql, ...args) => db.prepare(sql).all(...args), close: () => db.close() }
  }
}

function handle(cmd) {
  const options = {}
  if (cmd.ttl !== undefined) options.ttl = cmd.ttl
  if (cmd.maxHold !== undefined) options.maxHold = cmd.maxHold
  if (cmd.semaphore !== undefined) return remote.semaphore(cmd.lock, { ...options, limit: cmd.semaphore })
  return remote.lock(cmd.lock, options)
}

function hold(cmd) {
  let release
  const released = new Promise(r => (release = r))
  const holdOptions = { wait: cmd.wait ?? Infinity }
  handle(cmd)
    .hold(cmd.key, holdOptions, async lease => {
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
}

/**
 * Exclusion through the file system, across processes: inside fn, `KEY.inside` is created with
 * O_EXCL (it exists only while someone is inside: if it is already there, two holders are in at
 * once — a violation), the counter `KEY.count` is read, bumped after a short pause and written back
 * (a lost update would show two holders too), and `lock fence who` is appended to `KEY.log`.
 */
async function loop(cmd) {
  let holds = 0
  let violations = 0
  const lock = handle(cmd)
  for (let i = 0; i < cmd.count; i++) {
    const key = cmd.keys[(i + (cmd.offset ?? 0)) % cmd.keys.length]
    await lock.hold(key, { wait: Infinity }, async lease => {
      const inside = path.join(cmd.dir, `${key}.inside`)
      let fd
      try {
        fd = fs.openSync(inside, 'wx')
      } catch {
        violations++
        say({ ev: 'violation', key, fence: lease.fence })
      }
      const countFile = path.join(cmd.dir, `${key}.count`)
      const count = Number(fs.existsSync(countFile) ? fs.readFileSync(countFile, 'utf8') : 0)
      await sleep(i % 3)
      fs.writeFileSync(countFile, String(count + 1))
      fs.appendFileSync(path.join(cmd.dir, `${key}.log`), `${lease.fence} ${who}\n`)
      if (fd !== undefined) {
        fs.closeSync(fd)
        fs.unlinkSync(inside)
      }
      holds++
    })
  }
  say({ ev: 'looped', holds, violations })
}

createInterface({ input: process.stdin }).on('line', async line => {
  if (!line.trim()) return
  const cmd = JSON.parse(line)
  try {
    switch (cmd.op) {
      case 'connect':
        try {
          remote = await connect(cmd.url, cmd.token === undefined ? {} : { token: cmd.token })
          say({ ev: 'connected' })
        } catch (error) {
          say({ ev: 'connect-error', error: describe(error) })
        }
        break
      case 'hold':
        hold(cmd)
        say({ ev: 'asked', id: cmd.id })
        break
      case 'release':
        holds.get(cmd.id)?.release()
        break
      case 'watch': {
        const { lease } = holds.get(cmd.id)
        const signal = lease.signal
        let last = Date.now()
        const ticking = setInterval(() => {
          const now = Date.now()
          const gap = now - last
          last = now
          if (gap < (cmd.gap ?? 300)) return
          const aborted = signal.aborted
          const lost = lease.lost
          clearInterval(ticking)
          say({ ev: 'tick', id: cmd.id, gap, aborted, lost })
        }, cmd.every ?? 10)
        say({ ev: 'watching', id: cmd.id })
        break
      }
      case 'write': {
        const h = holds.get(cmd.id)
        const db = await openDb(cmd.db)
        const fence = h.lease.fence
        const changes = db.run('UPDATE items SET value = ?, fence = ? WHERE id = ? AND fence < ?', cmd.value, fence, cmd.row, fence)
        db.close()
        say({ ev: 'wrote', id: cmd.id, changes, fence, aborted: h.lease.signal.aborted, lost: h.lease.lost })
        break
      }
      case 'sql': {
        const db = await openDb(cmd.db)
        for (const [sql, ...args] of cmd.run ?? []) db.run(sql, ...args)
        const rows = cmd.query ? db.all(cmd.query) : []
        db.close()
        say({ ev: 'sql', rows })
        break
      }
      case 'loop':
        await loop(cmd)
        break
      case 'inspect':
        say({ ev: 'inspected', entries: await remote.inspect() })
        break
      case 'close':
        await remote.close()
        say({ ev: 'closed' })
        break
      case 'exit':
        process.exit(0)
    }
  } catch (error) {
    say({ ev: 'error', op: cmd.op, id: cmd.id, error: describe(error) })
  }
})
say({ ev: 'ready', pid: process.pid, runtime: process.versions.bun ? `bun ${process.versions.bun}` : `node ${process.version}` })
