// For tests only: loaded into a `holdfast serve` process by a test (`NODE_OPTIONS=--import` this file,
// see `trapInClose()` in helpers.js), it makes the engine of the store that process serves trap during
// the store's first close() — the one SIGTERM begins — as a bug in the engine would (a real wasm panic),
// where HOLDFAST_TEST_TRAP_IN_CLOSE says:
// - `engine`: in the engine's own close, which then answers nothing (the store's trap answers all);
// - `after`: once the close closed the engine (every lease ended, every waiter answered `closed`),
//   while the close waits for what it closes: the store's own test hook, `_trapForTest()`.
// Nothing in the package reads anything of this: the command runs unchanged.
import { Store } from 'holdfast'

const where = process.env.HOLDFAST_TEST_TRAP_IN_CLOSE
if (where !== 'engine' && where !== 'after') throw new Error(`HOLDFAST_TEST_TRAP_IN_CLOSE must be engine or after, not ${where}`)
// The wasm glue of the installed package: the module the store itself loaded.
const { Core } = await import(new URL('../../wasm/holdfast_wasm.js', import.meta.resolve('holdfast')).href)

const close = Store.prototype.close
Store.prototype.close = function () {
  Store.prototype.close = close
  if (where === 'engine') {
    const closeCore = Core.prototype.close
    Core.prototype.close = function () {
      Core.prototype.close = closeCore
      return this.trapForTest()
    }
    return close.call(this)
  }
  // close() closes the engine before it first waits: the engine is closed, not yet freed.
  const closing = close.call(this)
  try {
    this._trapForTest()
  } catch {
    // the close's ClosedError: the store was closed already, which is the point
  }
  return closing
}
