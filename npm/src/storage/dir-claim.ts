/**
 * `claimDirectory(root)`: makes one live process the holder of a directory, as `fileStorage` needs, with
 * a liveness test that the kernel ends with the process: a Unix socket bound in the directory. A
 * process's sockets close as it exits (kill -9, OOM kill, a container stopped, a reboot), before it is
 * reaped and whatever pid it had, so a new holder can take over at once; while the holder runs, it
 * answers a connection to its socket, so a second one is refused. No pid is read (pids are reused, and a
 * dead process keeps its pid while it is a zombie).
 *
 * The protocol, on the names `hf.<n>.sock` (n = 1, 2, …, one *incarnation* each):
 *  1. Bind and listen on a socket under a fresh random name (`hf.<random>.tmp.sock`).
 *  2. Scan the directory: m is the largest n of an `hf.<n>.sock` (0 if none). If m > 0, connect to
 *     `hf.<m>.sock`: a holder answers every connection (from its event loop), so an answer means a live
 *     holder: refused. ECONNREFUSED, or a connection reset unanswered, means its process is gone (or
 *     closed its store): a killed process's threads can take a few milliseconds to exit after it shows
 *     as a zombie, and meanwhile the kernel still queues connections, which it resets as the last one
 *     exits. ENOENT means the directory changed meanwhile: scan again. No answer at all (a stopped
 *     process) is refused too, after a while: it is not known to be gone.
 *  3. Claim `hf.<m+1>.sock` with a hard link to our socket (`link(2)`: atomic, EEXIST if another
 *     claimed it first: scan again). Connecting through the link reaches our socket.
 *  4. Scan again: if some `hf.<k>.sock` with k > m+1 exists, we lost: remove our link, scan again. Else
 *     the directory is ours: remove the temporary name, the older incarnations and the dead temporary
 *     names of processes that died while claiming. (One that was in fact between its bind and its
 *     listen finds its name gone when it links, and listens again under a new one.)
 *
 * Why at most one live holder. (a) Only the largest name is ever tested, and a name appears only
 * already listening (it is a link to a socket that listens), so a holder that runs is never seen dead
 * (it answers, or at least never refuses or resets a connection). (b) The largest name is never
 * removed: a holder's close leaves its name (dead from then on), and every other removal is of a name
 * below one just seen (older incarnations, a loser's own link), so the largest number in the directory
 * only grows. (c) While a holder W of w runs, nothing above w is linked: a claim of n+1 needs n seen as
 * the largest and dead. W's second scan saw nothing above w, so by (b) every later scan sees w or more
 * as the largest, and the first link above w would have needed w seen dead, against (a). A contender
 * whose scan is older than W's link either links a number below w (and sees w above it on its second
 * scan) or collides with w (EEXIST). So no second holder while W runs. And contenders racing over one
 * dead m do not all lose: the first to link m+1 wins, since by (c) nothing is linked above it.
 *
 * (b) is why close leaves its name. If it removed it, the count could fall back (to none), and a
 * contender that tested `hf.5.sock` dead long ago could link `hf.6.sock` after the holder of 6 closed
 * and removed it, and win beside a new holder of `hf.1.sock` who saw an empty directory.
 * (filestorage-restart.test.js makes four processes open and close stores on one directory as fast as
 * they can; with names removed on close they soon hold it two at a time.) So the directory keeps one
 * dead `hf.<n>.sock` of the last holder; do not remove `hf.*.sock` files while stores may open.
 *
 * Limits, each a `StorageError` saying so: a Unix socket path is limited (107 bytes on Linux, 103
 * elsewhere), so the socket is reached by the shorter of its absolute path and its path relative to the
 * working directory; a filesystem that refuses sockets or hard links cannot tell whether a holder runs.
 * Sockets bound on a network filesystem answer on their own machine only: one directory must not be
 * shared by stores on several machines.
 */

import * as fs from 'node:fs'
import * as net from 'node:net'
import * as path from 'node:path'
import { StorageError } from '../errors.js'

const INCARNATION = /^hf\.([1-9][0-9]{0,14})\.sock$/
const TEMPORARY = /^hf\.[0-9a-f]{16}\.tmp\.sock$/
/** The longest path a Unix socket takes, without its terminating NUL (`sun_path` is 108 bytes on Linux, 104 on the BSDs and macOS). */
const SOCKET_PATH_MAX = process.platform === 'linux' ? 107 : 103
/** Errors of bind and link that mean the filesystem cannot hold a socket, or a link to one. */
const UNSUPPORTED = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK', 'EXDEV'])
/** How many times the directory may change under a claim before it gives up: each retry means that
 * another process claimed or let go meanwhile. */
const ATTEMPTS = 64
/** What a holder answers on every connection: a live process's event loop runs. */
const ALIVE = 'holdfast\n'
/** How long a connected socket may stay silent before the holder is taken as alive but unresponsive. */
const ANSWER_WAIT = 2_000

/** A directory held: `release()` lets it go (the next store may claim it from then on). */
export interface Claim {
  release(): Promise<void>
}

/**
 * Claims `root` (an existing directory) for this process, or throws a `StorageError` naming `place`
 * when a live holder has it. `inUse` is the message for that case (the caller's words).
 */
export async function claimDirectory(root: string, place: string, inUse: (detail: string) => string): Promise<Claim> {
  const named = (name: string) => path.join(root, name)
  let temporary = named(`hf.${randomHex()}.tmp.sock`)
  let server = await listenAt(temporary, place)
  try {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const m = largest(root)
      if (m > 0) {
        const state = await probe(named(`hf.${m}.sock`), place)
        if (state === 'alive') throw new StorageError(inUse(`its socket ${named(`hf.${m}.sock`)} answers`))
        if (state === 'gone') continue
      }
      const mine = named(`hf.${m + 1}.sock`)
      try {
        fs.linkSync(temporary, mine)
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code === 'EEXIST') continue
        if (code === 'ENOENT' && fs.existsSync(root)) {
          // Our temporary name was swept by a holder that took it for a dead one (in the instant
          // between our bind and listen): listen again under a new one.
          await server.close()
          temporary = named(`hf.${randomHex()}.tmp.sock`)
          server = await listenAt(temporary, place)
          continue
        }
        throw unsupported(error, place, 'link a name to its socket')
      }
      if (largest(root) > m + 1) {
        fs.rmSync(mine, { force: true })
        continue
      }
      fs.rmSync(temporary, { force: true })
      await sweep(root, m + 1)
      const held = server
      return { release: () => held.close() }
    }
    throw new StorageError(`${place}: the directory kept changing under ${ATTEMPTS} attempts to claim it (other stores opening and closing on it)`)
  } catch (error) {
    await server.close()
    fs.rmSync(temporary, { force: true })
    throw error
  }
}

/** The largest incarnation number in `root`, 0 if none. */
function largest(root: string): number {
  let m = 0
  for (const name of fs.readdirSync(root)) {
    const n = INCARNATION.exec(name)
    if (n) m = Math.max(m, Number(n[1]))
  }
  return m
}

/** Removes the incarnations below `mine` (dead or losing) and the temporary names nobody listens on. */
async function sweep(root: string, mine: number): Promise<void> {
  const tidy = async (name: string) => {
    const n = INCARNATION.exec(name)
    const file = path.join(root, name)
    if (n ? Number(n[1]) < mine : TEMPORARY.test(name) && (await probe(file, '')) === 'dead') fs.rmSync(file, { force: true })
  }
  // Tidying only: what is left (a name that fails, or answers late) is swept by the next holder.
  await Promise.all(fs.readdirSync(root).map(name => tidy(name).catch(() => {})))
}

/**
 * Whether a live process holds the socket `file`: `alive` (it answered), `dead` (ECONNREFUSED: nobody
 * listens; or the connection was reset unanswered: its process ended as we asked, its threads still
 * exiting while the kernel queued our connection), `gone` (no such file). A connection that gets no
 * answer within `ANSWER_WAIT` (a stopped process, or one stuck in the kernel as it dies), or any other
 * failure (a full backlog, a socket of another user), cannot tell that the holder is gone: a
 * `StorageError`.
 */
function probe(file: string, place: string): Promise<'alive' | 'dead' | 'gone'> {
  return new Promise((resolve, reject) => {
    let socket: net.Socket
    try {
      socket = net.connect(socketPath(file, place))
    } catch (error) {
      return reject(error) // Deno without --allow-net throws here
    }
    const timer = setTimeout(() => {
      socket.destroy()
      reject(
        new StorageError(
          `${place}: cannot tell whether the store on ${file} still runs: it accepts connections but did not answer within ${ANSWER_WAIT} ms (a stopped process?)`,
        ),
      )
    }, ANSWER_WAIT)
    const settle = (state: 'alive' | 'dead' | 'gone' | Error) => {
      clearTimeout(timer)
      socket.destroy()
      if (state instanceof Error) reject(state)
      else resolve(state)
    }
    socket.once('data', () => settle('alive'))
    socket.once('end', () => settle('dead'))
    socket.once('error', error => {
      const code = (error as NodeJS.ErrnoException).code
      // A live holder never resets a connection (it answers and ends it; nothing is sent to it).
      if (code === 'ECONNREFUSED' || code === 'ECONNRESET') settle('dead')
      else if (code === 'ENOENT') settle('gone')
      else
        settle(new StorageError(`${place}: cannot tell whether the store on ${file} still runs: connecting to it failed (${error.message})`, { cause: error }))
    })
  })
}

/** A socket listening in the directory; `close()` stops it (its name stays). */
interface Listening {
  close(): Promise<void>
}

/**
 * Listens on the socket `file`, answering every connection with `ALIVE` and closing it; keeps no
 * process alive. The socket is not inherited by child processes (close-on-exec), which could outlive
 * the store and hold the directory: on Deno through `Deno.listen`, since Deno's `node:net` leaves its
 * Unix sockets inheritable.
 */
function listenAt(file: string, place: string): Promise<Listening> {
  const deno = (globalThis as { Deno?: DenoLike }).Deno
  if (deno && typeof deno.listen === 'function') return Promise.resolve().then(() => listenDeno(deno, file, place))
  return new Promise((resolve, reject) => {
    const server = net.createServer(connection => {
      connection.on('error', () => {}) // the asker may be gone already
      connection.end(ALIVE)
    })
    const failed = (error: Error) => reject(unsupported(error, place, 'bind a Unix socket'))
    server.once('error', failed)
    try {
      server.listen(socketPath(file, place), () => {
        server.off('error', failed)
        server.on('error', () => {}) // a listening server has nothing left to fail at
        server.unref()
        resolve({ close: () => new Promise(done => server.close(() => done())) })
      })
    } catch (error) {
      reject(error)
    }
  })
}

/** The parts of `Deno` that `listenDeno` uses (the package is typed without Deno's types). */
interface DenoLike {
  listen(options: { transport: 'unix'; path: string }): DenoListener
}
interface DenoListener extends AsyncIterable<{ write(bytes: Uint8Array): Promise<number>; close(): void }> {
  close(): void
  ref(): void
  unref(): void
}

function listenDeno(deno: DenoLike, file: string, place: string): Listening {
  let listener: DenoListener
  try {
    listener = deno.listen({ transport: 'unix', path: socketPath(file, place) })
  } catch (error) {
    throw unsupported(error, place, 'bind a Unix socket') // or Deno's refusal without --allow-net
  }
  listener.unref()
  const alive = new TextEncoder().encode(ALIVE)
  const serving = (async () => {
    try {
      for await (const connection of listener) {
        void connection
          .write(alive)
          .catch(() => 0) // the asker may be gone already
          .then(() => {
            try {
              connection.close()
            } catch {
              // closed already
            }
          })
      }
    } catch {
      // closed
    }
  })()
  return {
    close: async () => {
      try {
        // The socket is closed once its pending accept has ended, not at close(): wait for that, with
        // the accept counted by the event loop again so that its end is waited for.
        listener.ref()
        listener.close()
      } catch {
        // closed already
      }
      await serving
    },
  }
}

/** `file` as a Unix socket can be reached: its absolute path, or its shorter relative one. */
function socketPath(file: string, place: string): string {
  if (byteLength(file) <= SOCKET_PATH_MAX) return file
  let relative: string | undefined
  try {
    relative = `.${path.sep}${path.relative(process.cwd(), file)}`
  } catch {
    // no working directory to go by (Deno without read access to it)
  }
  if (relative !== undefined && byteLength(relative) <= SOCKET_PATH_MAX) return relative
  throw new StorageError(
    `${place}: the path of its Unix socket ${file} is ${byteLength(file)} bytes${relative === undefined ? '' : ` (${byteLength(relative)} relative to the working directory)`}, more than the ${SOCKET_PATH_MAX} bytes a Unix socket path may have; use a directory with a shorter path`,
  )
}

function byteLength(text: string): number {
  return new TextEncoder().encode(text).length
}

/** `error` of a bind or link, as a StorageError when it says that the filesystem cannot hold what it needs. */
function unsupported(error: unknown, place: string, what: string): unknown {
  const code = (error as NodeJS.ErrnoException | null)?.code
  if (code === undefined || !UNSUPPORTED.has(code)) return error
  return new StorageError(
    `${place}: cannot tell whether another store holds the directory: this filesystem refused to ${what} (${code}); fileStorage needs a directory on a local filesystem that keeps Unix sockets and hard links`,
    { cause: error },
  )
}

function randomHex(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8))
  return Array.from(bytes, b => b.toString(16).padStart(2, '0')).join('')
}
