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
export { memoryStorage, type Storage } from './storage.js'
export type { Clock } from './clock.js'
export type { Duration } from './duration.js'
export { Lease } from './lease.js'
export { Lock, Semaphore, type LockOptions, type SemaphoreOptions, type HoldOptions, type TryHoldOptions, type TryHoldResult } from './lock.js'
export { Store, type StoreOptions, type KeyInfo, type HolderInfo } from './store.js'
export type { ServeOptions, Server } from './server.js'
export { RemoteStore, RemoteLock, type ConnectOptions } from './client.js'
