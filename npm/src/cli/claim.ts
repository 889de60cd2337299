/**
 * `holdfast claim URL POOL N [--id ID]` (#16): claims units of a pool on a store's server and prints
 * the claim's id and the units left (with `--json`, the answer as `pool.claim()` gives it). Exit 0 claimed, 1 not enough left (after `--wait`), 2 any other
 * error (usage, no token, unreachable server, a pool that does not exist, a server without pools).
 */

import { type ClaimResult, HoldfastError } from '../entry/node.js'
import { clearTimer, setTimer } from '../util/clock.js'
import { ANSWER_MARGIN, UP_TO_30_DAYS, UsageError, aborted, cliClock, duration, openClient, parseArgs, signalNumber, type Spec } from './args.js'
import { escapeControls } from './inspect.js'
import { masked } from '../util/masked-url.js'

export const CLAIM_USAGE = `Usage: holdfast claim URL POOL N [--id ID] [--capacity C] [--wait DURATION] [--ttl DURATION]
                     [--token-file FILE] [--json]

Claims N units of the pool POOL on the server at URL (or in the Redis at redis://…), and prints the
claim's id and the units left.
The claim holds its units until released (by its id, from any client), or until --ttl if given.
Give --id (an id you keep) or --ttl to a claim that must never leak units: without either, one
whose answer is lost (the command killed by SIGKILL as it came) is released by nobody, its id drawn
here and never printed.

Options:
  --id ID              the claim's id (1 to 128 bytes): asked again, as a retry after a timeout,
                       it answers the first claim and never takes units twice (default: a new one)
  --capacity C         the pool's capacity if this is its first use (default: the pool must exist)
  --wait DURATION      how long to wait in line for units released meanwhile (default 0)
  --ttl DURATION       the units come back by themselves this long after the claim
  --token-file FILE    the server's token (default: the environment variable HOLDFAST_TOKEN)
  --json               print the answer as one JSON object, as pool.claim() gives it:
                       {"claimed": true, "remaining": R, "claim": {"id": ID, "units": N}}, or
                       {"claimed": false, "remaining": R}
  -h, --help           this text

SIGINT, SIGTERM, SIGHUP or SIGQUIT while it connects or waits cancel the claim (exit 128+n).

Exit status: 0 claimed (prints "claimed ID: N units, R left"; "1 unit" for one); 1 not enough
left (prints "not claimed: R left"); 2 any other error (usage, no token, unreachable server, a
pool that does not exist, a server without pools).
`

export async function claim(args: string[]): Promise<number> {
  const spec: Spec = { id: 'value', capacity: 'value', wait: 'value', ttl: 'value', 'token-file': 'value', json: 'flag' }
  const { options, positionals, help } = parseArgs(args, spec, 'claim')
  if (help) {
    process.stdout.write(CLAIM_USAGE)
    return 0
  }
  if (positionals.length !== 3) throw new UsageError(`claim: give URL POOL N, as in holdfast claim ws://127.0.0.1:7420 seats 2 (see holdfast claim --help)`)
  const [url, name, count] = positionals as [string, string, string]
  const n = wholeNumber(count, 'N')
  const capacity = options.has('capacity') ? wholeNumber(options.get('capacity')!, '--capacity') : undefined
  const wait = duration('claim', options.get('wait'), 'wait', 0)
  const ttl = options.has('ttl') ? duration('claim', options.get('ttl'), 'ttl', 0, UP_TO_30_DAYS) : undefined

  // SIGINT, SIGTERM, SIGHUP and SIGQUIT (a terminal's Ctrl-\) cancel the claim, as they cancel a
  // hold's wait: the client cancels it on the server and says goodbye, and the command exits 128+n.
  // Uncaught, they killed the process, which left the server a dropped connection to find. From the
  // answer on they are ignored: the process exits right after.
  const ended = new AbortController()
  const onSignal = (signal: NodeJS.Signals) => ended.abort(signal)
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT']
  for (const s of signals) process.on(s, onSignal)
  const cancelled = () => 128 + signalNumber(ended.signal.reason as NodeJS.Signals)

  const opening = openClient(url, options.get('token-file'), 'claim')
  const remote = await Promise.race([opening, aborted(ended.signal)])
  if (remote === undefined) {
    void opening.then(client => client.close()).catch(() => {})
    return cancelled()
  }
  try {
    if (ended.signal.aborted) return cancelled()
    const pool = remote.pool(name, capacity === undefined ? undefined : { capacity })
    const id = options.get('id')
    // The client's timers keep no process alive: with its server away, nothing else here did, and the
    // process ended with the claim unanswered, exit 0 ("claimed") with nothing printed. A timer of the
    // command's keeps it alive until an answer, the client's own (no answer at --wait and 1 s more: a
    // ClosedError, exit 2), or this one's.
    const timer = setTimer(cliClock, () => ended.abort('no answer'), wait + ANSWER_MARGIN)
    let got: ClaimResult
    try {
      got = await pool.claim(n, { wait, signal: ended.signal, ...(id === undefined ? {} : { id }), ...(ttl === undefined ? {} : { ttl }) })
    } catch (error) {
      if (ended.signal.aborted && error instanceof HoldfastError && error.code === 'cancelled') {
        if (ended.signal.reason !== 'no answer') return cancelled()
        throw new UsageError(`claim: ${masked(url)}: no answer from the server within --wait and ${ANSWER_MARGIN / 1000}s more`)
      }
      throw error
    } finally {
      clearTimer(cliClock, timer)
    }
    if (options.has('json')) {
      // The answer's own fields (a Claim's methods and its pool's name are the API's, not data), as
      // `inspect --json` prints store.inspect(): pretty, with controls escaped.
      const answer = got.claimed
        ? { claimed: true, remaining: got.remaining, claim: { id: got.claim.id, units: got.claim.units } }
        : { claimed: false, remaining: got.remaining }
      process.stdout.write(`${escapeControls(JSON.stringify(answer, null, 2))}\n`)
      return got.claimed ? 0 : 1
    }
    if (!got.claimed) {
      process.stdout.write(`not claimed: ${got.remaining} left\n`)
      return 1
    }
    const units = got.claim.units === 1 ? 'unit' : 'units'
    process.stdout.write(`claimed ${escapeControls(JSON.stringify(got.claim.id))}: ${got.claim.units} ${units}, ${got.remaining} left\n`)
    return 0
  } finally {
    await remote.close().catch(() => {})
  }
}

/** A whole number of units, from the command line. */
function wholeNumber(text: string, what: string): number {
  const n = /^[1-9][0-9]{0,15}$/.test(text) ? Number(text) : Number.NaN
  // The bound said too: past it, the count is a whole number from 1 all the same (a pool's bound, 2^53-1).
  if (!Number.isSafeInteger(n)) throw new UsageError(`claim: ${what} ${JSON.stringify(text)} must be a whole number from 1 to ${Number.MAX_SAFE_INTEGER}`)
  return n
}
