// The CLI with a Redis URL: `holdfast hold redis://… LOCK KEY -- COMMAND` and `holdfast inspect
// redis://…` — a cron job on every machine needs no holdfast server, only the Redis it already has.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import path from 'node:path'
import { startRedis, startAgent, freePort, RUNTIMES } from './helpers.js'

const bin = path.join(process.cwd(), 'node_modules', '.bin', 'holdfast')

function cli(args) {
  return new Promise(resolve => {
    const child = spawn(RUNTIMES.node20, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', d => (stdout += d))
    child.stderr.on('data', d => (stderr += d))
    child.on('exit', code => resolve({ code, stdout, stderr }))
  })
}

test('#15 CLI: hold redis://… runs the command with HOLDFAST_FENCE and lets the key go; --wait 0 on a held key exits 1; inspect lists it', async t => {
  const server = await startRedis(t)
  const first = await cli(['hold', server.url, 'cron', 'nightly', '--wait', '0', '--', 'sh', '-c', 'echo "fence=$HOLDFAST_FENCE"'])
  assert.equal(first.code, 0, first.stderr)
  const fence = Number(/fence=(\d+)/.exec(first.stdout)?.[1])
  assert.ok(Number.isSafeInteger(fence) && fence > 0)
  assert.equal((await cli(['inspect', server.url])).stdout, 'no busy keys\n', 'the key was let go')

  const agent = await startAgent(t, 'holder', RUNTIMES.node20, server.url)
  agent.send({ op: 'hold', id: 'h', lock: 'cron', key: 'nightly' })
  const held = await agent.next({ ev: 'granted', id: 'h' })
  assert.ok(held.fence > fence)
  const busy = await cli(['hold', server.url, 'cron', 'nightly', '--wait', '0', '--', 'sh', '-c', 'echo ran'])
  assert.equal(busy.code, 1)
  assert.equal(busy.stdout, '', 'the command did not run')
  assert.match(busy.stderr, /held by another/)
  const table = await cli(['inspect', server.url])
  assert.equal(table.code, 0, table.stderr)
  assert.match(table.stdout, new RegExp(`^lock +cron +nightly +fence ${held.fence} \\(`, 'm'))
  const json = JSON.parse((await cli(['inspect', server.url, '--json'])).stdout)
  assert.deepEqual(json.map(e => [e.kind, e.name, e.key, e.holders[0].fence, e.waiting]), [['lock', 'cron', 'nightly', held.fence, 0]])
})

test('#15 CLI: a Redis that cannot be reached exits 2 with one line', async t => {
  const port = await freePort()
  const r = await cli(['hold', `redis://127.0.0.1:${port}`, 'cron', 'x', '--wait', '0', '--', 'true'])
  assert.equal(r.code, 2)
  assert.match(r.stderr, /cannot reach redis:\/\/127\.0\.0\.1/)
  assert.equal(r.stderr.trim().split('\n').length, 1)
})

test('CLI: a Redis URL\'s password is never printed: an unreachable redis://:PASSWORD@HOST exits 2 with one line that masks it', async t => {
  const port = await freePort()
  for (const command of [['hold', `redis://:s3cret-pw@127.0.0.1:${port}`, 'cron', 'x', '--', 'true'], ['inspect', `redis://user:s3cret-pw@127.0.0.1:${port}`]]) {
    const r = await cli(command)
    assert.equal(r.code, 2)
    // Before the fix: "cannot reach redis://:s3cret-pw@127.0.0.1:…", the password in cron's mail and the logs.
    assert.doesNotMatch(r.stderr, /s3cret-pw/)
    assert.match(r.stderr, /cannot reach redis:\/\/(user)?:\*\*\*@127\.0\.0\.1/)
    assert.equal(r.stderr.trim().split('\n').length, 1)
  }
})

test('#16 CLI: claim redis://… POOL N claims units of a pool kept in Redis (exit 0), an id asked again answers its first claim, not enough left exits 1; inspect lists the pool', async t => {
  const server = await startRedis(t)
  const first = await cli(['claim', server.url, 'seats', '2', '--capacity', '3', '--id', 'order-1'])
  assert.equal(first.code, 0, first.stderr)
  assert.equal(first.stdout, 'claimed "order-1": 2 units, 1 left\n')
  assert.equal((await cli(['claim', server.url, 'seats', '2', '--id', 'order-1'])).stdout, 'claimed "order-1": 2 units, 1 left\n', 'the first outcome')
  const refused = await cli(['claim', server.url, 'seats', '2'])
  assert.equal(refused.code, 1)
  assert.equal(refused.stdout, 'not claimed: 1 left\n')
  const json = JSON.parse((await cli(['inspect', server.url, '--json'])).stdout)
  assert.deepEqual(json, [{ kind: 'pool', name: 'seats', capacity: 3, remaining: 1, claims: 1, waiting: 0 }])
  const none = await cli(['claim', server.url, 'nothing', '1'])
  assert.equal(none.code, 2)
  assert.match(none.stderr, /no such pool/)
})

test('CLI: release and confirm redis://… POOL ID settle a claim kept in Redis by its id: released once (exit 0, then 1), a --ttl claim confirmed', async t => {
  const server = await startRedis(t)
  assert.equal((await cli(['claim', server.url, 'seats', '2', '--capacity', '3', '--id', 'order-1'])).code, 0)
  const released = await cli(['release', server.url, 'seats', 'order-1'])
  assert.equal(released.code, 0, released.stderr)
  assert.equal(released.stdout, 'released "order-1"\n')
  const again = await cli(['release', server.url, 'seats', 'order-1'])
  assert.equal(again.code, 1, again.stderr)
  assert.equal(again.stdout, 'not released: "order-1" holds no units\n')
  assert.equal((await cli(['claim', server.url, 'seats', '1', '--id', 'held', '--ttl', '1m'])).code, 0)
  const confirmed = await cli(['confirm', server.url, 'seats', 'held', '--json'])
  assert.equal(confirmed.code, 0, confirmed.stderr)
  assert.deepEqual(JSON.parse(confirmed.stdout), { confirmed: true })
  const json = JSON.parse((await cli(['inspect', server.url, '--json'])).stdout)
  assert.deepEqual(json, [{ kind: 'pool', name: 'seats', capacity: 3, remaining: 2, claims: 1, waiting: 0 }])
})
