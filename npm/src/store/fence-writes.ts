/**
 * Keeps the engine's fence ceiling in the host's storage: the only storage I/O of a store's locks.
 *
 * The wasm bindings do no I/O and await nothing (decided in #14, docs/architecture.md "Storage I/O"):
 * when the engine needs a ceiling kept, the core calls {@link FenceWrites.persist} from inside the call
 * that asked, and this class starts the write. When the write settles, the engine host hands the
 * outcome back to the core (`ceilingWritten`) with the time.
 *
 * Invariants:
 * - `persist` never throws and never calls the core (it runs inside one of the core's calls): a
 *   `storage.set` that throws is a failed write, answered a microtask later like a rejected one.
 * - Every write started settles exactly once, through `settled`, in the order storage answers.
 * - `pending` counts the writes started and not yet settled; a store lets its storage go only once it
 *   is 0, so a late write never lands over a larger ceiling kept by the next store on the same storage.
 * - Nothing reachable from `persist` holds the store strongly while no write is under way (see
 *   # Held weakly): the core keeps `persist` for as long as it lives.
 */
import type { Storage } from '../storage/storage.js'

/** One settled write: the ceiling, and what storage threw if it failed. */
export type Settled = (ceiling: number, ok: boolean) => void

export class FenceWrites {
  readonly #storage: Storage
  #pending = 0
  #idle: (() => void)[] = []
  /** Who learns each outcome while the store opens; then the engine host (`answerTo`). */
  settled: Settled = () => {}
  /** The engine host, held weakly (see # Held weakly). */
  #host: WeakRef<SettledHost> | undefined
  /** The engine host, held strongly while a write is under way (see # Held weakly). */
  #writing: SettledHost | undefined
  /** What storage threw or rejected with, the last time a write failed. */
  lastError: unknown

  constructor(storage: Storage) {
    this.#storage = storage
  }

  /** Writes still under way. */
  get pending(): number {
    return this.#pending
  }

  /**
   * From now on each outcome goes to `host`.
   *
   * # Held weakly
   * The core keeps `persist` (a JS function in wasm-bindgen's table, which is a root) until the core
   * is freed, and with it these writes: were they to hold the host, the host and the core it holds
   * would keep each other alive, and a store closed, or dropped unclosed (a Durable Object's, evicted),
   * would never be collected, nor its wasm memory freed by wasm-bindgen's finalizer (about 14 KB a
   * store, more with its names and keys). So the host is held weakly while no write is under way, and
   * strongly while one is: a hold waiting for the write to land keeps its store, whoever else let it
   * go, and is answered. (Where the runtime has no `WeakRef`, held strongly.)
   */
  answerTo(host: SettledHost): void {
    if (typeof WeakRef !== 'function') this.#writing = host
    else this.#host = new WeakRef(host)
    this.settled = this.#toHost
  }

  readonly #toHost = (ceiling: number, ok: boolean): void => {
    const host = this.#writing ?? this.#host?.deref()
    if (this.#pending === 0 && this.#host !== undefined) this.#writing = undefined
    host?.ceilingWritten(ceiling, ok)
  }

  /** The core's callback: starts writing `value` at `key`. */
  readonly persist = (key: string, value: string, ceiling: number): void => {
    // Called from inside one of the host's calls into the core: the host is alive.
    if (this.#pending++ === 0 && this.#host !== undefined) this.#writing = this.#host.deref()
    let answer: unknown
    try {
      answer = this.#storage.set(key, value)
    } catch (error) {
      answer = Promise.reject(error)
    }
    Promise.resolve(answer).then(
      () => this.#settle(ceiling, true, undefined),
      error => this.#settle(ceiling, false, error),
    )
  }

  /** Resolves once no write is under way. */
  async landed(): Promise<void> {
    if (this.#pending > 0) await new Promise<void>(resolve => this.#idle.push(resolve))
  }

  #settle(ceiling: number, ok: boolean, error: unknown): void {
    this.#pending--
    if (!ok) this.lastError = error
    if (this.#pending === 0) for (const resolve of this.#idle.splice(0)) resolve()
    this.settled(ceiling, ok)
  }
}

/** Who applies a settled write: the store's engine host. */
export interface SettledHost {
  ceilingWritten(ceiling: number, ok: boolean): void
}
