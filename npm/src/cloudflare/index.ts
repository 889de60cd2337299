/**
 * `holdfast/cloudflare` (the `workerd` export condition): a store hosted in a Durable Object
 * (`HoldfastObject`), and the lock and semaphore API for Worker code over Workers RPC
 * (`workerStore(env.HOLDFAST, { shard })`). See object.ts and worker-store.ts.
 */

// `waitUntil` through the namespace: a named import of an export that an older workerd lacks would
// fail the Worker's start (background.ts says what it is for).
import * as workers from 'cloudflare:workers'
import { extendRequestsWith } from './background.js'

extendRequestsWith(workers.waitUntil)

export { HoldfastObject, durableObjectStorage } from './object.js'
export { workerStore, objectName, fnv1a, WorkerStore, WorkerLock, WorkerLease, type WorkerStoreOptions } from './worker-store.js'
export type {
  AcquireOptions,
  AcquireAnswer,
  TryAcquireAnswer,
  RenewAnswer,
  DoneAnswer,
  ErrorAnswer,
  LeaseGrant,
  HoldfastObjectRpc,
  DurableObjectNamespaceLike,
  DurableObjectStorageLike,
  DurableObjectStateLike,
  HibernatableWebSocketLike,
} from './types.js'
