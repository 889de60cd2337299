/**
 * `holdfast release URL POOL ID` and `holdfast confirm URL POOL ID`: a claim settled by its id, from the
 * script that made it with `holdfast claim --id ID` (or read the id the store drew from `claim --json`).
 * A shell script could claim units and had no way to give them back, nor to keep a claim made with
 * `--ttl`, short of writing code against the API.
 *
 * - `release`: hands back the claim's units, once (`pool.release(id)`): exit 0 released, 1 when it
 *   held none (released before, its ttl ran out, never claimed).
 * - `confirm`: keeps the units of a claim made with `--ttl` until released (`pool.confirm(id)`): exit
 *   0 confirmed, 1 when it holds none (its ttl ran out first, or released: the API's `LostError`).
 * - Exit 2 for any other error (usage, no token, unreachable server, a pool that does not exist, no
 *   answer within 10 s), with one line on stderr.
 *
 * No signal is caught: the one request is sent at once, and a signal ending the command leaves the
 * claim as the server took that request or not (asking again does no harm: a release is once).
 */

import { HoldfastError } from '../entry/node.js'
import { UsageError, answeredWithin, openClient, parseArgs, type ClientStore } from './args.js'
import { escapeControls } from './inspect.js'

export const RELEASE_USAGE = `Usage: holdfast release URL POOL ID [--token-file FILE] [--json]

Hands back the units of the claim ID of the pool POOL on the server at URL (or in the Redis at
redis://…), once: the id given to holdfast claim --id, or the one it drew (printed with --json).

Options:
  --token-file FILE  the server's token (default: the environment variable HOLDFAST_TOKEN)
  --json             print the answer as one JSON object: {"released": true} or {"released": false}
  -h, --help         this text

Exit status: 0 released (prints "released ID"); 1 the claim held no units (released before, its
--ttl ran out, or never claimed; prints "not released: ID holds no units"); 2 any other error
(usage, no token, unreachable server, a pool that does not exist, no answer within 10s).
`

export const CONFIRM_USAGE = `Usage: holdfast confirm URL POOL ID [--token-file FILE] [--json]

Keeps the units of the claim ID of the pool POOL on the server at URL (or in the Redis at
redis://…), made with holdfast claim --ttl, until it is released: they no longer come back at the
end of the ttl.

Options:
  --token-file FILE  the server's token (default: the environment variable HOLDFAST_TOKEN)
  --json             print the answer as one JSON object: {"confirmed": true} or {"confirmed": false}
  -h, --help         this text

Exit status: 0 confirmed (prints "confirmed ID"); 1 the claim holds no units (its ttl ran out
first, or it was released; prints "not confirmed: " and why); 2 any other error (usage, no token,
unreachable server, a pool that does not exist, no answer within 10s).
`

export function release(args: string[]): Promise<number> {
  return settle(args, 'release', RELEASE_USAGE, async (pool, id) => ((await pool.release(id)) ? undefined : 'holds no units'))
}

export function confirm(args: string[]): Promise<number> {
  return settle(args, 'confirm', CONFIRM_USAGE, async (pool, id) => {
    try {
      await pool.confirm(id)
      return undefined
    } catch (error) {
      if (error instanceof HoldfastError && error.code === 'lost') return error.message
      throw error
    }
  })
}

/**
 * Runs `release` or `confirm`: `ask` answers undefined when the claim was settled, else why not (exit 1).
 * The id is shown quoted, with controls escaped, as `claim` prints it.
 */
async function settle(
  args: string[],
  command: 'release' | 'confirm',
  usage: string,
  ask: (pool: ReturnType<ClientStore['pool']>, id: string) => Promise<string | undefined>,
): Promise<number> {
  const { options, positionals, help } = parseArgs(args, { 'token-file': 'value', json: 'flag' }, command)
  if (help) {
    process.stdout.write(usage)
    return 0
  }
  if (positionals.length !== 3)
    throw new UsageError(`${command}: give URL POOL ID, as in holdfast ${command} ws://127.0.0.1:7420 seats order-1 (see holdfast ${command} --help)`)
  const [url, name, id] = positionals as [string, string, string]
  const remote = await openClient(url, options.get('token-file'), command)
  try {
    const why = await answeredWithin(ask(remote.pool(name), id), command, url)
    const done = command === 'release' ? 'released' : 'confirmed'
    const shownId = escapeControls(JSON.stringify(id))
    if (options.has('json')) process.stdout.write(`${JSON.stringify({ [done]: why === undefined })}\n`)
    else if (why === undefined) process.stdout.write(`${done} ${shownId}\n`)
    else process.stdout.write(`not ${done}: ${command === 'release' ? `${shownId} ${why}` : escapeControls(why)}\n`)
    return why === undefined ? 0 : 1
  } finally {
    await remote.close().catch(() => {})
  }
}
