/**
 * `holdfast hold`: holds a key while a command runs, the fence in `HOLDFAST_FENCE`; the command runs in
 * its own process group, which a lost lease stops (SIGTERM, then SIGKILL after `--grace`).
 */

import { spawn } from 'node:child_process'
import { HoldfastError, InUseError, type Lease } from '../entry/node.js'
import { clearTimer, setTimer } from '../util/clock.js'
import {
  ANSWER_MARGIN,
  LEASE_TTL,
  UP_TO_30_DAYS,
  UsageError,
  aborted,
  age,
  cliClock,
  duration,
  errnoText,
  openClient,
  parseArgs,
  signalNumber,
  warn,
  type ClientStore,
  type Spec,
} from './args.js'
import { masked } from '../util/masked-url.js'

export const HOLD_USAGE = `Usage: holdfast hold URL LOCK KEY [OPTIONS] -- COMMAND [ARGS...]

Holds KEY of the lock LOCK on the server at URL while COMMAND runs, renewing the lease meanwhile.
The command gets the lease's fence in the environment variable HOLDFAST_FENCE. The key is let go
when the command ends.

Options:
  --wait DURATION      how long to wait for the key (default 10s; 0: only if it is free)
  --ttl DURATION       the lease lasts this long from each renewal (1s to 1h, default 30s)
  --max-hold DURATION  a hard bound from the grant: the lease is lost then (default: none)
  --grace DURATION     after a lost lease, SIGTERM, then SIGKILL this much later (default 5s)
  --token-file FILE    the server's token (default: the environment variable HOLDFAST_TOKEN)
  -h, --help           this text

Durations: 250ms, 30s, 1m30s, 2h, 1d (whole numbers with units, largest first), or 0.
URL: ws://HOST:PORT, wss://HOST:PORT, or ws+unix://PATH; or a Redis, redis://[:PASSWORD@]HOST:PORT
(or rediss://), whose keys holdfast/redis keeps (no token; needs ioredis or redis installed, or Bun).

The command runs in its own session and process group (with no controlling terminal: /dev/tty is
not there to open); SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGWINCH sent to holdfast are passed on to
that group, and a lost lease stops the whole group. Ctrl-Z (SIGTSTP) stops the group with holdfast
(SIGSTOP); when holdfast goes on (fg, SIGCONT) so does the group, stopped for good if the lease ran
out meanwhile (no renewal is sent while stopped: exit 3). If holdfast itself is killed (kill -9) or
stopped with SIGSTOP, the command runs on.

Example (a nightly job that runs once across machines, skipped while another run holds the key):
  holdfast hold ws://locks.internal:7420 cron nightly-backup --wait 0 -- ./backup.sh

Exit status:
  the command's    its exit status (128+n if signal n ended it); 126/127 if it could not be run
  1                the key was still held by another after --wait; the command did not run
  3                the lease was lost (maxHold, missed renewals, server stopped); the command
                   was stopped
  128+n            SIGINT, SIGTERM, SIGHUP or SIGQUIT (signal n) came while it connected or waited
                   for the key; the command did not run
  2                any other error: usage, bad duration, no token, unreachable server, refused token
`

type Outcome = { code: number } | { spawnError: NodeJS.ErrnoException }

export async function hold(args: string[]): Promise<number> {
  const split = args.indexOf('--')
  const own = split < 0 ? args : args.slice(0, split)
  const command = split < 0 ? [] : args.slice(split + 1)
  const spec: Spec = { wait: 'value', ttl: 'value', 'max-hold': 'value', grace: 'value', 'token-file': 'value' }
  const { options, positionals, help } = parseArgs(own, spec, 'hold')
  if (help) {
    process.stdout.write(HOLD_USAGE)
    return 0
  }
  if (positionals.length < 3) throw new UsageError(`hold: give URL LOCK KEY -- COMMAND [ARGS...] (see holdfast hold --help)`)
  if (positionals.length > 3)
    throw new UsageError(`hold: unexpected argument ${JSON.stringify(positionals[3])}: put the command after --, as in holdfast hold URL LOCK KEY -- COMMAND`)
  if (command.length === 0) throw new UsageError(`hold: no command: put it after --, as in holdfast hold URL LOCK KEY -- COMMAND [ARGS...]`)
  const [url, name, key] = positionals as [string, string, string]
  const wait = duration('hold', options.get('wait'), 'wait', 10_000)
  const ttl = duration('hold', options.get('ttl'), 'ttl', 30_000, LEASE_TTL)
  const maxHold = options.has('max-hold') ? duration('hold', options.get('max-hold'), 'max-hold', 0, UP_TO_30_DAYS) : undefined
  const grace = duration('hold', options.get('grace'), 'grace', 5_000)

  // Signals: while waiting they cancel the hold; while the command runs they are passed on to it.
  const waiting = new AbortController()
  let child: ReturnType<typeof spawn> | undefined
  let finished = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (finished) return
    if (child) return killGroup(child, signal)
    waiting.abort(signal)
  }
  // SIGQUIT too (a terminal's Ctrl-\): uncaught, it ended holdfast alone, and the command, in a
  // session of its own that the terminal's signals never reach, ran on unleased, the key held by
  // nobody until its ttl.
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT']
  for (const s of signals) process.on(s, onSignal)
  // A terminal's resize, which only its foreground group hears, passed on as the others are.
  process.on('SIGWINCH', () => {
    if (child && !finished) killGroup(child, 'SIGWINCH')
  })
  // Ctrl-Z (SIGTSTP) stopped holdfast alone: the command, whose session the terminal's signals never
  // reach, ran on while no renewal went out, past its lease's end and beside the key's next holder.
  // Now the command stops with holdfast, and goes on with it (SIGCONT) only while the lease holds; a
  // lease that ended meanwhile is lost when holdfast goes on (its deadline is read first), which stops
  // the command for good (SIGTERM), as any lost lease does. SIGSTOP, not SIGTSTP, for both: the
  // kernel drops SIGTSTP sent to a process group whose parents are all outside its session (the
  // command's is one), and holdfast's own may be one too (started by a daemon, or under setsid).
  let held: Lease | undefined
  process.on('SIGTSTP', () => {
    if (child) killGroup(child, 'SIGSTOP')
    process.kill(process.pid, 'SIGSTOP')
  })
  process.on('SIGCONT', () => {
    if (!child) return
    // Read before the command goes on: a lease past its deadline is lost by this read, and run()'s
    // stop() sends SIGTERM, which the stopped command takes as it goes on (SIGKILL after --grace).
    void held?.lost
    killGroup(child, 'SIGCONT')
  })

  let remote: ClientStore | undefined
  let lost: Lease | undefined
  let answerTimer: unknown
  try {
    // A signal ends the wait for a connection too, at once: a server that takes the connection and
    // never answers its upgrade kept holdfast deaf to SIGINT until the connect gave up (10 s).
    const opening = openClient(url, options.get('token-file'), 'hold')
    const opened = await Promise.race([opening, aborted(waiting.signal)])
    // The connect goes on unless it failed: its client, if it comes, is let go.
    if (opened === undefined) void opening.then(client => client.close()).catch(() => {})
    remote = opened
    if (remote === undefined || waiting.signal.aborted) return 128 + signalNumber(waiting.signal.reason as NodeJS.Signals)
    const lock = remote.lock(name, maxHold === undefined ? { ttl, wait } : { ttl, wait, maxHold })
    // A hold the server never answers (it went away and stays away) ends some time after its wait.
    if (Number.isFinite(wait)) answerTimer = setTimer(cliClock, () => waiting.abort('no answer'), wait + ANSWER_MARGIN)
    const outcome = await lock.hold(key, { signal: waiting.signal }, async (lease): Promise<Outcome> => {
      clearTimer(cliClock, answerTimer)
      // A signal that came with the grant: the command does not start.
      const reason = waiting.signal.reason as unknown
      if (waiting.signal.aborted && reason !== 'no answer') return { code: 128 + signalNumber(reason as NodeJS.Signals) }
      if (lease.lost) {
        lost = lease
        warn(`${(lease.signal.reason as Error | undefined)?.message ?? 'lease lost'}: the command did not start`)
        return { code: 3 }
      }
      held = lease
      return run(
        command,
        lease,
        grace,
        c => (child = c),
        l => (lost = l),
      )
    })
    if ('spawnError' in outcome) {
      const e = outcome.spawnError
      warn(`cannot run ${JSON.stringify(command[0])}: ${errnoText(e)}`)
      return e.code === 'ENOENT' ? 127 : 126
    }
    return outcome.code
  } catch (error) {
    if (lost) return 3
    if (error instanceof InUseError) {
      warn(error.message)
      return 1
    }
    if (waiting.signal.aborted && error instanceof HoldfastError && error.code === 'cancelled') {
      const reason = waiting.signal.reason
      if (reason === 'no answer') {
        warn(`hold: ${masked(url)}: no answer from the server within --wait and ${ANSWER_MARGIN / 1000}s more`)
        return 2
      }
      return 128 + signalNumber(reason as NodeJS.Signals)
    }
    throw error
  } finally {
    // From here on signals are ignored (not removed: their default action would kill holdfast while it
    // lets the key go; the process exits right after).
    finished = true
    if (answerTimer !== undefined) clearTimer(cliClock, answerTimer)
    await remote?.close().catch(() => {})
  }
}

/** Runs the command under `lease`: stopped (TERM, then KILL after `grace`) if the lease is lost. */
function run(
  command: string[],
  lease: Lease,
  grace: number,
  started: (child: ReturnType<typeof spawn>) => void,
  onLost: (lease: Lease) => void,
): Promise<Outcome> {
  return new Promise<Outcome>(resolve => {
    const child = spawn(command[0]!, command.slice(1), {
      stdio: 'inherit',
      env: { ...process.env, HOLDFAST_FENCE: String(lease.fence) },
      // Its own process group, so that a lost lease stops the command's children too. (Node does this
      // with setsid(): its own session too, so the command has no controlling terminal.)
      detached: true,
    })
    started(child)
    let killTimer: unknown
    let settled = false
    const settle = (outcome: Outcome) => {
      if (settled) return
      settled = true
      if (killTimer !== undefined) clearTimer(cliClock, killTimer)
      lease.signal.removeEventListener('abort', stop)
      resolve(outcome)
    }
    const stop = () => {
      onLost(lease)
      const reason = lease.signal.reason as Error | undefined
      warn(`${reason?.message ?? 'lease lost'}: stopping the command (SIGTERM, then SIGKILL after ${age(grace)})`)
      killGroup(child, 'SIGTERM')
      killTimer = setTimer(cliClock, () => killGroup(child, 'SIGKILL'), grace)
    }
    child.on('error', error => settle({ spawnError: error as NodeJS.ErrnoException }))
    child.once('exit', (code, signal) => settle({ code: code ?? 128 + signalNumber(signal ?? 'SIGKILL') }))
    if (lease.signal.aborted) stop()
    else lease.signal.addEventListener('abort', stop, { once: true })
  })
}

/** Signals the command's process group (the command itself, if the group is gone). */
function killGroup(child: ReturnType<typeof spawn>, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    try {
      child.kill(signal)
    } catch {
      // gone
    }
  }
}
