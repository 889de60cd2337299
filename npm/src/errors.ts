/**
 * The errors of holdfast: one base class with a stable `code`, and a subclass per code, so that callers
 * can branch on `instanceof` or on `err.code` alike (each subclass's `code` is typed as its own).
 * Messages name the place (`lock summaries: key "42"`) and the bad value, if any.
 */

export type ErrorCode = 'in_use' | 'lost' | 'closed' | 'invalid' | 'limit' | 'cancelled' | 'storage' | 'permission'

export class HoldfastError extends Error {
  readonly code: ErrorCode
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.name = new.target.name
  }
}

/** The key was still held when the wait ran out (or at once, for a wait of 0). */
export class InUseError extends HoldfastError {
  declare readonly code: 'in_use'
  constructor(message: string, options?: { cause?: unknown }) {
    super('in_use', message, options)
  }
}

/** The lease was lost: revoked at `maxHold`. Whatever fn did may have overlapped another holder. */
export class LostError extends HoldfastError {
  declare readonly code: 'lost'
  constructor(message: string, options?: { cause?: unknown }) {
    super('lost', message, options)
  }
}

/** The store was closed (or failed and closed itself; the `cause` says why). */
export class ClosedError extends HoldfastError {
  declare readonly code: 'closed'
  constructor(message: string, options?: { cause?: unknown }) {
    super('closed', message, options)
  }
}

/** Bad input: a name, key, duration, limit or option. Nothing changed. */
export class InvalidError extends HoldfastError {
  declare readonly code: 'invalid'
  constructor(message: string, options?: { cause?: unknown }) {
    super('invalid', message, options)
  }
}

/** A bound was reached, such as 10,000 waiters on one key. */
export class LimitError extends HoldfastError {
  declare readonly code: 'limit'
  constructor(message: string, options?: { cause?: unknown }) {
    super('limit', message, options)
  }
}

/** The hold's `signal` aborted; its reason is the `cause`. */
export class CancelledError extends HoldfastError {
  declare readonly code: 'cancelled'
  constructor(message: string, options?: { cause?: unknown }) {
    super('cancelled', message, options)
  }
}

/** The storage callback failed; its error is the `cause`. Nothing was granted that it did not cover. */
export class StorageError extends HoldfastError {
  declare readonly code: 'storage'
  constructor(message: string, options?: { cause?: unknown }) {
    super('storage', message, options)
  }
}

/** A server refused the token (or none was given). */
export class PermissionError extends HoldfastError {
  declare readonly code: 'permission'
  constructor(message: string, options?: { cause?: unknown }) {
    super('permission', message, options)
  }
}

const classes: Record<string, new (message: string, options?: { cause?: unknown }) => HoldfastError> = {
  in_use: InUseError,
  lost: LostError,
  closed: ClosedError,
  invalid: InvalidError,
  limit: LimitError,
  cancelled: CancelledError,
  storage: StorageError,
  permission: PermissionError,
}

/** Whether `code` is one of holdfast's (`ErrorCode`): a runtime's own (`EIO`, `ERR_…`) is not. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(classes, code)
}

/** The error class of a code, for errors that come over the wire. */
export function errorOf(code: string, message: string, options?: { cause?: unknown }): HoldfastError {
  const Class = classes[code] ?? InvalidError
  return new Class(message, options)
}

/** Turns an error the engine threw (a plain `Error` with a `code`) into its class, prefixed by `place`. */
export function fromEngine(error: unknown, place?: string): Error {
  if (error instanceof HoldfastError) return error
  const e = error as { code?: unknown; message?: unknown; cause?: unknown } | null
  const Class = e && typeof e.code === 'string' ? classes[e.code] : undefined
  if (!Class || !e) return error as Error
  let message = String(e.message)
  const cause = e.cause as { message?: unknown } | undefined
  if (e.code === 'storage' && cause !== undefined) message += `: ${cause && typeof cause === 'object' ? String(cause.message) : String(cause)}`
  return new Class(place ? placed(place, message) : message, cause === undefined ? undefined : { cause })
}

/**
 * A hold that would not wait found its key busy. A wait under 1 ms is no wait (deadlines are whole
 * milliseconds), so it is named as given and said to be none.
 */
export function heldByAnother(place: string, wait: number): InUseError {
  return new InUseError(`${place}: held by another (wait ${wait === 0 ? '0' : `${wait}ms, under 1 ms: not waited`})`)
}

/** `message` after `place`, unless it names that place first already (the engine's messages often do). */
export function placed(place: string, message: string): string {
  return message.startsWith(`${place}: `) ? message : `${place}: ${message}`
}
