// The attacks of issue #13 (items 2, 3 and 4) on a server process, with its RSS before, during and
// after each: not a test (it asserts nothing), the measurement behind the figures in the issue's
// closing note. Run it from a project where `holdfast` is installed, beside server.js and helpers.js
// (the remote runner's project, or one made by hand to compare two builds):
//   node attacks.js silent|unread|pinned
// Prints one JSON line per step: { step, rss (MB), ... }.
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { connect } from 'holdfast'
import { TOKEN, rawClient, stallingClient, sleep } from './helpers.js'
import { encode } from './frames.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const attack = process.argv[2]

/** The server, on Node with --expose-gc (so that `gc` can tell garbage from what is kept). */
async function start(options = {}) {
  const child = spawn(process.execPath, ['--expose-gc', path.join(here, 'server.js'), JSON.stringify({ token: TOKEN, port: 0, ...options })], { stdio: ['pipe', 'pipe', 'inherit'] })
  let out = ''
  const events = []
  child.stdout.on('data', d => {
    out += d
    let i
    while ((i = out.indexOf('\n')) >= 0) {
      events.push(JSON.parse(out.slice(0, i)))
      out = out.slice(i + 1)
    }
  })
  const next = async (ev, ms = 120_000) => {
    const end = Date.now() + ms
    for (;;) {
      const e = events.find(x => x.ev === ev)
      if (e) {
        events.splice(events.indexOf(e), 1)
        return e
      }
      if (Date.now() > end) throw new Error(`no ${ev}`)
      await sleep(10)
    }
  }
  const { url } = await next('listening')
  const rss = () => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) / 1024)
  return {
    url,
    rss,
    async ask(op, ev, extra = {}) {
      child.stdin.write(JSON.stringify({ op, ...extra }) + '\n')
      return next(ev)
    },
    stop: () => child.kill('SIGKILL'),
  }
}

const say = (step, server, extra = {}) => console.log(JSON.stringify({ step, rss: server.rss(), ...extra }))

async function settle(server) {
  await sleep(3_000)
  say('after the attacker left (3 s)', server)
  await server.ask('gc', 'gced')
  say('after the attacker left, and a full GC', server)
}

if (attack === 'silent') {
  // Item 2: 1,000 connections that never say hello, then 500 more; then a client with the token.
  const server = await start()
  say('idle', server)
  const silent = []
  for (let i = 0; i < 1_500; i++) silent.push(await rawClient(server.url))
  await sleep(500)
  const open = silent.filter(r => r.closed === undefined).length
  let client
  try {
    const remote = await connect(server.url, { token: TOKEN, reconnect: false })
    client = `connected, fence ${await remote.lock('in').hold('k', lease => lease.fence)}`
    await remote.close()
  } catch (error) {
    client = `${error.code}: ${error.message}`
  }
  say('1,500 silent connections made', server, { stillOpen: open, client })
  await sleep(6_000)
  say('6 s later', server, { stillOpen: silent.filter(r => r.closed === undefined).length })
  for (const r of silent) r.close()
  await settle(server)
  server.stop()
} else if (attack === 'unread') {
  // Item 3: 4,000 busy keys (an inspection of ~4 MiB), a client that sends 60 inspects and reads nothing.
  const server = await start()
  await server.ask('fill', 'filled', { lock: 'filled', count: 4_000, keyBytes: 1_000 })
  await server.ask('gc', 'gced')
  say('idle, 4,000 busy keys', server)
  const inspect = process.argv[3] === 'pages' ? i => encode.inspectPage(2 + i) : i => encode.inspect(2 + i)
  const stall = await stallingClient(server.url, [encode.hello(1, TOKEN), ...Array.from({ length: 60 }, (_, i) => inspect(i))])
  await sleep(3_000)
  say('60 inspects unread (3 s)', server, { connections: (await server.ask('count', 'counted')).connections })
  stall.close()
  await settle(server)
  server.stop()
} else if (attack === 'pinned') {
  // Item 4: 10,000 leases with a ttl of 1 h per connection, dropped without goodbye, round after round.
  const server = await start({ connectionLimit: 10_000 })
  await server.ask('gc', 'gced')
  say('idle', server)
  for (let round = 1; round <= 11; round++) {
    const raw = await rawClient(server.url)
    raw.send(encode.hello(1, TOKEN))
    await raw.answer(1)
    for (let i = 0; i < 10_000; i++) raw.send(encode.hold(2 + i, { name: 'pinned', key: `r${round}-${i}`, ttl: 3_600_000 }))
    const last = await raw.answer(10_001, 120_000)
    const granted = raw.frames.filter(f => f.type === 'granted').length
    const refused = raw.frames.find(f => f.type === 'error')
    raw.close()
    await sleep(200)
    await server.ask('gc', 'gced')
    const { busy } = await server.ask('count', 'counted')
    say(`round ${round}`, server, { granted, last: last.type, refused: refused?.message, busyKeys: busy })
  }
  server.stop()
} else {
  console.error('usage: node attacks.js silent|unread [pages]|pinned')
  process.exit(2)
}
process.exit(0)
