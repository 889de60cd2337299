/**
 * The `holdfast` command (the package's `bin`): `serve` a store to other processes, `hold` a key while a
 * command runs, `claim` units of a pool, `inspect` the busy keys and pools. `main(args)` answers the
 * exit status; `bin/holdfast.js` calls it.
 *
 * Exit statuses of `hold`: the command's own (128+n when a signal n ended it); 1 when the key was still
 * held by another after `--wait` (nothing ran); 3 when the lease was lost (the command was stopped);
 * 2 for every other error (usage, bad duration, no token, unreachable server, refused token), with one
 * line on stderr. `serve` and `inspect` answer 0 or 2; `claim` 0 (claimed), 1 (not enough left) or 2.
 */

import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import * as fs from 'node:fs'
import * as net from 'node:net'
import * as path from 'node:path'
import { constants as osConstants } from 'node:os'
import {
  connect,
  fileStorage,
  openStore,
  HoldfastError,
  InUseError,
  type KeyInfo,
  type Lease,
  type LockOptions,
  type PoolInfo,
  type RemoteLock,
  type Store,
} from '../entry/node.js'
import { toMs } from '../util/duration.js'
import { clearTimer, setTimer, type Clock } from '../util/clock.js'

// ---- usage ----

const USAGE = `Usage: holdfast COMMAND [OPTIONS]

Fair, fenced locks over a connection: a store server, and commands that hold its keys.

Commands:
  serve      run a store server (fences kept in a directory)
  hold       hold a key while a command runs, with the fence in HOLDFAST_FENCE
  claim      claim units of a pool (a finite count, never below zero)
  inspect    list the busy keys and pools of a server

Run 'holdfast COMMAND --help' for a command's options.
Options: -h, --help (this text), -v, --version (the package's version).
`

const SERVE_USAGE = `Usage: holdfast serve [--dir DIR] [--host HOST] [--port PORT | --socket PATH] [--token-file FILE]
                     [--socket-mode MODE] [--max-holds N]

Runs a store server; clients connect with ws://HOST:PORT (or ws+unix://PATH) and its token.

Options:
  --dir DIR          where the store keeps its fences (default .holdfast); one server per directory
  --host HOST        the address to bind (default 127.0.0.1; bind others on purpose)
  --port PORT        the TCP port (default 7420; 0 picks a free one)
  --socket PATH      a Unix socket instead of a port (clients use ws+unix://PATH)
  --socket-mode MODE the socket's mode, in octal (default 600: only its owner may connect; 660 lets
                     its group in too)
  --token-file FILE  the token clients must present: read from FILE when it exists, else a new
                     random token is written there (mode 0600). Default DIR/token, made the same way.
  --max-holds N      leases and waiting holds over connections in the whole store, those of dropped
                     connections included until they end (default 100000); one more is refused
  -h, --help         this text

Prints where it listens. Clients give the token with --token-file FILE or HOLDFAST_TOKEN.
SIGINT or SIGTERM stops it cleanly: waiters are answered, leases end, exit 0.
`

const HOLD_USAGE = `Usage: holdfast hold URL LOCK KEY [OPTIONS] -- COMMAND [ARGS...]

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
(or rediss://), whose keys holdfast/redis keeps (no token; needs ioredis or redis installed).

The command runs in its own process group; SIGINT, SIGTERM and SIGHUP sent to holdfast are passed
on to that group, and a lost lease stops the whole group.

Example (a nightly job that runs once across machines, skipped while another run holds the key):
  holdfast hold ws://locks.internal:7420 cron nightly-backup --wait 0 -- ./backup.sh

Exit status:
  the command's    its exit status (128+n if signal n ended it); 126/127 if it could not be run
  1                the key was still held by another after --wait; the command did not run
  3                the lease was lost (maxHold, missed renewals, server stopped); the command
                   was stopped
  2                any other error: usage, bad duration, no token, unreachable server, refused token
`

const CLAIM_USAGE = `Usage: holdfast claim URL POOL N [--id ID] [--capacity C] [--wait DURATION] [--ttl DURATION]
                     [--token-file FILE]

Claims N units of the pool POOL on the server at URL, and prints the claim's id and the units left.
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

const INSPECT_USAGE = `Usage: holdfast inspect URL [--token-file FILE] [--json]

Prints the busy keys of the server at URL: kind, name, key, holders (fence and how long held),
and how many wait; then its pools: name, capacity, units left, open claims, claims waiting.
URL may be a Redis (redis://HOST:PORT): the keys holdfast/redis keeps there.

Options:
  --token-file FILE  the server's token (default: the environment variable HOLDFAST_TOKEN)
  --json             print the keys as JSON instead of a table
  -h, --help         this text
`

// ---- errors and arguments ----

/** An error of the command line itself: printed as one line, exit 2. */
class UsageError extends Error {}

type Spec = Record<string, 'value' | 'flag'>
type Parsed = { options: Map<string, string>; positionals: string[]; help: boolean }

/** A small parser: `--name value`, `--name=value`, flags, `-h`/`--help`; every other dash-word is refused. */
function parseArgs(args: string[], spec: Spec, command: string): Parsed {
  const options = new Map<string, string>()
  const positionals: string[] = []
  let help = false
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === '-h' || arg === '--help') {
      help = true
      continue
    }
    if (!arg.startsWith('-') || arg === '-') {
      positionals.push(arg)
      continue
    }
    const eq = arg.indexOf('=')
    const name = arg.startsWith('--') ? arg.slice(2, eq < 0 ? undefined : eq) : ''
    const kind = Object.hasOwn(spec, name) ? spec[name] : undefined
    if (!kind) throw new UsageError(`${command}: unknown option ${eq < 0 ? arg : arg.slice(0, eq)} (see holdfast ${command} --help)`)
    if (options.has(name)) throw new UsageError(`${command}: --${name} given twice`)
    if (kind === 'flag') {
      if (eq >= 0) throw new UsageError(`${command}: --${name} takes no value`)
      options.set(name, '')
      continue
    }
    let value: string
    if (eq >= 0) value = arg.slice(eq + 1)
    else {
      const next = args[i + 1]
      // `--wait -1` is a value (a bad one, said so by its option); `--wait --ttl 5s` lacks one.
      if (next === undefined || (next.startsWith('-') && next !== '-' && !/^-[\d.]/.test(next))) throw new UsageError(`${command}: --${name} needs a value`)
      value = next
      i++
    }
    if (value.length === 0) throw new UsageError(`${command}: --${name} needs a value`)
    options.set(name, value)
  }
  return { options, positionals, help }
}

/** A duration option: as in the API (`250ms`, `30s`, `1m30s`), or a bare `0`. */
function duration(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback
  if (value === '0') return 0
  try {
    return toMs(value, `--${name}`)
  } catch {
    throw new UsageError(
      `--${name} ${JSON.stringify(value)} must be a duration: whole numbers with units, largest first, such as 250ms, 30s, 1m30s, 2h, 1d; or 0`,
    )
  }
}

/** What `hold` and `inspect` use of a store over a connection or in Redis. */
interface ClientStore {
  lock(name: string, options: LockOptions): Pick<RemoteLock, 'hold'>
  inspect(): Promise<(KeyInfo | PoolInfo)[]>
  close(): Promise<void>
}

/**
 * The store at `url`: a Redis (`redis://`, `rediss://`: `holdfast/redis`, no token), or a store's
 * server over a connection (with the token of `--token-file`, else `HOLDFAST_TOKEN`).
 */
async function openClient(url: string, tokenFile: string | undefined, command: string): Promise<ClientStore> {
  if (/^rediss?:\/\//.test(url)) {
    const { openRedisStore } = await import('../redis/index.js')
    return openRedisStore({ url })
  }
  return connect(url, { token: clientToken(tokenFile, command) })
}

/** The token of a client command: `--token-file FILE`, else `HOLDFAST_TOKEN`. */
function clientToken(file: string | undefined, command: string): string {
  if (file !== undefined) return readToken(file, command)
  const env = process.env.HOLDFAST_TOKEN
  if (env !== undefined && env.length > 0) return env
  throw new UsageError(`${command}: no token: give --token-file FILE, or set the environment variable HOLDFAST_TOKEN`)
}

function readToken(file: string, command: string): string {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (error) {
    throw new UsageError(`${command}: cannot read the token file ${file}: ${errnoText(error)}`)
  }
  const token = text.trim()
  if (token.length === 0) throw new UsageError(`${command}: the token file ${file} is empty`)
  return token
}

function errnoText(error: unknown): string {
  const e = error as NodeJS.ErrnoException
  if (e?.code === 'ENOENT') return 'no such file'
  if (e?.code === 'EACCES') return 'permission denied'
  if (e?.code === 'EISDIR') return 'it is a directory'
  return String(e?.message ?? error)
}

/** One line, whatever the message held. */
function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim()
}

function say(line: string): void {
  process.stdout.write(`holdfast: ${line}\n`)
}

function warn(line: string): void {
  process.stderr.write(`holdfast: ${oneLine(line)}\n`)
}

function signalNumber(signal: NodeJS.Signals): number {
  return (osConstants.signals as Record<string, number>)[signal] ?? 0
}

// ---- main ----

/** Runs the command line `args` (without `node` and the script); answers the exit status. */
export async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args
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
        throw new UsageError(`unknown command ${JSON.stringify(command)} (commands: serve, hold, claim, inspect; see holdfast --help)`)
    }
  } catch (error) {
    warn(error instanceof Error ? error.message : String(error))
    return 2
  }
}

function help(command: string | undefined): number {
  const text =
    command === 'serve'
      ? SERVE_USAGE
      : command === 'hold'
        ? HOLD_USAGE
        : command === 'claim'
          ? CLAIM_USAGE
          : command === 'inspect'
            ? INSPECT_USAGE
            : command === undefined
              ? USAGE
              : undefined
  if (text === undefined) throw new UsageError(`help: unknown command ${JSON.stringify(command)} (commands: serve, hold, claim, inspect)`)
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

// ---- serve ----

async function serve(args: string[]): Promise<number> {
  const { options, positionals, help } = parseArgs(
    args,
    { dir: 'value', host: 'value', port: 'value', socket: 'value', 'socket-mode': 'value', 'token-file': 'value', 'max-holds': 'value' },
    'serve',
  )
  if (help) {
    process.stdout.write(SERVE_USAGE)
    return 0
  }
  if (positionals.length > 0) throw new UsageError(`serve: unexpected argument ${JSON.stringify(positionals[0])} (see holdfast serve --help)`)
  const socket = options.get('socket')
  if (socket !== undefined && (options.has('port') || options.has('host'))) throw new UsageError('serve: give --socket, or --port and --host, not both')
  let port = 7420
  const portText = options.get('port')
  if (portText !== undefined) {
    if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535)
      throw new UsageError(`serve: --port ${JSON.stringify(portText)} must be a whole number from 0 to 65535`)
    port = Number(portText)
  }
  const modeText = options.get('socket-mode')
  if (modeText !== undefined && socket === undefined) throw new UsageError('serve: --socket-mode is the mode of a Unix socket: give --socket too')
  if (modeText !== undefined && !/^0?[0-7]{3}$/.test(modeText))
    throw new UsageError(`serve: --socket-mode ${JSON.stringify(modeText)} must be a mode in octal, such as 600 or 660`)
  const socketMode = modeText === undefined ? undefined : parseInt(modeText, 8)
  const holdsText = options.get('max-holds')
  if (holdsText !== undefined && (!/^\d{1,9}$/.test(holdsText) || Number(holdsText) < 1))
    throw new UsageError(`serve: --max-holds ${JSON.stringify(holdsText)} must be a whole number, 1 or more`)
  const maxHolds = holdsText === undefined ? undefined : Number(holdsText)
  const host = options.get('host') ?? '127.0.0.1'
  const dir = options.get('dir') ?? '.holdfast'
  const tokenFile = path.resolve(options.get('token-file') ?? path.join(dir, 'token'))

  // Signals are caught from the start, so that none is missed between listening and saying so.
  let stopWith!: (signal: NodeJS.Signals) => void
  const stopSignal = new Promise<NodeJS.Signals>(resolve => (stopWith = resolve))
  let signals = 0
  let stopped = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopped) return // exiting 0 now
    if (++signals === 1) return stopWith(signal)
    // A second signal while closing: leave at once.
    warn(`${signal} again: leaving without a clean close`)
    process.exit(128 + signalNumber(signal))
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  let store: Store | undefined
  try {
    try {
      store = await openStore({ storage: fileStorage(dir) })
    } catch (error) {
      throw new UsageError(`serve: ${(error as Error).message}`)
    }
    const open = store
    const { token, created } = serverToken(tokenFile)
    if (created) say(`created a token in ${tokenFile} (mode 0600)`)
    const limits = maxHolds === undefined ? {} : { maxHolds }
    const listen = () => guardListen(() => open.serve(socket !== undefined ? { path: socket, socketMode, token, ...limits } : { port, host, token, ...limits }))
    let server: Awaited<ReturnType<typeof listen>>
    try {
      server = await listen()
    } catch (error) {
      if (socket !== undefined && (error as NodeJS.ErrnoException)?.code === 'EADDRINUSE' && (await staleSocket(socket))) {
        fs.rmSync(socket, { force: true })
        server = await listen()
      } else throw new UsageError(`serve: ${(error as Error)?.message ?? error}`)
    }
    say(`serving ${server.url} (token in ${tokenFile})`)
    const signal = await stopSignal
    say(`stopping (${signal})`)
    store = undefined
    try {
      await open.close()
    } catch (error) {
      warn(`serve: close: ${(error as Error).message}`)
      return 2
    }
    say('stopped')
    stopped = true
    return 0
  } finally {
    // Stopped: late signals are ignored while the process exits. Else the default action is back.
    if (!stopped) {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
    }
    // Not serving after all: let the directory go.
    await store?.close().catch(() => {})
  }
}

/** The server's token: read from `file` when it exists, else made (32 random bytes, hex) with mode 0600. */
function serverToken(file: string): { token: string; created: boolean } {
  if (fs.existsSync(file)) {
    const token = readToken(file, 'serve')
    try {
      const mode = fs.statSync(file).mode & 0o777
      if (mode & 0o077) warn(`the token file ${file} can be read by others (mode 0${mode.toString(8)}): chmod 600 it`)
    } catch {
      // it was read; its mode is only advice
    }
    return { token, created: false }
  }
  const token = randomBytes(32).toString('hex')
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
    fs.writeFileSync(file, `${token}\n`, { flag: 'wx', mode: 0o600 })
    fs.chmodSync(file, 0o600)
  } catch (error) {
    throw new UsageError(`serve: cannot write the token file ${file}: ${errnoText(error)}`)
  }
  return { token, created: true }
}

/**
 * Runs `listen`, turning a failure to listen (a busy port or socket path, a refused address) into its
 * rejection. The `ws` server re-emits its HTTP server's 'error' event, and with no listener there that
 * is thrown as an uncaught exception instead of rejecting the listen: caught here while it listens.
 */
function guardListen<T>(listen: () => Promise<T>): Promise<T> {
  let onUncaught!: (error: unknown) => void
  const failed = new Promise<never>((_, reject) => {
    onUncaught = error => {
      if ((error as NodeJS.ErrnoException)?.syscall === 'listen') return reject(error)
      process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`)
      process.exit(1)
    }
  })
  process.on('uncaughtException', onUncaught)
  return Promise.race([listen(), failed]).finally(() => process.off('uncaughtException', onUncaught))
}

/** Whether a Unix socket path is left over by a server that is gone (nothing answers on it). */
function staleSocket(file: string): Promise<boolean> {
  try {
    if (!fs.statSync(file).isSocket()) return Promise.resolve(false)
  } catch {
    return Promise.resolve(false)
  }
  return new Promise(resolve => {
    const probe = net.connect(file)
    probe.once('connect', () => {
      probe.destroy()
      resolve(false)
    })
    probe.once('error', error => resolve((error as NodeJS.ErrnoException).code === 'ECONNREFUSED'))
  })
}

// ---- hold ----

type Outcome = { code: number } | { spawnError: NodeJS.ErrnoException }

/** How much longer than `--wait` a hold may go unanswered (the server unreachable meanwhile). */
const ANSWER_MARGIN = 10_000

/**
 * The timers of `hold` (the answer it waits for, the grace before SIGKILL), which keep the process
 * alive, unlike a store's; through `setTimer`, since `--wait 25d` is longer than a runtime's timer.
 */
const cliClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: handle => clearTimeout(handle as ReturnType<typeof setTimeout>),
}

async function hold(args: string[]): Promise<number> {
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
  const wait = duration(options.get('wait'), 'wait', 10_000)
  const ttl = duration(options.get('ttl'), 'ttl', 30_000)
  const maxHold = options.has('max-hold') ? duration(options.get('max-hold'), 'max-hold', 0) : undefined
  const grace = duration(options.get('grace'), 'grace', 5_000)

  // Signals: while waiting they cancel the hold; while the command runs they are passed on to it.
  const waiting = new AbortController()
  let child: ReturnType<typeof spawn> | undefined
  let finished = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (finished) return
    if (child) return killGroup(child, signal)
    waiting.abort(signal)
  }
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP']
  for (const s of signals) process.on(s, onSignal)

  let remote: ClientStore | undefined
  let lost: Lease | undefined
  let answerTimer: unknown
  try {
    remote = await openClient(url, options.get('token-file'), 'hold')
    if (waiting.signal.aborted) return 128 + signalNumber(waiting.signal.reason as NodeJS.Signals)
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
        warn(`hold: ${url}: no answer from the server within --wait and ${ANSWER_MARGIN / 1000}s more`)
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
      // Its own process group, so that a lost lease stops the command's children too.
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

// ---- claim ----

async function claim(args: string[]): Promise<number> {
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
  if (/^rediss?:\/\//.test(url)) throw new UsageError(`claim: ${url}: pools are not kept in Redis yet; give a server's ws:// URL`)
  const remote = await connect(url, { token: clientToken(options.get('token-file'), 'claim') })
  try {
    const pool = remote.pool(name, capacity === undefined ? undefined : { capacity })
    const id = options.get('id')
    const got = await pool.claim(n, { wait, ...(id === undefined ? {} : { id }), ...(ttl ? { ttl } : {}) })
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

// ---- inspect ----

async function inspect(args: string[]): Promise<number> {
  const { options, positionals, help } = parseArgs(args, { 'token-file': 'value', json: 'flag' }, 'inspect')
  if (help) {
    process.stdout.write(INSPECT_USAGE)
    return 0
  }
  if (positionals.length !== 1) throw new UsageError(`inspect: give the server's URL, as in holdfast inspect ws://127.0.0.1:7420 (see holdfast inspect --help)`)
  const url = positionals[0]!
  const remote = await openClient(url, options.get('token-file'), 'inspect')
  let timer: ReturnType<typeof setTimeout> | undefined
  let all: (KeyInfo | PoolInfo)[]
  try {
    all = await Promise.race([
      remote.inspect(),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new UsageError(`inspect: ${url}: no answer from the server within 10s`)), 10_000))),
    ])
  } finally {
    clearTimeout(timer)
    await remote.close().catch(() => {})
  }
  const entries = all.filter((e): e is KeyInfo => e.kind !== 'pool').sort((a, b) => cmp(a.kind, b.kind) || cmp(a.name, b.name) || cmp(a.key, b.key))
  const pools = all.filter((e): e is PoolInfo => e.kind === 'pool').sort((a, b) => cmp(a.name, b.name))
  if (options.has('json')) {
    process.stdout.write(`${escapeControls(JSON.stringify([...entries, ...pools], null, 2))}\n`)
    return 0
  }
  if (entries.length === 0) process.stdout.write('no busy keys\n')
  else {
    const rows = [['KIND', 'NAME', 'KEY', 'HOLDERS', 'WAITING']]
    for (const e of entries) {
      const holders = e.holders.map(h => `fence ${h.fence} (${age(h.heldMs)})`).join(', ')
      rows.push([e.kind, e.name, showKey(e.key), holders || '-', String(e.waiting)])
    }
    table(rows)
  }
  if (pools.length > 0) {
    process.stdout.write('\n')
    table([
      ['POOL', 'CAPACITY', 'LEFT', 'CLAIMS', 'WAITING'],
      ...pools.map(p => [p.name, String(p.capacity), String(p.remaining), String(p.claims), String(p.waiting)]),
    ])
  }
  return 0
}

/** Rows as columns padded to their widest cell (the last one not padded). */
function table(rows: string[][]): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map(r => r[i]!.length)))
  for (const r of rows) process.stdout.write(`${r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')}\n`)
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** A key as it is, unless spaces or control characters would blur the table: then quoted and escaped. */
function showKey(key: string): string {
  return /^[^\s\p{C}"]+$/u.test(key) ? key : escapeControls(JSON.stringify(key))
}

/**
 * Characters a terminal may obey rather than show, as `\uXXXX` escapes: JSON.stringify escapes C0
 * controls but leaves C1 controls (U+0080-U+009F; U+009B is a CSI that some terminals act on) and the
 * bidirectional formatting characters (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069) raw, so a
 * key someone else chose could rewrite or reorder what `holdfast inspect` prints. Applied to JSON text
 * these only ever stand inside strings, where the escape means the same character.
 */
function escapeControls(text: string): string {
  return text.replace(/[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, c => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** How long held: `250ms`, `12.3s`, `4m05s`, `2h07m`, `3d04h`. */
function age(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '?'
  if (ms < 1_000) return `${Math.round(ms)}ms`
  if (ms < 60_000) return ms % 1_000 === 0 ? `${ms / 1_000}s` : `${(Math.floor(ms / 100) / 10).toFixed(1)}s`
  const s = Math.floor(ms / 1_000)
  const two = (n: number) => String(n).padStart(2, '0')
  if (s < 3_600) return `${Math.floor(s / 60)}m${two(s % 60)}s`
  if (s < 86_400) return `${Math.floor(s / 3_600)}h${two(Math.floor(s / 60) % 60)}m`
  return `${Math.floor(s / 86_400)}d${two(Math.floor(s / 3_600) % 24)}h`
}
