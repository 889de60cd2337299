// serve({ path }) with a relative path: the server listens there (from its working directory), and the
// URL it says is one a client can dial from anywhere — the path made absolute. `ws+unix://rel.sock`
// would be read as the host "rel.sock" and the socket "/" (ECONNREFUSED).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { openStore, connect, memoryStorage } from 'holdfast'
import { TOKEN } from './helpers.js'

/** A store, opened with the working directory a fresh one (put back, and removed, after the test). */
async function inFreshDir(t) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'holdfast-rel-')))
  const cwd = process.cwd()
  t.after(() => {
    process.chdir(cwd)
    fs.rmSync(dir, { recursive: true, force: true })
  })
  process.chdir(dir)
  const store = await openStore({ storage: memoryStorage() })
  t.after(() => store.close())
  return { dir, store }
}

test('serve({ path }) with a relative path says an absolute ws+unix:// URL, which a client dials from another directory', async t => {
  const { dir, store } = await inFreshDir(t)
  const server = await store.serve({ path: 'rel.sock', token: TOKEN })
  assert.equal(server.url, `ws+unix://${path.join(dir, 'rel.sock')}`)
  assert.ok(fs.existsSync(path.join(dir, 'rel.sock')), 'listening where it was asked, from its working directory')
  process.chdir(os.tmpdir())
  const client = await connect(server.url, { token: TOKEN, reconnect: false })
  t.after(() => client.close())
  assert.equal(await client.lock('rel').hold('k', lease => lease.fence > 0), true)
})

test('connect("ws+unix://rel.sock") with a relative path dials it from the working directory, on every runtime alike (Node and Bun dialed the socket "/", Deno the path)', async t => {
  const { store } = await inFreshDir(t)
  fs.mkdirSync('run')
  await store.serve({ path: 'run/rel.sock', token: TOKEN })
  for (const url of ['ws+unix://run/rel.sock', 'ws+unix://run/rel.sock:/']) {
    const client = await connect(url, { token: TOKEN, reconnect: false })
    try {
      assert.equal(await client.lock('rel').hold('k', lease => lease.fence > 0), true, url)
    } finally {
      await client.close()
    }
  }
})
