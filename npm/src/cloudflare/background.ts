/**
 * Work of the Worker store that no caller awaits — the release of a grant that crossed its cancel, the
 * withdraw of a claim that did, the cancel itself, and their retries — handed to workerd's `waitUntil`,
 * so that it outlives the request that started it. Without it, that work runs only while the request
 * lives: a Worker that returned its response first loses it when workerd ends the request (a withdraw
 * asked again after a `storage` answer waits up to 6 s), and the key or the units stay taken until
 * their ttl, or for good (a claim id drawn here, which nobody else can release).
 *
 * `waitUntil` comes from `cloudflare:workers`, which only workerd has: the workerd entry (index.ts)
 * hands it here (`extendRequestsWith`), so that this module, and the Worker store that uses it, load
 * anywhere (unavailable.ts re-exports `objectName`; tests run the Worker store on Node). Where it is
 * absent (workerd before 2025-08, or elsewhere) the work runs as before: while its request lives.
 */

type WaitUntil = (promise: Promise<unknown>) => void

let waitUntil: WaitUntil | undefined

/** Called by the workerd entry with `cloudflare:workers`' `waitUntil` (or `undefined`, where it has none). */
export function extendRequestsWith(fn: unknown): void {
  waitUntil = typeof fn === 'function' ? (fn as WaitUntil) : undefined
}

/** Runs `work` to its end beyond the current request where workerd can; its failure is nobody's (each caller's own `catch` says why). */
export function background(work: Promise<unknown>): void {
  const quiet = work.then(
    () => {},
    () => {},
  )
  try {
    waitUntil?.(quiet)
  } catch {
    // no request to extend (a Durable Object's own work, or module scope): it runs as long as its holder does
  }
}
