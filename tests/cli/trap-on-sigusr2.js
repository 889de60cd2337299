// For tests only: loaded into a `holdfast serve` process by a test (`NODE_OPTIONS=--import` this file,
// see `trapOnSignal()` in helpers.js), it makes the store that process serves trap when the process
// gets SIGUSR2, as a bug in the engine would: the store's own test hook, `_trapForTest()` (a real wasm
// panic). Nothing in the package reads anything of this: the command runs unchanged.
import { Store } from 'holdfast'

let served
const serve = Store.prototype.serve
Store.prototype.serve = function (options) {
  served = this
  return serve.call(this, options)
}
process.on('SIGUSR2', () => {
  try {
    served._trapForTest()
  } catch {
    // the trap's ClosedError: the store closed itself, which is the point
  }
})
