/**
 * The entry for Bun: as Node's (the wasm read with `node:fs`, holds tracked with
 * `AsyncLocalStorage`), but a store serves with Bun's own server.
 */

import { readFileSync } from 'node:fs'
import { AsyncLocalStorage } from 'node:async_hooks'
import { initSync } from '../../wasm/holdfast_wasm.js'
import { openStoreOn, type Frame, type Platform, type Store, type StoreOptions } from '../store.js'
import { fileStorage } from '../file-storage.js'
import { bunTransport } from '../transport-bun.js'
import { connectOn, type ConnectOptions, type RemoteStore } from '../client.js'

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
  transport: bunTransport,
}

/** Opens a store. Without `storage`, fences are kept in `./.holdfast/`. */
export function openStore(options?: StoreOptions): Promise<Store> {
  return openStoreOn(platform, options)
}

/** Connects to a store's server (`ws://host:port`, `wss://…`, or `ws+unix:///path`). */
export function connect(url: string, options?: ConnectOptions): Promise<RemoteStore> {
  platform.init()
  return connectOn(platform.transport, platform.context, url, options)
}
