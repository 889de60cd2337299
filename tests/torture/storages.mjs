// The storages the torture runs a store on, besides `fileStorage`: custom storages over files, as a
// user would write them, one slow and one that fails now and then. Both keep each value in a file of
// their own directory and write it atomically (temporary file, fsync, rename, fsync of the
// directory), as `fileStorage` does, so that a kill leaves the old value or the new, never a torn one.
import * as fs from 'node:fs'
import * as path from 'node:path'
import { fileStorage } from 'holdfast'
import { mulberry32 } from './random.js'

function fileOf(dir, key) {
  return path.join(dir, `${encodeURIComponent(key)}.value`)
}

function read(dir, key) {
  try {
    return fs.readFileSync(fileOf(dir, key), 'utf8')
  } catch (error) {
    if (error.code === 'ENOENT') return undefined
    throw error
  }
}

function writeAtomically(dir, key, value) {
  const target = fileOf(dir, key)
  const temp = `${target}.${process.pid}.tmp`
  const fd = fs.openSync(temp, 'w')
  try {
    fs.writeSync(fd, value)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
  fs.renameSync(temp, target)
  const d = fs.openSync(dir, 'r')
  try {
    fs.fsyncSync(d)
  } finally {
    fs.closeSync(d)
  }
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/**
 * The storage of a torture child: `file` (the package's `fileStorage`), `slow` (every write answers
 * 0 to 300 ms late, now and then a second and a half), `flaky` (a read fails 5% of the time; a
 * write fails 15% of the time before writing and 10% after: an unknown outcome, as a timeout is), or
 * `lying` (the control: it acknowledges every write and keeps none, so fences must repeat).
 */
export function makeStorage(mode, dir, seed) {
  const rand = mulberry32(seed)
  fs.mkdirSync(dir, { recursive: true })
  switch (mode) {
    case 'file':
      return fileStorage(dir)
    case 'slow':
      return {
        async get(key) {
          await sleep(rand() * 50)
          return read(dir, key)
        },
        async set(key, value) {
          await sleep(rand() < 0.05 ? 1500 : rand() * 300)
          writeAtomically(dir, key, value)
        },
      }
    case 'flaky':
      return {
        get(key) {
          if (rand() < 0.05) throw new Error('flaky storage: read failed')
          return read(dir, key)
        },
        async set(key, value) {
          await sleep(rand() * 20)
          const roll = rand()
          if (roll < 0.15) throw new Error('flaky storage: write failed, nothing written')
          writeAtomically(dir, key, value)
          if (roll < 0.25) throw new Error('flaky storage: write timed out (it landed)')
        },
      }
    case 'lying':
      return {
        get: key => read(dir, key),
        set: () => {},
      }
    default:
      throw new Error(`unknown storage ${mode}`)
  }
}
