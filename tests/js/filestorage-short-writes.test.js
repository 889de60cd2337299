// POOL-02 and LOCK-02 on a fileStorage whose files cannot grow (a full disk, a quota, a file size
// limit): a write the filesystem took only part of fails, and is never acknowledged as kept. The
// store writes in a process of its own under `ulimit -f` (file size limit; a write past it is cut
// short, as on a disk that fills up in its middle, and the next one fails EFBIG), then the directory
// is opened here without the limit: it opens, and keeps every claim its caller was told it made.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { appendFileSync, mkdtempSync, readdirSync, rmSync, statSync, unlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { openStore, fileStorage, StorageError } from 'holdfast'

const SCRIPT = fileURLToPath(new URL('./claims-process.js', import.meta.url))
const RUNTIME = [process.execPath, ...(globalThis.Deno ? ['run', '-A'] : []), SCRIPT]

/** Runs claims-process.js on `dir` under a file size limit of `kib` KiB: its output lines and status. */
function claimsUnderLimit(dir, kib, n, prefix, apart = false) {
  return new Promise((resolve, reject) => {
    // SIGXFSZ ignored (Node and Bun ignore it themselves; Deno does not), so that a write past the
    // limit fails EFBIG rather than kill the process.
    const child = spawn('sh', ['-c', `trap '' XFSZ && ulimit -f ${kib} && exec "$@"`, 'sh', ...RUNTIME, dir, String(n), prefix, ...(apart ? ['apart'] : [])], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    child.stdout.setEncoding('utf8').on('data', d => (out += d))
    child.stderr.setEncoding('utf8').on('data', d => (err += d))
    child.on('error', reject)
    child.on('close', status => {
      const lines = out.split('\n').filter(Boolean)
      try {
        assert.equal(status, 0, `the claiming process failed: ${err}`)
        assert.equal(lines.at(-1), 'closed', err)
        assert.equal(lines.length, n + 1, lines.join('\n'))
      } catch (error) {
        return reject(error)
      }
      const claimed = lines.filter(line => line.startsWith('claimed ')).map(line => line.slice('claimed '.length))
      const refused = lines.filter(line => line.startsWith('refused '))
      resolve({ claimed, refused })
    })
  })
}

test('POOL-02: a pool write cut short by a full disk (a file size limit) is not acknowledged: the directory opens again with every claim confirmed', { skip: process.platform === 'win32' && 'needs sh and ulimit', timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-short-'))
  try {
    // Two claims: a write well under the limit, kept.
    const small = await claimsUnderLimit(dir, 4, 2, 'small')
    assert.equal(small.claimed.length, 2, 'a write under the limit is kept')
    // 40 claims in one turn: a write of about 6 KiB, over the 4 KiB a file may have.
    const big = await claimsUnderLimit(dir, 4, 40, 'big')
    for (const line of big.refused) assert.match(line, / storage$/, 'a claim whose write failed is refused with a StorageError')
    const claimed = [...small.claimed, ...big.claimed]
    const again = await openStore({ storage: fileStorage(dir) })
    try {
      const seats = again.pool('seats', { capacity: 1000 })
      assert.equal(await seats.remaining(), 1000 - claimed.length, 'every claim confirmed is kept, no other')
      // Asked again by id, a claim kept answers its first outcome and takes nothing more.
      for (const id of claimed) assert.equal((await seats.claim(1, { id })).claimed, true, `${id} is kept`)
      assert.equal(await seats.remaining(), 1000 - claimed.length, 'no claim kept was taken again')
    } finally {
      await again.close()
    }
    assert.deepEqual(
      readdirSync(dir).filter(name => name.endsWith('.tmp')),
      [],
      'a write that failed leaves no temporary file behind',
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('POOL-02: a key whose mark (holdfast.used) a full disk refused stays unmarked only until a write of it succeeds: its value lost then, the directory refuses to open', { skip: process.platform === 'win32' && 'needs sh and ulimit', timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-short-'))
  try {
    const store = await openStore({ storage: fileStorage(dir) })
    await store.close()
    // The marks are made long (keys of some other use of the directory), so that the file cannot
    // take one more line under the limit while a value of the pools still fits.
    const used = join(dir, 'holdfast.used')
    appendFileSync(used, Array.from({ length: 100 }, (_, i) => `key other-${i}\n`).join(''))
    const kib = Math.ceil(statSync(used).size / 1024) + 1
    // Padded to 8 bytes under the limit: a line naming a key of the pools is longer.
    appendFileSync(used, `key ${'p'.repeat(kib * 1024 - 8 - statSync(used).size - 5)}\n`)
    assert.equal(statSync(used).size, kib * 1024 - 8)
    // Claims one after another: the first pools' write lands its value and fails its mark; so does
    // every later one (before the fix, the second and later landed unmarked and were confirmed).
    const { claimed, refused } = await claimsUnderLimit(dir, kib, 3, 'apart', true)
    assert.equal(claimed.length + refused.length, 3)
    for (const name of readdirSync(dir).filter(name => name.startsWith('holdfast.pools'))) unlinkSync(join(dir, name))
    if (claimed.length === 0) {
      const again = await openStore({ storage: fileStorage(dir) })
      await again.close()
    } else {
      await assert.rejects(openStore({ storage: fileStorage(dir) }), StorageError, `${claimed.length} claims were confirmed: their value lost, the open must fail`)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
