// A tiny SQLite wrapper that runs on both Node and Bun:
//   Bun  -> the built-in `bun:sqlite`
//   Node -> `better-sqlite3` (version 12 builds against Node 20)
// Only positional `?` parameters are used, so the SQL is the same on both.

export async function openDb(file) {
  let db
  let driver
  if (typeof Bun !== 'undefined') {
    const { Database } = await import('bun:sqlite')
    db = new Database(file, { create: true })
    driver = 'bun:sqlite'
  } else {
    const { default: Database } = await import('better-sqlite3')
    db = new Database(file)
    driver = 'better-sqlite3'
  }

  const statements = new Map()
  const prepare = sql => {
    let stmt = statements.get(sql)
    if (!stmt) statements.set(sql, (stmt = db.prepare(sql)))
    return stmt
  }

  return {
    driver,
    /** Runs one or more statements without parameters. */
    exec(sql) {
      db.exec(sql)
    },
    /** Runs a write and answers how many rows it changed. */
    run(sql, params = []) {
      return prepare(sql).run(...params).changes
    },
    /** Answers the first row, or undefined when there is none. */
    get(sql, params = []) {
      return prepare(sql).get(...params) ?? undefined
    },
    /** Answers every row. */
    all(sql, params = []) {
      return prepare(sql).all(...params)
    },
    close() {
      statements.clear()
      db.close()
    },
  }
}
