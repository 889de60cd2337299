import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CancelledError } from '../src/errors.js'
import { cancellable } from '../src/cloudflare/cancellable.js'

/**
 * LOCK-06 for workerStore's calls (cloudflare/cancellable.ts): a call whose signal aborts is answered
 * `CancelledError` at once, whatever its cancel does — one that throws as it is called (a stub that
 * could not be made) included, which never escapes the signal's abort listener as an uncaught error,
 * whether the signal aborts while the call waits or had aborted already.
 */

const tick = () => new Promise(resolve => setImmediate(resolve))

for (const when of ['while it waits', 'before it was asked']) {
  test(`LOCK-06: a call whose signal aborts ${when}, and whose cancel throws at once, is answered CancelledError; nothing escapes`, async () => {
    const uncaught: unknown[] = []
    const catcher = (error: unknown) => void uncaught.push(error)
    process.on('uncaughtException', catcher)
    try {
      const controller = new AbortController()
      if (when === 'before it was asked') controller.abort(new Error('the caller gave up'))
      let letGo = 0
      const call = cancellable(
        'lock x: key "k"',
        controller.signal,
        new Promise<string>(() => {}),
        () => {
          throw new Error('no stub for the object')
        },
        () => letGo++,
      )
      const outcome = call.then(
        value => ({ value }),
        error => ({ error }),
      )
      controller.abort(new Error('the caller gave up'))
      const answered = (await outcome) as { error?: unknown }
      assert.ok(answered.error instanceof CancelledError, `CancelledError, not ${JSON.stringify(answered)}`)
      await tick()
      await tick()
      assert.deepEqual(uncaught, [], 'nothing thrown from the abort listener')
      assert.equal(letGo, 0)
    } finally {
      process.off('uncaughtException', catcher)
    }
  })
}
