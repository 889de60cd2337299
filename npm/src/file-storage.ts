/**
 * `fileStorage(dir)`: a storage kept in files of one directory, for Node, Bun and Deno.
 *
 * - Each value is written atomically: to a temporary file, fsynced, renamed over the old one, and the
 *   directory fsynced, so that a crash leaves the old value or the new, never a torn one.
 * - The directory serves one open store at a time: the first `get` takes an exclusive lock file
 *   (`holdfast.lock`, created with O_EXCL, holding the pid). A second store, in this process or another,
 *   fails with a `StorageError` naming the directory and the holder, instead of repeating fences. A lock
 *   left by a process that died (its pid no longer runs) is taken over; `close()` removes it.
 * - A directory that kept a value marks itself (`holdfast.used`): if the value is later missing, the
 *   store refuses to open rather than start its fences again. (The value itself carries a check, so a
 *   damaged one is refused too: see the engine's `fence::decode_ceiling`.)
 * - On Deno it needs `--allow-read` and `--allow-write` (for the directory at least), and says so in its
 *   `StorageError` when they are missing. Without `--allow-run` it cannot tell whether the process that
 *   left a lock still runs, so it never takes such a lock over, and says so.
 */

import * as fs from 'node:fs'
import * as path from 'node:path'
import { StorageError } from './errors.js'
import type { Storage } from './storage.js'

const LOCK_FILE = 'holdfast.lock'
/** Written with the first value: a directory that has it and lacks a value has lost the value. */
const USED_FILE = 'holdfast.used'
/** Directories locked by stores of this process (a pid check cannot tell them apart). */
const lockedHere = new Set<string>()

export function fileStorage(dir: string): Storage {
  if (typeof dir !== 'string' || dir.length === 0) throw new StorageError(`fileStorage: dir must be a non-empty string`)
  const root = path.resolve(dir)
  const place = `fileStorage ${root}`
  let locked = false
  let used = false

  const lock = () => {
    if (locked) return
    fs.mkdirSync(root, { recursive: true })
    const file = path.join(root, LOCK_FILE)
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        if (lockedHere.has(root)) throw Object.assign(new Error('locked here'), { code: 'EEXIST' })
        fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx' })
        lockedHere.add(root)
        locked = true
        return
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
        const holder = lockedHere.has(root) ? process.pid : Number.parseInt(readOr(file, ''), 10)
        const state = lockedHere.has(root) ? 'alive' : Number.isInteger(holder) ? alive(holder) : 'dead'
        if (state !== 'dead') {
          const unknown = state === 'unknown' ? ' (Deno without --allow-run cannot tell whether it still runs)' : ''
          throw new StorageError(
            `${place}: the directory is in use by another open store (process ${holder})${unknown}; one storage serves one store at a time. If no such store runs, remove ${file}`,
          )
        }
        // The holder died without closing: its lock is stale.
        fs.rmSync(file, { force: true })
      }
    }
    throw new StorageError(`${place}: could not take the directory lock ${file}`)
  }

  /** Deno's refusal for want of a permission flag, as a StorageError that names the flags. */
  const denied = (error: unknown): unknown =>
    isDenoPermissionError(error)
      ? new StorageError(
          `${place}: Deno denied access (${(error as Error).message}); fileStorage needs --allow-read and --allow-write (at least --allow-read=${root} --allow-write=${root})`,
          { cause: error },
        )
      : error

  return {
    get(key) {
      let text: string | undefined
      let usedBefore: string | undefined
      try {
        lock()
        text = readOr(path.join(root, fileName(key)), undefined)
        usedBefore = text === undefined ? readOr(path.join(root, USED_FILE), undefined) : undefined
      } catch (error) {
        throw denied(error)
      }
      if (usedBefore !== undefined) {
        // A directory that kept values before has lost this one: starting fences again from 1
        // would repeat them.
        throw new StorageError(
          `${place}: ${fileName(key)} is missing, though this directory kept fences before; refusing to restart fences. If it is meant to start anew, remove ${path.join(root, USED_FILE)}`,
        )
      }
      return text
    },
    set(key, value) {
      try {
        lock()
        writeAtomically(root, fileName(key), value)
        if (!used) {
          writeAtomically(root, USED_FILE, 'holdfast kept values in this directory: its fences must not start again\n')
          used = true
        }
      } catch (error) {
        throw denied(error)
      }
    },
    close() {
      if (!locked) return
      locked = false
      lockedHere.delete(root)
      fs.rmSync(path.join(root, LOCK_FILE), { force: true })
    },
  }
}

function fileName(key: string): string {
  return `${encodeURIComponent(key)}.value`
}

function readOr<T>(file: string, otherwise: T): string | T {
  try {
    return fs.readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return otherwise
    throw error
  }
}

function writeAtomically(dir: string, name: string, value: string): void {
  const target = path.join(dir, name)
  const temp = path.join(dir, `.${name}.${process.pid}.tmp`)
  const fd = fs.openSync(temp, 'w')
  try {
    fs.writeSync(fd, value)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
  fs.renameSync(temp, target)
  syncDir(dir)
}

function syncDir(dir: string): void {
  let fd: number | undefined
  try {
    fd = fs.openSync(dir, 'r')
    fs.fsyncSync(fd)
  } catch {
    // Some platforms cannot fsync a directory; the rename is still atomic there.
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

function alive(pid: number): 'alive' | 'dead' | 'unknown' {
  try {
    process.kill(pid, 0)
    return 'alive'
  } catch (error) {
    // Deno without --allow-run refuses to signal: the holder may run, so its lock is not taken over.
    if (isDenoPermissionError(error)) return 'unknown'
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? 'alive' : 'dead'
  }
}

/** Whether Deno refused for want of a permission flag (`NotCapable`; `PermissionDenied` before Deno 2). */
function isDenoPermissionError(error: unknown): boolean {
  const errors = (globalThis as { Deno?: { errors?: Record<string, unknown> } }).Deno?.errors
  const NotCapable = errors?.NotCapable
  if (typeof NotCapable === 'function' && error instanceof NotCapable) return true
  const e = error as { name?: unknown; message?: unknown } | null
  if (typeof e !== 'object' || e === null) return false
  if (e.name === 'NotCapable') return true
  // Deno 2 also names OS-level EACCES PermissionDenied: only Deno's own refusals name a flag.
  return e.name === 'PermissionDenied' && typeof e.message === 'string' && e.message.includes('--allow-')
}
