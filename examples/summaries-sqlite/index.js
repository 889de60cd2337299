// One summary per chat at a time, with a fence in SQL.
//
// Every summary row keeps the fence of the lease that wrote it, and every write is
// conditional on its own fence being larger. A holder that stalled past its maxHold
// (and so lost the key to the next holder) is refused by SQLite itself: its write
// changes 0 rows.
//
// Run: `npm install && npm start` (Node) or `bun index.js` (Bun, after `npm install`).
// Exits 0 only if every check held.

import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStore, fileStorage, LostError } from 'holdfast'
import { openDb } from './db.js'

const runtime = typeof Bun !== 'undefined' ? `Bun ${Bun.version}` : `Node ${process.versions.node}`

// ---------------------------------------------------------------- the guarded writes

const SCHEMA = `
  CREATE TABLE summaries (
    chat_id TEXT PRIMARY KEY,
    body    TEXT,
    fence   INTEGER NOT NULL   -- the fence of the lease that wrote this row
  )`

// Insert or replace a chat's summary, but only with a larger fence than the row has.
// Answers true if the row was written, false if the write came late and was refused.
function saveSummary(db, chatId, body, fence) {
  const changed = db.run(
    `INSERT INTO summaries (chat_id, body, fence) VALUES (?, ?, ?)
     ON CONFLICT (chat_id) DO UPDATE SET body = excluded.body, fence = excluded.fence
     WHERE excluded.fence > summaries.fence`,
    [chatId, body, fence],
  )
  return changed === 1
}

// The same guard as a plain UPDATE, for a row that already exists.
function updateSummary(db, chatId, body, fence) {
  const changed = db.run(
    `UPDATE summaries SET body = ?, fence = ? WHERE chat_id = ? AND fence < ?`,
    [body, fence, chatId, fence],
  )
  return changed === 1
}

function readSummary(db, chatId) {
  return db.get(`SELECT chat_id, body, fence FROM summaries WHERE chat_id = ?`, [chatId])
}

// ---------------------------------------------------------------- helpers

// A sleep that stops early (rejecting with the signal's reason) if the signal aborts:
// a well-behaved holder hands lease.signal to its slow work.
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

function deferred() {
  let resolve
  const promise = new Promise(r => (resolve = r))
  return { promise, resolve }
}

// Fails the step, instead of hanging, if something never happens.
async function within(ms, what, promise) {
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

const log = (...args) => console.log(...args)
let checks = 0
function check(cond, message) {
  assert.ok(cond, message)
  checks++
}

// ---------------------------------------------------------------- the program

async function main(dir) {
  const locksDir = join(dir, 'locks')
  const db = await openDb(join(dir, 'summaries.db'))
  db.exec(SCHEMA)
  log(`holdfast summaries example on ${runtime} with ${db.driver}`)
  log(`  temp dir: ${dir}`)

  const everyFence = [] // every fence handed out by the first store, in the order fns ran

  // 1. Open a store whose fences persist in a directory.
  let store = await openStore({ storage: fileStorage(locksDir) })
  try {
    const summaries = store.lock('summaries', { maxHold: '2m', wait: '10s' })

    // 2. Several concurrent summarisers per chat: only one runs per chat at a time.
    log('\n1) concurrent summarisers, 3 chats x 5 writers')
    const chats = ['chat-1', 'chat-2', 'chat-3']
    const inside = new Map(chats.map(c => [c, 0]))
    const maxInside = new Map(chats.map(c => [c, 0]))
    const fencesByChat = new Map(chats.map(c => [c, []]))
    let insideAll = 0
    let maxInsideAll = 0
    let written = 0

    const jobs = []
    for (let i = 0; i < 5; i++) {
      for (const chatId of chats) {
        jobs.push(
          summaries.hold(chatId, async lease => {
            inside.set(chatId, inside.get(chatId) + 1)
            maxInside.set(chatId, Math.max(maxInside.get(chatId), inside.get(chatId)))
            maxInsideAll = Math.max(maxInsideAll, ++insideAll)
            try {
              check(Number.isSafeInteger(lease.fence) && lease.fence >= 1, `fence is a safe integer: ${lease.fence}`)
              check(lease.key === chatId, `lease.key is ${chatId}`)
              everyFence.push(lease.fence)
              fencesByChat.get(chatId).push(lease.fence)

              await sleep(15 + 5 * i, lease.signal) // "call the model", giving it the signal
              const ok = saveSummary(db, chatId, `summary ${i} of ${chatId}`, lease.fence)
              check(ok, `the current holder's write to ${chatId} (fence ${lease.fence}) is accepted`)
              written++
              return lease.fence
            } finally {
              inside.set(chatId, inside.get(chatId) - 1)
              insideAll--
            }
          }),
        )
      }
    }
    const results = await within(10_000, 'the concurrent holds to finish', Promise.all(jobs))
    check(results.length === 15 && written === 15, 'all 15 holds ran and wrote')

    for (const chatId of chats) {
      const fences = fencesByChat.get(chatId)
      log(`  ${chatId}: at most ${maxInside.get(chatId)} inside at once; fences in turn ${fences.join(', ')}`)
      check(maxInside.get(chatId) === 1, `${chatId}: one holder at a time (saw ${maxInside.get(chatId)})`)
      for (let k = 1; k < fences.length; k++) {
        check(fences[k] > fences[k - 1], `${chatId}: fences grow (${fences.join(', ')})`)
      }
      const row = readSummary(db, chatId)
      check(row.fence === Math.max(...fences), `${chatId}: the row keeps the last writer's fence`)
      log(`  ${chatId}: row = ${JSON.stringify(row)}`)
    }
    check(new Set(everyFence).size === everyFence.length, 'no fence was handed out twice')
    check(maxInsideAll > 1, `different chats ran at the same time (up to ${maxInsideAll} at once)`)
    log(`  different chats ran side by side: up to ${maxInsideAll} summarisers at once`)

    // 3. A stalled holder: it sleeps past its maxHold, loses the key, and its late write is refused.
    log('\n2) a stalled holder (maxHold 50 ms) and the SQL guard')
    const stalling = store.lock('summaries', { maxHold: 50 }) // same lock, a handle with a short maxHold
    const chatId = 'chat-1'
    const staleGranted = deferred()
    const nextWrote = deferred()
    let stale = null // what the stalled holder saw
    let staleRunning = false
    let abortedAfterMs = null

    const staleHold = stalling.hold(chatId, async lease => {
      staleRunning = true
      const grantedAt = performance.now()
      lease.signal.addEventListener('abort', () => (abortedAfterMs = performance.now() - grantedAt), { once: true })
      stale = { fence: lease.fence, lease }
      everyFence.push(lease.fence)
      staleGranted.resolve()

      // A call that stalls and ignores lease.signal (a GC pause, a hung socket, a frozen VM...).
      // It comes back only after the next holder has written.
      await Promise.all([sleep(120), nextWrote.promise])

      stale.signalAborted = lease.signal.aborted
      stale.reason = lease.signal.reason
      stale.lostFlag = lease.lost
      // The late write, with the old fence: SQLite refuses it, both ways.
      stale.upsertAccepted = saveSummary(db, chatId, 'LATE summary from the stalled holder', lease.fence)
      stale.updateAccepted = updateSummary(db, chatId, 'LATE summary from the stalled holder', lease.fence)
      staleRunning = false
      return 'the stalled holder thinks it is done' // fn "succeeds"; hold still rejects with LostError
    })
    // Observe the rejection now so it is never reported as unhandled; examine it below.
    const staleOutcome = staleHold.then(
      value => ({ value }),
      error => ({ error }),
    )

    await within(5_000, 'the stalled holder to be granted', staleGranted.promise)

    let next = null
    const nextHold = summaries.hold(chatId, async lease => {
      next = { fence: lease.fence, grantedWhileStaleRan: staleRunning }
      everyFence.push(lease.fence)
      next.accepted = saveSummary(db, chatId, 'summary from the next holder', lease.fence)
      nextWrote.resolve()
    })

    await within(5_000, 'the next holder to get the key after the stalled one lost it', nextHold)
    const { value, error } = await within(5_000, 'the stalled hold to settle', staleOutcome)

    log(`  stalled holder: fence ${stale.fence}; lease.signal aborted after ${abortedAfterMs?.toFixed(1)} ms`)
    log(`  next holder:    fence ${next.fence}; granted while the stalled fn still ran: ${next.grantedWhileStaleRan}`)
    log(`  late upsert from fence ${stale.fence}: ${stale.upsertAccepted ? 'ACCEPTED' : 'refused (0 rows changed)'}`)
    log(`  late UPDATE ... WHERE fence < ${stale.fence}: ${stale.updateAccepted ? 'ACCEPTED' : 'refused (0 rows changed)'}`)
    log(`  stalled hold settled with: ${error ? `${error.name} (code ${error.code}): ${error.message}` : `value ${value}`}`)
    log(`  row = ${JSON.stringify(readSummary(db, chatId))}`)

    check(stale.signalAborted, 'the stalled lease.signal aborted')
    check(stale.reason instanceof LostError, `the abort reason is a LostError (got ${stale.reason})`)
    check(stale.lostFlag === true, 'lease.lost is true after maxHold')
    check(abortedAfterMs !== null && abortedAfterMs >= 40 && abortedAfterMs < 2_000,
      `the signal aborted at about maxHold (after ${abortedAfterMs} ms)`)
    check(next.grantedWhileStaleRan, 'the key went to the next holder at maxHold, not when the stalled fn ended')
    check(next.fence > stale.fence, `the next fence (${next.fence}) is larger than the stale one (${stale.fence})`)
    check(next.accepted, "the next holder's write is accepted")
    check(!stale.upsertAccepted, 'the late upsert changed 0 rows')
    check(!stale.updateAccepted, 'the late UPDATE changed 0 rows')
    check(readSummary(db, chatId).body === 'summary from the next holder', "the row keeps the next holder's summary")
    check(error instanceof LostError, `the stalled hold rejects with LostError (got ${error ?? `value ${value}`})`)
    check(error.code === 'lost', `its code is 'lost' (got ${error?.code})`)
  } finally {
    await store.close()
  }

  // 4. Reopen the store on the same directory: fences keep growing across the restart.
  log('\n3) reopen the store on the same directory')
  const highest = Math.max(...everyFence)
  store = await openStore({ storage: fileStorage(locksDir) })
  try {
    const summaries = store.lock('summaries', { maxHold: '2m' })
    const newFences = []
    for (const chatId of ['chat-1', 'chat-2', 'chat-3', 'chat-4']) {
      await summaries.hold(chatId, async lease => {
        newFences.push(lease.fence)
        check(saveSummary(db, chatId, `summary after restart of ${chatId}`, lease.fence),
          `after the restart, a write to ${chatId} with fence ${lease.fence} is accepted`)
      })
    }
    log(`  highest fence before: ${highest}; new fences: ${newFences.join(', ')}`)
    check(Math.min(...newFences) > highest, `every new fence is larger than ${highest}`)
  } finally {
    await store.close()
  }

  log('\nfinal table:')
  for (const row of db.all(`SELECT chat_id, body, fence FROM summaries ORDER BY chat_id`)) {
    log(`  ${row.chat_id}  fence ${row.fence}  ${row.body}`)
  }
  db.close()
}

const dir = await mkdtemp(join(tmpdir(), 'holdfast-summaries-'))
try {
  await within(30_000, 'the whole example', main(dir))
  log(`\nOK: all ${checks} checks held`)
} catch (err) {
  console.error(`\nFAILED after ${checks} checks held:`)
  console.error(err)
  await rm(dir, { recursive: true, force: true })
  process.exit(1) // a failed step may leave a hold pending forever; do not wait for it
}
await rm(dir, { recursive: true, force: true })
