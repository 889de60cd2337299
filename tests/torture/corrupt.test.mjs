// LOCK-02 against a damaged fence file: `fileStorage` writes atomically (temporary file, fsync,
// rename, fsync of the directory), so a crash leaves the old value or the new one, never a torn one;
// damage from outside (a truncated or corrupted file) must be refused with a clear StorageError that
// names the value, never taken for a new store whose fences start again. (tests/js/lock02 has one
// such case; these are the rest.)
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync, readFileSync, readdirSync, rmSync, mkdirSync, unlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStore, fileStorage, StorageError } from 'holdfast'

const FILE = 'holdfast.fences.value'

/** A directory whose store handed out some fences and closed; answers the last fence and the value. */
async function used() {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-corrupt-'))
  const store = await openStore({ storage: fileStorage(dir) })
  let last = 0
  for (let i = 0; i < 5; i++) last = await store.lock('x').hold('k', lease => lease.fence)
  await store.close()
  // Twice, so that the value is a ceiling above a first one (2000000), not the first block's.
  const again = await openStore({ storage: fileStorage(dir) })
  last = await again.lock('x').hold('k', lease => lease.fence)
  await again.close()
  assert.ok(readdirSync(dir).includes(FILE), `${FILE} is where fileStorage keeps the ceiling`)
  return { dir, last, value: readFileSync(join(dir, FILE), 'utf8') }
}

/** Damages the file with `damage(path, value)`, then: the open must fail with a StorageError naming
 * the damage; and with the good value back, the store opens above every fence handed out before. */
async function refused(damage, names) {
  const { dir, last, value } = await used()
  try {
    damage(join(dir, FILE), value)
    await assert.rejects(openStore({ storage: fileStorage(dir) }), error => {
      assert.ok(error instanceof StorageError, `a StorageError, not ${error?.constructor?.name}: ${error?.message}`)
      assert.equal(error.code, 'storage')
      if (names !== undefined) assert.match(error.message, names)
      return true
    })
    // Nothing was written over it, and with the value repaired the fences go on.
    rmSync(join(dir, FILE), { recursive: true, force: true })
    writeFileSync(join(dir, FILE), value)
    const store = await openStore({ storage: fileStorage(dir) })
    const next = await store.lock('x').hold('k', lease => lease.fence)
    await store.close()
    assert.ok(next > last, `after the repair: ${next} after ${last}`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

test('LOCK-02: a fence file truncated to nothing is refused with a StorageError', () =>
  refused(file => writeFileSync(file, ''), /fence ceiling/))

test('LOCK-02: a fence file torn in the middle of its digits (junk after them) is refused', () =>
  refused((file, value) => writeFileSync(file, `${value.slice(0, 3)}\u0000x`), /fence ceiling/))

test('LOCK-02: a fence file of zero bytes of the right length (a lost block) is refused', () =>
  refused((file, value) => writeFileSync(file, Buffer.alloc(value.length)), /fence ceiling/))

test('LOCK-02: a fence file with a bit flipped into a non-digit is refused', () =>
  refused((file, value) => {
    const bytes = Buffer.from(value)
    bytes[0] ^= 0x40
    writeFileSync(file, bytes)
  }, /fence ceiling/))

test('LOCK-02: a fence file with a line end or spaces added is refused, not trimmed', () =>
  refused((file, value) => writeFileSync(file, ` ${value}\n`), /fence ceiling/))

test('LOCK-02: a fence file holding a number at or above 2^53 is refused', () =>
  refused(file => writeFileSync(file, '9007199254740993'), /9007199254740993/))

test('LOCK-02: a fence file replaced by a directory is refused', () =>
  refused(file => {
    unlinkSync(file)
    mkdirSync(file)
  }))

test('LOCK-02: a temporary file left by a crash in the middle of a write changes nothing', async () => {
  const { dir, last } = await used()
  try {
    // A process died between writing its temporary file and renaming it: the old value stands.
    writeFileSync(join(dir, `.${FILE}.99999.tmp`), '12')
    const store = await openStore({ storage: fileStorage(dir) })
    const next = await store.lock('x').hold('k', lease => lease.fence)
    await store.close()
    assert.ok(next > last, `${next} after ${last}`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('LOCK-02: temporary files left by crashes in the middle of writes are removed by the next store to hold the directory, and nothing else is', async () => {
  const { dir, last } = await used()
  try {
    // Each process killed between a write's start and its rename leaves one (a pools' chunk up to
    // 60 KiB): a service that crashes over and over must not pile them up until the disk is full.
    const left = [`.${FILE}.99999.tmp`, '.holdfast.pools.a.0.value.99998.tmp', '.holdfast.used.99997.tmp', '.holdfast.lock.99996.tmp']
    const others = ['.notes.99995.tmp', 'backup.tmp', '.holdfast.fences.value.tmp']
    for (const name of [...left, ...others]) writeFileSync(join(dir, name), '12')
    const store = await openStore({ storage: fileStorage(dir) })
    const next = await store.lock('x').hold('k', lease => lease.fence)
    const names = readdirSync(dir)
    await store.close()
    assert.ok(next > last, `${next} after ${last}`)
    for (const name of left) assert.ok(!names.includes(name), `${name} was removed (the directory holds: ${names.join(', ')})`)
    for (const name of others) assert.ok(names.includes(name), `${name}, not a name fileStorage writes, was left`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

// A prefix of the digits, or another digit, would be a valid ceiling of its own, and a missing file
// a new store: each would restart fences below what was handed out. The value carries a check of
// its digits, and a directory that kept a value remembers it (holdfast.used).

test('LOCK-02: a fence file truncated to a prefix of its digits is refused', () =>
  refused((file, value) => writeFileSync(file, value.slice(0, 3))))

test('LOCK-02: a fence file with a digit changed to a smaller one is refused', () =>
  refused((file, value) => writeFileSync(file, `1${value.slice(1)}`)))

test('LOCK-02: a fence file deleted from a used directory is refused', () =>
  refused(file => unlinkSync(file)))

test('POOL-02: a pools value deleted from a directory is refused, also when the fileStorage that opens it was closed while another one wrote the pools there', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-corrupt-'))
  try {
    const mine = fileStorage(dir)
    const first = await openStore({ storage: mine })
    await first.close()
    // Meanwhile another storage of the directory (another process, say) keeps the pools there.
    const other = await openStore({ storage: fileStorage(dir) })
    assert.equal((await other.pool('seats', { capacity: 10 }).claim(3, { id: 'order-1' })).claimed, true)
    await other.close()
    const marked = readFileSync(join(dir, 'holdfast.used'), 'utf8')
    assert.match(marked, /^key holdfast\.pools$/m, 'the snapshot is marked kept')
    // The first storage opens a store again, and writes a pools' key it had not marked itself.
    const again = await openStore({ storage: mine })
    assert.equal((await again.pool('seats', { capacity: 10 }).claim(1, { id: 'order-2' })).claimed, true)
    await again.close()
    // Before the fix, it wrote its mark from what it read at its first open: the other's marks were gone.
    assert.match(readFileSync(join(dir, 'holdfast.used'), 'utf8'), /^key holdfast\.pools$/m, 'the marks of the other storage stay')
    unlinkSync(join(dir, 'holdfast.pools.value'))
    await assert.rejects(openStore({ storage: fileStorage(dir) }), error => {
      assert.ok(error instanceof StorageError, `a StorageError, not ${error?.constructor?.name}: ${error?.message}`)
      assert.match(error.message, /holdfast\.pools\.value is missing/)
      return true
    })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
