/**
 * The entry for hosts nobody planned: the caller instantiates the engine from a compiled
 * `WebAssembly.Module` or the bytes of `holdfast/holdfast.wasm`, then opens stores.
 *
 * ```ts
 * import { init, openStore, memoryStorage } from 'holdfast/slim'
 * init(await WebAssembly.compile(bytes))
 * const store = await openStore({ storage: memoryStorage() })
 * ```
 */

import { initSync } from '../../wasm/holdfast_wasm.js'
import { openStoreOn, type Platform, type Store, type StoreOptions } from '../store/store.js'
import { memoryStorage } from '../storage/storage.js'
import { InvalidError } from '../errors.js'

export * from '../exports.js'

let memory: WebAssembly.Memory | undefined

/** Instantiates the engine once; later calls do nothing. */
export function init(wasm: WebAssembly.Module | BufferSource): void {
  if (memory) return
  const module = wasm instanceof WebAssembly.Module ? wasm : new WebAssembly.Module(wasm)
  memory = initSync({ module }).memory
}

const platform: Platform = {
  init() {
    if (!memory) throw new InvalidError('openStore: call init(module) from holdfast/slim first')
    return memory
  },
  defaultStorage: () => memoryStorage(),
}

/** Opens a store (after `init`). Without `storage`, fences are kept in memory only. */
export function openStore(options?: StoreOptions): Promise<Store> {
  return openStoreOn(platform, options)
}
