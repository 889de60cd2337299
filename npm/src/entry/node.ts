/** The entry for Node: see `runtime/node/runtime.ts`; a store serves over the `ws` package. */

import { nodeRuntime } from '../runtime/node/runtime.js'
import { wsTransport } from '../runtime/node/transport.js'
import type { Store, StoreOptions } from '../store/store.js'
import type { ConnectOptions, RemoteStore } from '../remote/client.js'

export * from '../exports.js'
export { fileStorage } from '../storage/file.js'

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
