// redis-server CPU per hold on Redis, without the network's share: N holds of one key (acquire, then
// release), sent 200 at a time on one connection (pipelined), for holdfast/redis's Functions, the
// floor of a FIFO lock with fences (redis-fifo-floor's Functions, adapters.mjs) and redis-semaphore's
// two commands (SET NX PX, and its release script). A hand-over too (a waiter joins, the holder
// releases and the script grants it). CPU from INFO cpu before and after, on a redis-server of its own.
//
//   node tests/bench/redis-cpu.mjs            (after bash tests/bench/run.sh installed the packages and the build)
//   N=50000 ROUNDS=5 node tests/bench/redis-cpu.mjs
//   (after HOLDFAST_PKG_B=before.tgz bash tests/bench/run.sh: the build before too, as holdfast-b/redis)
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { FLOOR_LIBRARY } from './adapters.mjs'

const { default: Redis } = await import('ioredis')
// The scripts module is not among the package's exports: from the installed package's files. With
// HOLDFAST_PKG_B (run.sh installs it as holdfast-b), that build's scripts too, measured in the same
// rounds on the same server: an A/B of the Lua.
const builds = [['holdfast/redis', 'holdfast']]
if (existsSync(new URL('./node_modules/holdfast-b/dist/redis/scripts.js', import.meta.url))) builds.push(['holdfast-b/redis', 'holdfast-b'])
const scriptsOf = async dir => import(new URL(`./node_modules/${dir}/dist/redis/scripts.js`, import.meta.url).href)
const N = Number(process.env.N || 20_000)
const ROUNDS = Number(process.env.ROUNDS || 3)
const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-redis-cpu-'))
const port = 40_000 + Math.floor(Math.random() * 20_000)
const server = spawn(process.env.BENCH_REDIS_SERVER || 'redis-server', ['--port', port, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir].map(String), { stdio: 'ignore' })
// Gone with this process, however it ends (and at the end, below: a running child keeps this one alive).
process.on('exit', () => {
  server.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})
// Until redis-server listens: a connection refused is tried again.
for (let i = 0; ; i++) {
  const up = await new Promise(resolve => {
    const socket = net.connect(port, '127.0.0.1', () => (socket.end(), resolve(true)))
    socket.on('error', () => resolve(false))
  })
  if (up) break
  if (i > 100) throw new Error(`redis-server did not start on port ${port}`)
  await new Promise(r => setTimeout(r, 50))
}
const client = new Redis(port)
const cpu = async () => {
  const info = await client.info('cpu')
  return (Number(/used_cpu_user:([\d.]+)/.exec(info)[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)[1])) * 1e6
}

await client.call('FUNCTION', 'LOAD', 'REPLACE', FLOOR_LIBRARY)
const release = await client.call('SCRIPT', 'LOAD', "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end")

const cases = {}
for (const [label, dir] of builds) {
  const { scriptsFor, keysOf, constants } = await scriptsOf(dir)
  const { library } = scriptsFor(true)
  // Two builds' libraries have different names (a hash of their text): both stay loaded.
  await client.call('FUNCTION', 'LOAD', 'REPLACE', library.source)
  const f = library.functions
  const consts = constants(60_000, 'PUBLISH', 30_000, 0, 1, 'bench:w:somebody')
  const lock = keysOf('bench', 'lock', 'cpu', 'k')
  const line = keysOf('bench', 'lock', 'cpu', 'line')
  cases[`${label}, a free lock`] = (p, i) => {
    p.call('FCALL', f.acquire, 2, ...lock, `r${i}`, -1, consts)
    p.call('FCALL', f.release, 2, ...lock, `r${i}`, 'R0', consts)
  }
  cases[`${label}, a hand-over`] = (p, i) => {
    if (i === 0) p.call('FCALL', f.acquire, 2, ...line, 'first', -1, consts)
    p.call('FCALL', f.acquire, 2, ...line, `w${i}`, -1, consts)
    p.call('FCALL', f.release, 2, ...line, i === 0 ? 'first' : `w${i - 1}`, 'R0', consts)
  }
}
Object.assign(cases, {
  'redis-fifo-floor, a free lock': (p, i) => {
    p.call('FCALL', 'floor_acquire', 2, 'bench:{f:k}:k', 'bench:{f:k}:l', `r${i}`, 'bench:w:somebody')
    p.call('FCALL', 'floor_release', 2, 'bench:{f:k}:k', 'bench:{f:k}:l', `r${i}`)
  },
  'redis-fifo-floor, a hand-over': (p, i) => {
    if (i === 0) p.call('FCALL', 'floor_acquire', 2, 'bench:{f:l}:k', 'bench:{f:l}:l', 'first', 'bench:w:somebody')
    p.call('FCALL', 'floor_acquire', 2, 'bench:{f:l}:k', 'bench:{f:l}:l', `w${i}`, 'bench:w:somebody')
    p.call('FCALL', 'floor_release', 2, 'bench:{f:l}:k', 'bench:{f:l}:l', i === 0 ? 'first' : `w${i - 1}`)
  },
  'redis-semaphore, a free key': (p, i) => {
    p.set('bench:s', `r${i}`, 'PX', 10_000, 'NX')
    p.evalsha(release, 1, 'bench:s', `r${i}`)
  },
})

const results = {}
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, hold] of Object.entries(cases)) {
    await client.call('FLUSHALL')
    const before = await cpu()
    for (let i = 0; i < N; i += 200) {
      const p = client.pipeline()
      for (let j = i; j < i + 200; j++) hold(p, j)
      await p.exec()
    }
    ;(results[name] ??= []).push(((await cpu()) - before) / N)
  }
}
console.log(`redis-server ${(await client.info('server')).match(/redis_version:(\S+)/)[1]}, CPU per hold (µs), pipelined, median of ${ROUNDS} rounds of ${N}:`)
for (const [name, list] of Object.entries(results)) console.log(`  ${name.padEnd(36)} ${list.sort((a, b) => a - b)[list.length >> 1].toFixed(1)}   [${list.map(x => x.toFixed(1)).join(' ')}]`)
client.disconnect()
server.kill('SIGKILL')
