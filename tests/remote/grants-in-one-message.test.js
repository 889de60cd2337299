// A hold's fn over a connection, when several grants come in one message (#17, protocol revision 3
// batches). On Node 24/26 and Bun the client runs each hold's fn as its grant is read, one after
// another, from the call that reads the message; on Node 20 (no context to keep) fn runs in a job
// after its lease's promise. Whatever a fn does there — throw, close the client, start holds, abort
// another hold's signal, answer a value or a rejected promise — every hold settles as in process
// (LOCK-04, LOCK-06), and the server is left with no key busy.
//
// The server is a real one, in this process (`store.serve`); the client reaches it through a relay
// in this process that counts the granted frames of each message the server sends, so that every
// test first checks that its grants did come together (a test of nothing otherwise). A hold asked
// on the same connection after a release finds the key released (frames of one connection arrive in
// order), so `hold(key, { wait: 0 })` there shows the release was sent.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { AsyncLocalStorage } from 'node:async_hooks'
import { openStore, connect, memoryStorage, CancelledError, ClosedError, InUseError, InvalidError } from 'holdfast'
import { framesOf, wsStream } from './frames.js'
import { TOKEN, portOf } from './helpers.js'

delete process.env.HOLDFAST_TOKEN

const unhandled = []
process.on('unhandledRejection', error => unhandled.push(error))

/** Rejects when `promise` has not settled within `ms` (nothing may hang). */
function within(promise, ms, what) {
  let timer
  return Promise.race([
    promise,
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not settled in ${ms}ms`)), ms))),
  ]).finally(() => clearTimeout(timer))
}

/** A TCP relay to `port` that counts the `granted` frames of each WebSocket message the server sends. */
async function grantCounter(port) {
  const grants = []
  const sockets = []
  const server = net.createServer(client => {
    const upstream = net.connect(port, '127.0.0.1')
    sockets.push(client, upstream)
    let message = []
    const read = wsStream(({ fin, opcode, payload }) => {
      if (opcode !== 0x2 && opcode !== 0x0) return
      message.push(payload)
      if (!fin) return
      const types = framesOf(Buffer.concat(message)).map(f => f.type)
      if (types.includes('granted')) grants.push(types)
      message = []
    })
    client.pipe(upstream)
    upstream.on('data', chunk => {
      read(chunk)
      client.write(chunk)
    })
    const end = () => (client.destroy(), upstream.destroy())
    client.on('close', end)
    upstream.on('close', end)
    client.on('error', () => {})
    upstream.on('error', () => {})
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `ws://127.0.0.1:${server.address().port}`,
    /** The most grants any one message carried. */
    most: () => Math.max(0, ...grants.map(types => types.filter(t => t === 'granted').length)),
    /** The types of the frames of the messages that carried grants. */
    grants,
    close: () => {
      for (const s of sockets) s.destroy()
      server.close()
    },
  }
}

/** A store served in this process, a client through the relay, and another client beside it. */
async function served() {
  const store = await openStore({ storage: memoryStorage() })
  const server = await store.serve({ port: 0, token: TOKEN })
  const relay = await grantCounter(portOf(server.url))
  const remote = await connect(relay.url, { token: TOKEN })
  const other = await connect(server.url, { token: TOKEN })
  return {
    store,
    remote,
    other,
    relay,
    async close() {
      await remote.close()
      await other.close()
      relay.close()
      await store.close()
    },
  }
}

/** Asked in one turn, `keys` go as one message and their grants come back as one. */
function holdAll(lock, keys, fn) {
  return keys.map((key, i) => lock.hold(key, { wait: '5s' }, lease => fn(key, i, lease)))
}

/** Every key of `keys` is free on the server, as seen from `remote` (after what it sent before). */
async function allFree(remote, lock, keys) {
  for (const key of keys) await lock.hold(key, { wait: 0 }, () => {})
  assert.deepEqual(await remote.inspect(), [], 'no busy key left on the server')
}

test('#17 LOCK-06: of grants read in one message, a fn that throws synchronously rejects its hold with that error, its key is released on the server, and the fns of the later grants still run', async () => {
  const s = await served()
  try {
    const lock = s.remote.lock('batch', { ttl: '30s' })
    const boom = new Error('boom')
    const keys = ['a', 'b', 'c', 'd']
    const ran = []
    const results = await within(
      Promise.allSettled(
        holdAll(lock, keys, key => {
          ran.push(key)
          if (key === 'b') throw boom
          return `value ${key}`
        }),
      ),
      10_000,
      'the holds',
    )
    assert.equal(s.relay.most(), keys.length, 'the four grants came in one message')
    assert.deepEqual(ran, keys, 'every fn ran, in the order of the grants')
    assert.equal(results[1].status, 'rejected')
    assert.equal(results[1].reason, boom, "the hold rejects with fn's own error")
    for (const i of [0, 2, 3]) assert.deepEqual(results[i], { status: 'fulfilled', value: `value ${keys[i]}` })
    // Released: the same client holds each key again with wait 0, another client too.
    await allFree(s.remote, lock, keys)
    await s.other.lock('batch').hold('b', { wait: 0 }, () => {})
    assert.deepEqual(unhandled, [])
  } finally {
    await s.close()
  }
})

test('#17 LOCK-06: of grants and a busy answer read in one message, a fn that throws synchronously rejects its hold with that error, and the rest are answered: the later grant runs, the busy hold rejects InUseError', async () => {
  const s = await served()
  try {
    const held = await s.other.lock('batch').acquire('x')
    const lock = s.remote.lock('batch', { ttl: '30s' })
    const boom = new Error('boom')
    const ran = []
    const holds = ['a', 'b', 'x', 'c'].map(key =>
      lock.hold(key, { wait: 0 }, () => {
        ran.push(key)
        if (key === 'b') throw boom
        return key
      }),
    )
    const results = await within(Promise.allSettled(holds), 10_000, 'the holds')
    assert.deepEqual(s.relay.grants[0], ['granted', 'granted', 'busy', 'granted'], 'the answers came in one message')
    assert.deepEqual(ran, ['a', 'b', 'c'])
    assert.deepEqual(results[0], { status: 'fulfilled', value: 'a' })
    assert.equal(results[1].reason, boom)
    assert.ok(results[2].reason instanceof InUseError, String(results[2].reason))
    assert.deepEqual(results[3], { status: 'fulfilled', value: 'c' })
    held.release()
    await s.other.inspect() // its release was read first
    await allFree(s.remote, lock, ['a', 'b', 'c', 'x'])
    assert.deepEqual(unhandled, [])
  } finally {
    await s.close()
  }
})

test('#17 LOCK-06: a fn that closes the client synchronously, its message\'s later grants unread: every hold settles (ran, or ClosedError), nothing unhandled, and the server keeps no key busy', async () => {
  const s = await served()
  try {
    // A hold of this client waits (another holds "w") while close() comes.
    const blocker = await s.other.lock('batch').acquire('w')
    const lock = s.remote.lock('batch', { ttl: '30s' })
    const waiter = lock.hold('w', { wait: '30s' }, () => 'never')
    let closing
    let finish
    const slow = new Promise(resolve => (finish = resolve))
    const keys = ['a', 'b', 'c', 'd', 'e']
    const ran = []
    let afterClose
    const holds = holdAll(lock, keys, key => {
      ran.push(key)
      if (key === 'b') closing = s.remote.close()
      // A hold asked after close() was called, before it is done: the server hears it after goodbye.
      if (key === 'c') afterClose = lock.hold('z', { wait: '30s' }, () => 'z')
      if (key === 'd') return slow // still running when the client closes
      return key
    })
    // Every hold settles once the close is done (fn "d" ends after it).
    await within(
      (async () => {
        while (closing === undefined) await new Promise(r => setImmediate(r))
        await closing
      })(),
      10_000,
      'close() from inside a fn',
    )
    finish('d')
    const results = await within(Promise.allSettled([...holds, waiter, afterClose]), 10_000, 'the holds after close()')
    assert.equal(s.relay.most(), keys.length, 'the five grants came in one message')
    assert.deepEqual(ran, keys, 'the grants read after the close still ran their fn')
    for (const [i, r] of results.entries()) {
      const what = i < keys.length ? `hold of ${keys[i]}` : 'the waiting hold, or the one asked during close()'
      if (r.status === 'fulfilled') assert.equal(r.value, keys[i], what)
      else assert.ok(r.reason instanceof ClosedError, `${what}: ${r.reason}`)
    }
    assert.ok(results[3].reason instanceof ClosedError, 'a fn still running at close: ClosedError when it settles')
    assert.ok(results[keys.length].reason instanceof ClosedError, 'a hold waiting at close: ClosedError')
    assert.ok(results[keys.length + 1].reason instanceof ClosedError, `a hold asked during close(): ClosedError, got ${results[keys.length + 1].reason}`)
    await blocker.release()
    assert.deepEqual(await s.other.inspect(), [], 'no busy key left on the server')
    await new Promise(r => setImmediate(r))
    assert.deepEqual(unhandled, [])
  } finally {
    await s.close()
  }
})

test('#17 LOCK-04: a fn of grants read in one message that holds its own key is refused InvalidError, another key works, and a later grant\'s fn is not inside the earlier hold', async () => {
  const s = await served()
  try {
    const lock = s.remote.lock('batch', { ttl: '30s' })
    const keys = ['a', 'b', 'c']
    const results = await within(
      Promise.all(
        holdAll(lock, keys, async key => {
          // Started synchronously, as fn is called.
          const own = lock.hold(key, { wait: '5s' }, () => 'inside itself')
          const another = lock.hold(`${key}-other`, { wait: '5s' }, lease => lease.key)
          // "b" asks for "a", held by another hold (not its caller's): it waits for it, and gets it.
          const before = key === 'b' ? lock.hold('a', { wait: '5s' }, lease => `b got ${lease.key}`) : undefined
          const [o, a, b] = await Promise.allSettled([own, another, before])
          return { own: o.status === 'rejected' ? o.reason : o.value, another: a.value ?? a.reason, before: b.value ?? b.reason }
        }),
      ),
      10_000,
      'the holds',
    )
    assert.equal(s.relay.most(), keys.length, 'the three grants came in one message')
    for (const [i, r] of results.entries()) {
      assert.ok(r.own instanceof InvalidError, `${keys[i]}: a hold of its own key inside its hold: InvalidError, got ${r.own}`)
      assert.equal(r.another, `${keys[i]}-other`, `${keys[i]}: another key is held`)
    }
    assert.equal(results[1].before, 'b got a', "a later grant's fn runs outside the earlier hold: it waits for that key, and gets it")
    await allFree(s.remote, lock, [...keys, ...keys.map(k => `${k}-other`)])
    assert.deepEqual(unhandled, [])
  } finally {
    await s.close()
  }
})

test("#17 LOCK-04: callers whose grants come in one message each see their own AsyncLocalStorage values and their own lease inside fn, and leave none behind", async () => {
  const s = await served()
  try {
    const als = new AsyncLocalStorage()
    const lock = s.remote.lock('batch', { ttl: '30s' })
    const keys = ['a', 'b', 'c', 'd']
    // The last caller runs in no value of its own: it must see none inside fn.
    const holds = keys.map((key, i) =>
      (i === keys.length - 1 ? (f => f()) : f => als.run({ caller: i }, f))(() =>
        lock.hold(key, { wait: '5s' }, async lease => {
          const sync = als.getStore()?.caller
          // Its own key is held by this very hold (InvalidError); the next caller's by another (InUseError).
          const own = await lock.hold(key, { wait: 0 }, () => 'own').catch(e => e)
          const next = await lock.hold(keys[(i + 1) % keys.length], { wait: 0 }, () => 'next').catch(e => e)
          const later = await new Promise(resolve => setTimeout(() => resolve(als.getStore()?.caller), 1))
          return { sync, later, key: lease.key, own, next }
        }),
      ),
    )
    // Outside every caller's run: nothing of theirs here once the message is read.
    let outside = 'unset'
    const seenOutside = new Promise(resolve =>
      setImmediate(() => {
        outside = als.getStore()
        resolve()
      }),
    )
    const results = await within(Promise.all(holds), 10_000, 'the holds')
    await seenOutside
    assert.equal(s.relay.most(), keys.length, 'the five grants came in one message')
    for (const [i, r] of results.entries()) {
      const caller = i === keys.length - 1 ? undefined : i
      assert.equal(r.sync, caller, `${keys[i]}: the caller's value as fn is called`)
      assert.equal(r.later, caller, `${keys[i]}: the caller's value in a timer fn set`)
      assert.equal(r.key, keys[i])
      assert.ok(r.own instanceof InvalidError, `${keys[i]}: the lease in fn's context is its own: ${r.own}`)
      assert.ok(r.next instanceof InUseError, `${keys[i]}: the next caller's key is another's hold: ${r.next}`)
    }
    assert.equal(outside, undefined, 'no caller value outside the holds')
    await allFree(s.remote, lock, keys)

    // An acquire and a tryHold whose grants come in one message with holds' (their leases resolve a
    // promise, the holds' fns run as read): each caller still sees its own value.
    const seen = []
    const mixed = [
      als.run('hold 1', () => lock.hold('m1', () => seen.push(['hold 1', als.getStore()]))),
      als.run('acquire', async () => {
        const lease = await lock.acquire('m2', { wait: '5s' })
        seen.push(['acquire', als.getStore()])
        lease.release()
      }),
      als.run('tryHold', () => lock.tryHold('m3', () => seen.push(['tryHold', als.getStore()]))),
      lock.hold('m4', () => seen.push(['none', als.getStore()])),
      als.run('hold 2', () => lock.hold('m5', () => seen.push(['hold 2', als.getStore()]))),
    ]
    await within(Promise.all(mixed), 10_000, 'the mixed holds')
    assert.ok(s.relay.grants.some(types => types.length === mixed.length), 'the five grants came in one message')
    assert.equal(seen.length, mixed.length)
    for (const [who, value] of seen) assert.equal(value, who === 'none' ? undefined : who, who)
    await allFree(s.remote, lock, ['m1', 'm2', 'm3', 'm4', 'm5'])
  } finally {
    await s.close()
  }
})

test('#17 LOCK-06: a signal aborted by the fn of an earlier grant of the same message cancels its hold, on every runtime; aborted as the key is handed over by its holder, the hold is cancelled or runs; the key is never left held', async () => {
  const s = await served()
  try {
    const lock = s.remote.lock('batch', { ttl: '30s' })
    // (a) The grants of "a" and "b" come in one message; a's fn aborts b's signal before b's fn could
    // start (where no context is kept, b's lease had come already): b is cancelled, as in process.
    const controller = new AbortController()
    const ranB = []
    const a = lock.hold('a', { wait: '5s' }, () => controller.abort(new Error('changed my mind')))
    const b = lock.hold('b', { wait: '5s', signal: controller.signal }, () => ranB.push('b'))
    const [ra, rb] = await within(Promise.allSettled([a, b]), 10_000, 'the holds')
    assert.equal(s.relay.most(), 2, 'the two grants came in one message')
    assert.equal(ra.status, 'fulfilled')
    assert.equal(rb.status, 'rejected', 'b is cancelled')
    assert.ok(rb.reason instanceof CancelledError, String(rb.reason))
    assert.deepEqual(ranB, [], 'a cancelled hold runs no fn')
    await allFree(s.remote, lock, ['a', 'b'])

    // (c) Aborted in the turn it was asked: the cancel goes right after the hold, and the grant of
    // the free key comes back to a hold that is gone.
    for (const key of ['c1', 'c2', 'c3']) {
      const abort = new AbortController()
      const mine = lock.hold(key, { wait: '5s', signal: abort.signal }, () => 'ran')
      abort.abort()
      await assert.rejects(within(mine, 10_000, 'the hold aborted at once'), CancelledError)
    }
    await allFree(s.remote, lock, ['c1', 'c2', 'c3'])

    // (b) Another client hands the key over while this one's signal aborts, in one turn: whichever
    // the server reads first (the release, so a grant; or the cancel), the key ends free.
    const theirs = s.other.lock('batch', { ttl: '30s' })
    for (let round = 0; round < 20; round++) {
      const key = `race-${round}`
      const held = await theirs.acquire(key)
      const abort = new AbortController()
      const mine = lock.hold(key, { wait: '10s', signal: abort.signal }, () => 'ran')
      await lock.hold(`${key}-asked`, { wait: 0 }, () => {}) // the hold above reached the server
      held.release()
      abort.abort()
      const r = (await within(Promise.allSettled([mine]), 10_000, 'the raced hold'))[0]
      if (r.status === 'rejected') assert.ok(r.reason instanceof CancelledError, String(r.reason))
      else assert.equal(r.value, 'ran')
      await lock.hold(key, { wait: '5s' }, () => {})
      await allFree(s.remote, lock, [key])
    }
    assert.deepEqual(unhandled, [])
  } finally {
    await s.close()
  }
})

test("#17 LOCK-06: fns of grants read in one message answering a value, a promise, a rejected promise or throwing later: each hold settles with fn's outcome, and every key is released", async () => {
  const s = await served()
  try {
    const lock = s.remote.lock('batch', { ttl: '30s' })
    const refused = new Error('refused')
    const later = new Error('later')
    const keys = ['value', 'promise', 'rejected', 'thrown', 'undefined']
    const results = await within(
      Promise.allSettled(
        holdAll(lock, keys, key => {
          switch (key) {
            case 'value':
              return 42
            case 'promise':
              return new Promise(resolve => setImmediate(() => resolve('resolved')))
            case 'rejected':
              return Promise.reject(refused)
            case 'thrown':
              return (async () => {
                await null
                throw later
              })()
            default:
              return undefined
          }
        }),
      ),
      10_000,
      'the holds',
    )
    assert.equal(s.relay.most(), keys.length, 'the five grants came in one message')
    assert.deepEqual(results, [
      { status: 'fulfilled', value: 42 },
      { status: 'fulfilled', value: 'resolved' },
      { status: 'rejected', reason: refused },
      { status: 'rejected', reason: later },
      { status: 'fulfilled', value: undefined },
    ])
    await allFree(s.remote, lock, keys)
    assert.deepEqual(unhandled, [])
  } finally {
    await s.close()
  }
})
