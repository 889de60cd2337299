/**
 * The entry for Deno: the wasm comes embedded in a module (Deno reads no package file without
 * `--allow-read`), and holds are tracked with `AsyncLocalStorage` from `node:async_hooks`. The
 * in-process API needs no permission flag with `memoryStorage()`, a callback storage or
 * `denoKvStorage(kv)`; `fileStorage(dir)` needs `--allow-read` and `--allow-write`.
 */

import { AsyncLocalStorage } from 'node:async_hooks'
import { initSync } from '../../wasm/holdfast_wasm.js'
import base64 from '../../wasm/holdfast_wasm_base64.js'
import { openStoreOn, type Frame, type Platform, type Store, type StoreOptions } from '../store.js'
import { memoryStorage } from '../storage.js'
import { fileStorage } from '../file-storage.js'

export * from '../api.js'
export { fileStorage }
export { denoKvStorage, type DenoKvLike, type DenoKvAtomicLike, type DenoKvKeyPart, type DenoKvStorageOptions } from '../deno-kv-storage.js'

let memory: WebAssembly.Memory | undefined

const platform: Platform = {
  init() {
    if (!memory) {
      const bytes = Uint8Array.from(atob(base64), c => c.charCodeAt(0))
      memory = initSync({ module: new WebAssembly.Module(bytes) }).memory
    }
    return memory
  },
  context: new AsyncLocalStorage<Frame>(),
  defaultStorage: () => memoryStorage(),
}

/** Opens a store. Without `storage`, fences are kept in memory only (pass `fileStorage(dir)` to keep them). */
export function openStore(options?: StoreOptions): Promise<Store> {
  return openStoreOn(platform, options)
}
