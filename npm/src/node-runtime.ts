/**
 * What the Node and Bun entries share: the wasm read from the package with `node:fs`, holds tracked
 * per async context with `AsyncLocalStorage`, fences kept in `./.holdfast/` by default. Only the
 * transport differs (`ws` on Node, `Bun.serve` on Bun). Nothing runs at import time but making the
 * tracker; the wasm is instantiated by the first `openStore()` or `connect()`.
 */

import { readFileSync } from 'node:fs'
import { AsyncLocalStorage } from 'node:async_hooks'
import { initSync } from '../wasm/holdfast_wasm.js'
import { openStoreOn, type Frame, type Platform, type Store, type StoreOptions } from './store.js'
import { fileStorage } from './file-storage.js'
import { connectOn, type ConnectOptions, type RemoteStore } from './client.js'
import type { Transport } from './transport.js'

export interface Runtime {
  openStore(options?: StoreOptions): Promise<Store>
  connect(url: string, options?: ConnectOptions): Promise<RemoteStore>
}

let memory: WebAssembly.Memory | undefined

function init(): WebAssembly.Memory {
  if (!memory) {
    const bytes = readFileSync(new URL('../wasm/holdfast_wasm_bg.wasm', import.meta.url))
    memory = initSync({ module: new WebAssembly.Module(bytes) }).memory
  }
  return memory
}

export function nodeRuntime(transport: Transport): Runtime {
  const platform: Platform = {
    init,
    context: new AsyncLocalStorage<Frame>(),
    defaultStorage: () => fileStorage('.holdfast'),
    transport,
  }
  return {
    openStore: options => openStoreOn(platform, options),
    connect: (url, options) => {
      platform.init()
      return connectOn(platform.transport, platform.context, url, options)
    },
  }
}
