/**
 * The entry for Node and Bun: the wasm is read from the package with `node:fs`, and holds are tracked
 * per async context with `AsyncLocalStorage`. Nothing runs at import time but making that tracker; the
 * wasm is instantiated by the first `openStore()`.
 */

import { readFileSync } from 'node:fs'
import { AsyncLocalStorage } from 'node:async_hooks'
import { initSync } from '../../wasm/holdfast_wasm.js'
import { openStoreOn, type Frame, type Platform, type Store, type StoreOptions } from '../store.js'
import { fileStorage } from '../file-storage.js'

export * from '../api.js'
export { fileStorage }

let memory: WebAssembly.Memory | undefined

const platform: Platform = {
  init() {
    if (!memory) {
      const bytes = readFileSync(new URL('../../wasm/holdfast_wasm_bg.wasm', import.meta.url))
      memory = initSync({ module: new WebAssembly.Module(bytes) }).memory
    }
    return memory
  },
  context: new AsyncLocalStorage<Frame>(),
  defaultStorage: () => fileStorage('.holdfast'),
}

/** Opens a store. Without `storage`, fences are kept in `./.holdfast/`. */
export function openStore(options?: StoreOptions): Promise<Store> {
  return openStoreOn(platform, options)
}
