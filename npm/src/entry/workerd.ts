/**
 * The entry for Cloudflare workerd: the wasm is imported statically (workerd forbids compiling wasm
 * at run time), and nothing runs at import time: no timers, no random values, no I/O.
 *
 * # AsyncLocalStorage (LOCK-04)
 * A hold of a key inside its own hold is refused only where the store can tell async contexts apart,
 * with `AsyncLocalStorage`, which workerd has only behind a flag. The first `openStore()` looks for it
 * (see `cloudflare/context.ts`): with `nodejs_compat` (on by default from compatibility date
 * 2026-08-04) or `nodejs_als` it is found; without, a hold of a key inside its own hold is not
 * refused, and waits for itself until its `wait` runs out (`InUseError`), as the README says.
 */

import wasm from '../../wasm/holdfast_wasm_bg.wasm'
import { initSync } from '../../wasm/holdfast_wasm.js'
import { findAsyncLocalStorage } from '../cloudflare/context.js'
import { openStoreOn, type Platform, type Store, type StoreOptions } from '../store/store.js'
import { memoryStorage, type Storage } from '../storage/storage.js'
import { StorageError } from '../errors.js'

export * from '../exports.js'

let memory: WebAssembly.Memory | undefined

const platform: Platform = {
  init() {
    memory ??= initSync({ module: wasm }).memory
    return memory
  },
  defaultStorage: () => memoryStorage(),
}

/** Looked for once, by the first `openStore()`. */
let looked: Promise<void> | undefined

function lookForAsyncLocalStorage(): Promise<void> {
  return (looked ??= findAsyncLocalStorage().then(Als => {
    if (Als) platform.context = new Als()
  }))
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
