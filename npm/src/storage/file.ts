/**
 * `fileStorage(dir)`: a storage kept in files of one directory, for Node, Bun and Deno.
 *
 * - Each value is written atomically: whole to a temporary file (a write the disk took only part of
 *   goes on until it took all or failed: a full disk fails the `set`), fsynced, renamed over the old
 *   one, and the directory fsynced, so that a crash leaves the old value or the new, never a torn one.
 *   The temporary file a crash left (`.NAME.PID.tmp`) is removed by the next store to hold the directory.
 *   The directory, made if missing, is synced into its parent (each level made); found made, each
 *   level is synced again when a store holds it (its maker may have been killed before it synced it).
 *   A directory fsync that fails fails the `set` (or the first use) with a `StorageError`: the value
 *   may be in place, but not known to last a crash.
 * - The directory serves one open store at a time: the first `get` (or `set`) claims it with a Unix
 *   socket bound in it (`dir-claim.ts`). A second store, in this process or another, fails with a
 *   `StorageError` naming the directory, instead of repeating fences. The kernel closes the socket
 *   when the holder's process ends, however it ends, so the directory can be opened again at once
 *   after a crash (even while the dead process is an unreaped zombie, or its pid runs another process);
 *   `close()` lets it go.
 * - It also keeps `holdfast.lock` holding its pid while it holds the directory, only so that an older
 *   holdfast (which went by that pid) refuses the directory too. It never goes by it (it only names it
 *   in a refusal): a pid says nothing (reused, or a zombie's). An older holdfast's store that runs is
 *   therefore not seen: stop it before opening the directory with this one.
 * - A directory marks each key it kept a value of (`holdfast.used`, one `key NAME` line a key): if
 *   such a value is later missing, the store refuses to open rather than start its fences again, or
 *   open its pools without their claims. A key never written (the pools of a store that used none) is
 *   simply absent. A mark of an older holdfast (its first line alone) names the fence key only. (The
 *   values carry a check, so a damaged one is refused too: see the engine's `fence::decode_ceiling` and
 *   `pool/log.rs`.)
 * - On Deno it needs `--allow-read`, `--allow-write` and `--allow-net` (for its socket), and says so in
 *   its `StorageError` when they are missing.
 */

import * as fs from 'node:fs'
import * as path from 'node:path'
import { claimDirectory, type Claim } from './dir-claim.js'
import { InvalidError, StorageError } from '../errors.js'
import type { Storage } from './storage.js'
import { checkNoMore } from '../util/options.js'

/** Written while a store holds the directory, for older holdfast versions only (never gone by here). */
const LOCK_FILE = 'holdfast.lock'
/** Names every key a value was written for: a directory that lacks the value of one has lost it. */
const USED_FILE = 'holdfast.used'
/** The first line of `USED_FILE` (all an older holdfast wrote, for the fence key alone). */
const USED_HEAD = 'holdfast kept values in this directory: its fences must not start again\n'
/** The key an older holdfast's mark names. */
const FENCE_KEY = 'holdfast.fences'
/** Directories held (or being claimed) by stores of this process: refused at once, without a socket. */
const lockedHere = new Set<string>()

/** The published signature takes `dir` alone (TypeScript refuses more); plain JavaScript is refused at run time. */
export function fileStorage(dir: string): Storage
export function fileStorage(dir: string, ...extra: unknown[]): Storage {
  // Bad input, as a bad option anywhere: an InvalidError (a StorageError says a storage failed, which
  // a caller may try again).
  if (typeof dir !== 'string' || dir.length === 0) {
    throw new InvalidError(
      `fileStorage: dir must be a non-empty string, not ${dir === '' ? '""' : dir === null ? 'null' : Array.isArray(dir) ? 'an array' : typeof dir}`,
    )
  }
  checkNoMore(extra, 'fileStorage', 'dir')
  const root = path.resolve(dir)
  const place = `fileStorage ${root}`
  /** The claim of the directory: under way or held; undefined before it and after `close()`. */
  let claim: Promise<Claim> | undefined
  /** The keys `USED_FILE` names, once read while this storage holds the directory: read again at each
   * claim, as another storage (another process) may have marked keys while this one was closed. */
  let used: Set<string> | undefined
  /** The top level of the directory this storage made and has not synced into its parent yet (a sync
   * failed): synced at the next claim, as the directory is there by then and `mkdirSync` says nothing. */
  let unsynced: string | undefined
  const usedKeys = (): Set<string> => {
    if (used) return used
    const text = readOr(path.join(root, USED_FILE), undefined)
    used = new Set<string>()
    if (text !== undefined) {
      const named = text
        .split('\n')
        .filter(line => line.startsWith('key '))
        .map(line => line.slice(4))
      for (const key of named.length > 0 ? named : [FENCE_KEY]) used.add(key)
    }
    return used
  }

  const inUse = (detail: string) => {
    let pid = Number.NaN
    try {
      pid = Number.parseInt(readOr(path.join(root, LOCK_FILE), ''), 10) // for the message only
    } catch {
      // the refusal stands without it
    }
    const holder = Number.isInteger(pid) ? ` (process ${pid}, says ${LOCK_FILE})` : ''
    return `${place}: the directory is in use by another open store${holder}: ${detail}; one storage serves one store at a time`
  }

  const lock = (): Promise<Claim> => {
    if (claim) return claim
    if (lockedHere.has(root))
      return Promise.reject(new StorageError(`${place}: the directory is in use by another open store of this process; one storage serves one store at a time`))
    lockedHere.add(root)
    const claiming = (async () => {
      unsynced = fs.mkdirSync(root, { recursive: true }) ?? unsynced
      if (unsynced !== undefined) syncMade(root, unsynced, place)
      // Found made: by a store that may have been killed between its mkdir and the sync after it (its
      // `unsynced` died with it), so that a power loss now would still lose the directory, and the
      // fences kept in it would start again. Each level is synced into its parent once more.
      else syncFound(root, place)
      unsynced = undefined
      const held = await claimDirectory(root, place, inUse)
      sweepTemporaries(root)
      try {
        // Replaced in one rename, so that an older holdfast never reads it empty (as dead).
        const temp = path.join(root, `.${LOCK_FILE}.${process.pid}.tmp`)
        fs.writeFileSync(temp, `${process.pid}\n`)
        fs.renameSync(temp, path.join(root, LOCK_FILE))
      } catch (error) {
        await held.release()
        throw error
      }
      return held
    })()
    claim = claiming
    claiming.catch(() => {
      // Not claimed: a later call tries again.
      if (claim === claiming) claim = undefined
      lockedHere.delete(root)
    })
    return claiming
  }

  /** Deno's refusal for want of a permission flag, as a StorageError that names the flags. */
  const denied = (error: unknown): unknown =>
    isDenoPermissionError(error)
      ? new StorageError(
          `${place}: Deno denied access (${(error as Error).message}); fileStorage needs --allow-read, --allow-write (at least --allow-read=${root} --allow-write=${root}) and --allow-net (for the Unix socket by which it holds the directory)`,
          { cause: error },
        )
      : error

  return {
    async get(key) {
      let text: string | undefined
      let usedBefore = false
      try {
        await lock()
        text = readOr(path.join(root, fileName(key)), undefined)
        usedBefore = text === undefined && usedKeys().has(key)
      } catch (error) {
        throw denied(error)
      }
      if (usedBefore) {
        // A directory that kept this value before has lost it: starting fences again from 1 would
        // repeat them, and pools without their claims would hand their units out again.
        throw new StorageError(
          `${place}: ${fileName(key)} is missing, though this directory kept it before; refusing to restart fences (or pools without their claims). If it is meant to start anew, remove ${path.join(root, USED_FILE)}`,
        )
      }
      return text
    },
    async set(key, value) {
      try {
        await lock()
        writeAtomically(root, fileName(key), value, place)
        const keys = usedKeys()
        if (!keys.has(key)) {
          // Marked after the value landed (a crash between the two leaves a value unmarked, marked
          // by the next write; the other way round it would leave a mark of no value, refused). Kept
          // as marked only once the mark is written: a mark a full disk refused is tried again by the
          // next write of the key, which fails until it is made.
          const marked = [...keys, key]
          writeAtomically(root, USED_FILE, USED_HEAD + marked.map(k => `key ${k}\n`).join(''), place)
          keys.add(key)
        }
      } catch (error) {
        throw denied(error)
      }
    },
    async close() {
      const held = claim
      if (!held) return
      claim = undefined
      // Written from a stale copy, the marks of the keys others kept meanwhile would be lost.
      used = undefined
      const release = await held.catch(() => undefined)
      if (!release) return
      try {
        // The pid file first: once the socket is closed, the next store may write its own.
        fs.rmSync(path.join(root, LOCK_FILE), { force: true })
      } catch {
        // Left (a filesystem remounted read-only, a mode changed): it names a process that holds
        // nothing from now on, as after a crash. Thrown, it kept the socket listening and the
        // directory refused, here and to other processes, until this process ended.
      }
      try {
        await release.release()
      } finally {
        lockedHere.delete(root)
      }
    },
  }
}

/** The temporary files `writeAtomically` and the pid file's write name: `.NAME.PID.tmp`. */
const TEMPORARY = /^\.(?:.+\.value|holdfast\.used|holdfast\.lock)\.[0-9]+\.tmp$/

/**
 * Removes the temporary files of writes that a crash cut short (a process killed between a write's
 * start and its rename: each a value never put in place). Only the holder of the directory writes in
 * it, so once it is held none is a write under way. Left, there was one more for each crash in the
 * middle of a write (a pools' chunk is up to 60 KiB), for as long as a service kept crashing.
 */
function sweepTemporaries(root: string): void {
  try {
    for (const name of fs.readdirSync(root)) if (TEMPORARY.test(name)) fs.rmSync(path.join(root, name), { force: true })
  } catch {
    // Tidying only: what is left changes nothing, and the next holder tries again.
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

/**
 * Syncs each level of `root` from `made` (the first one `mkdirSync` made) down into its parent: a
 * directory entry is durable only once its parent is fsynced, and a crash that lost the store's
 * directory would lose every value written in it, each synced as it was (fences would start again).
 */
function syncMade(root: string, made: string, place: string): void {
  for (let dir = root; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    syncDir(path.dirname(dir), place)
    if (dir === path.resolve(made)) break
  }
}

/**
 * Syncs each level of `root` into its parent, as `syncMade` does, where this process may open the
 * parent: a level it may not read (a home of mode 0711, Deno's `--allow-read` naming the store's
 * directory alone) was not made by a store of this user, or not without that right. A failed fsync
 * fails the claim as in `syncMade`.
 */
function syncFound(root: string, place: string): void {
  for (let dir = root; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const parent = path.dirname(dir)
    try {
      fs.closeSync(fs.openSync(parent, 'r'))
    } catch (error) {
      if (isDenoPermissionError(error) || UNREADABLE.has((error as NodeJS.ErrnoException | null)?.code ?? '')) continue
    }
    syncDir(parent, place)
  }
}

/** Errors of opening a directory that mean this process may not read it. */
const UNREADABLE = new Set(['EACCES', 'EPERM'])

function writeAtomically(dir: string, name: string, value: string, place: string): void {
  const target = path.join(dir, name)
  const temp = path.join(dir, `.${name}.${process.pid}.tmp`)
  try {
    const fd = fs.openSync(temp, 'w')
    try {
      writeAll(fd, value)
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
    fs.renameSync(temp, target)
  } catch (error) {
    // Not renamed: the old value stands, and the part written goes (a full disk gets it back).
    fs.rmSync(temp, { force: true })
    throw error
  }
  syncDir(dir, place)
}

/**
 * Writes all of `value`: one `write(2)` may take only part of it (a disk that fills up in its middle, a
 * file size limit), answering how much it took and no error, and the next one fails (ENOSPC, EFBIG).
 * Renamed into place, a value cut short was acknowledged kept, and then refused as damaged by the
 * next store, which could not open (a pools' write: the claims it confirmed lost with it).
 */
function writeAll(fd: number, value: string): void {
  const bytes = new TextEncoder().encode(value)
  for (let at = 0; at < bytes.length; ) {
    const took = fs.writeSync(fd, bytes, at, bytes.length - at)
    // A regular file takes at least a byte or fails; were a runtime to answer 0, this would spin.
    if (took <= 0) throw new Error(`write took ${took} of ${bytes.length - at} bytes`)
    at += took
  }
}

/**
 * Fsyncs directory `dir`, so that the entries renamed or made in it last a crash. A sync that fails
 * (EIO: the disk could not keep them) fails the write it guards with a `StorageError`: counted as done,
 * a value acknowledged would be lost by a crash after. Only a platform or filesystem that cannot sync a
 * directory at all passes (Windows cannot open one; some filesystems answer EINVAL): the rename is still
 * atomic there, as durable as it gets.
 */
function syncDir(dir: string, place: string): void {
  let fd: number | undefined
  try {
    fd = fs.openSync(dir, 'r')
    fs.fsyncSync(fd)
  } catch (error) {
    if (cannotSyncDirectories(error)) return
    throw new StorageError(
      `${place}: fsync of the directory ${dir} failed, so what was written in it may not last a crash: ${(error as Error)?.message ?? String(error)}`,
      { cause: error },
    )
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

/** Errors of opening or fsyncing a directory that mean it cannot be done here, not that it failed. */
const NO_DIRECTORY_SYNC = new Set(['EINVAL', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'])

function cannotSyncDirectories(error: unknown): boolean {
  if (process.platform === 'win32') return true
  return NO_DIRECTORY_SYNC.has((error as NodeJS.ErrnoException | null)?.code ?? '')
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
