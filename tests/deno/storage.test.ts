// Storages on Deno, run with `deno test --unstable-kv --allow-read --allow-write --allow-env --allow-run --allow-net`
// (tests/deno/run.sh); some tests narrow the permissions further.
//
// denoKvStorage (LOCK-02): fences grow across restarts on a KV file; no fence is handed out before KV
// acknowledged the write (commit resolved ok); a second store keeping fences under the same KV prefix
// is refused rather than allowed to repeat fences; damaged values and bad options are typed errors.
// fileStorage on Deno: works with --allow-read/--allow-write/--allow-net (its Unix socket), needs no
// --allow-run (it reads no pid), and names the flags it lacks.
import assert from 'node:assert/strict'
import {
  openStore,
  fileStorage,
  denoKvStorage,
  StorageError,
  InvalidError,
  HoldfastError,
  type DenoKvLike,
  type DenoKvAtomicLike,
} from 'npm:holdfast'

const FENCES = ['holdfast', 'holdfast.fences']

async function tempDir(prefix: string): Promise<string> {
  return await Deno.makeTempDir({ prefix })
}

/** Whether a promise has settled after a few macrotask turns. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false
  promise.then(
    () => (done = true),
    () => (done = true),
  )
  for (let i = 0; i < 5; i++) await new Promise(resolve => setTimeout(resolve, 0))
  return done
}

/** A KV whose commits wait for `release()`, or answer `{ ok: false }` once when told to. */
function gatedKv(kv: Deno.Kv) {
  let open: () => void = () => {}
  let gate: Promise<void> | null = null
  const control = {
    commits: 0,
    refuseNext: false,
    /** Commits to throw, before committing anything, as SQLite's lock refuses them: `throwing` each. */
    throws: 0,
    throwing: 'database is locked',
    hold() {
      gate = new Promise(resolve => (open = resolve))
    },
    release() {
      gate = null
      open()
    },
  }
  const wrap = (op: Deno.AtomicOperation): DenoKvAtomicLike => ({
    check: (...checks) => wrap(op.check(...(checks as Deno.AtomicCheck[]))),
    set: (key, value) => wrap(op.set(key as Deno.KvKey, value)),
    async commit() {
      control.commits++
      if (gate) await gate
      if (control.throws > 0) {
        control.throws--
        throw new TypeError(control.throwing)
      }
      if (control.refuseNext) {
        control.refuseNext = false
        return { ok: false }
      }
      return await op.commit()
    },
  })
  const like: DenoKvLike = { get: key => kv.get(key as Deno.KvKey), atomic: () => wrap(kv.atomic()) }
  return { kv: like, control }
}

Deno.test('LOCK-02: fences grow across restarts on denoKvStorage over a KV file', async () => {
  const dir = await tempDir('holdfast-kv-')
  try {
    let last = 0
    for (let run = 0; run < 3; run++) {
      const kv = await Deno.openKv(`${dir}/fences.kv`) // a new handle each time: as a new process would
      const store = await openStore({ storage: denoKvStorage(kv) })
      const lock = store.lock('summaries')
      for (let i = 0; i < 3; i++) {
        const fence = await lock.hold('chat', lease => lease.fence)
        assert.ok(fence > last, `run ${run}: ${fence} > ${last}`)
        assert.ok(Number.isSafeInteger(fence))
        last = fence
      }
      await store.close()
      kv.close()
    }
  } finally {
    await Deno.remove(dir, { recursive: true })
  }
})

Deno.test('#16: pools on denoKvStorage across restarts; a snapshot larger than a KV value (64 KiB) is kept in chunks', async () => {
  const dir = await tempDir('holdfast-kv-')
  try {
    for (let run = 0; run < 2; run++) {
      const kv = await Deno.openKv(`${dir}/pools.kv`) // a new handle each time: as a new process would
      const store = await openStore({ storage: denoKvStorage(kv) })
      const seats = store.pool('seats', { capacity: 5_000 })
      // 1,500 claims of ids of 40 bytes: a snapshot of about 100 KiB.
      const answers = await Promise.all(
        Array.from({ length: 1_500 }, (_, i) => seats.claim(1, { id: `run-${run}-${String(i).padStart(40, '0')}` })),
      )
      assert.ok(answers.every(a => a.claimed))
      assert.equal(await seats.remaining(), 5_000 - 1_500 * (run + 1))
      await store.close()
      kv.close()
    }
    const kv = await Deno.openKv(`${dir}/pools.kv`)
    const store = await openStore({ storage: denoKvStorage(kv) })
    assert.equal(await store.pool('seats', { capacity: 5_000 }).remaining(), 2_000)
    await store.close()
    kv.close()
  } finally {
    await Deno.remove(dir, { recursive: true })
  }
})

Deno.test('#16: a denoKvStorage closed and given to a store again checks its writes against what it reads then: the writes another storage of the prefix made meanwhile fail none of its own', async () => {
  const kv = await Deno.openKv(':memory:')
  try {
    const mine = denoKvStorage(kv)
    const first = await openStore({ storage: mine })
    const seats = first.pool('seats', { capacity: 1_000 })
    // One write a claim: segments in most slots (64 of them, used in turn).
    for (let i = 0; i < 60; i++) assert.equal((await seats.claim(1, { id: `first-${i}` })).claimed, true)
    await first.close()
    // Another storage of the prefix (another process, say) writes them over, and closes.
    const other = await openStore({ storage: denoKvStorage(kv) })
    const seats2 = other.pool('seats', { capacity: 1_000 })
    for (let i = 0; i < 75; i++) assert.equal((await seats2.claim(1, { id: `other-${i}` })).claimed, true)
    await other.close()
    // Before the fix, the first storage checked its writes of slots the open did not read against the
    // versionstamps it had written them with: the check failed, and so did 29 of these claims
    // (StorageError: "another store keeps fences under this KV prefix").
    const again = await openStore({ storage: mine })
    const seats3 = again.pool('seats', { capacity: 1_000 })
    for (let i = 0; i < 70; i++) assert.equal((await seats3.claim(1, { id: `again-${i}` })).claimed, true, `claim ${i}`)
    assert.equal(await seats3.remaining(), 1_000 - 205)
    await again.close()
  } finally {
    kv.close()
  }
})

Deno.test('LOCK-02: denoKvStorage hands out no fence before KV acknowledged the write (commit ok)', async () => {
  const real = await Deno.openKv(':memory:')
  try {
    const { kv, control } = gatedKv(real)
    control.hold()
    const opening = openStore({ storage: denoKvStorage(kv) })
    assert.equal(await settled(opening), false, 'openStore waits for the commit')
    assert.equal(control.commits, 1)
    control.release()
    const store = await opening
    assert.ok((await store.lock('a').hold('k', lease => lease.fence)) >= 1)
    await store.close()

    // A commit that answers ok: false is no acknowledgement: nothing is granted.
    control.refuseNext = true
    const refused = await openStore({ storage: denoKvStorage(kv) }).then(
      () => assert.fail('opened on a refused commit'),
      e => e,
    )
    assert.ok(refused instanceof StorageError && refused instanceof HoldfastError, String(refused))
    assert.match(refused.message, /denoKvStorage \["holdfast"\].*changed since this store read it/)
  } finally {
    real.close()
  }
})

Deno.test('LOCK-02: denoKvStorage tries a write again that SQLite refused at once "database is locked" (a handle on the file opening or writing just then: it committed nothing), for up to a second; another error, or a lock that lasts, fails StorageError', async () => {
  const real = await Deno.openKv(':memory:')
  try {
    const { kv, control } = gatedKv(real)
    const storage = denoKvStorage(kv)
    assert.equal(await storage.get('holdfast.fences'), undefined)
    control.throws = 3
    await storage.set('holdfast.fences', '100')
    assert.deepEqual([control.commits, control.throws], [4, 0], 'three refused, the fourth committed')
    assert.equal((await real.get(FENCES)).value, '100')
    // Checked against the versionstamp of the write that went through: the next one goes through too.
    await storage.set('holdfast.fences', '200')
    assert.equal((await real.get(FENCES)).value, '200')

    // Any other error: whether it committed is unknown, so it is not tried again.
    control.commits = 0
    control.throws = 1
    control.throwing = 'connection reset'
    const other = await Promise.resolve(storage.set('holdfast.fences', '300')).then(() => assert.fail('acknowledged'), e => e)
    assert.ok(other instanceof StorageError && /connection reset/.test(other.message), String(other))
    assert.equal(control.commits, 1, 'tried once')

    // Locked for good: tried again for about a second, then a StorageError naming the lock.
    control.commits = 0
    control.throws = Number.POSITIVE_INFINITY
    control.throwing = 'database is locked'
    const locked = await Promise.resolve(storage.set('holdfast.fences', '400')).then(() => assert.fail('acknowledged'), e => e)
    assert.ok(locked instanceof StorageError && /writing "holdfast.fences" failed: database is locked/.test(locked.message), String(locked))
    assert.ok(control.commits > 1, 'tried again')
    assert.equal((await real.get(FENCES)).value, '200', 'nothing refused was written')
    storage.close?.()
  } finally {
    real.close()
  }
})

Deno.test('denoKvStorage: a second store on the same KV prefix is refused, not allowed to repeat fences', async () => {
  const dir = await tempDir('holdfast-kv-excl-')
  const kv1 = await Deno.openKv(`${dir}/f.kv`)
  // Opened when the test needs it: a second handle's SQLite opening while the first writes can make
  // that write fail "database is locked" (seen once in a clean-clone run), which is not this test's.
  let kv2: Deno.Kv | undefined
  try {
    // In one process, on one kv: refused at once.
    const first = await openStore({ storage: denoKvStorage(kv1) })
    const again = await openStore({ storage: denoKvStorage(kv1) }).then(
      () => assert.fail('a second store opened on the same prefix'),
      e => e,
    )
    assert.ok(again instanceof StorageError, String(again))
    assert.match(again.message, /in use by another open store/)
    // Another prefix of the same kv is another storage.
    const other = await openStore({ storage: denoKvStorage(kv1, { prefix: ['holdfast', 'tenant-2'] }) })
    await other.close()
    await first.close()
    // Closed: the prefix is free again.
    const reopened = await openStore({ storage: denoKvStorage(kv1) })
    await reopened.close()

    // Across handles (as across processes): the write of the storage that read an older value fails.
    kv2 = await Deno.openKv(`${dir}/f.kv`)
    const a = denoKvStorage(kv1)
    const b = denoKvStorage(kv2)
    const seen = await a.get('holdfast.fences')
    await a.set('holdfast.fences', String(Number(seen) + 10))
    await b.get('holdfast.fences')
    await b.set('holdfast.fences', String(Number(seen) + 20))
    const stale = await Promise.resolve(a.set('holdfast.fences', String(Number(seen) + 30))).then(
      () => assert.fail('a stale write was acknowledged'),
      e => e,
    )
    assert.ok(stale instanceof StorageError, String(stale))
    assert.match(stale.message, /another store keeps fences under this KV prefix/)
    assert.equal((await kv2.get<string>(FENCES)).value, String(Number(seen) + 20), 'the newer value stands')
    await a.close?.()
    await b.close?.()
  } finally {
    kv1.close()
    kv2?.close()
    await Deno.remove(dir, { recursive: true })
  }
})

Deno.test('POOL-01, denoKvStorage: a second store on the same KV prefix through another handle (as from another process) makes the first one\'s next pool write fail, not overwrite a segment of the second\'s it never read and grant units past the capacity', async () => {
  const dir = await tempDir('holdfast-kv-pools-')
  const kv1 = await Deno.openKv(`${dir}/p.kv`)
  let kv2: Deno.Kv | undefined
  let a: Awaited<ReturnType<typeof openStore>> | undefined
  let b: Awaited<ReturnType<typeof openStore>> | undefined
  try {
    a = await openStore({ storage: denoKvStorage(kv1) })
    const seatsA = a.pool('seats', { capacity: 10 })
    assert.equal((await seatsA.claim(6, { id: 'a-1' })).claimed, true)
    // A second store on the prefix, through its own handle: it reads A's claim, and takes the rest.
    kv2 = await Deno.openKv(`${dir}/p.kv`)
    b = await openStore({ storage: denoKvStorage(kv2) })
    const seatsB = b.pool('seats', { capacity: 10 })
    assert.equal(await seatsB.remaining(), 4)
    assert.equal((await seatsB.claim(4, { id: 'b-1' })).claimed, true)
    // A does not know of it: its next write must fail rather than land over B's.
    const late = await seatsA.claim(4, { id: 'a-2' }).then(
      answer => answer,
      error => error,
    )
    assert.ok(late instanceof StorageError, `A's claim past B's was answered ${JSON.stringify(late)}: 14 units of 10 granted`)
  } finally {
    await a?.close().catch(() => {})
    await b?.close().catch(() => {})
    kv1.close()
    kv2?.close()
    await Deno.remove(dir, { recursive: true })
  }
})

Deno.test('denoKvStorage: writes of one store made at once (its fence ceiling and a pool\'s slot) both land: each checks what the one before left', async () => {
  const kv = await Deno.openKv(':memory:')
  try {
    const storage = denoKvStorage(kv)
    assert.equal(await storage.get('holdfast.fences'), undefined)
    await Promise.all([storage.set('holdfast.fences', '1000000:00000000'), storage.set('holdfast.pools.1', 'segment')])
    assert.equal((await kv.get<string>(FENCES)).value, '1000000:00000000')
    assert.equal((await kv.get<string>(['holdfast', 'holdfast.pools.1'])).value, 'segment')
    await storage.close?.()
  } finally {
    kv.close()
  }
})

Deno.test('denoKvStorage: a damaged value is refused rather than fences restarted', async () => {
  const kv = await Deno.openKv(':memory:')
  try {
    await kv.set(FENCES, 42)
    const error = await openStore({ storage: denoKvStorage(kv) }).then(
      () => assert.fail('opened on a damaged value'),
      e => e,
    )
    assert.ok(error instanceof StorageError, String(error))
    assert.match(error.message, /is a number, not a string/)
    await kv.set(FENCES, '12x')
    await assert.rejects(openStore({ storage: denoKvStorage(kv) }), e => e instanceof StorageError && /12x/.test((e as Error).message))
  } finally {
    kv.close()
  }
})

Deno.test('denoKvStorage: a bad kv, prefix or option is an InvalidError', async () => {
  const kv = await Deno.openKv(':memory:')
  try {
    assert.throws(() => denoKvStorage({} as unknown as Deno.Kv), InvalidError)
    assert.throws(() => denoKvStorage(kv, { prefix: 'holdfast' as unknown as string[] }), InvalidError)
    assert.throws(() => denoKvStorage(kv, { prefix: [{}] as unknown as string[] }), InvalidError)
    assert.throws(() => denoKvStorage(kv, { prefx: ['a'] } as unknown as { prefix: string[] }), (e: Error) => e instanceof InvalidError && /prefx/.test(e.message))
  } finally {
    kv.close()
  }
})

Deno.test('fileStorage on Deno with --allow-read/--allow-write: fences grow across restarts', async () => {
  const dir = await tempDir('holdfast-files-')
  try {
    let last = 0
    for (let run = 0; run < 2; run++) {
      const store = await openStore({ storage: fileStorage(dir) })
      const fence = await store.lock('a').hold('k', lease => lease.fence)
      assert.ok(fence > last)
      last = fence
      await store.close()
    }
  } finally {
    await Deno.remove(dir, { recursive: true })
  }
})

Deno.test({
  name: '#13 item 1: fileStorage on Deno without --allow-run: a holdfast.lock naming a live process (this one) does not stop it',
  permissions: { read: true, write: true, env: true, net: true, run: false },
  async fn() {
    const dir = await tempDir('holdfast-files-run-')
    try {
      await Deno.writeTextFile(`${dir}/holdfast.lock`, `${Deno.pid}\n`)
      const store = await openStore({ storage: fileStorage(dir) })
      assert.ok((await store.lock('a').hold('k', lease => lease.fence)) >= 1)
      await store.close()
    } finally {
      await Deno.remove(dir, { recursive: true })
    }
  },
})

Deno.test({
  name: 'fileStorage on Deno without --allow-net: the StorageError names the flag (its Unix socket needs it)',
  permissions: { read: true, write: true, env: true, net: false },
  async fn() {
    const dir = await tempDir('holdfast-files-net-')
    try {
      const error = await openStore({ storage: fileStorage(dir) }).then(
        () => assert.fail('opened without --allow-net'),
        e => e,
      )
      assert.ok(error instanceof StorageError, String(error))
      assert.match(error.message, /Deno denied access .*--allow-net \(for the Unix socket/)
      assert.deepEqual([...Deno.readDirSync(dir)].map(e => e.name), [], 'nothing left behind')
    } finally {
      await Deno.remove(dir, { recursive: true })
    }
  },
})

Deno.test({
  name: 'fileStorage on Deno with --allow-read but not --allow-write: the StorageError names the flags',
  permissions: { read: true, write: false },
  async fn() {
    const error = await openStore({ storage: fileStorage('/tmp/holdfast-deno-read-only') }).then(
      () => assert.fail('opened without --allow-write'),
      e => e,
    )
    assert.ok(error instanceof StorageError, String(error))
    assert.match(error.message, /--allow-read, --allow-write .* and --allow-net/)
  },
})
