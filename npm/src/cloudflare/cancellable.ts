/**
 * A Workers RPC call that a signal may cancel (a waiting `acquire`, a waiting pool claim): the caller
 * is answered `CancelledError` as soon as the signal aborts, the object is told (`cancel`), and an
 * answer that still comes and took something (a grant, a claim that raced the cancel) is let go
 * (`letGo`), since this caller will not be told of it: a grant released, a claim withdrawn (which
 * the object undoes only if it told no other caller of the claim id: worker-pools.ts). A signal that
 * aborted already (after its caller looked, before this) cancels at once: no abort event comes for it.
 * A cancel that fails, or throws as it is called, changes nothing of that (nothing escapes the listener).
 * A call that fails after the signal aborted (the object reset, and it is not asked again: worker-store.ts
 * `#call`) may have taken something before it failed, which nobody was told of: `failed` lets that go
 * too, if given (a pool claim kept before the reset, read back by the next instance).
 */

import { CancelledError } from '../errors.js'
import { background } from './background.js'

export async function cancellable<A>(
  place: string,
  signal: AbortSignal | undefined,
  answering: Promise<A>,
  cancel: () => Promise<unknown>,
  letGo: (answer: A) => void,
  failed?: () => void,
): Promise<A> {
  if (!signal) return answering
  let cancelled = false
  let onAbort!: () => void
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => {
      cancelled = true
      reject(new CancelledError(`${place}: cancelled while waiting`, { cause: signal.reason }))
      // A cancel that fails (one that throws as it is called too: a stub that could not be made) is
      // not this caller's error, which is CancelledError; thrown here, it would escape the listener.
      try {
        background(cancel())
      } catch {
        // the object was not told: the answer that still comes is let go (`letGo`)
      }
    }
    // Aborted since the caller looked (an await of the caller's, between): an abort event never comes.
    if (signal.aborted) onAbort()
    else signal.addEventListener('abort', onAbort, { once: true })
  })
  aborted.catch(() => {})
  try {
    return await Promise.race([answering, aborted])
  } finally {
    signal.removeEventListener('abort', onAbort)
    // The answer may come after the caller, told CancelledError, answered its own request: what it
    // took is let go all the same (background.ts).
    if (cancelled) background(answering.then(letGo, () => failed?.()))
  }
}
