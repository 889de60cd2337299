/**
 * The key of `await using`'s cleanup: `Symbol.asyncDispose`, or on a runtime without it the registered
 * symbol that TypeScript's lowering of `await using` looks up there (`Symbol.for('Symbol.asyncDispose')`),
 * so that compiled code disposes of what we hand out too. One definition for the whole package: a lease
 * lets its key go, and each store and server a user opens and must close (`openStore`, `connect`,
 * `serve`, `openRedisStore`) closes at the end of the block.
 */
export const asyncDispose: typeof Symbol.asyncDispose = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')
