// What protocol.mjs and client.mjs share: the thread's sleep before a message (SLEEP_US), and the
// passes, timed and printed.

/** SLEEP_US, in ms: how long the thread sleeps before a message (`sleep`); 0 for not at all. */
export const sleepMs = Number(process.env.SLEEP_US ?? 0) / 1000
const asleep = new Int32Array(new SharedArrayBuffer(4))

/** Sleeps SLEEP_US µs, on a word nobody wakes, as a server's or client's thread sleeps in epoll. */
export function sleep() {
  if (sleepMs > 0) Atomics.wait(asleep, 0, 0, sleepMs)
}

/**
 * `run(n)` once as a warm-up (then, with GC_AFTER_WARM=1 and --expose-gc, a full collection), then
 * PASSES (default 40) times (EACH=1 prints every pass's figure); `taken()` answers the ns a pass counted
 * and starts the count again. Prints `what` with the least µs a hold of the passes (the machine is
 * shared: the least is the pass least disturbed), their median, and the whole loop's CPU a hold.
 */
export async function passes(run, n, taken, what, extra = '') {
  const count = Number(process.env.PASSES ?? 40)
  await run(n)
  // As R1's and R2's processes collect before their timed part.
  if (process.env.GC_AFTER_WARM && globalThis.gc) globalThis.gc()
  taken()
  const perHold = []
  const cpuPerHold = []
  for (let pass = 0; pass < count; pass++) {
    const c0 = process.cpuUsage()
    const done = await run(n)
    const c = process.cpuUsage(c0)
    perHold.push(Number(taken()) / 1000 / done)
    cpuPerHold.push((c.user + c.system) / done)
  }
  if (process.env.EACH) console.log(`each pass, µs a hold: ${perHold.map((x) => x.toFixed(2)).join(' ')}`)
  const least = (xs) => Math.min(...xs)
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
  console.log(
    `${what} ${least(perHold).toFixed(2)} µs per hold, median ${median(perHold).toFixed(2)} (whole loop: ${least(cpuPerHold).toFixed(2)} µs CPU per hold), least of ${count} passes of ${n}${extra}${sleepMs > 0 ? `, SLEEP_US=${process.env.SLEEP_US}` : ''}`,
  )
}
