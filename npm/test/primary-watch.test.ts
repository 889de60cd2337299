// PrimaryWatch (redis/adapter.ts): node-redis's Sentinel client found on a node the sentinels no
// longer name the primary, by their hellos heard on its own pub/sub connection.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { PrimaryWatch } from '../src/redis/adapter.js'

type Fn = (...args: never[]) => void

/** A Sentinel client as the watch sees it, on the node `laddr` (CLIENT INFO refused when undefined). */
function sentinelClient(laddr: string | undefined) {
  const events = new Map<string, Set<Fn>>()
  const hello = new Set<(text: string) => void>()
  const c = {
    isOpen: true,
    async sendCommand(_readonly: boolean | undefined, args: string[]) {
      if (args.join(' ') !== 'CLIENT INFO') return 'OK'
      if (laddr === undefined) throw new Error("NOPERM this user has no permissions to run the 'client|info' command")
      return `id=3 addr=127.0.0.1:50000 laddr=${laddr} fd=8 name= age=0`
    },
    async acquire() {},
    async subscribe(channel: string, listener: (text: string) => void) {
      assert.equal(channel, '__sentinel__:hello')
      hello.add(listener)
    },
    async unsubscribe(_channel: string, listener: (text: string) => void) {
      hello.delete(listener)
    },
    on(event: string, fn: Fn) {
      events.set(event, (events.get(event) ?? new Set()).add(fn))
    },
    off(event: string, fn: Fn) {
      events.get(event)?.delete(fn)
    },
  }
  return {
    c,
    hello: (primary: string, epoch: number, name = 'mymaster') => {
      const [ip, port] = [primary.slice(0, primary.lastIndexOf(':')), primary.slice(primary.lastIndexOf(':') + 1)]
      for (const l of hello) l(`127.0.0.1,26379,abc,${epoch},${name},${ip},${port},${epoch}`)
    },
    moved: (host: string, port: number) => {
      for (const fn of events.get('topology-change') ?? []) (fn as (e: unknown) => void)({ type: 'MASTER_CHANGE', node: { host, port } })
    },
    listeners: () => hello.size + (events.get('topology-change')?.size ?? 0),
  }
}

test('LOCK-01 PrimaryWatch: a hello of a later epoch naming another node makes the client stale (found once; answers and errors refused, naming both nodes) until it moves there', async () => {
  const { c, hello, moved } = sentinelClient('10.0.0.1:6379')
  const watch = new PrimaryWatch(c as never)
  let found = 0
  watch.onStale(() => found++)
  await watch.start()
  hello('10.0.0.1:6379', 0)
  assert.equal(watch.stale(), false)
  assert.equal(await watch.checked(Promise.resolve('g')), 'g')
  hello('10.0.0.2:6379', 1)
  hello('10.0.0.2:6379', 1)
  hello('10.0.0.1:6379', 0) // a sentinel that has not heard yet: not believed
  assert.equal(watch.stale(), true)
  assert.equal(found, 1)
  await assert.rejects(
    watch.checked(Promise.resolve('g')),
    /answered by 10\.0\.0\.1:6379, which the sentinels no longer name the primary of mymaster \(now 10\.0\.0\.2:6379\)/,
  )
  await assert.rejects(watch.checked(Promise.reject(new Error('READONLY'))), /no longer name the primary/)
  moved('10.0.0.2', 6379)
  assert.equal(watch.stale(), false)
  assert.equal(await watch.checked(Promise.resolve('g')), 'g')
  await assert.rejects(watch.checked(Promise.reject(new Error('READONLY x'))), /^Error: READONLY x$/)
})

test('PrimaryWatch: the client moving before any hello names the new primary is not stale; hellos of another name are not heard', async () => {
  const { c, hello, moved } = sentinelClient('10.0.0.1:6379')
  const watch = new PrimaryWatch(c as never)
  await watch.start()
  hello('10.0.0.1:6379', 0)
  moved('10.0.0.2', 6379)
  hello('10.0.0.1:6379', 0)
  assert.equal(watch.stale(), false)
  hello('10.0.0.3:6379', 5, 'other')
  assert.equal(watch.stale(), false)
  hello('10.0.0.2:6379', 1)
  assert.equal(watch.stale(), false)
})

test("PrimaryWatch: the first hello says where the client is, however the sentinels name nodes (hostnames, an announce-ip, a nodeAddressMap: not as the node knows itself); a later one naming the node's own address is where the client is", async () => {
  // The sentinels name the node by a hostname (announce-hostnames), the node knows itself by its IP.
  const named = sentinelClient('127.0.0.1:6379')
  const watch = new PrimaryWatch(named.c as never)
  let found = 0
  watch.onStale(() => found++)
  await watch.start()
  named.hello('redis-1:6379', 3)
  assert.equal(watch.stale(), false)
  assert.equal(await watch.checked(Promise.resolve('g')), 'g')
  named.hello('redis-2:6379', 4)
  assert.equal(watch.stale(), true)
  assert.equal(found, 1)
  // The first hello heard came from a sentinel behind an earlier failover: a later epoch names the node the client is on (its own address),
  // which is no reason to move.
  const lagging = sentinelClient('172.17.0.3:6379')
  const late = new PrimaryWatch(lagging.c as never)
  await late.start()
  lagging.hello('172.17.0.2:6379', 1)
  assert.equal(late.stale(), false)
  lagging.hello('172.17.0.3:6379', 2)
  assert.equal(late.stale(), false)
  lagging.hello('172.17.0.2:6379', 3)
  assert.equal(late.stale(), true)
})

test('PrimaryWatch: CLIENT INFO refused, the first hello says where the client is; stop() takes its listeners off and nothing is found after', async () => {
  const { c, hello, listeners } = sentinelClient(undefined)
  const watch = new PrimaryWatch(c as never)
  let found = 0
  watch.onStale(() => found++)
  await watch.start()
  assert.equal(listeners(), 2)
  hello('10.0.0.2:6379', 1)
  assert.equal(watch.stale(), false)
  watch.stop()
  assert.equal(listeners(), 0)
  hello('10.0.0.3:6379', 2)
  assert.equal(found, 0)
})
