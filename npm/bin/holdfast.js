#!/usr/bin/env node
// The `holdfast` command: serve, hold, inspect (see `holdfast --help`). The work is in dist/cli.js.
import { exitWith, main } from '../dist/cli/main.js'

let settled = false

// Output to a pipe is written asynchronously: exiting at once would cut a long one (an inspection of
// many keys) short. The exit waits for what was written before it. (exitWith: process.exit, without
// Node 20's abort at exit when the terminal it started in is gone.)
const exit = code => {
  settled = true
  process.stdout.write('', () => exitWith(code))
}

// Node ends a process whose event loop is empty with exit 0, even with main() still unanswered: a
// command waiting on something nothing keeps alive (holdfast's timers keep no process alive) would
// say "done" having done nothing. No known path does now (each command keeps itself alive while it
// waits); this says so if one ever does, as the error it is.
process.on('beforeExit', () => {
  if (settled) return
  process.stderr.write('holdfast: internal error: the command ended without an answer (nothing left to wait for)\n')
  exit(2)
})

main(process.argv.slice(2)).then(exit, error => {
  process.stderr.write(`holdfast: ${error?.message ?? error}\n`)
  exit(2)
})
