// A Node project's TypeScript: @types/node (20, the oldest Node the package runs on) and no DOM lib,
// compiled by tests/js/run.sh with skipLibCheck off. The entries a Node user imports (holdfast,
// holdfast/redis, holdfast/testing) must compile without the DOM's declarations: before, the
// published store.d.ts named `WebAssembly.Memory` (a runtime entry's hook), which @types/node 20 does
// not declare. (holdfast/slim takes a `WebAssembly.Module` or a `BufferSource` by design: not here.)
import { openStore, memoryStorage, type Store } from 'holdfast'
import { openRedisStore, type RedisStore } from 'holdfast/redis'
import { manualClock } from 'holdfast/testing'

export async function use(url: string): Promise<number> {
  const store: Store = await openStore({ storage: memoryStorage(), clock: manualClock(0) })
  const redis: RedisStore = await openRedisStore({ url, prefix: 'app', grace: '1m' })
  const fence = await redis.lock('summaries', { ttl: '30s' }).hold('chat-1', lease => lease.fence)
  await Promise.all([store.close(), redis.close()])
  return fence
}
