// LOCK-02 and POOL-02 on a fileStorage whose directory fsync fails: a directory entry not synced may be
// lost by a crash (the directory's own, made by the store, and with it every value in it; or a value's,
// renamed into place), so a failed sync fails what it guards with a StorageError, never passes as done.
// An EIO is injected into this process's node:fs (`syncBuiltinESMExports` carries the patch to the
// package's ESM import of it; where a runtime does not, the tests skip): no real disk fails on demand.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { createRequire, syncBuiltinESMExports } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileStorage, StorageError } from 'holdfast'

const fs = createRequire(import.meta.url)('node:fs')

/**
 * Wraps `fs.openSync` and `fs.fsyncSync`: every directory fsynced is recorded (by the path it was
 * opened by), and one whose path `fails(path)` answers EIO. `restore()` undoes it.
 */
function watchDirectorySyncs(fails = () => false) {
  const { openSync, fsyncSync, closeSync } = fs
  const paths = new Map()
  const synced = []
  fs.openSync = (file, ...rest) => {
    const fd = openSync(file, ...rest)
    paths.set(fd, String(file))
    return fd
  }
  fs.closeSync = fd => {
    paths.delete(fd)
    return closeSync(fd)
  }
  fs.fsyncSync = fd => {
    const file = paths.get(fd)
    if (file !== undefined && fs.fstatSync(fd).isDirectory()) {
      if (fails(file)) throw Object.assign(new Error(`EIO: i/o error, fsync`), { code: 'EIO', errno: -5, syscall: 'fsync' })
      synced.push(file)
    }
    return fsyncSync(fd)
  }
  syncBuiltinESMExports()
  return {
    synced,
    restore() {
      Object.assign(fs, { openSync, fsyncSync, closeSync })
      syncBuiltinESMExports()
    },
  }
}

/** Whether a patch of node:fs reaches an ESM import of it here (Node: yes; Bun: no). */
async function patchReachesImports() {
  const watch = watchDirectorySyncs()
  try {
    return (await import('node:fs')).fsyncSync === fs.fsyncSync
  } finally {
    watch.restore()
  }
}

const skip = !(await patchReachesImports()) && 'this runtime does not carry a patch of node:fs to ESM imports'

test('a directory fileStorage makes is synced into its parent, each level it made', { skip }, async () => {
  const top = mkdtempSync(join(tmpdir(), 'holdfast-syncs-'))
  const watch = watchDirectorySyncs()
  const storage = fileStorage(join(top, 'a', 'b'))
  try {
    await storage.set('holdfast.fences', 'x')
    for (const dir of [top, join(top, 'a'), join(top, 'a', 'b')])
      assert.ok(watch.synced.includes(dir), `${dir} was fsynced (synced: ${watch.synced.join(', ')})`)
  } finally {
    watch.restore()
    await storage.close()
    rmSync(top, { recursive: true, force: true })
  }
})

test('LOCK-02: a directory found made (by a store killed before it synced it into its parent) is synced into its parent, each level, when a store holds it', { skip }, async () => {
  const top = mkdtempSync(join(tmpdir(), 'holdfast-syncs-'))
  // What a store killed between its mkdir and the sync after it leaves: the levels, never synced.
  mkdirSync(join(top, 'a', 'b'), { recursive: true })
  const watch = watchDirectorySyncs()
  const storage = fileStorage(join(top, 'a', 'b'))
  try {
    await storage.set('holdfast.fences', 'x')
    for (const dir of [top, join(top, 'a')])
      assert.ok(watch.synced.includes(dir), `${dir} was fsynced (synced: ${watch.synced.join(', ')})`)
  } finally {
    watch.restore()
    await storage.close()
    rmSync(top, { recursive: true, force: true })
  }
})

test('a failed fsync of the directory made for the store fails its first use with StorageError, and a later use tries again', { skip }, async () => {
  const top = mkdtempSync(join(tmpdir(), 'holdfast-syncs-'))
  const watch = watchDirectorySyncs(dir => dir === top)
  const storage = fileStorage(join(top, 'store'))
  try {
    const error = await storage.get('holdfast.fences').then(
      () => assert.fail('the first get resolved, its directory not kept'),
      e => e,
    )
    assert.ok(error instanceof StorageError, `a StorageError, not ${error}`)
    assert.equal(error.code, 'storage')
    assert.equal(error.cause?.code, 'EIO')
    assert.match(error.message, /fileStorage .*store/)
    watch.restore()
    // The directory is there now: its entry, not synced yet, is synced by the next use.
    const again = watchDirectorySyncs()
    try {
      await storage.set('holdfast.fences', 'x')
      assert.ok(again.synced.includes(top), `the parent is synced at the next use (synced: ${again.synced.join(', ')})`)
    } finally {
      again.restore()
    }
    assert.equal(await storage.get('holdfast.fences'), 'x')
  } finally {
    watch.restore()
    await storage.close()
    rmSync(top, { recursive: true, force: true })
  }
})

test('LOCK-02/POOL-02: a failed fsync of the directory after a value is renamed into place fails its set with StorageError', { skip }, async () => {
  const top = mkdtempSync(join(tmpdir(), 'holdfast-syncs-'))
  const storage = fileStorage(top)
  await storage.set('holdfast.fences', 'old')
  const watch = watchDirectorySyncs(dir => dir === top)
  try {
    const error = await storage.set('holdfast.fences', 'new').then(
      () => assert.fail('the set resolved, its directory entry not synced'),
      e => e,
    )
    assert.ok(error instanceof StorageError, `a StorageError, not ${error}`)
    assert.equal(error.code, 'storage')
    assert.equal(error.cause?.code, 'EIO')
  } finally {
    watch.restore()
    await storage.close()
    rmSync(top, { recursive: true, force: true })
  }
})
