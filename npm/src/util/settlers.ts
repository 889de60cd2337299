/**
 * A promise's resolve and reject, taken without a closure for each promise: the one executor
 * (`keepSettlers`) leaves them in `settlers`, and the constructor that made the promise takes them at
 * once (an executor runs synchronously) and clears them. Left there, the last promise's settlers kept
 * that promise alive until the next was made: its value, or its error and whatever that error's stack
 * reached (a hold's fn and its caller's context, for a hold over a connection that was cancelled).
 *
 *     this.promise = new Promise(keepSettlers)
 *     this.resolve = settlers.resolve!
 *     this.reject = settlers.reject!
 *     settlers.resolve = settlers.reject = undefined
 */
export const settlers: { resolve: ((value: unknown) => void) | undefined; reject: ((error: unknown) => void) | undefined } = {
  resolve: undefined,
  reject: undefined,
}

export const keepSettlers = (resolve: (value: unknown) => void, reject: (error: unknown) => void): void => {
  settlers.resolve = resolve
  settlers.reject = reject
}
