// A store in a process of its own, for the tests of fileStorage across processes
// (filestorage-restart.test.js). Run with the runtime of the test (Node, Bun, or `deno run -A`).
//
//   store-process.js DIR [--with-child]
//       opens a store on fileStorage(DIR), prints `opened PID` (or `refused CODE MESSAGE`) and then
//       lives until it is killed. With --with-child it then starts `sleep` as a child of its own,
//       which outlives it when only this process is killed, and prints `child PID`.
//   store-process.js
//       takes commands on stdin, one a line, and answers each with one line:
//       `open DIR` -> `opened PID` or `refused CODE MESSAGE`; `close` -> `closed`;
//       `cycle DIR N` -> opens and closes a store on DIR N times, counting refusals, and while open marks
//       DIR/inside (created exclusively, so that two holders at once are seen), then answers
//       `cycled WINS REFUSALS OVERLAPS`.
import { spawn } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { openStore, fileStorage } from 'holdfast'

const say = line => process.stdout.write(`${line}\n`)

async function open(dir) {
  try {
    const store = await openStore({ storage: fileStorage(dir) })
    say(`opened ${process.pid}`)
    return store
  } catch (error) {
    say(`refused ${error?.code ?? error?.name} ${String(error?.message).replace(/\n/g, ' ')}`)
    return undefined
  }
}

async function cycle(dir, n) {
  let wins = 0
  let refusals = 0
  let overlaps = 0
  for (let i = 0; i < n; i++) {
    let store
    try {
      store = await openStore({ storage: fileStorage(dir) })
    } catch (error) {
      if (error?.code !== 'storage') throw error
      refusals++
      continue
    }
    wins++
    try {
      writeFileSync(join(dir, 'inside'), `${process.pid}\n`, { flag: 'wx' })
    } catch {
      overlaps++ // another holder is inside
    }
    await new Promise(resolve => setImmediate(resolve))
    rmSync(join(dir, 'inside'), { force: true })
    await store.close()
  }
  return `cycled ${wins} ${refusals} ${overlaps}`
}

const [dir, option] = process.argv.slice(2)
if (dir !== undefined) {
  await open(dir)
  if (option === '--with-child') {
    // Started once the store holds the directory: it must not inherit what holds it.
    const child = spawn('sleep', ['120'], { stdio: 'ignore' })
    say(`child ${child.pid}`)
  }
  setInterval(() => {}, 1 << 30) // live until killed
} else {
  let store
  for await (const line of createInterface({ input: process.stdin })) {
    const [command, ...rest] = line.split(' ')
    if (command === 'open') store = await open(rest.join(' '))
    else if (command === 'cycle') say(await cycle(rest[0], Number(rest[1])))
    else if (command === 'close') {
      await store?.close()
      store = undefined
      say('closed')
    }
  }
  await store?.close()
}
