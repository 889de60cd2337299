// SQLite from the runtime itself: node:sqlite (Node 22.13 and later: before, it needs --experimental-sqlite)
// or bun:sqlite (Bun).
export async function openDb(file) {
  if (typeof Bun !== 'undefined') {
    const { Database } = await import('bun:sqlite')
    const db = new Database(file)
    db.exec('PRAGMA busy_timeout = 5000')
    return { run: (sql, args = []) => db.prepare(sql).run(...args).changes, get: (sql, args = []) => db.prepare(sql).get(...args), exec: sql => db.exec(sql) }
  }
  const { DatabaseSync } = await import('node:sqlite')
  const db = new DatabaseSync(file)
  db.exec('PRAGMA busy_timeout = 5000')
  return { run: (sql, args = []) => Number(db.prepare(sql).run(...args).changes), get: (sql, args = []) => db.prepare(sql).get(...args), exec: sql => db.exec(sql) }
}

// Insert or replace a chat's summary, but only with a larger fence than the row has: answers whether
// it was written (false: the write came late, from a holder that lost the chat, and was refused).
export function saveSummary(db, chatId, body, fence) {
  return db.run(
    `INSERT INTO summaries (chat_id, body, fence) VALUES (?, ?, ?)
     ON CONFLICT (chat_id) DO UPDATE SET body = excluded.body, fence = excluded.fence
     WHERE excluded.fence > summaries.fence`,
    [chatId, body, fence],
  ) === 1
}
