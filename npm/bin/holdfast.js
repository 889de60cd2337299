#!/usr/bin/env node
// The `holdfast` command: serve, hold, inspect (see `holdfast --help`). The work is in dist/cli.js.
import { main } from '../dist/cli/main.js'

// Output to a pipe is written asynchronously: exiting at once would cut a long one (an inspection of
// many keys) short. The exit waits for what was written before it.
const exit = code => process.stdout.write('', () => process.exit(code))

main(process.argv.slice(2)).then(exit, error => {
  process.stderr.write(`holdfast: ${error?.message ?? error}\n`)
  exit(2)
})
