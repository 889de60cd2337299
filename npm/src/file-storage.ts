/**
 * `fileStorage(dir)`: a storage kept in files of one directory, for Node, Bun and Deno.
 *
 * - Each value is written atomically: to a temporary file, fsynced, renamed over the old one, and the
 *   directory fsynced, so that a crash leaves the old value or the new, never a torn one.
 * - The directory serves one open store at a time: the first `get` takes an exclusive lock file
 *   (`holdfast.lock`, created with O_EXCL, holding the pid). A second store, in this process or another,
 *   fails with a `StorageError` naming the directory and the holder, instead of repeating fences. A lock
 *   left by a process that died (its pid no longer runs) is taken over; `close()` removes it.
 */

import * as fs from 'node:fs'
import * as path from 'node:path'
import { StorageError } from './errors.js'
import type { Storage } from './storage.js'

const LOCK_FILE = 'holdfast.lock'
/** Directories locked by stores of this process (a pid check cannot tell them apart). */
const lockedHere = new Set<string>()

export function fileStorage(dir: string): Storage {
  if (typeof dir !== 'string' || dir.length === 0) throw new StorageError(`fileStorage: dir must be a non-empty string`)
  const root = path.resolve(dir)
  const place = `fileStorage ${root}`
  let locked = false

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
        if (lockedHere.has(root) || (Number.isInteger(holder) && alive(holder))) {
          throw new StorageError(
            `${place}: the directory is in use by another open store (process ${holder}); one storage serves one store at a time. If no such store runs, remove ${file}`,
          )
        }
        // The holder died without closing: its lock is stale.
        fs.rmSync(file, { force: true })
      }
    }
    throw new StorageError(`${place}: could not take the directory lock ${file}`)
  }

  return {
    get(key) {
      lock()
      const text = readOr(path.join(root, fileName(key)), undefined)
      return text
    },
    set(key, value) {
      lock()
      writeAtomically(root, fileName(key), value)
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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
