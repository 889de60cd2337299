// One summariser process: holds chats through Redis and writes each summary with its lease's fence.
// argv: name, Redis URL, SQLite file, what to do ('summarise' or 'stall').
import { openRedisStore } from 'holdfast/redis'
import { openDb, saveSummary } from './db.js'

const [name, url, file, mode] = process.argv.slice(2)
const say = event => process.stdout.write(JSON.stringify({ who: name, ...event }) + '\n')
const sleep = ms => new Promise(r => setTimeout(r, ms))

const db = await openDb(file)
const store = await openRedisStore({ url })

if (mode === 'summarise') {
  const summaries = store.lock('summaries', { ttl: '5s', wait: '30s' })
  const chats = ['chat-1', 'chat-2', 'chat-3']
  for (let round = 0; round < 4; round++) {
    await Promise.all(chats.map(chat => summaries.hold(chat, async lease => {
      db.run('INSERT INTO inside (chat, who) VALUES (?, ?)', [chat, name]) // fails if another is inside
      await sleep(10) // "call the model"
      const ok = saveSummary(db, chat, `round ${round} by ${name}`, lease.fence)
      db.run('DELETE FROM inside WHERE chat = ?', [chat])
      say({ ev: 'wrote', chat, fence: lease.fence, ok })
    })))
  }
} else {
  // Holds chat-stall with a 1 s ttl, then freezes its event loop for 3 s: no renewals go out, so
  // Redis gives the chat to the next in line. Waking up, it writes with its old fence: refused.
  const lease = await store.lock('summaries', { ttl: '1s' }).acquire('chat-stall')
  say({ ev: 'holding', fence: lease.fence })
  await sleep(100)
  say({ ev: 'freezing' })
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 3_000)
  const ok = saveSummary(db, 'chat-stall', `late, by ${name}`, lease.fence)
  await sleep(50)
  say({ ev: 'late-write', fence: lease.fence, ok, lost: lease.lost })
}
await store.close() // the store's connection and timers end with it: the process exits by itself
say({ ev: 'done' })
