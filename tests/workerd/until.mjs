// What the workerd tests share: workerd's clock moves only with I/O, so a deadline there is awaited by
// polling with a bound, never by an exact time.
import assert from 'node:assert/strict'

/** Polls `check` until it answers truthy, for at most `ms`; answers its last value. */
export async function until(check, ms, what) {
  const end = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > end) assert.fail(`not within ${ms} ms: ${what}`)
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}
