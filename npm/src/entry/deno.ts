/**
 * The entry for Deno: the wasm comes embedded in a module (Deno reads no package file without
 * `--allow-read`), and holds are tracked with `AsyncLocalStorage` from `node:async_hooks`. The
 * in-process API needs no permission flag with `memoryStorage()`, a callback storage or
 * `denoKvStorage(kv)`; `fileStorage(dir)` needs `--allow-read`, `--allow-write` and `--allow-net` (for
 * the Unix socket by which it holds the directory). Serving goes over `node:http` and `ws` (as on Node),
 * connecting over Deno's own WebSocket (`runtime/deno/transport.ts`); both need `--allow-net`, and
 * serving `--allow-env=WS_NO_BUFFER_UTIL,WS_NO_UTF_8_VALIDATE` (`ws` reads them as it loads).
 */

import { AsyncLocalStorage } from 'node:async_hooks'
import { initSync } from '../../wasm/holdfast_wasm.js'
import base64 from '../../wasm/holdfast_wasm_base64.js'
import { openStoreOn, type Platform, type Store, type StoreOptions } from '../store/store.js'
import type { Lease } from '../handle/lease.js'
import { memoryStorage } from '../storage/storage.js'
import { fileStorage } from '../storage/file.js'
import { denoTransport } from '../runtime/deno/transport.js'
import { connectOn, type ConnectOptions, type RemoteStore } from '../remote/client.js'

export * from '../exports.js'
export { fileStorage }
export { denoKvStorage, type DenoKvLike, type DenoKvAtomicLike, type DenoKvKeyPart, type DenoKvStorageOptions } from '../storage/deno-kv.js'

let memory: WebAssembly.Memory | undefined

const platform: Platform = {
  init() {
    if (!memory) {
      const bytes = Uint8Array.from(atob(base64), c => c.charCodeAt(0))
      memory = initSync({ module: new WebAssembly.Module(bytes) }).memory
    }
    return memory
  },
  context: new AsyncLocalStorage<Lease>(),
  defaultStorage: () => memoryStorage(),
  transport: denoTransport,
}

/** Opens a store. Without `storage`, fences are kept in memory only (pass `fileStorage(dir)` to keep them). */
export function openStore(options?: StoreOptions): Promise<Store> {
  return openStoreOn(platform, options)
}

/**
 * Connects to a store's server (`ws://host:port`, `wss://…`, or `ws+unix:///path`), over Deno's own
 * WebSocket client (`--allow-net`). The remote store has the API of a local one, with `inspect()`
 * returning a promise.
 */
export function connect(url: string, options?: ConnectOptions): Promise<RemoteStore> {
  platform.init()
  return connectOn(platform.transport, platform.context, url, options)
}
