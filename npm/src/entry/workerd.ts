/**
 * The entry for Cloudflare workerd: the wasm is imported statically (workerd forbids compiling wasm
 * at run time), and nothing runs at import time.
 */

import wasm from '../../wasm/holdfast_wasm_bg.wasm'
import { initSync } from '../../wasm/holdfast_wasm.js'
import { openStoreOn, type Platform, type Store, type StoreOptions } from '../store.js'
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

/** Opens a store. Without `storage`, fences are kept in memory only. */
export function openStore(options?: StoreOptions): Promise<Store> {
  return openStoreOn(platform, options)
}

/** Files are not available in workerd: keep fences in a Durable Object's storage instead. */
export function fileStorage(dir: string): Storage {
  throw new StorageError(`fileStorage ${dir}: files are not available in workerd; pass a storage over Durable Object or KV storage`)
}
