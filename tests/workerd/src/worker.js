// A worker that uses the packed `holdfast` in the real workerd runtime (tests/workerd/test.mjs drives
// it). wrangler bundles it with the `workerd` export condition, so it gets the workerd entry: the wasm
// imported statically, nothing run at import time.
//
// Routes (op: hold, tryHold, nested, callers, abortAfterGrant, inspect):
// - /do/...: a Durable Object (`Locks`, one per `?object=` name) hosts one store, its fences kept in
//   the object's transactional storage, so that they keep growing when the object restarts.
// - /local/...: a store opened inside the request, on memoryStorage(), in the stateless worker.
// - /cf/...: holdfast/cloudflare — HoldfastObject and workerStore(env.HOLDFAST) (see cloudflare.js).
// - /ws/NAME: a WebSocket upgrade forwarded to the HoldfastObject named NAME, where clients of the
//   wire protocol (connect('ws://…/ws/NAME')) hold its keys; ?ns=tokenless: one with no token set;
//   ?ns=longtoken: one whose token is past the 1,024 bytes a hello carries;
//   ?ns=counting: one that answers how many leases it keeps (/cf/alarms?ns=counting&name=NAME);
//   ?ns=small: one with room for 2 WebSocket clients.
// - /holdfast/NAME: docs/cloudflare.md's Worker, as a user copies it: the upgrade forwarded to the
//   HoldfastObject named by the rest of the path (NAME, or NAME/i of objectName() with shard: N).
// Every answer is JSON; a holdfast error crosses the boundary as { error: { code, name, message } }.
import { DurableObject } from 'cloudflare:workers'
import { openStore, memoryStorage, fileStorage, HoldfastError } from 'holdfast'
import { cloudflareRoute } from './cloudflare.js'
// tests/js/callers.js, copied here by tests/workerd/run.sh (#17: callers' own contexts).
import { callersReport } from './callers.js'

// holdfast/cloudflare: the store as a Durable Object, and its subclass for the alarm test.
export { HoldfastObject, CountingHoldfast, TokenlessHoldfast, LongTokenHoldfast, LimitedHoldfast, SmallHoldfast } from './cloudflare.js'

function errorInfo(e) {
  if (e instanceof HoldfastError) return { error: { code: e.code, name: e.name, message: e.message } }
  return { error: { code: null, name: e?.name ?? typeof e, message: String(e?.message ?? e) } }
}

/** A storage over a Durable Object's transactional storage (put resolves once the write is durable). */
function objectStorage(storage) {
  return {
    get: key => storage.get(key),
    set: (key, value) => storage.put(key, value),
  }
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/** What every store answers, in the object and in the stateless worker alike. */
async function exercise(store, op, q) {
  const name = q.get('name') ?? 'jobs'
  const key = q.get('key') ?? 'k'
  const ms = Number(q.get('ms') ?? 0)
  const wait = q.get('wait') ?? '10s'
  const lock = store.lock(name, { wait })
  switch (op) {
    case 'hold':
      return await lock.hold(key, async lease => {
        const start = Date.now()
        await sleep(ms)
        return { fence: lease.fence, start, end: Date.now(), tag: q.get('tag') }
      })
    case 'tryHold':
      return await lock.tryHold(key, lease => ({ fence: lease.fence }))
    case 'nested':
      // LOCK-04: a hold of a key inside its own hold. With AsyncLocalStorage it is refused at once
      // (invalid); without (workerd with neither nodejs_compat nor nodejs_als), it waits for itself
      // until its wait runs out (in_use).
      return await lock.hold(key, async () => {
        const start = Date.now()
        const answer = await lock.hold(key, { wait: '200ms' }, () => 'ran inside its own hold').then(v => ({ value: v }), errorInfo)
        return { ...answer, waitedMs: Date.now() - start }
      })
    case 'callers': {
      // #17: five callers, each in its own AsyncLocalStorage value, hold one key in turn (`form`:
      // hold, acquire, tryHold; a semaphore with `limit`): each fn must see its own.
      const handle = q.has('limit') ? store.semaphore(name, { wait, limit: Number(q.get('limit')) }) : lock
      return await callersReport(handle, key, q.get('form'))
    }
    case 'abortAfterGrant': {
      // LOCK-06: a hold granted by lease.release(), whose signal aborts right after, in the same call,
      // before its fn could start: cancelled, fn not run, the next in line served (as on Node and Bun).
      const handle = q.has('limit') ? store.semaphore(name, { wait, limit: Number(q.get('limit')) }) : lock
      const held = []
      for (let i = 0; i < (handle.limit ?? 1); i++) held.push(await handle.acquire(key))
      const ac = new AbortController()
      let ran = false
      const waiting = handle.hold(key, { signal: ac.signal }, () => (ran = true)).then(value => ({ value }), e => ({ ...errorInfo(e), cause: String(e.cause) }))
      const next = handle.hold(key, lease => lease.fence)
      await sleep(0)
      for (const lease of held) lease.release()
      ac.abort('gave up')
      const answer = await waiting
      return { ...answer, ran, nextServed: (await next) > held.at(-1).fence, busy: store.inspect().length }
    }
    case 'inspect':
      return store.inspect()
    default:
      return { error: { code: null, name: 'NotFound', message: `no such operation ${op}` } }
  }
}

export class Locks extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env)
    this.store = null
    ctx.blockConcurrencyWhile(async () => {
      this.store = await openStore({ storage: objectStorage(ctx.storage) })
    })
  }

  async run(op, query) {
    try {
      return await exercise(this.store, op, new URLSearchParams(query))
    } catch (e) {
      return errorInfo(e)
    }
  }

  async stored() {
    return (await this.ctx.storage.get('holdfast.fences')) ?? null
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    const [, where, op] = url.pathname.split('/')
    if (where === 'holdfast') {
      // docs/cloudflare.md's Worker: /holdfast/NAME reaches the object that owns the lock name NAME.
      const name = url.pathname.slice('/holdfast/'.length)
      return env.HOLDFAST.get(env.HOLDFAST.idFromName(name)).fetch(request)
    }
    let body
    if (where === 'do') {
      const stub = env.LOCKS.get(env.LOCKS.idFromName(url.searchParams.get('object') ?? 'main'))
      body = op === 'stored' ? { stored: await stub.stored() } : await stub.run(op, url.search)
    } else if (where === 'ws') {
      // As a user's Worker forwards clients to the object: the request itself, upgrade and all.
      const ns = url.searchParams.get('ns')
      const namespace = ns === 'tokenless' ? env.TOKENLESS : ns === 'longtoken' ? env.LONGTOKEN : ns === 'counting' ? env.COUNTING : ns === 'small' ? env.SMALL : env.HOLDFAST
      return namespace.get(namespace.idFromName(op || 'ws')).fetch(request)
    } else if (where === 'cf') {
      body = await cloudflareRoute(op, url.searchParams, env)
    } else if (where === 'local') {
      if (op === 'files') {
        try {
          fileStorage('/tmp/x')
          body = { error: null }
        } catch (e) {
          body = errorInfo(e)
        }
      } else {
        const store = await openStore({ storage: memoryStorage() })
        try {
          body = await exercise(store, op, url.searchParams)
        } catch (e) {
          body = errorInfo(e)
        } finally {
          await store.close()
        }
      }
    } else {
      return new Response('not found', { status: 404 })
    }
    return Response.json(body ?? null)
  },
}
