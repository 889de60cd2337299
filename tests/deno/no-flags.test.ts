// Deno with no permission flag at all (tests/deno/run.sh runs this file with `deno test
// --unstable-kv` and nothing else): `import ... from 'npm:holdfast'` and the whole in-process API work
// with memoryStorage(), a callback storage, the default storage and denoKvStorage over an in-memory
// KV; fileStorage fails with a StorageError that names the flags it needs.
import assert from 'node:assert/strict'
import { openStore, memoryStorage, fileStorage, denoKvStorage, connect, StorageError, InvalidError, HoldfastError, type Storage } from 'npm:holdfast'

Deno.test('the run has no permission: reading, writing, env, run and net are not granted', async () => {
  for (const name of ['read', 'write', 'env', 'run', 'net'] as const) {
    assert.notEqual((await Deno.permissions.query({ name })).state, 'granted', name)
  }
})

Deno.test('openStore with memoryStorage(): hold, tryHold, fences, LOCK-04, close', async () => {
  const store = await openStore({ storage: memoryStorage() })
  const summaries = store.lock('summaries', { wait: '1s' })
  const fences: number[] = []
  await summaries.hold('chat-1', lease => void fences.push(lease.fence))
  const tried = await summaries.tryHold('chat-1', lease => lease.fence)
  assert.ok(tried.acquired)
  fences.push(tried.value)
  assert.ok(fences[1] > fences[0], 'fences grow')
  // LOCK-04 needs AsyncLocalStorage, which the deno entry takes from node:async_hooks (no flag needed).
  const inner = await summaries.hold('chat-1', () => summaries.hold('chat-1', () => 'deadlock').catch(e => e))
  assert.ok(inner instanceof InvalidError, String(inner))
  const held = await summaries.hold('chat-1', () => summaries.tryHold('chat-1', () => 'ran'))
  assert.deepEqual(held, { acquired: false })
  const uploads = store.semaphore('uploads', { limit: 2 })
  assert.equal(await uploads.hold('u', p => typeof p.fence), 'number')
  await store.close()
})

Deno.test('LOCK-06, LOCK-03, POOL-04 under deno test: awaiting a wait that runs out, a maxHold its fn awaits, a claim whose wait runs out is answered (the store\'s timer keeps the test alive meanwhile); closed, the store leaves the sanitizers no timer', async () => {
  // Before, each await here failed "Promise resolution is still pending but the event loop has
  // already resolved": every timer of holdfast's was unref'd.
  const codeOf = (p: Promise<unknown>) => p.then(
    () => 'none',
    (e: { code?: string }) => e?.code,
  )
  const store = await openStore({ storage: memoryStorage() })
  const locks = store.lock('keep-alive')
  const held = await locks.acquire('k')
  assert.equal(await codeOf(locks.hold('k', { wait: 250 }, () => 'ran')), 'in_use')
  held.release()
  const bounded = store.lock('keep-alive', { maxHold: 250 })
  assert.equal(await codeOf(bounded.hold('k', lease => new Promise(resolve => lease.signal.addEventListener('abort', resolve, { once: true })))), 'lost')
  const seats = store.pool('keep-alive', { capacity: 1 })
  assert.equal((await seats.claim(1)).claimed, true)
  assert.equal((await seats.claim(1, { wait: 250 })).claimed, false)
  // A lease forgotten with a maxHold of a minute: the close ends it, and its timer with it.
  await store.lock('forgotten', { maxHold: '1m' }).acquire('k')
  await store.close()
})

Deno.test('openStore with a callback storage, across a restart: fences keep growing', async () => {
  const values = new Map<string, string>()
  const storage: Storage = { get: async key => values.get(key), set: async (key, value) => void values.set(key, value) }
  const first = await openStore({ storage })
  const before = await first.lock('a').hold('k', lease => lease.fence)
  await first.close()
  const second = await openStore({ storage })
  const after = await second.lock('a').hold('k', lease => lease.fence)
  assert.ok(after > before, `${after} > ${before}`)
  await second.close()
})

Deno.test('openStore() without a storage keeps fences in memory on Deno (no flag needed)', async () => {
  const store = await openStore()
  assert.equal(await store.lock('a').hold('k', lease => lease.fence), 1)
  await store.close()
})

Deno.test('denoKvStorage over an in-memory KV needs no permission flag', async () => {
  const kv = await Deno.openKv(':memory:')
  try {
    const store = await openStore({ storage: denoKvStorage(kv) })
    assert.ok((await store.lock('a').hold('k', lease => lease.fence)) >= 1)
    await store.close()
    const stored = await kv.get<string>(['holdfast', 'holdfast.fences'])
    assert.equal(typeof stored.value, 'string')
  } finally {
    kv.close()
  }
})

Deno.test('#16 part 1 on Deno KV (values of 64 KiB at most): a pool of 3,000 claims with 36-character ids claimed in one turn is kept, and reads back', async () => {
  const kv = await Deno.openKv(':memory:')
  try {
    const ids = Array.from({ length: 3_000 }, (_, i) => `${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`)
    const store = await openStore({ storage: denoKvStorage(kv) })
    const seats = store.pool('seats', { capacity: 10_000 })
    // One turn: one write keeps all 3,000 (about 200 KiB of claims), in chunks within Deno KV's limit.
    const results = await Promise.all(ids.map(id => seats.claim(1, { id })))
    assert.equal(results.filter(r => r.claimed).length, 3_000)
    await store.close()
    const again = await openStore({ storage: denoKvStorage(kv) })
    const back = again.pool('seats', { capacity: 10_000 })
    assert.equal(await back.remaining(), 7_000)
    const asked = await back.claim(1, { id: ids[1_234] })
    assert.equal(asked.claimed, true)
    assert.equal(await back.remaining(), 7_000, 'an id read back answers its first outcome')
    await again.close()
  } finally {
    kv.close()
  }
})

Deno.test('POOL-02 on Deno KV: a release, confirm and resize asked in the turn that closes the store are written and answered, not ClosedError', async () => {
  const kv = await Deno.openKv(':memory:')
  try {
    const store = await openStore({ storage: denoKvStorage(kv) })
    const seats = store.pool('seats', { capacity: 10 })
    const gone = await seats.claim(4, { id: 'gone' })
    const cart = await seats.claim(2, { id: 'cart', ttl: '1h' })
    if (!gone.claimed || !cart.claimed) throw new Error('both claims take their units')
    const asked = [gone.claim.release(), cart.claim.confirm(), seats.resize(12)]
    const closing = store.close()
    // Before the fix: each rejected ClosedError, and each was kept by the close's last write.
    assert.deepEqual(await Promise.all(asked), [true, undefined, undefined])
    await closing
    const again = await openStore({ storage: denoKvStorage(kv) })
    const back = again.pool('seats', { capacity: 12 })
    assert.equal(await back.remaining(), 10)
    assert.equal(await back.release('gone'), false)
    await again.close()
  } finally {
    kv.close()
  }
})

Deno.test('fileStorage without --allow-read/--allow-write: a StorageError that names the flags', async () => {
  const dir = '/tmp/holdfast-deno-no-flags'
  const error = await openStore({ storage: fileStorage(dir) }).then(
    () => assert.fail('opened without permissions'),
    e => e,
  )
  assert.ok(error instanceof StorageError && error instanceof HoldfastError, String(error))
  assert.equal(error.code, 'storage')
  assert.match(error.message, /--allow-read/)
  assert.match(error.message, /--allow-write/)
  assert.match(error.message, /--allow-net/)
  assert.match(error.message, /holdfast-deno-no-flags/)
  assert.ok(error.cause instanceof StorageError, 'the cause is fileStorage’s own error')
  assert.ok((error.cause as Error).cause instanceof Deno.errors.NotCapable, "Deno's refusal is kept as its cause")
})

Deno.test('serve() without --allow-env: Deno\'s NotCapable, as any permission serve() lacks, in words that name the flags (the server\'s ws package reads two variables as it loads)', async () => {
  const store = await openStore({ storage: memoryStorage() })
  try {
    const error = await store.serve({ port: 0, token: 'deno-test-token-0123456789' }).then(
      () => assert.fail('served without permissions'),
      e => e,
    )
    assert.match(error.message, /--allow-env=WS_NO_BUFFER_UTIL,WS_NO_UTF_8_VALIDATE/)
    assert.match(error.message, /--allow-net/)
    // The runtime's error, as the README has it for a serve() that cannot listen (a plain Error was
    // thrown here, where --allow-net missing is Deno's NotCapable): code may branch on its class.
    assert.ok(error instanceof Deno.errors.NotCapable, `${error?.constructor?.name}: ${error}`)
    assert.equal(error.name, 'NotCapable')
    assert.ok(error.cause instanceof Deno.errors.NotCapable, "Deno's own refusal is its cause")
  } finally {
    await store.close()
  }
})

Deno.test('connect() with no token and no --allow-env: the InvalidError of a missing token, naming the flag that lets HOLDFAST_TOKEN be read', async () => {
  const error = await connect('ws://127.0.0.1:1').then(
    () => assert.fail('connected'),
    e => e,
  )
  // Deno's NotCapable escaped from reading HOLDFAST_TOKEN, not the error of connect() with no token.
  assert.ok(error instanceof InvalidError, `${error?.constructor?.name}: ${error}`)
  assert.match(error.message, /a token is required/)
  assert.match(error.message, /--allow-env=HOLDFAST_TOKEN/)
  assert.ok(error.cause instanceof Deno.errors.NotCapable, "Deno's refusal is kept as its cause")
})

Deno.test('holdfast/cloudflare on Deno: importing is harmless, using it throws a clear InvalidError (workerd only)', async () => {
  const cloudflare = await import('npm:holdfast/cloudflare')
  assert.throws(() => new cloudflare.HoldfastObject({}, {}), (e: unknown) => e instanceof InvalidError && /runs in Cloudflare workerd only/.test(e.message))
  assert.throws(() => cloudflare.workerStore({ idFromName: () => 1, get: () => ({}) }), (e: unknown) => e instanceof InvalidError && /workerd only/.test(e.message))
  // The pure helper works everywhere: the object a key of a sharded lock goes to.
  assert.match(cloudflare.objectName('jobs', 'chat-42', { shard: 16 }), /^jobs\/\d+$/)
})
