/**
 * `holdfast/redis`: the same locks and semaphores — FIFO, fences, maxHold, ttl — kept in the Redis a
 * team already runs, shared by every process of every machine that reaches it. See `store.ts`.
 *
 * ```ts
 * import { openRedisStore } from 'holdfast/redis'
 * import { Redis } from 'ioredis'
 * const store = await openRedisStore({ redis: new Redis(process.env.REDIS_URL) })
 * await store.lock('summaries', { ttl: '30s' }).hold(chatId, lease => writeSummary(chatId, lease.fence))
 * ```
 *
 * Holds are tracked per async context with `AsyncLocalStorage` (Node, Bun, Deno), so that a hold of a
 * key inside its own hold is refused at once (LOCK-04). No wasm is loaded: Redis's scripts do the work.
 */

import { AsyncLocalStorage } from 'node:async_hooks'
import type { ContextStorage } from '../handle/context.js'
import type { Lease } from '../handle/lease.js'
import { openRedisStoreOn, type RedisStore, type RedisStoreOptions } from './store.js'

export { RedisStore, RedisLock, type RedisStoreOptions, type RedisServerInfo } from './store.js'
export * from '../exports.js'
/** @internal What a url's store says without a Redis client to import (the CLI words it for its users). */
export { NO_CLIENT } from './adapter.js'

const als = new AsyncLocalStorage<Lease>()
const context: ContextStorage = {
  getStore: () => als.getStore(),
  run: (store, fn, arg) => als.run(store, fn, arg),
  // A hold that waited resumes in a microtask job of its own, where `enterWith` lasts until the job ends.
  enterInJob: store => als.enterWith(store),
}

/**
 * Opens a store kept in Redis: `{ redis: client }` (ioredis, node-redis, or on Bun its own RedisClient) or `{ url: 'redis://…' }`,
 * and `prefix` (default `'holdfast'`). Checks the server first (version, `maxmemory-policy`).
 */
export function openRedisStore(options: RedisStoreOptions): Promise<RedisStore> {
  return openRedisStoreOn(context, options)
}
