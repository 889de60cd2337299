/// <reference path="./cloudflare-workers.d.ts" />
// A strict TypeScript user of holdfast/cloudflare's published types (a worker project), compiled
// with consumer.ts by tests/js/run.sh.
import { workerStore, WorkerStore, WorkerLock, WorkerLease, type DurableObjectNamespaceLike } from 'holdfast/cloudflare'

export async function useWorker(namespace: DurableObjectNamespaceLike): Promise<number> {
  const store: WorkerStore = workerStore(namespace, { shard: 0 })
  // A pool named alone, or with options that name no capacity: one the object has.
  void store.pool('seats').remaining()
  void store.pool('seats', {})
  return store.lock('summaries', { ttl: '30s' }).hold('chat-1', lease => lease.fence)
}

/** Stores come from `workerStore()`, handles from a store, leases from holds: no constructor. */
export function noHandMade(anything: unknown): number {
  // @ts-expect-error
  void new WorkerStore()
  // @ts-expect-error
  void new WorkerLock()
  // @ts-expect-error
  void new WorkerLease()
  // @ts-expect-error: any arguments alike
  void new WorkerLease(anything)
  if (anything instanceof WorkerLease) return anything.fence
  if (anything instanceof WorkerLock) return anything.limit
  if (anything instanceof WorkerStore) return 1
  return 0
}
