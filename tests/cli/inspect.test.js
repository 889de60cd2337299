// `holdfast inspect`: a table of the busy keys (kind, name, key, holders with fence and age, waiters),
// or JSON.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { connect } from 'holdfast'
import { fileAppears, run, serve, start, tempDir } from './helpers.js'

test('inspect shows a held key with its fence and age, as a table and as JSON', async t => {
  const server = await serve()
  t.after(() => server.stop())
  const empty = await run(['inspect', server.url, '--token-file', server.tokenFile])
  assert.equal(empty.code, 0, empty.stderr)
  assert.equal(empty.stdout, 'no busy keys\n')

  const dir = tempDir()
  const holder = start(['hold', server.url, 'backups', 'db 1', '--token-file', server.tokenFile, '--', 'sh', '-c', `echo $HOLDFAST_FENCE > ${dir}/held; exec sleep 30`])
  t.after(() => holder.child.kill('SIGTERM'))
  await fileAppears(join(dir, 'held'))
  const fence = Number(readFileSync(join(dir, 'held'), 'utf8'))

  const r = await run(['inspect', server.url, '--token-file', server.tokenFile])
  assert.equal(r.code, 0, r.stderr)
  const [header, row, ...rest] = r.stdout.trimEnd().split('\n')
  assert.match(header, /^KIND\s+NAME\s+KEY\s+HOLDERS\s+WAITING$/)
  assert.match(row, new RegExp(`^lock\\s+backups\\s+"db 1"\\s+fence ${fence} \\(\\d+(ms|\\.\\ds|s)\\)\\s+0$`))
  assert.deepEqual(rest, [])

  const json = await run(['inspect', server.url, '--json'], { env: { HOLDFAST_TOKEN: server.token() } })
  assert.equal(json.code, 0, json.stderr)
  const entries = JSON.parse(json.stdout)
  assert.equal(entries.length, 1)
  assert.equal(entries[0].kind, 'lock')
  assert.equal(entries[0].name, 'backups')
  assert.equal(entries[0].key, 'db 1')
  assert.equal(entries[0].waiting, 0)
  assert.equal(entries[0].holders[0].fence, fence)
  assert.equal(typeof entries[0].holders[0].heldMs, 'number')
})

test('#13 inspect escapes C1 controls and bidi overrides in keys, in the table and in --json', async t => {
  const server = await serve()
  t.after(() => server.stop())
  const dir = tempDir()
  // U+009B is a one-character CSI that some terminals obey; U+202E reverses the text after it;
  // U+2066 isolates; U+0085 is a C1 newline.
  const key = 'a\u009b31mred\u202eevil\u2066x\u0085y\u001bz'
  const holder = start(['hold', server.url, 'backups', key, '--token-file', server.tokenFile, '--', 'sh', '-c', `touch ${dir}/held; exec sleep 30`])
  t.after(() => holder.child.kill('SIGTERM'))
  await fileAppears(join(dir, 'held'))
  const raw = /[\u0080-\u009f\u202a-\u202e\u2066-\u2069\u001b]/

  const table = await run(['inspect', server.url, '--token-file', server.tokenFile])
  assert.equal(table.code, 0, table.stderr)
  assert.doesNotMatch(table.stdout, raw, 'no control or bidi character printed raw')
  assert.match(table.stdout, /"a\\u009b31mred\\u202eevil\\u2066x\\u0085y\\u001bz"/)

  const json = await run(['inspect', server.url, '--json', '--token-file', server.tokenFile])
  assert.equal(json.code, 0, json.stderr)
  assert.doesNotMatch(json.stdout, raw, 'no control or bidi character printed raw')
  assert.equal(JSON.parse(json.stdout)[0].key, key, 'the JSON still means the same key')
})

test('#13 item 6: inspect lists every key of an inspection larger than a frame (17,000 busy keys of 1 KiB), page by page', async t => {
  const server = await serve()
  t.after(() => server.stop())
  // Two connections (10,000 holds each at most) hold 17,000 keys of 1 KiB: 17 MiB to list.
  const holders = await Promise.all([0, 1].map(() => connect(server.url, { token: server.token() })))
  t.after(() => Promise.all(holders.map(h => h.close())))
  const keyOf = i => `${i}-`.padEnd(1024, 'k')
  await Promise.all(Array.from({ length: 17_000 }, (_, i) => holders[i % 2].lock('big', { ttl: '1h' }).acquire(keyOf(i))))
  const r = await run(['inspect', server.url, '--json', '--token-file', server.tokenFile])
  assert.equal(r.code, 0, r.stderr)
  const entries = JSON.parse(r.stdout)
  assert.equal(entries.length, 17_000)
  assert.equal(new Set(entries.map(e => e.key)).size, 17_000, 'each key once')
  assert.ok(entries.every(e => e.name === 'big' && e.key.length === 1024 && e.holders.length === 1))
})

test('revision 8: inspect lists every pool of an inspection larger than a frame (50,000 pools of 64-character names, 4.3 MiB), page by page, in order of name', async t => {
  const server = await serve()
  t.after(() => server.stop())
  const client = await connect(server.url, { token: server.token() })
  t.after(() => client.close())
  const nameOf = i => `${i}-`.padEnd(64, 'p')
  // Made in turns of 5,000: the frames of one turn go in batches, their pools in one write.
  for (let from = 0; from < 50_000; from += 5_000) {
    await Promise.all(Array.from({ length: 5_000 }, (_, i) => client.pool(nameOf(from + i), { capacity: 2 }).remaining()))
  }
  const r = await run(['inspect', server.url, '--json', '--token-file', server.tokenFile])
  assert.equal(r.code, 0, r.stderr)
  const pools = JSON.parse(r.stdout).filter(e => e.kind === 'pool')
  assert.equal(pools.length, 50_000)
  assert.deepEqual(
    pools.map(p => p.name),
    Array.from({ length: 50_000 }, (_, i) => nameOf(i)).sort(),
    'each pool once, in order of name',
  )
})
