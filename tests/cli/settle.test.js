// `holdfast release URL POOL ID` and `holdfast confirm URL POOL ID`: a claim made by `holdfast claim`
// settled by its id from a script (before them, a claim's units could be given back, or a --ttl
// claim kept, only through the API). Exit 0 done, 1 the claim held no units, 2 any other error.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { run, serve } from './helpers.js'

test('POOL-01: release hands a claim\'s units back once (exit 0, then 1), by the id given to claim or the one it drew', async t => {
  const server = await serve()
  t.after(() => server.stop())
  const cli = (...args) => run([...args, '--token-file', server.tokenFile])
  assert.equal((await cli('claim', server.url, 'seats', '2', '--id', 'order-1', '--capacity', '3')).code, 0)
  assert.equal((await cli('claim', server.url, 'seats', '2')).code, 1, 'one left')
  const released = await cli('release', server.url, 'seats', 'order-1')
  assert.equal(released.code, 0, released.stderr)
  assert.equal(released.stdout, 'released "order-1"\n')
  const again = await cli('release', server.url, 'seats', 'order-1')
  assert.equal(again.code, 1, again.stderr)
  assert.equal(again.stdout, 'not released: "order-1" holds no units\n')
  // The units are back: three left.
  const drawn = await cli('claim', server.url, 'seats', '3', '--json')
  assert.equal(drawn.code, 0, drawn.stderr)
  const { claim } = JSON.parse(drawn.stdout)
  const json = await cli('release', server.url, 'seats', claim.id, '--json')
  assert.equal(json.code, 0, json.stderr)
  assert.deepEqual(JSON.parse(json.stdout), { released: true })
  const never = await cli('release', server.url, 'seats', 'never-claimed', '--json')
  assert.equal(never.code, 1)
  assert.deepEqual(JSON.parse(never.stdout), { released: false })
  assert.equal((await cli('claim', server.url, 'seats', '3')).code, 0, 'every unit came back')
})

test('POOL-01: confirm keeps a --ttl claim\'s units past its ttl (exit 0); a claim whose ttl ran out is not confirmed (exit 1)', async t => {
  const server = await serve()
  t.after(() => server.stop())
  const cli = (...args) => run([...args, '--token-file', server.tokenFile])
  assert.equal((await cli('claim', server.url, 'seats', '1', '--id', 'kept', '--ttl', '1s', '--capacity', '2')).code, 0)
  assert.equal((await cli('claim', server.url, 'seats', '1', '--id', 'lapsed', '--ttl', '1s')).code, 0)
  const confirmed = await cli('confirm', server.url, 'seats', 'kept')
  assert.equal(confirmed.code, 0, confirmed.stderr)
  assert.equal(confirmed.stdout, 'confirmed "kept"\n')
  // Past the ttl: the lapsed claim's unit came back, the confirmed one's did not.
  await new Promise(resolve => setTimeout(resolve, 1_500))
  const lapsed = await cli('confirm', server.url, 'seats', 'lapsed')
  assert.equal(lapsed.code, 1, lapsed.stderr)
  assert.match(lapsed.stdout, /^not confirmed: .*lapsed.*\n$/)
  const json = await cli('confirm', server.url, 'seats', 'lapsed', '--json')
  assert.equal(json.code, 1)
  assert.deepEqual(JSON.parse(json.stdout), { confirmed: false })
  assert.equal((await cli('claim', server.url, 'seats', '2')).code, 1, 'the confirmed unit is still claimed')
  assert.equal((await cli('claim', server.url, 'seats', '1')).code, 0, 'the lapsed one came back')
})

test('release and confirm: usage mistakes and a pool that does not exist exit 2 with one line', async t => {
  const server = await serve()
  t.after(() => server.stop())
  for (const command of ['release', 'confirm']) {
    const missing = await run([command, server.url, 'seats', '--token-file', server.tokenFile])
    assert.equal(missing.code, 2)
    assert.equal(missing.stderr, `holdfast: ${command}: give URL POOL ID, as in holdfast ${command} ws://127.0.0.1:7420 seats order-1 (see holdfast ${command} --help)\n`)
    const noPool = await run([command, server.url, 'nowhere', 'x', '--token-file', server.tokenFile])
    assert.equal(noPool.code, 2)
    assert.match(noPool.stderr, /^holdfast: pool nowhere: no such pool.*\n$/)
    const help = await run([command, '--help'])
    assert.equal(help.code, 0)
    assert.match(help.stdout, new RegExp(`^Usage: holdfast ${command} URL POOL ID`))
  }
})

test('inspect, release and confirm of a server that takes the connection and never answers (SIGSTOP) exit 2 within about 10s, naming the server, rather than waiting on', async t => {
  const server = await serve()
  t.after(async () => {
    server.proc.child.kill('SIGCONT')
    await server.stop()
  })
  server.proc.child.kill('SIGSTOP')
  const cli = (...args) => run([...args, '--token-file', server.tokenFile])
  const answers = await Promise.all([cli('inspect', server.url), cli('release', server.url, 'seats', 'order-1'), cli('confirm', server.url, 'seats', 'order-1')])
  const url = server.url.replace(/[.]/g, '\\.')
  for (const [command, answer] of [['inspect', answers[0]], ['release', answers[1]], ['confirm', answers[2]]]) {
    assert.equal(answer.code, 2, `${command}: ${answer.stdout}${answer.stderr}`)
    assert.equal(answer.stdout, '')
    // Which of two 10 s timers speaks first: the transport's, for the WebSocket upgrade the stopped
    // process never answers, or the command's own, for the answer to its question.
    assert.match(
      answer.stderr,
      new RegExp(`^holdfast: (connect ${url}: no answer to the WebSocket upgrade within 10000ms|${command}: ${url}: no answer from the server within 10s)\\n$`),
    )
  }
})
