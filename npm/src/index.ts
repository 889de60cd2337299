/**
 * holdfast: fair, fenced locks and semaphores. The types of the package's main entry; each runtime
 * gets its own entry (see package.json `exports`), with the same API.
 */
export * from './entry/node.js'
