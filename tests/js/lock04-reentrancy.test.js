// LOCK-04: a hold of a key inside its own hold (same async context) is refused at once with
// InvalidError instead of deadlocking; a tryHold there answers { acquired: false }. Another key, the
// same key once the outer hold ended, or an unrelated task are fine.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { AsyncLocalStorage } from 'node:async_hooks'
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { InvalidError } from 'holdfast'
import { openTestStore, settle, gate } from './helpers.js'

const here = path.dirname(fileURLToPath(import.meta.url))

test('LOCK-04: a hold of a key inside its own hold is refused at once with InvalidError', async () => {
  const { store } = await openTestStore()
  const l = store.lock('summaries', { wait: Infinity })
  const inner = await l.hold('chat', async () => {
    await settle() // still the same async context after awaits
    return l.hold('chat', () => 'never').then(() => 'deadlock avoided?', e => e)
  })
  assert.ok(inner instanceof InvalidError, String(inner))
  assert.equal(inner.code, 'invalid')
  assert.match(inner.message, /summaries.*chat/)
  // Even a semaphore's own permit, and through a second handle of the same name.
  const s = store.semaphore('uploads', { limit: 2 })
  const other = store.lock('summaries')
  const refused = await s.hold('u', () => s.hold('u', () => 1).catch(e => e.code))
  assert.equal(refused, 'invalid')
  assert.equal(await l.hold('c2', () => other.hold('c2', () => 1).catch(e => e.code)), 'invalid')
  await store.close()
})

test('LOCK-04: a tryHold inside its own hold answers { acquired: false }', async () => {
  const { store } = await openTestStore()
  const l = store.lock('summaries')
  const tried = await l.hold('chat', () => l.tryHold('chat', () => 'ran'))
  assert.deepEqual(tried, { acquired: false })
  await store.close()
})

test('LOCK-04: another key, the same key after the hold ended, and an unrelated task are fine', async () => {
  const { store } = await openTestStore()
  const l = store.lock('summaries', { wait: Infinity })
  const nested = await l.hold('a', () => l.hold('b', lease => lease.key))
  assert.equal(nested, 'b')
  let later
  await l.hold('a', () => {
    // Started inside, but runs after the outer hold ended: waits, then holds.
    later = new Promise(resolve => setTimeout(resolve, 0)).then(() => l.hold('a', () => 'after'))
  })
  assert.equal(await later, 'after')
  // An unrelated task (not started inside the hold) waits its turn instead of being refused.
  let release
  const outer = l.hold('c', () => new Promise(r => (release = r)))
  await settle()
  const unrelated = l.hold('c', () => 'unrelated ran')
  release()
  await outer
  assert.equal(await unrelated, 'unrelated ran')
  await store.close()
})

test('LOCK-04: a hold that waited for its key is tracked once granted, and only in its own context', async () => {
  // A hold that waited resumes in a job of its own and enters its context there: inside fn the same
  // key is refused, the caller's own async-context values are there, and the context ends with fn —
  // neither the caller after the hold nor the next waiter (resumed by the same release) is inside it.
  const { store } = await openTestStore()
  const l = store.lock('summaries', { wait: Infinity })
  const mine = new AsyncLocalStorage()
  const first = await l.acquire('k')
  const seen = []
  const waited = mine.run('task A', () =>
    l.hold('k', async () => {
      seen.push(mine.getStore())
      const nested = await l.hold('k', { wait: 0 }, () => 'never').catch(e => e.code)
      const tried = await l.tryHold('k', () => 'ran')
      return [nested, tried.acquired]
    }),
  )
  const next = mine.run('task B', () => l.hold('k', () => mine.getStore()))
  const after = waited.then(() => l.hold('k', () => 'held again after'))
  await settle()
  await first.release()
  assert.deepEqual(await waited, ['invalid', false])
  assert.deepEqual(seen, ['task A'])
  assert.equal(await next, 'task B', 'the next waiter is not inside the hold before it')
  assert.equal(await after, 'held again after', 'the caller is not inside the hold once it settled')
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('LOCK-04: a free key is held inside its own context, and the caller is back in its own once hold() returns', async () => {
  // fn of a free key starts within hold(): its context is entered and left around it. A sibling
  // hold made right after, in the same synchronous code, waits its turn instead of being refused,
  // and the caller's own async-context values are there inside fn and after.
  const { store } = await openTestStore()
  const l = store.lock('summaries', { wait: Infinity })
  const mine = new AsyncLocalStorage()
  const { first, second, after } = mine.run('caller', () => {
    const first = l.hold('s', async () => {
      const inside = mine.getStore()
      await settle()
      return [inside, await l.hold('s', { wait: 0 }, () => 'never').catch(e => e.code)]
    })
    const second = l.hold('s', () => 'second ran')
    return { first, second, after: mine.getStore() }
  })
  assert.equal(after, 'caller')
  assert.deepEqual(await first, ['caller', 'invalid'])
  assert.equal(await second, 'second ran')
  await store.close()
})

test('LOCK-04: a waiter handed the key by a release runs in its own context, and the releaser stays in its own', async () => {
  // The key may be handed over within `release()` itself (the waiter's fn starting right there): the
  // waiter's fn must see its own caller's context, and the releaser, once release() returns, must
  // neither be inside the waiter's hold (a hold of the key would be refused as its own) nor lose its
  // own context values.
  const { store } = await openTestStore()
  const l = store.lock('handover', { wait: Infinity })
  const mine = new AsyncLocalStorage()
  const first = await mine.run('releaser', () => l.acquire('k'))
  const holding = gate()
  let inside
  const waited = mine.run('waiter', () =>
    l.hold('k', async () => {
      inside = mine.getStore()
      await holding.promise
      return l.hold('k', { wait: 0 }, () => 'never').catch(e => e.code)
    }),
  )
  await settle()
  const { after, again } = mine.run('releaser', () => {
    first.release()
    return { after: mine.getStore(), again: l.hold('k', { wait: 0 }, () => 'not free').catch(e => e.code) }
  })
  assert.equal(after, 'releaser')
  assert.equal(await again, 'in_use', 'the releaser is not inside the waiter’s hold')
  holding.open()
  assert.equal(await waited, 'invalid', 'the waiter is inside its own hold')
  assert.equal(inside, 'waiter')
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('LOCK-04: the holds around a hold are all known, however deep: an outer hold’s key is refused two holds in', async () => {
  // Each hold knows the hold its fn started inside of: a hold of `a` inside `c` inside `b` inside `a`
  // is refused, by a free key granted by the store itself, by the engine's grant (a maxHold handle) and by a waiter
  // that was handed its key; keys not held on the way are fine, and a semaphore's as well.
  const { store } = await openTestStore()
  const l = store.lock('deep', { wait: Infinity })
  const timed = store.lock('deep', { wait: Infinity, maxHold: '1h' })
  const s = store.semaphore('deep-sem', { limit: 2, wait: Infinity })
  const inner = (outer, key) => outer.hold(key, { wait: 0 }, () => 'not refused').catch(e => e.code)
  assert.deepEqual(
    await l.hold('a', () => l.hold('b', () => timed.hold('c', async () => [await inner(l, 'a'), await inner(timed, 'b'), await inner(l, 'd')]))),
    ['invalid', 'invalid', 'not refused'],
  )
  assert.deepEqual(await s.hold('x', () => l.hold('y', () => s.hold('z', () => inner(s, 'x')))), 'invalid')
  // A waiter handed its key, two holds in.
  const first = await l.acquire('w')
  const waited = l.hold('a', () => l.hold('b', () => l.hold('w', () => [inner(l, 'a'), inner(l, 'w')]).then(all => Promise.all(all))))
  await settle()
  await first.release()
  assert.deepEqual(await waited, ['invalid', 'invalid'])
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('LOCK-04: in a process whose first hold waited, its lease stays in its own fn: top-level code holds the key after it, not refused as a hold inside its own hold', async () => {
  // On Node 20 the AsyncLocalStorage was enabled only at the first hold that ran fn: a waiter
  // resuming before that entered its lease into the top-level context, for good, so that code in no
  // hold was refused InvalidError while that key was held. A fresh process, as it needs one.
  const child = spawn(process.execPath, [...(globalThis.Deno ? ['run', '-A'] : []), path.join(here, 'first-hold-waits-child.js')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  child.stdout.on('data', chunk => (out += chunk))
  const code = await new Promise(resolve => child.once('exit', resolve))
  assert.equal(code, 0)
  assert.deepEqual(JSON.parse(out), { main: 'main ran', worker: 'worker done' })
})
