// #17: a caller's own AsyncLocalStorage values (a request id, a tracing span, the signed-in user)
// follow it into its fn, whether the key was free or handed over by the holder before it — unlike
// async-lock, which runs every waiter's fn in the first holder's context. Shared by tests/js (Node 20,
// 24, 26, Bun; Deno runs tests/js too) and the workerd worker (tests/workerd/run.sh copies this file
// into the worker's src/), so it imports nothing: the caller passes its AsyncLocalStorage and a handle
// (a lock or a semaphore of any store: in process, over connect(), workerStore).
//
// Each scenario answers what every caller saw, `[{ caller, inside: [...], after }]`: `inside` the
// values its fn read (at its start and again after an await), `after` the value the caller read once
// its hold settled. All must be the caller's own 'req-<i>'. A hand-over that ran the next fn within
// the release, in the releaser's context, would show 'req-<i-1>' there; one that ran it where a
// connection's answer came in, that connection's (or none).

/** A macrotask's pause: long enough for the other callers' holds to reach the line. */
const pause = () => new Promise(resolve => setTimeout(resolve, 1))

/** What fn reads: the caller's value at its start and after an await. */
async function readInside(als, seen) {
  seen.push(als.getStore())
  await pause()
  seen.push(als.getStore())
}

/**
 * Every way in: `hold` (`n` callers at once on one key, all but the first (or the first `limit`)
 * handed the key over by the one before), `acquire` (the same, with `lease.release()` by the caller),
 * `tryHold` (`n` callers at once — one acquires — then `n` in turn, each on a free key).
 */
export const forms = ['hold', 'acquire', 'tryHold']

/** Runs `form` with `n` callers, each inside `als.run('req-' + i, …)`; answers what each saw. */
export async function callersInTurn(als, handle, key, form, n = 5) {
  const report = i => ({ caller: `req-${i}`, inside: [], after: undefined })
  const one = async (i, r) => {
    if (form === 'hold') await handle.hold(key, { wait: 30_000 }, () => readInside(als, r.inside))
    else if (form === 'acquire') {
      const lease = await handle.acquire(key, { wait: 30_000 })
      try {
        await readInside(als, r.inside)
      } finally {
        await lease.release()
      }
    } else {
      const tried = await handle.tryHold(key, () => readInside(als, r.inside))
      r.acquired = tried.acquired
    }
    r.after = als.getStore()
  }
  const reports = Array.from({ length: n }, (_, i) => report(i))
  // All at once: each caller's own context, entered around its call.
  await Promise.all(reports.map((r, i) => als.run(r.caller, () => one(i, r))))
  if (form !== 'tryHold') return reports
  // tryHold never waits, so in turn too: each on a key the one before just let go.
  const inTurn = Array.from({ length: n }, (_, i) => report(i))
  for (const [i, r] of inTurn.entries()) await als.run(r.caller, () => one(i, r))
  return [...reports, ...inTurn]
}

/**
 * Every fn that ran and every caller after its hold saw its own value; `acquired` counts the fns that
 * ran (all of them but the tryHolds refused). Answers a list of what was wrong (empty: all well).
 */
export function wrongContexts(reports) {
  const wrong = []
  for (const r of reports) {
    if (r.acquired !== false && r.inside.length !== 2) wrong.push(`${r.caller}: fn did not run (${JSON.stringify(r)})`)
    for (const v of r.inside) if (v !== r.caller) wrong.push(`${r.caller}: fn saw ${JSON.stringify(v)}`)
    if (r.after !== r.caller) wrong.push(`${r.caller}: after its hold saw ${JSON.stringify(r.after)}`)
  }
  return wrong
}

/**
 * The `AsyncLocalStorage` class where the runtime has one, looked for as holdfast does in workerd
 * (`process.getBuiltinModule`, else an import a bundler leaves alone), else undefined.
 */
export async function asyncLocalStorageClass() {
  const viaProcess = globalThis.process?.getBuiltinModule?.('node:async_hooks')?.AsyncLocalStorage
  if (typeof viaProcess === 'function') return viaProcess
  const specifier = 'node:async_hooks'
  try {
    return (await import(/* @vite-ignore */ specifier)).AsyncLocalStorage
  } catch {
    return undefined
  }
}

/** `callersInTurn` where the runtime may have no AsyncLocalStorage: `{ wrong, reports }` or `{ skipped }`. */
export async function callersReport(handle, key, form) {
  const Als = await asyncLocalStorageClass()
  if (typeof Als !== 'function') return { skipped: 'no AsyncLocalStorage' }
  const reports = await callersInTurn(new Als(), handle, key, form)
  return { wrong: wrongContexts(reports), reports }
}
