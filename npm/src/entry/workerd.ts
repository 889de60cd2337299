/**
 * The entry for Cloudflare workerd: the wasm is imported statically (workerd forbids compiling wasm
 * at run time), and nothing runs at import time: no timers, no random values, no I/O.
 *
 * # AsyncLocalStorage (LOCK-04)
 * A hold of a key inside its own hold is refused only where the store can tell async contexts apart,
 * with `AsyncLocalStorage` from `node:async_hooks`. workerd has it only behind a flag, so this entry
 * does not import it statically (that would make a worker without the flag fail to bundle or to
 * start). The first `openStore()` looks for it, inside the request that opens the store:
 *
 * - `process.getBuiltinModule('node:async_hooks')`: there with `nodejs_compat`, which is on by default
 *   for compatibility dates from 2026-08-04;
 * - else a dynamic `import('node:async_hooks')`: there with `nodejs_als` alone;
 * - else none: a hold of a key inside its own hold is not refused, and waits for itself until its
 *   `wait` runs out (`InUseError`), as the README says.
 */

import wasm from '../../wasm/holdfast_wasm_bg.wasm'
import { initSync } from '../../wasm/holdfast_wasm.js'
import { openStoreOn, type ContextStorage, type Platform, type Store, type StoreOptions } from '../store.js'
import { memoryStorage, type Storage } from '../storage.js'
import { StorageError } from '../errors.js'

export * from '../api.js'

let memory: WebAssembly.Memory | undefined

const platform: Platform = {
  init() {
    memory ??= initSync({ module: wasm }).memory
    return memory
  },
  defaultStorage: () => memoryStorage(),
}

type AlsClass = new () => ContextStorage

/** Looked for once, by the first `openStore()`. */
let looked: Promise<void> | undefined

function lookForAsyncLocalStorage(): Promise<void> {
  return (looked ??= find().then(
    Als => {
      if (Als) platform.context = new Als()
    },
    () => {},
  ))
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

/** Opens a store. Without `storage`, fences are kept in memory only. */
export async function openStore(options?: StoreOptions): Promise<Store> {
  await lookForAsyncLocalStorage()
  return openStoreOn(platform, options)
}

/** Files are not available in workerd: keep fences in a Durable Object's storage instead. */
export function fileStorage(dir: string): Storage {
  throw new StorageError(`fileStorage ${dir}: files are not available in workerd; pass a storage over a Durable Object's storage`)
}
