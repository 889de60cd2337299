/**
 * `holdfast/cloudflare` outside workerd (Node, Bun, Deno, browsers): the same names, each throwing a
 * clear error when used, so that importing it (a shared module, a type-only use) is harmless. The
 * `workerd` export condition, which wrangler and Cloudflare's Vite plugin set, picks index.ts instead.
 */

import { InvalidError } from '../errors.js'
import type { Storage } from '../storage/storage.js'
import type { DurableObjectStorageLike } from './types.js'

function unavailable(what: string): InvalidError {
  return new InvalidError(
    `holdfast/cloudflare: ${what} runs in Cloudflare workerd only; this runtime resolved the package without the "workerd" export condition (bundle the worker with wrangler)`,
  )
}

export class HoldfastObject {
  constructor(..._args: unknown[]) {
    throw unavailable('HoldfastObject')
  }
}

export function workerStore(..._args: unknown[]): never {
  throw unavailable('workerStore')
}

export function durableObjectStorage(_storage: DurableObjectStorageLike): Storage {
  throw unavailable('durableObjectStorage')
}

// Pure helpers work everywhere (for scripts that name objects, such as admin tools).
export { objectName, fnv1a } from './worker-store.js'

export class WorkerStore {
  constructor(..._args: unknown[]) {
    throw unavailable('WorkerStore')
  }
}
export class WorkerLock {
  constructor(..._args: unknown[]) {
    throw unavailable('WorkerLock')
  }
}
export class WorkerLease {
  constructor(..._args: unknown[]) {
    throw unavailable('WorkerLease')
  }
}
