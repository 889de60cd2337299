/**
 * Where holdfast queues its own work for later in the turn: never through a global that a test
 * framework's fake timers replace, so that code taking holdfast locks runs the same in a user's test
 * suite with fake timers on (tests/js/fake-timers.test.js). Jest's fake timers (`jest.useFakeTimers()`,
 * by default) replace `queueMicrotask`, `setImmediate` and `process.nextTick`, and run what was queued
 * on them only when the test advances the fake clock: a hand-over after `lease.release()`, a pool's
 * write and `close()` waited for good. Vitest's replace `setImmediate`: a connection's frames were
 * never sent. The deadlines (waits, `maxHold`, ttl) do follow a faked clock, on purpose: they are
 * timers of the store's clock (util/clock.ts), which advancing fake timers moves.
 */

const RESOLVED = Promise.resolve()

/**
 * Calls `fn` in a microtask: a resolved promise's reaction, which no fake timers hold back; cheaper
 * than `queueMicrotask` on Node too, which makes an `AsyncResource` for every callback and enters and
 * leaves it around the call (0.5–1 µs where that code is not optimized yet: tests/bench/README.md,
 * session 19). `fn` must throw nothing (it would be an unhandled rejection).
 */
export function soon(fn: () => void): void {
  void RESOLVED.then(fn)
}

/**
 * The runtime's `setImmediate` (Node, Bun: the check phase of the turn, after its I/O callbacks), as
 * it was when holdfast loaded, before a test could replace it with a fake one.
 */
export const checkPhase: (fn: () => void) => unknown = globalThis.setImmediate
