/**
 * The `holdfast` command (the package's `bin`): `serve` a store to other processes, `hold` a key while a
 * command runs, `claim` units of a pool (and `release` or `confirm` a claim by its id), `inspect` the
 * busy keys and pools. `main(args)` answers the
 * exit status; `bin/holdfast.js` calls it.
 *
 * Exit statuses of `hold`: the command's own (128+n when a signal n ended it); 1 when the key was still
 * held by another after `--wait` (nothing ran); 3 when the lease was lost (the command was stopped);
 * 2 for every other error (usage, bad duration, no token, unreachable server, refused token), with one
 * line on stderr. `serve` answers 0 (stopped by a signal), 1 (its store closed itself after an internal
 * error, or had one as a signal stopped it) or 2; `inspect` 0 or 2; `claim` 0 (claimed), 1 (not enough
 * left) or 2; `release` and `confirm` 0 (done), 1 (the claim held no units) or 2. `hold` and `claim` exit 128+n when signal n cancelled their wait; `serve` when a second
 * signal came while it stopped.
 */
import * as fs from 'node:fs'
import { UsageError, outputMayClose, warn } from './args.js'
import { CLAIM_USAGE, claim } from './claim.js'
import { HOLD_USAGE, hold } from './hold.js'
import { INSPECT_USAGE, inspect } from './inspect.js'
import { CONFIRM_USAGE, RELEASE_USAGE, confirm, release } from './settle.js'
import { SERVE_USAGE, serve } from './serve.js'

/** For bin/holdfast.js: `process.exit` that survives a terminal gone (see args.ts). */
export { exitWith } from './args.js'

const USAGE = `Usage: holdfast COMMAND [OPTIONS]

Fair, fenced locks over a connection: a store server, and commands that hold its keys.

Commands:
  serve      run a store server (fences kept in a directory)
  hold       hold a key while a command runs, with the fence in HOLDFAST_FENCE
  claim      claim units of a pool (a finite count, never below zero)
  release    hand back the units of a claim, by its id
  confirm    keep the units of a claim made with --ttl, by its id
  inspect    list the busy keys and pools of a server

Run 'holdfast COMMAND --help' for a command's options.
Options: -h, --help (this text), -v, --version (the package's version).
`

/** Runs the command line `args` (without `node` and the script); answers the exit status. */
export async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args
  outputMayClose()
  try {
    switch (command) {
      case 'serve':
        return await serve(rest)
      case 'hold':
        return await hold(rest)
      case 'inspect':
        return await inspect(rest)
      case 'claim':
        return await claim(rest)
      case 'release':
        return await release(rest)
      case 'confirm':
        return await confirm(rest)
      case 'help':
        return help(rest[0])
      case '-h':
      case '--help':
        process.stdout.write(USAGE)
        return 0
      case '-v':
      case '--version':
        process.stdout.write(`${version()}\n`)
        return 0
      case undefined:
        process.stderr.write(USAGE)
        return 2
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)} (commands: serve, hold, claim, release, confirm, inspect; see holdfast --help)`)
    }
  } catch (error) {
    warn(error instanceof Error ? error.message : String(error))
    return 2
  }
}

function help(command: string | undefined): number {
  const usages: Record<string, string> = {
    serve: SERVE_USAGE,
    hold: HOLD_USAGE,
    claim: CLAIM_USAGE,
    release: RELEASE_USAGE,
    confirm: CONFIRM_USAGE,
    inspect: INSPECT_USAGE,
  }
  const text = command === undefined ? USAGE : Object.hasOwn(usages, command) ? usages[command] : undefined
  if (text === undefined) throw new UsageError(`help: unknown command ${JSON.stringify(command)} (commands: serve, hold, claim, release, confirm, inspect)`)
  process.stdout.write(text)
  return 0
}

function version(): string {
  try {
    return String(JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version)
  } catch {
    return 'unknown'
  }
}
