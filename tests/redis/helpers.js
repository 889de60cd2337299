// The harness of the Redis tests: real redis-server processes, each on a free loopback port with its
// own temporary directory, started and killed by the tests; clients from ioredis or node-redis (the
// environment variable HOLDFAST_REDIS_CLIENT: `ioredis`, the default, `node-redis`, or `bun`: Bun's own
// RedisClient, under Bun only); and agent
// processes (agent.js) driven through stdin and watched through stdout, one JSON line per event.
import { spawn } from 'node:child_process'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, connect as tcp } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Proc as SharedProc } from './proc.js'
import { mulberry32 } from './random.js'

export const CLIENT = process.env.HOLDFAST_REDIS_CLIENT || 'ioredis'
export const REDIS_SERVER = process.env.HOLDFAST_REDIS_SERVER || 'redis-server'
export const RUNTIMES = {
  node20: process.env.HOLDFAST_NODE20 || process.execPath,
  node24: process.env.HOLDFAST_NODE24 || process.execPath,
  bun: process.env.HOLDFAST_BUN || process.execPath,
}
export const sleep = ms => new Promise(r => setTimeout(r, ms))

/** A model test's seed: its random numbers, `pick` from a list, the log of its ops, and `fail`, which names the seed and replays its ops. */
export function seeded(seed) {
  const random = mulberry32(seed)
  const log = []
  const pick = list => list[Math.floor(random() * list.length)]
  const fail = message => assert.fail(`seed ${seed}: ${message}\nops (replay: HOLDFAST_REDIS_SEED=${seed}):\n${log.join('\n')}`)
  return { random, pick, log, fail }
}

/**
 * A client of `url` (as `redisClient` makes it); `send(args)` runs a command on it (ioredis, node-redis
 * or Bun's), and `sendAtOnce(list)` runs a list of them as one transaction (MULTI/EXEC): Redis runs
 * them back to back, with no other command and no wait between them, however busy the machine.
 */
export async function commandClient(t, url) {
  const client = await redisClient(t, url)
  const sendAtOnce = async list => {
    if (!client.call && client.sendCommand) return list.reduce((multi, args) => multi.addCommand(args.map(String)), client.multi()).exec()
    if (!client.call) {
      // Bun's client has no MULTI of its own: the commands go on its one connection, in order.
      const queued = [sendOn(client, ['MULTI']), ...list.map(args => sendOn(client, args))]
      const exec = sendOn(client, ['EXEC'])
      await Promise.all(queued)
      return exec
    }
    const multi = client.multi()
    for (const args of list) multi.call(...args)
    return (await multi.exec()).map(([error, reply]) => {
      if (error) throw error
      return reply
    })
  }
  return { client, send: args => sendOn(client, args), sendAtOnce }
}

/** Runs a command (`[name, ...args]`) on a client of any of the three kinds. */
export function sendOn(client, args) {
  if (client.call) return client.call(...args)
  if (client.sendCommand) return client.sendCommand(args.map(String))
  return client.send(String(args[0]), args.slice(1).map(String))
}

/** Closes a client of any of the three kinds, as its application would (QUIT, or Bun's close()). */
export async function quitClient(client) {
  if (client.quit) await client.quit()
  else await client.close()
}

/**
 * The model tests' Redis: a server without persistence, a client whose `send(args)` runs a command,
 * and every message of the channels `model:w:*` pushed to `published` as [channel, text].
 */
export async function modelRedis(t) {
  const server = await startRedis(t, { appendonly: 'no' })
  const { send } = await commandClient(t, server.url)
  const subscriber = await redisClient(t, server.url)
  const published = []
  if (subscriber.call) {
    subscriber.on('pmessage', (_, channel, text) => published.push([channel, text]))
    await subscriber.psubscribe('model:w:*')
  } else await subscriber.pSubscribe('model:w:*', (text, channel) => published.push([channel, text]))
  return { server, send, published }
}

const cleanups = new WeakMap()

/**
 * Runs `fn` after the test, in the reverse order of `later` calls (stores close before their clients,
 * clients before their server), each awaited, errors ignored.
 */
export function later(t, fn) {
  let list = cleanups.get(t)
  if (!list) {
    cleanups.set(t, (list = []))
    t.after(async () => {
      for (const f of list.reverse()) {
        try {
          await f()
        } catch {}
      }
    })
  }
  list.push(fn)
}

export function tempDir(t, prefix = 'holdfast-redis-') {
  const dir = mkdtempSync(path.join(tmpdir(), prefix))
  later(t, () => rmSync(dir, { recursive: true, force: true }))
  return dir
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.on('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })
}

/** One raw command over RESP (inline), for what must not go through holdfast's client: PING, DEBUG, INFO. */
export function raw(port, ...args) {
  return new Promise((resolve, reject) => {
    const socket = tcp(port, '127.0.0.1')
    let data = ''
    socket.setTimeout(5_000, () => (socket.destroy(), reject(new Error(`redis :${port}: no answer to ${args[0]}`))))
    socket.on('error', reject)
    socket.on('data', d => {
      data += d
      const reply = parseReply(data)
      if (reply !== undefined) {
        socket.end()
        resolve(reply)
      }
    })
    socket.write(`*${args.length}\r\n` + args.map(a => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join(''))
  })
}

function parseReply(data) {
  const end = data.indexOf('\r\n')
  if (end < 0) return undefined
  const head = data.slice(1, end)
  switch (data[0]) {
    case '+':
      return head
    case '-':
      return new Error(head)
    case ':':
      return Number(head)
    case '$': {
      const n = Number(head)
      if (n < 0) return null
      return data.length >= end + 2 + n + 2 ? data.slice(end + 2, end + 2 + n) : undefined
    }
    default:
      return data // arrays: the tests read them as text
  }
}

/**
 * A redis-server of the test's own: `--appendonly yes` with `appendfsync` as asked, `--save ''`, the
 * DEBUG command allowed from loopback. `kill(signal)`, `restart()` (same port and directory), `crash()` (kill -9 and
 * a start), `stop()`.
 */
export async function startRedis(t, { appendfsync = 'everysec', appendonly = 'yes', extra = [] } = {}) {
  const dir = tempDir(t)
  const port = await freePort()
  const server = {
    port,
    dir,
    url: `redis://127.0.0.1:${port}`,
    proc: undefined,
    async start() {
      const { port } = server
      const args = ['--port', port, '--bind', '127.0.0.1', '--dir', dir, '--appendonly', appendonly, '--appendfsync', appendfsync, '--save', '', '--enable-debug-command', 'local', '--hz', '50', ...extra].map(String)
      const proc = spawn(REDIS_SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] })
      let log = ''
      // A spawn that failed (no such redis-server) says so here, and never exits (Bun) or says it by
      // its exit code alone (Node): without this, an uncaught error, or a start waiting its 15 s for nothing.
      let failed
      proc.stdout.on('data', d => (log += d))
      proc.stderr.on('data', d => (log += d))
      proc.exited = new Promise(resolve => {
        proc.on('exit', resolve)
        proc.on('error', error => resolve((failed = error)))
      })
      server.proc = proc
      const end = Date.now() + 15_000
      for (;;) {
        try {
          if ((await raw(port, 'PING')) === 'PONG') return
        } catch {
          // not yet listening (or loading)
        }
        if (failed || proc.exitCode !== null || Date.now() > end) {
          // A server that never answered is killed: a start that failed leaves no redis-server behind.
          await server.stop()
          throw new Error(`redis-server :${port} did not start${failed ? ` (${failed.message})` : ''}: ${log.slice(-1000)}`)
        }
        await sleep(20)
      }
    },
    kill(signal = 'SIGKILL') {
      try {
        server.proc.kill(signal)
      } catch {}
    },
    async stop() {
      if (server.proc && server.proc.exitCode === null && server.proc.signalCode === null) {
        server.kill('SIGCONT')
        server.kill('SIGKILL')
        await server.proc.exited
      }
    },
    async restart() {
      await server.stop()
      await server.start()
    },
    /** kill -9 now, and a start on the same data `downMs` later. */
    async crash(downMs = 300) {
      server.kill('SIGKILL')
      await server.proc.exited
      await sleep(downMs)
      await server.start()
    },
  }
  // Before the start: one the test gave up on (its timeout) is stopped too.
  later(t, () => server.stop())
  // A port taken between freePort() and the server's bind (by a connection's ephemeral port, or a
  // cluster node's bus port, port + 10000, which freePort does not look at) is left for another.
  for (let tries = 1; ; tries++) {
    try {
      await server.start()
      return server
    } catch (error) {
      if (tries === 5 || !/Address already in use/.test(error.message)) throw error
      server.port = await freePort()
      server.url = `redis://127.0.0.1:${server.port}`
    }
  }
}

/**
 * A TCP proxy to Redis on `port`, for the connections of one store: `mute()` drops what Redis answers
 * from then on (a reply lost on its way back), `cut()` cuts every connection (they reconnect, unmuted),
 * `sent(pattern)` counts the matches of `pattern` (a global RegExp) in what the store sent so far.
 */
export async function proxyTo(t, port) {
  let muted = false
  let sent = ''
  const pairs = new Set()
  const cut = () => {
    muted = false
    for (const pair of [...pairs]) for (const socket of pair) socket.destroy()
    pairs.clear()
  }
  const server = createServer(client => {
    const upstream = tcp(port, '127.0.0.1')
    const pair = [client, upstream]
    pairs.add(pair)
    client.on('data', d => (upstream.write(d), (sent += d.toString('latin1'))))
    upstream.on('data', d => muted || client.write(d))
    for (const socket of pair) {
      socket.on('error', () => {})
      socket.on('close', () => (pairs.delete(pair), client.destroy(), upstream.destroy()))
    }
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  later(t, () => (cut(), new Promise(resolve => server.close(resolve))))
  return { url: `redis://127.0.0.1:${server.address().port}`, mute: () => (muted = true), cut, sent: pattern => sent.match(pattern)?.length ?? 0 }
}

/** A client of the kind the run tests (ioredis, node-redis or Bun's), closed after the test. */
export async function redisClient(t, url, kind = CLIENT) {
  let client
  if (kind === 'bun') {
    const { RedisClient } = await import('bun')
    client = new RedisClient(url)
    if (t) later(t, () => client.close())
  } else if (kind === 'node-redis') {
    const { createClient } = await import('redis')
    client = createClient({ url })
    client.on('error', () => {})
    await client.connect()
    if (t) later(t, () => client.destroy?.() ?? client.disconnect?.())
  } else {
    const { Redis } = await import('ioredis')
    client = new Redis(url)
    client.on('error', () => {})
    if (t) later(t, () => client.disconnect())
  }
  return client
}

/** `INFO commandstats` of a server: calls by command name. */
export async function commandStats(port) {
  const text = await raw(port, 'INFO', 'commandstats')
  const calls = {}
  for (const m of String(text).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[m[1]] = Number(m[2])
  return calls
}

/** An agent process (agent.js) that speaks JSON lines. */
export class Proc extends SharedProc {
  constructor(runtime, args, name) {
    super(runtime, 'agent.js', args, name)
  }
}

/** Starts an agent on `runtime` with a store on `url` (client `kind`); resolves once it is open. */
export async function startAgent(t, name, runtime, url, { kind = CLIENT, options = {} } = {}) {
  const agent = new Proc(runtime, [name, kind, url, JSON.stringify(options)], name)
  later(t, () => agent.stop())
  await agent.next({ ev: 'ready' }, 20_000)
  return agent
}

/**
 * A redis-sentinel of the test's own, watching `primaryPort` as `mymaster` (quorum 2, down after 1 s);
 * `hostnames`: the primary named `localhost`, and nodes announced by their hostnames.
 */
async function startSentinel(t, primaryPort, hostnames = false) {
  const dir = tempDir(t, 'holdfast-sentinel-')
  const port = await freePort()
  const conf = path.join(dir, 'sentinel.conf')
  const { writeFileSync } = await import('node:fs')
  writeFileSync(
    conf,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      ...(hostnames ? ['sentinel resolve-hostnames yes', 'sentinel announce-hostnames yes'] : []),
      `sentinel monitor mymaster ${hostnames ? 'localhost' : '127.0.0.1'} ${primaryPort} 2`,
      'sentinel down-after-milliseconds mymaster 1000',
      'sentinel failover-timeout mymaster 5000',
      'sentinel parallel-syncs mymaster 2',
      '',
    ].join('\n'),
  )
  const proc = spawn(process.env.HOLDFAST_REDIS_SENTINEL || 'redis-sentinel', [conf], { stdio: ['ignore', 'pipe', 'pipe'] })
  proc.stdout.resume()
  proc.stderr.resume()
  proc.exited = new Promise(resolve => proc.on('exit', resolve))
  later(t, async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGKILL')
      await proc.exited
    }
  })
  const end = Date.now() + 10_000
  for (;;) {
    try {
      if ((await raw(port, 'PING')) === 'PONG') return { port, proc }
    } catch {}
    if (Date.now() > end) throw new Error(`redis-sentinel :${port} did not start`)
    await sleep(20)
  }
}

/**
 * A node-redis client (of one server, a Sentinel or a Cluster), destroyed after the test: connected
 * (`connect` true, the default), not (false), or its connect() under way, not awaited (`'started'`).
 */
export async function nodeRedisConnected(t, client, connect = true) {
  client.on('error', () => {})
  if (connect === 'started') client.connect().catch(() => {})
  else if (connect) await client.connect()
  later(t, () => (client.isOpen ? client.destroy() : undefined))
  return client
}

/**
 * One primary, two replicas and three sentinels (quorum 2), each on its own loopback port; resolves
 * once every sentinel knows both replicas and the two other sentinels, and both replicas are in sync
 * (the sentinels may be ready before their first full sync ends: a failover then promoted a replica
 * that had nothing). `primaryPort()` asks a sentinel. `hostnames`: the sentinels name every node
 * `localhost` (`announce-hostnames`), where the nodes know themselves as 127.0.0.1.
 */
export async function startSentinelSet(t, { hostnames = false } = {}) {
  // No wait before a replica's first sync (repl-diskless-sync-delay is 5 s by default).
  // Named `localhost`, a node is dialled at whatever that resolves to first: 127.0.0.1, or ::1 on some
  // machines (a bind prefixed `-` is skipped where the address cannot be bound).
  const bind = hostnames ? ['--bind', '127.0.0.1 -::1'] : []
  const primary = await startRedis(t, { appendonly: 'no', extra: ['--repl-diskless-sync-delay', '0', ...bind] })
  const replicas = []
  const announce = hostnames ? ['--replica-announce-ip', 'localhost', ...bind] : []
  for (let i = 0; i < 2; i++) replicas.push(await startRedis(t, { appendonly: 'no', extra: ['--replicaof', '127.0.0.1', primary.port, '--replica-priority', 100 - i, ...announce] }))
  const sentinels = []
  for (let i = 0; i < 3; i++) sentinels.push(await startSentinel(t, primary.port, hostnames))
  const end = Date.now() + 30_000
  for (;;) {
    let ready = true
    for (const s of sentinels) {
      const info = String(await raw(s.port, 'INFO', 'sentinel'))
      if (!/master0:name=mymaster,status=ok,address=[^,]+,slaves=2,sentinels=3/.test(info)) ready = false
    }
    for (const r of replicas) if (!String(await raw(r.port, 'INFO', 'replication')).includes('master_link_status:up')) ready = false
    if (ready) break
    if (Date.now() > end) throw new Error('the sentinels did not see each other and both replicas, in sync, in 30 s')
    await sleep(200)
  }
  const servers = [primary, ...replicas]
  return {
    primary,
    replicas,
    sentinels,
    servers,
    /** The port of the primary the sentinels name now. */
    async primaryPort() {
      const text = String(await raw(sentinels[0].port, 'SENTINEL', 'get-master-addr-by-name', 'mymaster'))
      return Number(/\$\d+\r\n(\d+)\r\n$/.exec(text)?.[1])
    },
    /**
     * A client that finds the primary through the sentinels: ioredis's Redis with `sentinels`, or
     * node-redis's `createSentinel` (with `options` added to either; `connect` as nodeRedisConnected takes it).
     */
    async client(kind = 'ioredis', { options = {}, connect } = {}) {
      const nodes = sentinels.map(s => ({ host: '127.0.0.1', port: s.port }))
      if (kind === 'node-redis') {
        const { createSentinel } = await import('redis')
        return nodeRedisConnected(t, createSentinel({ name: 'mymaster', sentinelRootNodes: nodes, ...options }), connect)
      }
      const { Redis } = await import('ioredis')
      const client = new Redis({ sentinels: nodes, name: 'mymaster', ...options })
      client.on('error', () => {})
      later(t, () => client.disconnect())
      return client
    },
  }
}

/**
 * A Redis Cluster of three primaries (and `replicas` replicas of each), each a redis-server of the
 * test's own, made with `redis-cli --cluster create`; resolves once every node says cluster_state:ok
 * (and every replica is in sync). `nodeTimeout`: after how long a primary that does not answer is
 * failed over. `layout()` reads CLUSTER NODES: each node's id, port, role, primary and slots.
 */
export async function startCluster(t, { replicas = 0, nodeTimeout = 2000 } = {}) {
  const nodes = []
  for (let i = 0; i < 3 * (1 + replicas); i++) nodes.push(await startRedis(t, { appendonly: 'no', extra: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', nodeTimeout] }))
  const created = spawn(process.env.HOLDFAST_REDIS_CLI || 'redis-cli', ['--cluster', 'create', ...nodes.map(n => `127.0.0.1:${n.port}`), '--cluster-replicas', replicas, '--cluster-yes'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let log = ''
  created.stdout.on('data', d => (log += d))
  created.stderr.on('data', d => (log += d))
  const code = await new Promise(resolve => created.on('exit', resolve))
  if (code !== 0) throw new Error(`redis-cli --cluster create failed: ${log.slice(-1000)}`)
  const end = Date.now() + 20_000
  for (;;) {
    const states = await Promise.all(nodes.map(n => raw(n.port, 'CLUSTER', 'INFO').then(String)))
    const synced = await Promise.all(nodes.map(n => raw(n.port, 'INFO', 'replication').then(String)))
    if (states.every(s => s.includes('cluster_state:ok')) && synced.every(s => s.includes('role:master') || s.includes('master_link_status:up'))) break
    if (Date.now() > end) throw new Error('the cluster did not reach cluster_state:ok in 20 s')
    await sleep(100)
  }
  return {
    nodes,
    /** Each node as CLUSTER NODES (asked of `port`) says: `{ id, port, primary (its own id or its primary's), replica, failed, slots: [[from, to]] }`. */
    async layout(port = nodes[0].port) {
      const text = String(await raw(port, 'CLUSTER', 'NODES'))
      return text
        .trim()
        .split('\n')
        .map(line => {
          const [id, address, flags, primary, , , , , ...slots] = line.trim().split(' ')
          const replica = flags.split(',').includes('slave')
          return {
            id,
            port: Number(/:(\d+)@/.exec(address)[1]),
            primary: replica ? primary : id,
            replica,
            failed: /fail/.test(flags),
            slots: slots.filter(s => !s.startsWith('[')).map(s => s.split('-').map(Number)).map(([a, b]) => [a, b ?? a]),
          }
        })
    },
    /** A Cluster client: ioredis's `Cluster` (made with `options`), or node-redis's `createCluster` (with `options` added; `connect` as nodeRedisConnected takes it). */
    async client(kind = 'ioredis', { options = {}, connect } = {}) {
      if (kind === 'node-redis') {
        const { createCluster } = await import('redis')
        return nodeRedisConnected(t, createCluster({ rootNodes: nodes.map(n => ({ url: n.url })), ...options }), connect)
      }
      const { Cluster } = await import('ioredis')
      const client = new Cluster(
        nodes.map(n => ({ host: '127.0.0.1', port: n.port })),
        options,
      )
      client.on('error', () => {})
      later(t, () => disconnectCluster(client))
      return client
    },
  }
}

/**
 * Disconnects an ioredis Cluster client for good: ioredis 5 schedules the next slots refresh when
 * the one under way ends, disconnected or not, and one every slotsRefreshInterval (5 s by default)
 * after that, for good; that timer goes too, once the refresh under way ended (as holdfast does for
 * its subscriber). Without it, a test file whose client was disconnected during a refresh would never end.
 */
export function disconnectCluster(client) {
  client.disconnect()
  if (client.isRefreshing === true) client.refreshSlotsCache(() => client.clearNodesRefreshInterval())
}

/**
 * The listeners on an application's client (by event name) before and after three stores were opened
 * on it, used and closed (after one first, which may leave what the client keeps once): equal when a
 * closed store leaves nothing of its own on the client.
 */
export async function listenersAroundStores(openRedisStore, client) {
  const listeners = () => Object.fromEntries(client.eventNames().map(name => [String(name), client.listenerCount(name)]))
  await (await openRedisStore({ redis: client })).close()
  const before = listeners()
  for (let i = 0; i < 3; i++) {
    const store = await openRedisStore({ redis: client })
    await store.lock('l').hold('k', () => {})
    await store.close()
  }
  return { before, after: listeners() }
}
