// A TypeScript project on CommonJS with TypeScript's default resolution for it (`--module commonjs`,
// `--moduleResolution node10`), which reads no `exports` map: each entry's types are found through
// `typesVersions` (package.json), and its `require()` of the ESM package works on Node 20.19 and later.
import { openStore, memoryStorage, LostError, type Lease } from 'holdfast'
import { openRedisStore, type RedisStore } from 'holdfast/redis'
import { manualClock } from 'holdfast/testing'
import { init } from 'holdfast/slim'
import { workerStore, HoldfastObject } from 'holdfast/cloudflare'

export async function fenceOf(key: string): Promise<number> {
  const store = await openStore({ storage: memoryStorage(), clock: manualClock() })
  try {
    return await store.lock('jobs').hold(key, (lease: Lease) => lease.fence)
  } finally {
    await store.close()
  }
}

export const entries: [typeof openRedisStore, typeof init, typeof workerStore, typeof HoldfastObject, typeof LostError] = [
  openRedisStore,
  init,
  workerStore,
  HoldfastObject,
  LostError,
]
export type Stores = RedisStore
