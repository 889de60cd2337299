// #13 item 1 on a fileStorage directory that cannot be changed any more while its store runs (its
// filesystem remounted read-only after a disk error, or its mode changed): close() still lets the
// directory go, so that a store opens on it again, in this process too, once it can be written. Where
// the test may mount, the directory is a tmpfs remounted read-only (EROFS); else its mode is made
// 0555 (EACCES). A real filesystem either way: nothing of node:fs is patched.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStore, fileStorage } from 'holdfast'

/**
 * A directory that `freeze()` makes unchangeable and `thaw()` changeable again: a tmpfs mounted on it
 * (remounted read-only), where this process may mount; else its mode (0555), where that stops this
 * process (not root). Undefined when neither does.
 */
function directory() {
  const base = mkdtempSync(join(tmpdir(), 'holdfast-read-only-'))
  const dir = join(base, 'store')
  mkdirSync(dir)
  let mounted = true
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'ignore' })
  } catch {
    mounted = false
    chmodSync(dir, 0o555)
    let stopped = false
    try {
      writeFileSync(join(dir, 'probe'), '')
    } catch {
      stopped = true
    }
    chmodSync(dir, 0o755)
    if (!stopped) {
      rmSync(base, { recursive: true, force: true })
      return undefined // root without the right to mount (a container): nothing stops it
    }
  }
  return {
    dir,
    freeze: () => (mounted ? execFileSync('mount', ['-o', 'remount,ro', dir]) : chmodSync(dir, 0o555)),
    thaw: () => (mounted ? execFileSync('mount', ['-o', 'remount,rw', dir]) : chmodSync(dir, 0o755)),
    remove() {
      // Lazily: a socket still listening there (a store that failed to let go) must not fail the cleanup.
      if (mounted) execFileSync('umount', ['-l', dir])
      else chmodSync(dir, 0o755)
      rmSync(base, { recursive: true, force: true })
    },
  }
}

const place = process.platform === 'linux' ? directory() : undefined

test('#13 item 1: a directory made read-only under its store: close() resolves and lets it go, and a store opens on it again in this process once it is writable', { skip: !place && 'needs Linux, and a tmpfs mount or a user whom a mode stops' }, async () => {
  const { dir, freeze, thaw, remove } = place
  try {
    const store = await openStore({ storage: fileStorage(dir) })
    const before = await store.lock('a').hold('k', lease => lease.fence)
    freeze()
    // The pid file it keeps for older holdfast versions cannot be removed now: that must not keep
    // the directory held (its socket listening, and this process refusing it) for as long as the
    // process lives.
    await store.close()
    thaw()
    const again = await openStore({ storage: fileStorage(dir) })
    const after = await again.lock('a').hold('k', lease => lease.fence)
    assert.ok(after > before, `fence ${after} after the reopening, ${before} before (LOCK-02)`)
    await again.close()
  } finally {
    remove()
  }
})
