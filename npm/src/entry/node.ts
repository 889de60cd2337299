/** The entry for Node: see `node-runtime.ts`; a store serves over the `ws` package. */

import { nodeRuntime } from '../node-runtime.js'
import { wsTransport } from '../transport-ws.js'
import type { Store, StoreOptions } from '../store.js'
import type { ConnectOptions, RemoteStore } from '../client.js'

export * from '../api.js'
export { fileStorage } from '../file-storage.js'

const runtime = nodeRuntime(wsTransport)

/** Opens a store. Without `storage`, fences are kept in `./.holdfast/`. */
export function openStore(options?: StoreOptions): Promise<Store> {
  return runtime.openStore(options)
}

/**
 * Connects to a store's server (`ws://host:port`, `wss://…`, or `ws+unix:///path`). The remote store
 * has the API of a local one, with `inspect()` returning a promise.
 */
export function connect(url: string, options?: ConnectOptions): Promise<RemoteStore> {
  return runtime.connect(url, options)
}
