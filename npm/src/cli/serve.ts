/**
 * `holdfast serve`: runs a store server, its fences kept in a directory, until SIGINT, SIGTERM,
 * SIGHUP or SIGQUIT (exit 0), or until the store closes itself after an internal error (a wasm trap:
 * exit 1, the error on stderr, once its answers were sent and its servers and directory let go). A
 * trap during the close a signal began exits 1 too, once that close let everything go: the stop was
 * not clean. 2 for every other error.
 */

import { randomBytes } from 'node:crypto'
import * as fs from 'node:fs'
import * as net from 'node:net'
import * as path from 'node:path'
import { ClosedError, fileStorage, openStore, type Store } from '../entry/node.js'
import { UsageError, errnoText, exitWith, parseArgs, readToken, say, signalNumber, warn } from './args.js'

export const SERVE_USAGE = `Usage: holdfast serve [--dir DIR] [--host HOST] [--port PORT | --socket PATH] [--token-file FILE]
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
SIGINT, SIGTERM, SIGHUP (its terminal closed) or SIGQUIT (Ctrl-\\) stops it cleanly: waiters are
answered, leases end, exit 0. A second signal while it stops leaves at once (exit 128+n).

Exit status: 0 stopped by SIGINT, SIGTERM, SIGHUP or SIGQUIT; 1 the store closed itself after an
internal error, or had one while a signal stopped it (a bug: waiters were answered and leases ended
as at SIGTERM, then the error is printed); 2 any other error (usage, a directory in use, a busy
port); 128+n a second signal n while it stopped.
`

export async function serve(args: string[]): Promise<number> {
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
  const maxHolds = holdsText === undefined ? undefined : Number(holdsText)
  if (holdsText !== undefined && (!/^\d+$/.test(holdsText) || maxHolds! < 1))
    throw new UsageError(`serve: --max-holds ${JSON.stringify(holdsText)} must be a whole number, 1 or more`)
  // As many as serve({ maxHolds }) takes: any whole number it can tell from the next one.
  if (maxHolds !== undefined && !Number.isSafeInteger(maxHolds))
    throw new UsageError(`serve: --max-holds ${JSON.stringify(holdsText)} must be a whole number from 1 to ${Number.MAX_SAFE_INTEGER}`)
  const host = options.get('host') ?? '127.0.0.1'
  const dir = options.get('dir') ?? '.holdfast'
  const tokenFile = path.resolve(options.get('token-file') ?? path.join(dir, 'token'))

  // Signals are caught from the start, so that none is missed between listening and saying so.
  let stopWith!: (signal: NodeJS.Signals) => void
  const stopSignal = new Promise<NodeJS.Signals>(resolve => (stopWith = resolve))
  let received = 0
  let stopped = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopped) return // exiting 0 now
    if (++received === 1) return stopWith(signal)
    // A second signal while closing: leave at once.
    warn(`${signal} again: leaving without a clean close`)
    exitWith(128 + signalNumber(signal))
  }
  // SIGHUP too: a server started from a terminal gets it when the terminal closes, and its default
  // action killed it there, its waiters unanswered and its leases left to run out. SIGQUIT (a
  // terminal's Ctrl-\) the same: its default action killed it as abruptly.
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT']
  for (const s of signals) process.on(s, onSignal)
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
      } else throw new UsageError(`serve: ${listenFailure(error, socket)}`)
    }
    // A relative --socket is listened on as given (a socket's path is short: 107 bytes), and said whole.
    say(`serving ${server.url} (token in ${tokenFile})`)
    // Until a signal, or until the store closes itself after an internal error: it answered every
    // request `closed`, then closed the servers once those answers were sent, and let the directory go.
    const ended = await Promise.race([stopSignal, open._whenTrapped()])
    if (ended instanceof ClosedError) return stoppedByTrap(ended)
    say(`stopping (${ended})`)
    store = undefined
    // A trap during the close (in the engine's own, or once it closed the engine) still lets the close
    // end everything and resolve; `_whenTrapped()` settles before it does, so `trap` is set by then.
    let trap: ClosedError | undefined
    void open._whenTrapped().then(closed => (trap = closed))
    try {
      await open.close()
    } catch (error) {
      // A trap during the close came first, and is the bug: it is the one told (exit 1, below).
      if (trap === undefined) {
        warn(`serve: close: ${(error as Error).message}`)
        return 2
      }
    }
    if (trap !== undefined) return stoppedByTrap(trap)
    say('stopped')
    stopped = true
    return 0
  } finally {
    // Stopped: late signals are ignored while the process exits. Else the default action is back.
    if (!stopped) for (const s of signals) process.off(s, onSignal)
    // Not serving after all: let the directory go.
    await store?.close().catch(() => {})
  }
}

/** The store closed after an internal error (a wasm trap), before or during a signal's close: exit 1. */
function stoppedByTrap(closed: ClosedError): number {
  warn(`serve: stopped by an internal error (code ${closed.code}): ${closed.message}`)
  return 1
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
    writeWhole(file, `${token}\n`)
  } catch (error) {
    throw new UsageError(`serve: cannot write the token file ${file}: ${errnoText(error)}`)
  }
  return { token, created: true }
}

/** Errors of `link(2)` that mean the filesystem makes no hard links. */
const NO_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'])

/**
 * Makes `file` (mode 0600) holding all of `text`, or nothing: written to a temporary file, fsynced,
 * then linked into place (EEXIST if another server made it meanwhile). Written in place, a kill -9 or
 * a power loss between its creation and its write left it empty, and a full disk left part of the
 * token: every later start refused "the token file is empty", or served a token shorter than made.
 */
function writeWhole(file: string, text: string): void {
  const dir = path.dirname(file)
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.tmp`)
  try {
    const fd = fs.openSync(temp, 'w', 0o600)
    try {
      fs.fchmodSync(fd, 0o600) // a file of this name left by a killed process of this pid keeps its mode
      fs.writeFileSync(fd, text) // goes on after a short write, and throws on a failed one
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
    try {
      fs.linkSync(temp, file)
    } catch (error) {
      // A filesystem without hard links: renamed into place, unless there is a file there already
      // (a server starting at the same instant may still make one between the check and the rename).
      if (!NO_LINKS.has((error as NodeJS.ErrnoException).code ?? '') || fs.existsSync(file)) throw error
      fs.renameSync(temp, file)
    }
  } finally {
    fs.rmSync(temp, { force: true })
  }
  // The new entry lasts a power loss (else a new token would be made at the next start, and the
  // clients that read this one refused): tried, not required, as some filesystems cannot.
  try {
    const fd = fs.openSync(dir, 'r')
    try {
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
  } catch {
    // the token is in place; only its entry's durability is unknown
  }
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
      exitWith(1)
    }
  })
  process.on('uncaughtException', onUncaught)
  return Promise.race([listen(), failed]).finally(() => process.off('uncaughtException', onUncaught))
}

/**
 * Why listening failed, as the user can act on it. Node reports a Unix socket path whose directory
 * does not exist as EACCES, "permission denied", which sent users to look at modes (as root too).
 */
function listenFailure(error: unknown, socket: string | undefined): string {
  if (socket !== undefined && (error as NodeJS.ErrnoException)?.code === 'EACCES') {
    const dir = path.dirname(path.resolve(socket))
    if (!fs.existsSync(dir)) return `--socket ${socket}: no such directory ${dir}`
  }
  const message = (error as Error)?.message ?? String(error)
  // serve()'s own refusals (a path too long for a socket) name it already: said once.
  return message.startsWith('serve: ') ? message.slice('serve: '.length) : message
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
