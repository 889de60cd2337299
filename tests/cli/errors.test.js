// Errors of `holdfast hold` and `inspect`: a refused token, an unreachable server, a bad duration, no
// token, usage mistakes: exit 2 with one line on stderr, and the command never runs.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { closedPort, oneLine, run, serve, tempDir } from './helpers.js'

let server
let dir
let marker
before(async () => {
  server = await serve()
  dir = tempDir()
  marker = join(dir, 'ran')
})
after(() => server.stop())

async function refused(args, pattern, options) {
  const r = await run(args, options)
  assert.equal(r.code, 2, `exit ${r.code}: ${r.stderr}`)
  assert.ok(oneLine(r.stderr), `one line on stderr: ${JSON.stringify(r.stderr)}`)
  assert.match(r.stderr, /^holdfast: /)
  assert.match(r.stderr, pattern)
  assert.ok(!existsSync(marker), 'the command did not run')
  return r
}

test('a wrong token: exit 2', async () => {
  const bad = join(dir, 'bad-token')
  writeFileSync(bad, 'not-the-token\n')
  await refused(['hold', server.url, 'jobs', 'a', '--token-file', bad, '--', 'touch', marker], /token refused/)
  await refused(['hold', server.url, 'jobs', 'a', '--', 'touch', marker], /token refused/, { env: { HOLDFAST_TOKEN: 'nope' } })
  await refused(['inspect', server.url, '--token-file', bad], /token refused/)
})

test('no token at all, or a token file that is missing: exit 2', async () => {
  await refused(['hold', server.url, 'jobs', 'a', '--', 'touch', marker], /no token.*--token-file.*HOLDFAST_TOKEN/)
  await refused(['hold', server.url, 'jobs', 'a', '--token-file', join(dir, 'missing'), '--', 'touch', marker], /cannot read the token file .*missing: no such file/)
})

test('an unreachable server: exit 2', async () => {
  const port = await closedPort()
  await refused(['hold', `ws://127.0.0.1:${port}`, 'jobs', 'a', '--token-file', server.tokenFile, '--', 'touch', marker], /cannot reach the server/)
  await refused(['inspect', `ws://127.0.0.1:${port}`, '--token-file', server.tokenFile], /cannot reach the server/)
  await refused(['hold', `ws+unix://${join(dir, 'no.sock')}`, 'jobs', 'a', '--token-file', server.tokenFile, '--', 'touch', marker], /cannot reach the server/)
})

test('a bad duration: exit 2, naming the option and the value', async () => {
  const t = server.tokenFile
  await refused(['hold', server.url, 'jobs', 'a', '--wait', '10', '--token-file', t, '--', 'touch', marker], /--wait "10" must be a duration/)
  await refused(['hold', server.url, 'jobs', 'a', '--ttl', '1.5s', '--token-file', t, '--', 'touch', marker], /--ttl "1.5s"/)
  await refused(['hold', server.url, 'jobs', 'a', '--max-hold', 'soon', '--token-file', t, '--', 'touch', marker], /--max-hold "soon"/)
  // #13: a negative value is a value, refused as such (not "needs a value").
  await refused(['hold', server.url, 'jobs', 'a', '--grace', '-1s', '--token-file', t, '--', 'touch', marker], /--grace "-1s" must be a duration/)
  await refused(['hold', server.url, 'jobs', 'a', '--wait', '-1', '--token-file', t, '--', 'touch', marker], /--wait "-1" must be a duration/)
  await refused(['hold', server.url, 'jobs', 'a', '--wait', '--ttl', '5s', '--token-file', t, '--', 'touch', marker], /--wait needs a value/)
  // Well-formed but out of range: the server's check.
  await refused(['hold', server.url, 'jobs', 'a', '--ttl', '500ms', '--token-file', t, '--', 'touch', marker], /ttl/)
})

test('a bad duration is a usage error as any other: exit 2, one line starting with its command, naming the option and the value', async () => {
  const t = server.tokenFile
  // Before: "holdfast: --ttl \"5x\" must be ..." where every other usage error says its command
  // first ("holdfast: hold: --wait needs a value", "holdfast: claim: N \"-1\" ...").
  await refused(['hold', server.url, 'jobs', 'a', '--ttl', '5x', '--token-file', t, '--', 'touch', marker], /^holdfast: hold: --ttl "5x" must be a duration/)
  await refused(['hold', server.url, 'jobs', 'a', '--ttl', '2h', '--token-file', t, '--', 'touch', marker], /^holdfast: hold: --ttl "2h" must be 1s to 1h/)
  await refused(['claim', server.url, 'seats', '1', '--wait', '5x', '--token-file', t], /^holdfast: claim: --wait "5x" must be a duration/)
  await refused(['claim', server.url, 'seats', '1', '--ttl', '31d', '--token-file', t], /^holdfast: claim: --ttl "31d" must be more than 0/)
})

test('a duration out of range: exit 2, naming the option and the value as given, never in ms', async () => {
  const t = server.tokenFile
  const asGiven = async (args, pattern) => {
    const r = await refused(args, pattern)
    // Before the fix: "ttl 2678400000ms must be ..." (the value converted), not the value typed.
    assert.doesNotMatch(r.stderr.replace(/"[^"]*"/g, ''), /\d+ms/, r.stderr)
  }
  await asGiven(['claim', server.url, 'seats', '1', '--capacity', '3', '--ttl', '31d', '--token-file', t], /--ttl "31d" must be more than 0 and at most 30d/)
  await asGiven(['hold', server.url, 'jobs', 'a', '--ttl', '2h', '--token-file', t, '--', 'touch', marker], /--ttl "2h" must be 1s to 1h/)
  await asGiven(['hold', server.url, 'jobs', 'a', '--ttl', '500ms', '--token-file', t, '--', 'touch', marker], /--ttl "500ms" must be 1s to 1h/)
  await asGiven(['hold', server.url, 'jobs', 'a', '--max-hold', '31d', '--token-file', t, '--', 'touch', marker], /--max-hold "31d" must be more than 0 and at most 30d/)
  // A bare 0 too (before: the API's "lock ttl 0ms must be ...", "claim ttl 0ms ...").
  await asGiven(['hold', server.url, 'jobs', 'a', '--ttl', '0', '--token-file', t, '--', 'touch', marker], /--ttl "0" must be 1s to 1h/)
  await asGiven(['hold', server.url, 'jobs', 'a', '--max-hold', '0', '--token-file', t, '--', 'touch', marker], /--max-hold "0" must be more than 0 and at most 30d/)
  await asGiven(['claim', server.url, 'seats', '1', '--capacity', '3', '--ttl', '0', '--token-file', t], /--ttl "0" must be more than 0 and at most 30d/)
  await asGiven(['hold', server.url, 'jobs', 'a', '--ttl', '0s', '--token-file', t, '--', 'touch', marker], /--ttl "0s" must be 1s to 1h/)
})

test('a bad URL or lock name: exit 2', async () => {
  const t = server.tokenFile
  await refused(['hold', 'http://127.0.0.1:1', 'jobs', 'a', '--token-file', t, '--', 'touch', marker], /ws:\/\//)
  await refused(['hold', server.url, 'Bad Name', 'a', '--token-file', t, '--', 'touch', marker], /name "Bad Name"/)
})

test('usage mistakes: exit 2 with one line', async () => {
  const t = server.tokenFile
  await refused(['hold', server.url, 'jobs', 'a', '--token-file', t, 'touch', marker], /put the command after --/)
  await refused(['hold', server.url, 'jobs', 'a', '--token-file', t, '--'], /no command/)
  await refused(['hold', server.url, 'jobs', '--token-file', t, '--', 'touch', marker], /give URL LOCK KEY/)
  await refused(['hold', server.url, 'jobs', 'a', '--wiat', '1s', '--token-file', t, '--', 'touch', marker], /unknown option --wiat/)
  await refused(['hold', server.url, 'jobs', 'a', '--wait', '1s', '--wait', '2s', '--token-file', t, '--', 'touch', marker], /--wait given twice/)
  await refused(['hold', server.url, 'jobs', 'a', '--token-file', '--', 'touch', marker], /--token-file needs a value/)
  await refused(['serve', '--port', '99999'], /--port "99999"/)
  await refused(['serve', '--port', '1', '--socket', join(dir, 's.sock')], /not both/)
  await refused(['inspect'], /give the server's URL/)
  await refused(['frobnicate'], /unknown command "frobnicate"/)
})

test('a negative number where a positional goes is that positional, not an unknown option: a key -5 is held; a claim of -1 units is refused naming N', async () => {
  const t = server.tokenFile
  // Before the fix: "hold: unknown option -5" and "claim: unknown option -1". Keys may be negative
  // whole numbers (-5 and '-5' are one key).
  const held = await run(['hold', server.url, 'jobs', '-5', '--token-file', t, '--', 'sh', '-c', 'echo $HOLDFAST_FENCE'])
  assert.equal(held.code, 0, held.stderr)
  assert.match(held.stdout, /^\d+\n$/)
  await refused(['claim', server.url, 'seats', '-1', '--capacity', '3', '--token-file', t], /claim: N "-1" must be a whole number from 1/)
})

test('--token-file with a Redis URL (which takes no token; its password goes in the URL) is refused naming both, not read and passed over: exit 2, before any connection', async () => {
  // It was taken and never read: a user who put a Redis password in it was answered NOAUTH, or held
  // keys of a Redis other than the one the file was meant for, with no word that it went unheard.
  const port = await closedPort() // refused before it is dialled: nothing is reached for
  for (const url of [`redis://127.0.0.1:${port}`, `rediss://127.0.0.1:${port}`]) {
    await refused(['hold', url, 'jobs', 'a', '--token-file', server.tokenFile, '--', 'touch', marker], /hold: --token-file does not apply to a Redis URL.*redis:\/\/:PASSWORD@HOST:PORT/)
    await refused(['claim', url, 'seats', '1', '--token-file', server.tokenFile], /claim: --token-file does not apply to a Redis URL/)
    await refused(['inspect', url, '--token-file', server.tokenFile], /inspect: --token-file does not apply to a Redis URL/)
  }
})

test('a Redis URL where neither ioredis nor redis is installed (this project has neither) is refused in the command line\'s words, naming what to install: exit 2, one line', async () => {
  // It said "openRedisStore: option url needs a Redis client: …or pass your own as option redis": an
  // API's function and option, which a command line has neither of.
  const port = await closedPort()
  const url = `redis://user:secret@127.0.0.1:${port}`
  for (const args of [['hold', url, 'jobs', 'a', '--', 'touch', marker], ['claim', url, 'seats', '1'], ['inspect', url], ['release', url, 'seats', 'x'], ['confirm', url, 'seats', 'x']]) {
    const r = await refused(args, new RegExp(`^holdfast: ${args[0]}: redis://user:\\*+@127\\.0\\.0\\.1:${port}: a Redis URL needs a Redis client installed beside holdfast: npm install ioredis \\(or redis\\)\\n$`))
    assert.doesNotMatch(r.stderr, /option redis|secret/)
  }
})
