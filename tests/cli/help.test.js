// --help on each command, `holdfast --help`, `--version`, and no command at all.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { run } from './helpers.js'

test('holdfast --help lists the commands', async () => {
  for (const args of [['--help'], ['-h'], ['help']]) {
    const r = await run(args)
    assert.equal(r.code, 0)
    assert.match(r.stdout, /^Usage: holdfast COMMAND/)
    for (const c of ['serve', 'hold', 'claim', 'inspect']) assert.match(r.stdout, new RegExp(`^  ${c} `, 'm'))
  }
})

test('--help on each command', async () => {
  const expect = {
    serve: /^Usage: holdfast serve \[--dir DIR\] \[--host HOST\] \[--port PORT \| --socket PATH\] \[--token-file FILE\]/,
    hold: /^Usage: holdfast hold URL LOCK KEY \[OPTIONS\] -- COMMAND \[ARGS\.\.\.\]/,
    claim: /^Usage: holdfast claim URL POOL N/,
    inspect: /^Usage: holdfast inspect URL/,
  }
  for (const [command, pattern] of Object.entries(expect)) {
    for (const args of [[command, '--help'], [command, '-h'], ['help', command]]) {
      const r = await run(args)
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stdout, pattern)
    }
  }
  // --help wins over everything else on the line, and runs nothing.
  const r = await run(['hold', 'ws://x', 'l', 'k', '--help', '--', 'false'])
  assert.equal(r.code, 0)
  assert.match(r.stdout, /^Usage: holdfast hold/)
  assert.match(r.stdout, /Exit status:/)
})

test('every command\'s --help says its exit statuses, the 128+n of a signal that cancelled its wait too', async () => {
  const hold = (await run(['hold', '--help'])).stdout
  // Before: hold's list had no line for a SIGINT, SIGTERM or SIGHUP while it waited (it exits 128+n).
  assert.match(hold, /^  128\+n +SIGINT, SIGTERM, SIGHUP or SIGQUIT \(signal n\) came while it connected or waited/m)
  const inspect = (await run(['inspect', '--help'])).stdout
  // Before: inspect's --help said none.
  assert.match(inspect, /^Exit status: 0 .*; 2 any\s+other error/m)
  for (const command of ['serve', 'claim']) assert.match((await run([command, '--help'])).stdout, /^Exit status:/m, command)
  // Before: serve's said SIGINT or SIGTERM only, and SIGHUP killed it; then SIGQUIT was left out (it killed it).
  const serveHelp = (await run(['serve', '--help'])).stdout.replace(/\s+/g, ' ')
  assert.match(serveHelp, /SIGINT, SIGTERM, SIGHUP \(its terminal closed\) or SIGQUIT \(Ctrl-\\\) stops it cleanly/)
  assert.match(serveHelp, /Exit status: 0 stopped by SIGINT, SIGTERM, SIGHUP or SIGQUIT;/)
  // claim's: its wait cancelled by SIGQUIT too, as hold's.
  assert.match((await run(['claim', '--help'])).stdout, /^SIGINT, SIGTERM, SIGHUP or SIGQUIT while it connects or waits cancel the claim \(exit 128\+n\)/m)
})

test('--version prints the package version', async () => {
  const r = await run(['--version'])
  assert.equal(r.code, 0)
  assert.match(r.stdout, /^\d+\.\d+\.\d+/)
})

test('no command prints the usage on stderr and exits 2', async () => {
  const r = await run([])
  assert.equal(r.code, 2)
  assert.match(r.stderr, /^Usage: holdfast COMMAND/)
})
