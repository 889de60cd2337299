// serve({ path }) on a Unix socket whose mode cannot be set (the chmod after listen fails): serve()
// rejects, and it leaves nothing behind — no listener, no socket file — so that nobody can connect to a
// socket of a mode it did not ask for, and a serve() on the same path again may listen there.
// An EPERM is injected into this process's node:fs (`syncBuiltinESMExports` carries the patch to the
// package's ESM import of it; where a runtime does not, the test skips): as root, a chmod never fails.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createRequire, syncBuiltinESMExports } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStore, memoryStorage, connect } from 'holdfast'

const fs = createRequire(import.meta.url)('node:fs')
const TOKEN = 'test-token-0123456789'

/** Makes `fs.chmodSync` of a path `fails(path)` answer EPERM; `restore()` undoes it. */
function failChmod(fails) {
  const { chmodSync } = fs
  fs.chmodSync = (file, mode) => {
    if (fails(String(file))) throw Object.assign(new Error(`EPERM: operation not permitted, chmod '${file}'`), { code: 'EPERM', errno: -1, syscall: 'chmod', path: String(file) })
    return chmodSync(file, mode)
  }
  syncBuiltinESMExports()
  return {
    restore() {
      fs.chmodSync = chmodSync
      syncBuiltinESMExports()
    },
  }
}

/** Whether a patch of node:fs reaches an ESM import of it here (Node: yes; Bun: no). */
async function patchReachesImports() {
  const patch = failChmod(() => false)
  try {
    return (await import('node:fs')).chmodSync === fs.chmodSync
  } finally {
    patch.restore()
  }
}

/** Whether anything answers on the Unix socket `path`: its error code if not. */
function dial(path) {
  return new Promise(resolve => {
    const socket = net.connect(path)
    socket.once('connect', () => {
      socket.destroy()
      resolve('connected')
    })
    socket.once('error', error => resolve(error.code))
  })
}

const skip = !(await patchReachesImports()) && 'this runtime does not carry a patch of node:fs to ESM imports'

test('serve({ path }) whose socket mode cannot be set rejects with the chmod\'s error and leaves nothing listening, nor the socket file', { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-mode-'))
  const path = join(dir, 'holdfast.sock')
  const store = await openStore({ storage: memoryStorage() })
  const patch = failChmod(file => file === path)
  try {
    const error = await store.serve({ path, token: TOKEN, socketMode: 0o660 }).then(
      server => assert.fail(`serve() resolved (${server.url}), its socket's mode not set`),
      e => e,
    )
    assert.equal(error.code, 'EPERM', `the chmod's own error, not ${error}`)
    assert.equal(error.syscall, 'chmod')
    assert.equal(existsSync(path), false, 'the socket file is removed')
    assert.equal(await dial(path), 'ENOENT', 'nothing listens on the path')
    patch.restore()
    // The path is free: the same store serves there, in the mode asked for.
    const server = await store.serve({ path, token: TOKEN, socketMode: 0o660 })
    assert.equal(fs.statSync(path).mode & 0o777, 0o660)
    const client = await connect(server.url, { token: TOKEN })
    assert.ok((await client.lock('mode').hold('k', lease => lease.fence)) > 0)
    await client.close()
  } finally {
    patch.restore()
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
