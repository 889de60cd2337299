/**
 * What the commands share: their argument parser and duration options, the one-line errors of the
 * command line (`UsageError`: printed as one line, exit 2), the store a client command opens (a
 * server over a connection, or a Redis), the token it presents, and how lines are printed.
 */

import * as fs from 'node:fs'
import { constants as osConstants } from 'node:os'
import { isatty } from 'node:tty'
import { connect, type KeyInfo, type LockOptions, type Pool, type PoolInfo, type RemoteLock } from '../entry/node.js'
import type { Clock } from '../util/clock.js'
import { toMs } from '../util/duration.js'
import { masked } from '../util/masked-url.js'

/** How much longer than `--wait` a hold or a claim may go unanswered (the server unreachable meanwhile). */
export const ANSWER_MARGIN = 10_000

/**
 * The timers of the commands (the answer a hold or a claim waits for, the grace before SIGKILL),
 * which keep the process alive, unlike a store's or a client's: a command's process has nothing else
 * that does while its server is away, and ended there it would exit 0 with nothing said. Through
 * `setTimer`, since `--wait 25d` is longer than a runtime's timer.
 */
export const cliClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: handle => clearTimeout(handle as ReturnType<typeof setTimeout>),
}

/**
 * `answer`, or a UsageError once the server at `url` has said nothing for 10 s: what `inspect`,
 * `release` and `confirm` wait for a one-off question (the client itself would wait on through
 * reconnections, where a command run by hand or by a script should say so and end).
 */
export async function answeredWithin<T>(answer: Promise<T>, command: string, url: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([
      answer,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new UsageError(`${command}: ${masked(url)}: no answer from the server within 10s`)), 10_000)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

/** Resolves (to nothing) once `signal` aborts: a command's wait for a connection, raced with its signals. */
export function aborted(signal: AbortSignal): Promise<undefined> {
  return new Promise(resolve => {
    if (signal.aborted) resolve(undefined)
    else signal.addEventListener('abort', () => resolve(undefined), { once: true })
  })
}

/** An error of the command line itself: printed as one line, exit 2. */
export class UsageError extends Error {}

export type Spec = Record<string, 'value' | 'flag'>
export type Parsed = { options: Map<string, string>; positionals: string[]; help: boolean }

/** A small parser: `--name value`, `--name=value`, flags, `-h`/`--help`; every other dash-word but a negative number is refused. */
export function parseArgs(args: string[], spec: Spec, command: string): Parsed {
  const options = new Map<string, string>()
  const positionals: string[] = []
  let help = false
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === '-h' || arg === '--help') {
      help = true
      continue
    }
    // A negative number is no option (none is named so): a key (-5 and '-5' are one key), or a count
    // its own check refuses, naming it.
    if (!arg.startsWith('-') || arg === '-' || /^-\d/.test(arg)) {
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

/** The bounds of a duration option, in ms, and how its error says them (`1s to 1h`, `more than 0 and at most 30d`). */
export interface DurationRange {
  min: number
  max: number
  said: string
}

/** A lease's ttl, as the engine bounds it (bounds.rs). */
export const LEASE_TTL: DurationRange = { min: 1_000, max: 3_600_000, said: '1s to 1h' }
/** A maxHold, or a claim's ttl: at most 30 days (bounds.rs `MAX_HOLD_MS`). */
export const UP_TO_30_DAYS: DurationRange = { min: 1, max: 30 * 86_400_000, said: 'more than 0 and at most 30d' }

/**
 * A duration option of `command`: as in the API (`250ms`, `30s`, `1m30s`), or a bare `0`. Out of
 * `range`, refused here, naming the value as typed: the API's own check would name it in ms
 * (`2678400000ms`, `0ms`). Its errors say the command first, as every usage error does.
 */
export function duration(command: string, value: string | undefined, name: string, fallback: number, range?: DurationRange): number {
  if (value === undefined) return fallback
  // A bare 0 is no duration to the API (it has no unit), but it is one here: checked as any other.
  let ms = 0
  if (value !== '0') {
    try {
      ms = toMs(value, `--${name}`)
    } catch {
      throw new UsageError(
        `${command}: --${name} ${JSON.stringify(value)} must be a duration: whole numbers with units, largest first, such as 250ms, 30s, 1m30s, 2h, 1d; or 0`,
      )
    }
  }
  if (range && !(ms >= range.min && ms <= range.max)) throw new UsageError(`${command}: --${name} ${JSON.stringify(value)} must be ${range.said}`)
  return ms
}

/** What `hold`, `inspect`, `release` and `confirm` use of a store over a connection or in Redis. */
export interface ClientStore {
  lock(name: string, options: LockOptions): Pick<RemoteLock, 'hold'>
  pool(name: string, options?: { capacity: number }): Pool
  inspect(): Promise<(KeyInfo | PoolInfo)[]>
  close(): Promise<void>
}

/**
 * The store at `url`: a Redis (`redis://`, `rediss://`: `holdfast/redis`, no token), or a store's
 * server over a connection (with the token of `--token-file`, else `HOLDFAST_TOKEN`).
 */
export async function openClient(url: string, tokenFile: string | undefined, command: string): Promise<ClientStore> {
  if (isRedisUrl(url, tokenFile, command)) {
    const { openRedisStore, NO_CLIENT } = await import('../redis/index.js')
    try {
      return await openRedisStore({ url })
    } catch (error) {
      // The API's words ("…or pass your own as option redis") mean nothing on a command line.
      if (error instanceof Error && error.message.includes(NO_CLIENT)) {
        throw new UsageError(`${command}: ${masked(url)}: a Redis URL needs a Redis client installed beside holdfast: npm install ioredis (or redis)`)
      }
      throw error
    }
  }
  return connect(url, { token: clientToken(tokenFile, command) })
}

/**
 * Whether `url` is a Redis's (`redis://`, `rediss://`), which takes no token. `--token-file` with one
 * is a UsageError: read by nothing, it was passed over without a word, and a user who had put the
 * Redis's password in it was answered NOAUTH (the password goes in the URL).
 */
export function isRedisUrl(url: string, tokenFile: string | undefined, command: string): boolean {
  if (!/^rediss?:\/\//.test(url)) return false
  if (tokenFile !== undefined) {
    throw new UsageError(
      `${command}: --token-file does not apply to a Redis URL, which takes no token (a password goes in the URL: redis://:PASSWORD@HOST:PORT)`,
    )
  }
  return true
}

/** The token of a client command: `--token-file FILE`, else `HOLDFAST_TOKEN`. */
export function clientToken(file: string | undefined, command: string): string {
  if (file !== undefined) return readToken(file, command)
  // Trimmed as a token file is: a variable set from a file or a secret often ends in a newline, which
  // the server (its token read from a file, trimmed) would refuse as another token.
  const env = process.env.HOLDFAST_TOKEN?.trim()
  if (env !== undefined && env.length > 0) return env
  throw new UsageError(`${command}: no token: give --token-file FILE, or set the environment variable HOLDFAST_TOKEN`)
}

export function readToken(file: string, command: string): string {
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

export function errnoText(error: unknown): string {
  const e = error as NodeJS.ErrnoException
  if (e?.code === 'ENOENT') return 'no such file'
  if (e?.code === 'EACCES') return 'permission denied'
  if (e?.code === 'EISDIR') return 'it is a directory'
  return String(e?.message ?? error)
}

/** One line, whatever the message held. */
export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim()
}

/**
 * Whoever reads the command's output may go away before it ends (`holdfast serve | head -1`, a log
 * pipe whose reader died): a write then fails EPIPE, which a stream with no 'error' listener throws
 * as an uncaught exception, and `serve` died in the middle of serving, a stack trace for its last
 * words and its store never closed. So does a terminal that closed (its window shut, an ssh session
 * gone): its SIGHUP stops `serve`, and every write to it from then on fails EIO. What a command
 * prints is for its reader; with none left it is not printed, and the command goes on to its own end
 * and exit status. Any other write error (a full disk under `> file`) still ends it, as it did: there
 * a reader would be misled.
 */
export function outputMayClose(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'EIO') throw error
    })
  }
}

/** Which of stdin, stdout and stderr were a terminal when the command started. */
const startedOnTerminal = [0, 1, 2].filter(fd => isatty(fd))

/**
 * Ends the process with `code`. The terminal a command started in may be gone by then (its window
 * closed, its ssh session lost: the SIGHUP that stops `serve` and cancels a hold's wait). At exit Node
 * sets each stdio descriptor that was a terminal back as it found it, and Node 20 takes the failure
 * of that (EIO, the terminal gone) for a bug of its own and aborts: exit 134, "Assertion failed" in
 * ResetStdio on stderr, whatever the command's status (nodejs/node#51519; later Nodes ignore it,
 * nodejs/node#58200). It passes over a descriptor that is closed: those of a terminal that is gone
 * (which `isatty` no longer calls one: its question fails EIO too) are closed first. Nothing could be
 * written to them anyway.
 */
export function exitWith(code: number): never {
  for (const fd of startedOnTerminal) {
    if (isatty(fd)) continue
    try {
      fs.closeSync(fd)
    } catch {
      // closed already
    }
  }
  return process.exit(code)
}

export function say(line: string): void {
  process.stdout.write(`holdfast: ${line}\n`)
}

export function warn(line: string): void {
  process.stderr.write(`holdfast: ${oneLine(line)}\n`)
}

export function signalNumber(signal: NodeJS.Signals): number {
  return (osConstants.signals as Record<string, number>)[signal] ?? 0
}

/** How long held: `250ms`, `12.3s`, `4m05s`, `2h07m`, `3d04h`. */
export function age(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '?'
  if (ms < 1_000) return `${Math.round(ms)}ms`
  if (ms < 60_000) return ms % 1_000 === 0 ? `${ms / 1_000}s` : `${(Math.floor(ms / 100) / 10).toFixed(1)}s`
  const s = Math.floor(ms / 1_000)
  const two = (n: number) => String(n).padStart(2, '0')
  if (s < 3_600) return `${Math.floor(s / 60)}m${two(s % 60)}s`
  if (s < 86_400) return `${Math.floor(s / 3_600)}h${two(Math.floor(s / 60) % 60)}m`
  return `${Math.floor(s / 86_400)}d${two(Math.floor(s / 3_600) % 24)}h`
}
