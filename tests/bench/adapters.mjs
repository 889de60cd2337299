// Adapters: each library behind one small interface, so every workload runs the same code for all.
//
//   hold(key, fn)          uncontended hold: wait for key, run fn, let go; resolves to fn's result
//   holdWait(key, fn)      the same for contended holds (holdfast: { wait: Infinity }, so its 10 s default never fires)
//   semaphore(limit)       -> (key, fn) => Promise, or null when the library has no counting semaphore
//   tryHold(key, fn)       async; never waits: { acquired: false } or { acquired: true, value }
//   live()                 number of keys the library still keeps an entry for (0 once everything is released)
//   close()                async; frees the library's resources at the end of the child process
//
// Every adapter is created inside the child process that measures it, so no library shares a heap or a
// JIT profile with another. Only `makeAdapter(name)` loads a library.

import { readFileSync, realpathSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const NOT = Object.freeze({ acquired: false })

export const ADAPTERS = ['bare', 'async-lock', 'async-mutex', 'holdfast']

// What each adapter is, for the header of the report.
export const DESCRIPTIONS = {
  'bare': 'no lock: `async (k, fn) => await fn()` (promise round-trip floor; its checks are expected to fail)',
  'async-lock': 'new AsyncLock({ maxPending: Infinity }).acquire(key, fn); try = isBusy(key) check',
  'async-mutex': 'Map<key,{Mutex,refs}> deleted when idle; Mutex.runExclusive; try = isLocked() check; Semaphore(limit).runExclusive',
  'holdfast': 'openStore({ storage: memoryStorage() }); lock(\'bench\').hold(key, fn) / hold(key, { wait: Infinity }, fn); tryHold(key, fn); semaphore(\'bench\', { limit }).hold(\'k\', { wait: Infinity }, fn)',
}

/** Version and location of an installed package, or null when it is not installed. */
export function packageInfo(name) {
  try {
    const file = require.resolve(`${name}/package.json`)
    return { version: JSON.parse(readFileSync(file, 'utf8')).version, dir: realpathSync(file).replace(/\/package\.json$/, '') }
  } catch {
    try {
      // A package whose `exports` hides package.json: find it beside node_modules instead.
      const file = new URL(`./node_modules/${name}/package.json`, import.meta.url)
      return { version: JSON.parse(readFileSync(file, 'utf8')).version, dir: realpathSync(file).replace(/\/package\.json$/, '') }
    } catch {
      return null
    }
  }
}

export async function makeAdapter(name) {
  switch (name) {
    case 'bare': {
      const hold = async (key, fn) => await fn()
      return {
        hold,
        holdWait: hold,
        semaphore: () => hold,
        tryHold: async () => NOT,
        live: () => 0,
        close: async () => {},
      }
    }

    case 'async-lock': {
      const { default: AsyncLock } = await import('async-lock')
      const lock = new AsyncLock({ maxPending: Infinity })
      const hold = (key, fn) => lock.acquire(key, fn)
      return {
        hold,
        holdWait: hold,
        semaphore: () => null,
        // isBusy then acquire is not atomic in general, but nothing runs between the two here.
        tryHold: async (key, fn) => (lock.isBusy(key) ? NOT : { acquired: true, value: await lock.acquire(key, fn) }),
        live: () => Object.keys(lock.queues).length,
        close: async () => {},
      }
    }

    case 'async-mutex': {
      const { Mutex, Semaphore } = await import('async-mutex')
      // async-mutex has no keyed lock: the usual pattern is a map of mutexes, deleted when idle so
      // that 100,000 distinct keys do not stay in memory.
      const mutexes = new Map()
      const hold = async (key, fn) => {
        let entry = mutexes.get(key)
        if (entry === undefined) mutexes.set(key, (entry = { mutex: new Mutex(), refs: 0 }))
        entry.refs++
        try {
          return await entry.mutex.runExclusive(fn)
        } finally {
          if (--entry.refs === 0) mutexes.delete(key)
        }
      }
      return {
        hold,
        holdWait: hold,
        semaphore: (limit) => {
          const s = new Semaphore(limit)
          return (key, fn) => s.runExclusive(() => fn())
        },
        tryHold: async (key, fn) => {
          const entry = mutexes.get(key)
          return entry !== undefined && entry.mutex.isLocked() ? NOT : { acquired: true, value: await hold(key, fn) }
        },
        live: () => mutexes.size,
        close: async () => {},
      }
    }

    case 'holdfast': {
      const { openStore, memoryStorage } = await import('holdfast')
      const store = await openStore({ storage: memoryStorage() })
      const l = store.lock('bench')
      const WAIT = { wait: Infinity } // one object for every contended hold: no allocation per call
      return {
        hold: (key, fn) => l.hold(key, fn),
        holdWait: (key, fn) => l.hold(key, WAIT, fn),
        semaphore: (limit) => {
          const s = store.semaphore('bench', { limit })
          return (key, fn) => s.hold(key, WAIT, fn)
        },
        tryHold: (key, fn) => l.tryHold(key, fn),
        live: () => store.inspect().length,
        close: () => store.close(),
      }
    }

    default:
      throw new Error(`unknown adapter ${JSON.stringify(name)} (known: ${ADAPTERS.join(', ')})`)
  }
}
