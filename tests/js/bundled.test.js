// An app bundled with holdfast in it (esbuild, `bun build`, `bun build --compile`), as apps are for a
// serverless function, a container or one executable, runs away from node_modules: the engine's wasm,
// which the Node and Bun entries read from the package's file, is not beside the bundle. That open
// failed with a bare ENOENT naming a path next to the bundle (or ERR_INVALID_URL, bundled as
// CommonJS). The entry now falls back on the wasm's bytes as a module, which bundlers take in.
//
// Each bundle is written to a fresh directory outside the project and run by the runtime that runs
// this file. The bundlers are tests/runtimes' (HOLDFAST_TOOLS, set by run.sh).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { openStore, memoryStorage } from 'holdfast'

const tools = process.env.HOLDFAST_TOOLS
const TOKEN = 'bundled-token-0123456789'
const isBun = typeof Bun !== 'undefined'

/** An app that opens a store, serves it, connects to it and holds one key three times over the connection. */
const SERVED = `
import { openStore, memoryStorage, connect } from 'holdfast'
async function main() {
  const store = await openStore({ storage: memoryStorage() })
  const local = []
  for (let i = 0; i < 2; i++) await store.lock('jobs').hold('k', lease => { local.push(lease.fence) })
  const server = await store.serve({ port: 0, token: '${TOKEN}' })
  const client = await connect(server.url, { token: '${TOKEN}' })
  const remote = []
  for (let i = 0; i < 2; i++) await client.lock('jobs').hold('k', lease => { remote.push(lease.fence) })
  await client.close()
  await server.close()
  await store.close()
  console.log(JSON.stringify({ local, remote }))
}
main().catch(e => { console.log('failed', e && e.code, e && e.message); process.exit(1) })
`

/** An app whose first call into holdfast is connect(), to the server at process.argv[2]. */
const CONNECTED = `
import { connect } from 'holdfast'
async function main() {
  const client = await connect(process.argv[2], { token: '${TOKEN}' })
  const fences = []
  for (let i = 0; i < 2; i++) await client.lock('jobs').hold('k', lease => { fences.push(lease.fence) })
  await client.close()
  console.log(JSON.stringify(fences))
}
main().catch(e => { console.log('failed', e && e.code, e && e.message); process.exit(1) })
`

/** Bundles `source` (written into this project, where `holdfast` resolves) into a fresh directory; answers the bundle's path. */
function bundle(name, source, bundler) {
  assert.ok(tools, 'HOLDFAST_TOOLS names the directory of the bundlers (tests/runtimes/node_modules/.bin): run by tests/js/run.sh')
  const entry = join(process.cwd(), `bundled-${name}.mjs`)
  writeFileSync(entry, source)
  const out = mkdtempSync(join(tmpdir(), 'holdfast-bundle-'))
  const file = join(out, bundler === 'esbuild-cjs' ? 'app.cjs' : 'app.mjs')
  if (bundler === 'bun-compile') {
    const exe = join(out, 'app')
    execFileSync(join(tools, 'bun'), ['build', entry, '--compile', `--outfile=${exe}`], { stdio: 'pipe' })
    return exe
  }
  if (bundler === 'bun') {
    execFileSync(join(tools, 'bun'), ['build', entry, `--target=${isBun ? 'bun' : 'node'}`, `--outfile=${file}`], { stdio: 'pipe' })
  } else {
    const format = bundler === 'esbuild-cjs' ? 'cjs' : 'esm'
    execFileSync(join(tools, 'esbuild'), [entry, '--bundle', '--platform=node', `--format=${format}`, `--outfile=${file}`, '--log-level=error'], { stdio: 'pipe' })
  }
  assert.deepEqual(readdirSync(out), [file.slice(out.length + 1)], 'the bundle is one file, with no wasm beside it')
  return file
}

/** Runs a bundle (an executable, or a script under this runtime), then removes it; answers what it printed. */
function runBundle(file) {
  try {
    return execFileSync(file.endsWith('js') ? process.execPath : file, file.endsWith('js') ? [file] : [], { encoding: 'utf8', timeout: 60_000, cwd: tmpdir() })
  } finally {
    rmSync(dirname(file), { recursive: true, force: true })
  }
}

const fresh = fences => fences.length === 2 && fences[0] >= 1 && fences[1] > fences[0]

// esbuild's ESM output cannot require Node's own modules from a CommonJS package (`ws`, which
// serve() and Node's connect() use: "Dynamic require of "events" is not supported", esbuild's
// known limit, met by any app with a CommonJS dependency), so its ESM bundle opens a store only.
test('bundled by esbuild as ESM: openStore() takes the engine from the bundle; fences grow', () => {
  const file = bundle('esm', `
import { openStore, memoryStorage } from 'holdfast'
const store = await openStore({ storage: memoryStorage() })
const fences = []
for (let i = 0; i < 2; i++) await store.lock('jobs').hold('k', lease => { fences.push(lease.fence) })
await store.close()
console.log(JSON.stringify(fences))
`, 'esbuild-esm')
  const fences = JSON.parse(runBundle(file))
  assert.ok(fresh(fences), `fences ${fences}`)
})

for (const bundler of ['esbuild-cjs', 'bun', ...(isBun ? ['bun-compile'] : [])]) {
  test(`bundled by ${bundler}: openStore(), serve() and connect() run from the bundle; fences grow`, () => {
    const out = JSON.parse(runBundle(bundle(bundler, SERVED, bundler)))
    assert.ok(fresh(out.local), `local fences ${out.local}`)
    assert.ok(fresh(out.remote) && out.remote[0] > out.local[1], `remote fences ${out.remote} after ${out.local}`)
  })
}

test('bundled: an app whose first call is connect() takes the engine from the bundle', async () => {
  const store = await openStore({ storage: memoryStorage() })
  const server = await store.serve({ port: 0, token: TOKEN })
  try {
    const file = bundle('connected', CONNECTED, 'esbuild-cjs')
    // execFileSync would block this process, whose server the bundle talks to: run it asynchronously.
    const printed = await new Promise((resolve, reject) =>
      execFile(process.execPath, [file, server.url], { encoding: 'utf8', timeout: 60_000, cwd: tmpdir() }, (error, stdout) => (error ? reject(new Error(`${error.message}\n${stdout}`)) : resolve(stdout))),
    ).finally(() => rmSync(dirname(file), { recursive: true, force: true }))
    const fences = JSON.parse(printed)
    assert.ok(fresh(fences), `fences ${fences}`)
  } finally {
    await server.close()
    await store.close()
  }
})
