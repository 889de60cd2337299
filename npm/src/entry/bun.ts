/** The entry for Bun: as Node's (see `runtime/node/runtime.ts`), but a store serves with `Bun.serve`. */

import { nodeRuntime } from '../runtime/node/runtime.js'
import { bunTransport } from '../runtime/bun/transport.js'
import type { Store, StoreOptions } from '../store/store.js'
import type { ConnectOptions, RemoteStore } from '../remote/client.js'

export * from '../exports.js'
export { fileStorage } from '../storage/file.js'

const runtime = nodeRuntime(bunTransport)

/** Opens a store. Without `storage`, fences are kept in `./.holdfast/`. */
export function openStore(options?: StoreOptions): Promise<Store> {
  return runtime.openStore(options)
}

/** Connects to a store's server (`ws://host:port`, `wss://…`, or `ws+unix:///path`). */
export function connect(url: string, options?: ConnectOptions): Promise<RemoteStore> {
  return runtime.connect(url, options)
}
