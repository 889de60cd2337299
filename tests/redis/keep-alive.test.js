// holdfast/redis: a script awaiting what only a timer settles is answered, and ends at once once it
// closed its store and quit its client, a lease it acquired and forgot included.
// Each case is a process of its own (keep-alive-child.js) on this runtime with this run's client.
// Real time, in short durations.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startRedis, CLIENT } from './helpers.js'

const here = path.dirname(fileURLToPath(import.meta.url))

/** Runs keep-alive-child.js CASE on this runtime: its exit code, its printed answers and how long it lived. */
function runChild(url, which) {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, [path.join(here, 'keep-alive-child.js'), CLIENT, url, which], { cwd: here, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', d => (stdout += d))
    child.stderr.on('data', d => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.on('error', reject)
    child.on('close', code => {
      clearTimeout(timer)
      const lines = stdout.split('\n').filter(line => line.startsWith('{'))
      const printed = Object.fromEntries(lines.map(line => JSON.parse(line)).map(({ what, value }) => [what, value]))
      resolve({ code, printed, stderr, ms: performance.now() - started })
    })
  })
}

async function answered(url, which, expected) {
  const { code, printed, stderr, ms } = await runChild(url, which)
  assert.equal(code, 0, `${which}: exit ${code} after ${Math.round(ms)} ms, printed ${JSON.stringify(printed)}: ${stderr.slice(-800)}`)
  assert.deepEqual(printed, { ...expected, end: which })
  return ms
}

test('LOCK-06 on Redis: a script awaiting a hold whose wait runs out is answered InUseError, then exits 0 once it closed its store and quit its client', { timeout: 60_000 }, async t => {
  const server = await startRedis(t)
  await answered(server.url, 'wait', { hold: { error: 'in_use' } })
})

test('LOCK-05 on Redis: a waiter without a wait limit is handed the key when the lease of a holder gone away runs out its ttl, then the script exits 0', { timeout: 60_000 }, async t => {
  const server = await startRedis(t)
  await answered(server.url, 'expiry', { hold: { ok: 'ran' } })
})

test('on Redis, a lease acquired and forgotten (ttl 30 s, renewed every 10 s) keeps nothing alive: the script ends at once when it closed its store and quit its client', { timeout: 60_000 }, async t => {
  const server = await startRedis(t)
  const ms = await answered(server.url, 'forgotten', { acquired: true })
  // Well under the ttl and its first renewal, whatever the machine's load.
  assert.ok(ms < 8_000, `lived ${Math.round(ms)} ms`)
})
