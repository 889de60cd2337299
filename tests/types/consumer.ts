// A strict TypeScript user of the published types, compiled with skipLibCheck off by
// tests/js/run.sh against the installed package: every public entry's declarations must
// compile on their own (no stripped internal type left dangling) and say what the API does.
import {
  openStore,
  connect,
  memoryStorage,
  InvalidError,
  InUseError,
  HoldfastError,
  Lease,
  Lock,
  Semaphore,
  Store,
  Pool,
  Claim,
  RemoteStore,
  RemoteLock,
  type ClaimResult,
  type PoolInfo,
} from 'holdfast'
import * as slim from 'holdfast/slim'
import { openRedisStore, RedisStore, RedisLock } from 'holdfast/redis'
import { manualClock } from 'holdfast/testing'

export async function use(): Promise<number> {
  const store: Store = await openStore({ storage: memoryStorage(), clock: manualClock(0) })
  const summaries = store.lock('summaries', { ttl: '30s', maxHold: '2m' })
  const fence: number = await summaries.hold('chat-1', (lease: Lease) => lease.fence)
  const tried = await summaries.tryHold(42, lease => lease.key)
  const key: string | undefined = tried.acquired ? tried.value : undefined
  await using lease = await store.semaphore('uploads', { limit: 3 }).acquire('u', { wait: '5s' })
  const seats = store.pool('flight-aa123', { capacity: 180 })
  const got: ClaimResult = await seats.claim(2, { id: 'order-1', wait: '5s', ttl: '10m', signal: AbortSignal.timeout(1_000) })
  if (got.claimed) {
    await got.claim.confirm()
    const released: boolean = await got.claim.release()
    void released
  }
  const pools: PoolInfo[] = store.inspect().filter((e): e is PoolInfo => e.kind === 'pool')
  const left: number = (await seats.remaining()) + got.remaining + pools.length
  await seats.resize(200)
  // A pool that exists, named alone (whatever its capacity now), as on every store.
  const named: number = await store.pool('flight-aa123').remaining()
  // Options without a capacity mean the same (the capacity is optional wherever a pool is named).
  const maybe: number | undefined = Math.random() < 0.5 ? 180 : undefined
  void store.pool('flight-aa123', {})
  void store.pool('flight-aa123', maybe === undefined ? {} : { capacity: maybe })
  // @ts-expect-error: a misspelt option is not a capacity
  void store.pool('flight-aa123', { capacty: 180 })
  const remote = await connect('ws://127.0.0.1:7420', { token: 't' })
  const busy = await remote.inspect()
  void remote.pool('flight-aa123', {})
  void slim.openStore
  void new InvalidError('x').code
  // Each error class's code is its own, narrowed by instanceof.
  const caught: unknown = new InUseError('x')
  if (caught instanceof InUseError) {
    const code: 'in_use' = caught.code
    void code
  } else if (caught instanceof HoldfastError) {
    const code: 'in_use' | 'lost' | 'closed' | 'invalid' | 'limit' | 'cancelled' | 'storage' | 'permission' = caught.code
    void code
  }
  return fence + busy.length + lease.fence + (key?.length ?? 0) + left + named
}

/** Pools on Redis: the same handles and answers. */
export async function useRedis(redis: unknown): Promise<number> {
  const store = await openRedisStore({ redis })
  const seats = store.pool('seats', { capacity: 10 })
  void store.pool('seats', {})
  const got: ClaimResult = await seats.claim(1, { id: 'order-1', wait: '1s', ttl: '10m' })
  const pools: PoolInfo[] = (await store.inspect()).filter((e): e is PoolInfo => e.kind === 'pool')
  return got.remaining + pools.length + (await seats.remaining())
}

/**
 * Leases come from holds, stores from `openStore()`/`connect()`/`openRedisStore()`, handles from a
 * store: the published types offer no constructor (one typed as TypeScript's implicit `new X()`
 * compiled, and threw or half-worked at run time), yet `instanceof` narrows.
 */
export function noHandMade(anything: unknown): number {
  // @ts-expect-error: Lease's constructor is protected
  void new Lease()
  // @ts-expect-error: nor made through a subclass of one
  void new (class extends Lease {})()
  // @ts-expect-error
  void new Lock()
  // @ts-expect-error
  void new Semaphore()
  // @ts-expect-error
  void new Store()
  // @ts-expect-error
  void new Pool()
  // @ts-expect-error
  void new Claim()
  // @ts-expect-error
  void new RemoteStore()
  // @ts-expect-error
  void new RemoteLock()
  // @ts-expect-error
  void new RedisStore()
  // @ts-expect-error
  void new RedisLock()
  // @ts-expect-error: any arguments alike
  void new Store(anything)
  if (anything instanceof Lease) return anything.fence
  if (anything instanceof Semaphore) return anything.limit
  if (anything instanceof Lock || anything instanceof RemoteLock || anything instanceof RedisLock) return anything.ttl
  if (anything instanceof Store || anything instanceof RemoteStore || anything instanceof RedisStore) return anything.inspect.length
  if (anything instanceof Pool) return anything.name.length
  if (anything instanceof Claim) return anything.units
  return 0
}

/** What a user opens and must close closes at the end of an `await using` block, as a lease lets go. */
export async function closedAtBlockEnd(redis: unknown): Promise<void> {
  await using store = await openStore({ storage: memoryStorage() })
  await using server = await store.serve({ port: 0, token: 't' })
  await using remote = await connect(server.url, { token: 't' })
  await using onRedis = await openRedisStore({ redis })
  const dispose: () => Promise<void> = store[Symbol.asyncDispose]
  void [remote.inspect, onRedis.inspect, dispose]
}
