/**
 * `AsyncLocalStorage` in workerd, looked for at run time (LOCK-04: a hold of a key inside its own hold
 * is refused only where async contexts can be told apart). workerd has it only behind a flag, so it is
 * never imported statically (that would make a worker without the flag fail to bundle or to start).
 * Looked for once, inside the first request that needs it:
 *
 * - `process.getBuiltinModule('node:async_hooks')`: there with `nodejs_compat`, which is on by default
 *   for compatibility dates from 2026-08-04;
 * - else a dynamic `import('node:async_hooks')`: there with `nodejs_als` alone;
 * - else none: a hold of a key inside its own hold is not refused, and waits for itself until its
 *   `wait` runs out (`InUseError`), as the README says.
 *
 * Shared by the workerd entry (`openStore`) and `holdfast/cloudflare` (`workerStore`).
 */

import type { ContextStorage } from '../handle/context.js'

/** The `AsyncLocalStorage` class, as far as holdfast uses it. */
export type AlsClass = new () => ContextStorage

let looked: Promise<AlsClass | undefined> | undefined

/** The `AsyncLocalStorage` class where the worker has one, else `undefined`; looked for once. */
export function findAsyncLocalStorage(): Promise<AlsClass | undefined> {
  return (looked ??= find().catch(() => undefined))
}

async function find(): Promise<AlsClass | undefined> {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process
  try {
    const viaProcess = proc?.getBuiltinModule?.('node:async_hooks') as { AsyncLocalStorage?: AlsClass } | undefined
    if (typeof viaProcess?.AsyncLocalStorage === 'function') return viaProcess.AsyncLocalStorage
  } catch {
    // not there: try the import
  }
  // A specifier in a variable, so that bundlers (wrangler's esbuild) leave the import to the runtime,
  // which answers it with `nodejs_als` and rejects it (caught) without.
  const specifier = 'node:async_hooks'
  try {
    const viaImport = (await import(/* @vite-ignore */ specifier)) as { AsyncLocalStorage?: AlsClass }
    if (typeof viaImport.AsyncLocalStorage === 'function') return viaImport.AsyncLocalStorage
  } catch {
    // no flag: no AsyncLocalStorage
  }
  return undefined
}
