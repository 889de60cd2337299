#!/usr/bin/env node
// The `holdfast` command: serve, hold, inspect (see `holdfast --help`). The work is in dist/cli.js.
import { main } from '../dist/cli.js'

main(process.argv.slice(2)).then(
  code => process.exit(code),
  error => {
    process.stderr.write(`holdfast: ${error?.message ?? error}\n`)
    process.exit(2)
  },
)
