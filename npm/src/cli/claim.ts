/**
 * `holdfast claim URL POOL N [--id ID]` (#16): claims units of a pool on a store's server and prints
 * the claim's id and the units left. Exit 0 claimed, 1 not enough left (after `--wait`), 2 any other
 * error (usage, no token, unreachable server, a pool that does not exist, a server without pools).
 */

import { type ClaimResult, HoldfastError, connect } from '../entry/node.js'
import { clearTimer, setTimer } from '../util/clock.js'
import { ANSWER_MARGIN, UsageError, cliClock, clientToken, duration, parseArgs, type Spec } from './args.js'
import { escapeControls } from './inspect.js'

export const CLAIM_USAGE = `Usage: holdfast claim URL POOL N [--id ID] [--capacity C] [--wait DURATION] [--ttl DURATION]
                     [--token-file FILE]

Claims N units of the pool POOL on the server at URL (or in the Redis at redis://…), and prints the
claim's id and the units left.
The claim holds its units until released (by its id, from any client), or until --ttl if given.

Options:
  --id ID              the claim's id (1 to 128 bytes): asked again, as a retry after a timeout,
                       it answers the first claim and never takes units twice (default: a new one)
  --capacity C         the pool's capacity if this is its first use (default: the pool must exist)
  --wait DURATION      how long to wait in line for units released meanwhile (default 0)
  --ttl DURATION       the units come back by themselves this long after the claim
  --token-file FILE    the server's token (default: the environment variable HOLDFAST_TOKEN)
  -h, --help           this text

Exit status: 0 claimed (prints "claimed ID: N units, R left"); 1 not enough left (prints
"not claimed: R left"); 2 any other error (usage, no token, unreachable server, a server
without pools).
`

export async function claim(args: string[]): Promise<number> {
  const spec: Spec = { id: 'value', capacity: 'value', wait: 'value', ttl: 'value', 'token-file': 'value' }
  const { options, positionals, help } = parseArgs(args, spec, 'claim')
  if (help) {
    process.stdout.write(CLAIM_USAGE)
    return 0
  }
  if (positionals.length !== 3) throw new UsageError(`claim: give URL POOL N, as in holdfast claim ws://127.0.0.1:7420 seats 2 (see holdfast claim --help)`)
  const [url, name, count] = positionals as [string, string, string]
  const n = wholeNumber(count, 'N')
  const capacity = options.has('capacity') ? wholeNumber(options.get('capacity')!, '--capacity') : undefined
  const wait = duration(options.get('wait'), 'wait', 0)
  const ttl = options.has('ttl') ? duration(options.get('ttl'), 'ttl', 0) : undefined
  const remote = /^rediss?:\/\//.test(url)
    ? await (await import('../redis/index.js')).openRedisStore({ url })
    : await connect(url, { token: clientToken(options.get('token-file'), 'claim') })
  try {
    const pool = remote.pool(name, capacity === undefined ? undefined : { capacity })
    const id = options.get('id')
    // The client's timers keep no process alive: with its server away, nothing else here did, and the
    // process ended with the claim unanswered, exit 0 ("claimed") with nothing printed. A timer of the
    // command's keeps it alive until an answer, the client's own (no answer at --wait and 1 s more: a
    // ClosedError, exit 2), or this one's.
    const unanswered = new AbortController()
    const timer = setTimer(cliClock, () => unanswered.abort('no answer'), wait + ANSWER_MARGIN)
    let got: ClaimResult
    try {
      got = await pool.claim(n, { wait, signal: unanswered.signal, ...(id === undefined ? {} : { id }), ...(ttl === undefined ? {} : { ttl }) })
    } catch (error) {
      if (unanswered.signal.aborted && error instanceof HoldfastError && error.code === 'cancelled') {
        throw new UsageError(`claim: ${url}: no answer from the server within --wait and ${ANSWER_MARGIN / 1000}s more`)
      }
      throw error
    } finally {
      clearTimer(cliClock, timer)
    }
    if (!got.claimed) {
      process.stdout.write(`not claimed: ${got.remaining} left\n`)
      return 1
    }
    process.stdout.write(`claimed ${escapeControls(JSON.stringify(got.claim.id))}: ${got.claim.units} units, ${got.remaining} left\n`)
    return 0
  } finally {
    await remote.close().catch(() => {})
  }
}

/** A whole number of units, from the command line. */
function wholeNumber(text: string, what: string): number {
  const n = /^[1-9][0-9]{0,15}$/.test(text) ? Number(text) : Number.NaN
  if (!Number.isSafeInteger(n)) throw new UsageError(`claim: ${what} ${JSON.stringify(text)} must be a whole number from 1`)
  return n
}
