/** What every runtime's entry exports besides `openStore` and `fileStorage`. */

export {
  HoldfastError,
  InUseError,
  LostError,
  ClosedError,
  InvalidError,
  LimitError,
  CancelledError,
  StorageError,
  PermissionError,
  type ErrorCode,
} from './errors.js'
export { memoryStorage, type Storage } from './storage/storage.js'
export type { Clock } from './util/clock.js'
export { Lease } from './handle/lease.js'
export { Lock, Semaphore } from './handle/lock.js'
export type { LockOptions, SemaphoreOptions, HoldOptions, TryHoldOptions, TryHoldResult, KeyInfo, HolderInfo, Duration } from './types.js'
export { Store, type StoreOptions } from './store/store.js'
export { Pool, Claim, type ClaimResult } from './pool/pool.js'
export type { PoolOptions, ClaimOptions, PoolInfo } from './pool/types.js'
export type { ServeOptions, Server } from './remote/server.js'
export { RemoteStore, RemoteLock, type ConnectOptions } from './remote/client.js'
