/**
 * What the Node and Bun entries share: the wasm read from the package with `node:fs` (or, bundled,
 * from a module, see `init`), holds tracked
 * per async context with `AsyncLocalStorage`, fences kept in `./.holdfast/` by default. Only the
 * transport differs (`ws` on Node, `Bun.serve` on Bun). Nothing runs at import time but making the
 * tracker; the wasm is instantiated by the first `openStore()` or `connect()`.
 */

import { readFileSync } from 'node:fs'
import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks'
import { initSync } from '../../../wasm/holdfast_wasm.js'
import { openStoreOn, type Platform, type Store, type StoreOptions } from '../../store/store.js'
import type { ContextStorage, Snapshot } from '../../handle/context.js'
import type { Lease } from '../../handle/lease.js'
import { fileStorage } from '../../storage/file.js'
import { connectOn, type ConnectOptions, type RemoteStore } from '../../remote/client.js'
import type { Transport } from '../transport.js'
import { keepShape } from '../../util/shapes.js'

export interface Runtime {
  openStore(options?: StoreOptions): Promise<Store>
  connect(url: string, options?: ConnectOptions): Promise<RemoteStore>
}

let memory: WebAssembly.Memory | undefined
let loading: Promise<WebAssembly.Memory> | undefined

/**
 * The engine, instantiated once. Its wasm is read from the package's file; where that file is not
 * there, the code was bundled (esbuild, `bun build`, `bun build --compile`): a bundler takes in the
 * modules it imports but leaves a file named by `new URL(…, import.meta.url)` behind, and the open
 * failed with a bare ENOENT naming a path beside the bundle (or, bundled as CommonJS, where
 * `import.meta.url` is undefined, ERR_INVALID_URL). Then the same bytes come from the module Deno's
 * entry reads them from, which a bundler does take in: imported only then, so that the package as
 * installed never parses that module's 460 KB of text.
 */
function init(): WebAssembly.Memory | Promise<WebAssembly.Memory> {
  if (memory) return memory
  const bytes = packagedWasm()
  if (bytes) return instantiate(bytes)
  // A failed import is not kept: the next open tries again.
  loading ??= import('../../../wasm/holdfast_wasm_base64.js').then(
    ({ default: base64 }) => instantiate(Buffer.from(base64, 'base64')),
    error => {
      loading = undefined
      throw error
    },
  )
  return loading
}

/** The package's wasm file, or undefined where it is not beside this module (bundled). */
function packagedWasm(): Uint8Array<ArrayBuffer> | undefined {
  try {
    return readFileSync(new URL('../../../wasm/holdfast_wasm_bg.wasm', import.meta.url))
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ERR_INVALID_URL') return undefined
    throw error
  }
}

function instantiate(bytes: Uint8Array<ArrayBuffer>): WebAssembly.Memory {
  memory ??= initSync({ module: new WebAssembly.Module(bytes) }).memory
  return memory
}

/**
 * Holds tracked per async context. A hold that waited resumes in a microtask job of its own, where
 * `enterWith` lasts only until the job ends (Node 20, Node 24 and Bun alike): entering there costs one
 * copy of the context on Node 24 where `run` costs two.
 *
 * Where the context is an `AsyncContextFrame` (Node 24; its `AsyncLocalStorage` has no `_enable`),
 * `run` makes the context twice: entering (a copy with the lease) and leaving (a copy with the prior
 * store). An `AsyncResource` keeps the caller's context as it is and puts it back as it was, so `run`
 * here enters inside one and leaves by it: one copy. (Node 20 and Bun track contexts with hooks, where
 * `run` copies nothing and an `AsyncResource` costs more.)
 *
 * Where keeping a context is cheap (Node 24's `AsyncContextFrame`, Bun), a hold that waits keeps its
 * caller's context (`capture`: an `AsyncResource` on Node, a snapshot on Bun); when handed the key, its
 * fn runs in that context, which enters the hold there (`enterInJob`) and puts the releaser's context
 * back after. On Node 20 an `AsyncResource` runs the async hooks (1 µs a waiter in the 1,000-holder
 * benchmark, more than the microtask it saves), so there a waiter resumes from a promise instead.
 *
 * Every `AsyncResource` made here is destroyed as Node destroys its own: when it is collected, where a
 * destroy hook listens (`async_hooks.createHook`, as APM tools use), and at no cost where none does.
 * Made with `requireManualDestroy` and never destroyed by hand, a waiter's resource was told to the
 * hooks' `init` and never to `destroy`: a tool that tracks resources kept one for every hold that
 * waited, for the life of the process.
 */

/** What `contextStorage` enters once, to enable its storage: no lease. */
const ENABLED = Object.freeze({}) as Lease

function contextStorage(): ContextStorage {
  const als = new AsyncLocalStorage<Lease>()
  const bun = typeof process.versions.bun === 'string'
  const framed = typeof (als as unknown as { _enable?: unknown })._enable !== 'function' && !bun
  const snapshot = bun && typeof AsyncLocalStorage.snapshot === 'function' ? (AsyncLocalStorage.snapshot as () => Snapshot) : undefined
  // Where a waiter's context is kept in an AsyncResource: Node 24 and later, and a Bun without snapshot.
  const inResource = framed || (bun && snapshot === undefined)
  // A kept context's shape, kept (util/shapes.ts).
  if (inResource) keepShape(new AsyncResource('holdfast'))
  // Enabled now, not at the first hold that runs fn. Where contexts are tracked by hooks (Node 20),
  // a promise made before the storage was enabled is not tracked: a hold that waited resumes on such
  // a promise, and its `enterWith` (`enterInJob`) would enter its lease into the top-level context
  // for good — every later hold of that key, anywhere, refused as a hold inside its own hold. (A
  // store of its own is entered and left: `run` skips enabling when the store is the current one.)
  als.run(ENABLED, () => {})
  // What `run` calls inside the `AsyncResource`, fn passed as `this`: one function for every hold, so
  // that a hold makes no closure (and no context for it) to enter its lease.
  function enterAndRun<A, R>(this: (arg: A) => R, store: Lease, arg: A): R {
    als.enterWith(store)
    return this(arg)
  }
  return {
    getStore: () => als.getStore(),
    run: framed ? (store, fn, arg) => new AsyncResource('holdfast').runInAsyncScope(enterAndRun, fn, store, arg) : (store, fn, arg) => als.run(store, fn, arg),
    enterInJob: store => als.enterWith(store),
    // A waiter's context, for its fn to run in when handed the key (handle/context.ts `Scope`): on Bun
    // a snapshot, which only reads the context (an AsyncResource on a Bun without one); on Node 24 an
    // AsyncResource (its snapshot makes one, and a bound function besides).
    capture: snapshot ?? (inResource ? () => new AsyncResource('holdfast') : undefined),
  }
}

export function nodeRuntime(transport: Transport): Runtime {
  const platform: Platform = {
    init,
    context: contextStorage(),
    defaultStorage: () => fileStorage('.holdfast'),
    transport,
  }
  return {
    openStore: options => openStoreOn(platform, options),
    connect: (url, options) => {
      const ready = platform.init()
      if (ready instanceof Promise) return ready.then(() => connectOn(platform.transport, platform.context, url, options))
      return connectOn(platform.transport, platform.context, url, options)
    },
  }
}
