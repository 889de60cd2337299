// `holdfast serve`: prints where it listens, makes a token with mode 0600 (or reads the one given),
// serves a Unix socket, keeps fences growing across restarts on one directory, and stops cleanly on
// SIGTERM and SIGINT: holders lose their leases, waiters are answered, exit 0; exits 1 when its store
// closed itself after an internal error (a wasm trap), once that ending was answered, or when one
// happened during the close a signal began.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ClosedError, connect, LimitError } from 'holdfast'
import { BIN, fileAppears, hasScript, inTerminal, run, serve, start, tempDir, trapInClose, trapOnSignal, until } from './helpers.js'

function assertStopped(r) {
  assert.equal(r.code, 0, JSON.stringify(r))
}

test('serve prints its URL and creates a 0600 token in its directory', async t => {
  const server = await serve()
  t.after(() => server.stop())
  assert.match(server.url, /^ws:\/\/127\.0\.0\.1:\d+$/)
  assert.equal(server.tokenFile, join(server.dir, 'token'))
  assert.match(server.proc.output().stdout, /created a token in .*token \(mode 0600\)/)
  assert.equal(statSync(server.tokenFile).mode & 0o777, 0o600)
  assert.match(server.token(), /^[0-9a-f]{64}$/)
})

test('serve reads --token-file when it exists, and creates it there when it does not', async t => {
  const dir = tempDir()
  const given = join(dir, 'given-token')
  writeFileSync(given, 'a-token-of-my-own\n', { mode: 0o600 })
  const first = await serve({ args: ['--port', '0', '--token-file', given] })
  t.after(() => first.stop())
  assert.equal(first.tokenFile, given)
  assert.doesNotMatch(first.proc.output().stdout, /created/)
  assert.equal(readFileSync(given, 'utf8'), 'a-token-of-my-own\n')
  const r = await run(['hold', first.url, 'jobs', 'a', '--token-file', given, '--', 'true'])
  assert.equal(r.code, 0, r.stderr)

  const missing = join(dir, 'nested', 'new-token')
  const second = await serve({ args: ['--port', '0', '--token-file', missing] })
  t.after(() => second.stop())
  assert.equal(second.tokenFile, missing)
  assert.equal(statSync(missing).mode & 0o777, 0o600)
  assert.match(second.token(), /^[0-9a-f]{64}$/)
})

test('serve reuses the token in its directory when restarted', async () => {
  const first = await serve()
  const token = first.token()
  assertStopped(await first.stop())
  const second = await serve({ dir: first.dir })
  assert.equal(second.token(), token)
  assert.doesNotMatch(second.proc.output().stdout, /created/)
  assertStopped(await second.stop())
})

test('serve on a Unix socket: clients use ws+unix://PATH', async t => {
  const socket = join(tempDir(), 'holdfast.sock')
  const server = await serve({ args: ['--socket', socket] })
  t.after(() => server.stop())
  assert.equal(server.url, `ws+unix://${socket}`)
  const r = await run(['hold', server.url, 'jobs', 'x', '--token-file', server.tokenFile, '--', 'sh', '-c', 'echo fence=$HOLDFAST_FENCE'])
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /^fence=\d+$/m)
})

test('serve --socket with a relative path prints a URL clients can use: ws+unix:// and the absolute path', async t => {
  const cwd = tempDir()
  const proc = start(['serve', '--dir', 'store', '--socket', 'holdfast.sock'], { cwd })
  t.after(() => proc.child.kill('SIGTERM'))
  const m = await until(() => /^holdfast: serving (\S+) \(token in (.+)\)$/m.exec(proc.output().stdout), 'serve to say where it listens')
  // Before the fix: "serving ws+unix://holdfast.sock", read by every client as the socket "/" (ECONNREFUSED).
  assert.equal(m[1], `ws+unix://${join(cwd, 'holdfast.sock')}`)
  const r = await run(['hold', m[1], 'jobs', 'x', '--token-file', m[2], '--', 'true'])
  assert.equal(r.code, 0, r.stderr)
})

test('serve --socket PATH with a relative path: clients in the same directory use ws+unix://PATH, as the help says', async t => {
  const cwd = tempDir()
  const proc = start(['serve', '--dir', 'store', '--socket', 'holdfast.sock'], { cwd })
  t.after(() => proc.child.kill('SIGTERM'))
  const m = await until(() => /^holdfast: serving (\S+) \(token in (.+)\)$/m.exec(proc.output().stdout), 'serve to say where it listens')
  // Before the fix: each command read ws+unix://holdfast.sock as the host "holdfast.sock" and the
  // socket "/", and failed "cannot reach the server: connect ECONNREFUSED /" (exit 2).
  const url = 'ws+unix://holdfast.sock'
  const token = ['--token-file', m[2]]
  for (const args of [
    ['hold', url, 'jobs', 'x', ...token, '--', 'true'],
    ['claim', url, 'seats', '1', '--id', 'a', '--capacity', '2', ...token],
    ['confirm', url, 'seats', 'a', ...token],
    ['release', url, 'seats', 'a', ...token],
    ['inspect', url, ...token],
  ]) {
    const r = await run(args, { cwd })
    assert.equal(r.code, 0, `${args[0]}: ${r.stderr}`)
  }
})

test('#13 item 7: serve --socket makes the socket 0600 (only its owner may connect); --socket-mode 660 lets its group in', async t => {
  const dir = tempDir()
  const own = await serve({ args: ['--socket', join(dir, 'own.sock')] })
  t.after(() => own.stop())
  assert.equal(statSync(join(dir, 'own.sock')).mode & 0o777, 0o600)
  const group = await serve({ args: ['--socket', join(dir, 'group.sock'), '--socket-mode', '660'] })
  t.after(() => group.stop())
  assert.equal(statSync(join(dir, 'group.sock')).mode & 0o777, 0o660)
  const r = await run(['hold', group.url, 'jobs', 'x', '--token-file', group.tokenFile, '--', 'true'])
  assert.equal(r.code, 0, r.stderr)
  for (const [args, message] of [
    [['--port', '0', '--socket-mode', '600'], /--socket-mode is the mode of a Unix socket: give --socket too/],
    [['--socket', join(dir, 'bad.sock'), '--socket-mode', 'rw'], /--socket-mode "rw" must be a mode in octal/],
    [['--socket', join(dir, 'bad.sock'), '--socket-mode', '999'], /--socket-mode "999" must be a mode in octal/],
  ]) {
    const bad = await run(['serve', '--dir', join(tempDir(), 'store'), ...args])
    assert.equal(bad.code, 2, JSON.stringify(bad))
    assert.match(bad.stderr, message)
  }
})

test('#13 item 4: serve --max-holds bounds the leases and waiting holds over connections in the whole store: one more is refused (LimitError naming maxHolds)', async t => {
  const server = await serve({ args: ['--port', '0', '--max-holds', '2'] })
  t.after(() => server.stop())
  const remote = await connect(server.url, { token: server.token() })
  t.after(() => remote.close())
  const lock = remote.lock('jobs', { ttl: '1h' })
  const a = await lock.acquire('a')
  await lock.acquire('b')
  await assert.rejects(lock.acquire('c'), e => e instanceof LimitError && /2 leases and waiting holds .*\(serve\(\) option maxHolds, holdfast serve --max-holds\)/.test(e.message))
  await a.release()
  await (await lock.acquire('c')).release()
  const bad = await run(['serve', '--dir', join(tempDir(), 'store'), '--port', '0', '--max-holds', '0'])
  assert.equal(bad.code, 2)
  assert.match(bad.stderr, /--max-holds "0" must be a whole number, 1 or more/)
})

test('serve --max-holds takes any whole number the API takes (a billion too), and refuses one past 2^53-1 saying so', async t => {
  // Before the fix: ten digits or more were refused "must be a whole number, 1 or more", which they are.
  const big = await serve({ args: ['--port', '0', '--max-holds', '1000000000'] })
  t.after(() => big.stop())
  const r = await run(['hold', big.url, 'jobs', 'x', '--token-file', big.tokenFile, '--', 'true'])
  assert.equal(r.code, 0, r.stderr)
  const huge = await run(['serve', '--dir', join(tempDir(), 'store'), '--port', '0', '--max-holds', '9007199254740992'])
  assert.equal(huge.code, 2)
  assert.match(huge.stderr, /^holdfast: serve: --max-holds "9007199254740992" must be a whole number from 1 to 9007199254740991\n$/)
})

test('serve takes over a Unix socket left by a server that died', async () => {
  const socket = join(tempDir(), 'holdfast.sock')
  const first = await serve({ args: ['--socket', socket] })
  await first.stop('SIGKILL')
  assert.ok(existsSync(socket), 'the dead server left its socket')
  const second = await serve({ dir: first.dir, args: ['--socket', socket] })
  const r = await run(['hold', second.url, 'jobs', 'x', '--token-file', second.tokenFile, '--', 'true'])
  assert.equal(r.code, 0, r.stderr)
  assertStopped(await second.stop())
})

test('serve --socket in a directory that does not exist: exit 2, one line naming the directory (not "permission denied")', async () => {
  const dir = join(tempDir(), 'missing')
  const r = await run(['serve', '--dir', join(tempDir(), 'store'), '--socket', join(dir, 'holdfast.sock')])
  assert.equal(r.code, 2, JSON.stringify(r))
  // Before the fix: "listen EACCES: permission denied ...", Node's word for a missing directory there.
  assert.match(r.stderr, /^holdfast: serve: --socket .*holdfast\.sock: no such directory .*missing\n$/)
})

/** The state letter of a process in /proc (`Z` for a zombie). */
function procState(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  return stat.slice(stat.lastIndexOf(')') + 2)[0]
}

test('#13 item 1: serve starts again at once on its directory after kill -9 of its process group, the killed server still an unreaped zombie', { skip: !existsSync('/proc/self/stat') && 'needs /proc' }, async t => {
  const dir = join(tempDir(), 'store')
  // `sh` starts the server in a process group of its own and becomes `sleep`, which never reaps it.
  const parent = spawn('sh', ['-c', 'setsid "$@" & echo "pid $!"; exec sleep 120', 'sh', BIN, 'serve', '--dir', dir, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] })
  t.after(() => parent.kill('SIGKILL'))
  let stdout = ''
  parent.stdout.setEncoding('utf8').on('data', d => (stdout += d))
  await until(() => /^holdfast: serving /m.test(stdout), 'the first server to listen')
  const pid = Number(/^pid (\d+)$/m.exec(stdout)[1])
  const killed = performance.now()
  process.kill(-pid, 'SIGKILL')
  await until(() => procState(pid) === 'Z', 'the killed server to be a zombie')
  const second = await serve({ dir })
  const served = performance.now()
  assert.equal(procState(pid), 'Z', 'the killed server was still a zombie when the new one started')
  console.log(`# #13 item 1: holdfast serve serving again ${(served - killed).toFixed(0)} ms after kill -9 of the old one's process group (the start of a new process included)`)
  const r = await run(['hold', second.url, 'jobs', 'x', '--token-file', second.tokenFile, '--', 'true'])
  assert.equal(r.code, 0, r.stderr)
  assertStopped(await second.stop())
})

const prlimit = ['/usr/bin/prlimit', '/bin/prlimit'].find(existsSync)

test('a token file the disk took only part of is not kept: serve fails saying so, and the next start makes a whole token', { skip: !prlimit && 'needs prlimit (util-linux)' }, async t => {
  const dir = join(tempDir(), 'store')
  // The directory opened once before, so that the next start writes only its fence ceiling and pid
  // (16 and 8 bytes), under a file size limit of 24 bytes, which the 65 bytes of a token pass: the
  // write is cut short, as on a disk that fills up in its middle, and the next one fails EFBIG.
  assertStopped(await (await serve({ dir, args: ['--port', '0', '--token-file', join(dir, 'first-token')] })).stop())
  const tokenFile = join(dir, 'token')
  const cut = await new Promise((resolve, reject) => {
    const child = spawn(prlimit, ['--fsize=24', BIN, 'serve', '--dir', dir, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', d => (stderr += d))
    child.once('error', reject)
    child.once('close', code => resolve({ code, stderr }))
  })
  assert.equal(cut.code, 2, cut.stderr)
  assert.match(cut.stderr, /cannot write the token file/)
  // Started again with room on the disk: a whole token, never the part the full disk took (a shorter
  // secret), nor an empty file that stops every start ("the token file is empty").
  const again = await serve({ dir })
  t.after(() => again.stop())
  assert.match(again.proc.output().stdout, /created a token/)
  assert.match(again.token(), /^[0-9a-f]{64}$/)
  assert.equal(statSync(tokenFile).mode & 0o777, 0o600)
  assertStopped(await again.stop())
})

test('fences keep growing across a restart of the server on the same directory', async () => {
  const first = await serve()
  const fence = async server => {
    const r = await run(['hold', server.url, 'jobs', 'f', '--token-file', server.tokenFile, '--', 'sh', '-c', 'echo $HOLDFAST_FENCE'])
    assert.equal(r.code, 0, r.stderr)
    return Number(r.stdout.trim())
  }
  const before = await fence(first)
  assertStopped(await first.stop())
  const second = await serve({ dir: first.dir })
  const after = await fence(second)
  assert.ok(after > before, `fence ${after} after the restart, ${before} before`)
  assertStopped(await second.stop())
})

// SIGHUP: its terminal closed; SIGQUIT: a terminal's Ctrl-\. Before each was handled, its default
// action killed serve (no exit status), nobody answered.
for (const signal of ['SIGTERM', 'SIGHUP', 'SIGQUIT']) {
  test(`${signal} stops serve with exit 0: the holder loses its lease (exit 3), the waiter is answered (exit 2), the directory let go`, async t => {
    const server = await serve()
    t.after(() => server.stop('SIGKILL'))
    const dir = tempDir()
    const holder = start(['hold', server.url, 'jobs', 'k', '--token-file', server.tokenFile, '--', 'sh', '-c', `touch ${dir}/held; exec sleep 30`])
    t.after(() => holder.child.kill('SIGKILL'))
    await fileAppears(join(dir, 'held'))
    const waiter = start(['hold', server.url, 'jobs', 'k', '--wait', '1m', '--token-file', server.tokenFile, '--', 'touch', join(dir, 'waiter-ran')])
    t.after(() => waiter.child.kill('SIGKILL'))
    // Wait until the server has the waiter in line.
    await until(async () => (await run(['inspect', server.url, '--token-file', server.tokenFile])).stdout.match(/jobs\s+k\s+fence \d+ \([^)]*\)\s+1$/m), 'the waiter in line')

    const stopped = await server.stop(signal)
    assert.equal(stopped.code, 0, JSON.stringify(stopped))
    assert.match(stopped.stdout, new RegExp(`stopping \\(${signal}\\)\\nholdfast: stopped\\n$`))
    assert.ok(!existsSync(join(server.dir, 'holdfast.lock')), 'the directory lock is let go')

    const h = await holder.done
    assert.equal(h.code, 3, h.stderr)
    assert.match(h.stderr, /stopping the command/)
    const w = await waiter.done
    assert.equal(w.code, 2, w.stderr)
    assert.ok(!existsSync(join(dir, 'waiter-ran')), 'the waiter never ran its command')
    // The directory was let go: a server starts on it at once.
    const again = await serve({ dir: server.dir })
    assertStopped(await again.stop())
  })
}

test('serve whose stdout is a pipe closed by its reader (holdfast serve | head -1) goes on serving, and SIGTERM still stops it cleanly: exit 0, no error', async t => {
  const server = await serve()
  t.after(() => server.stop('SIGKILL'))
  // The reader goes away once it read where the server listens, as `head -1` would.
  server.proc.child.stdout.destroy()
  const held = await run(['hold', server.url, 'jobs', 'piped', '--token-file', server.tokenFile, '--', 'true'])
  assert.equal(held.code, 0, held.stderr)
  // Before the fix: "stopping (SIGTERM)" written to the closed pipe threw EPIPE, unhandled: exit 1 with
  // a stack trace, the store never closed.
  const stopped = await server.stop('SIGTERM')
  assert.equal(stopped.code, 0, JSON.stringify(stopped))
  assert.equal(stopped.stderr, '')
  assert.ok(!existsSync(join(server.dir, 'holdfast.lock')), 'the directory lock is let go')
})

test('serve started in a terminal that then closes (SIGHUP, and its output failing EIO) stops cleanly: the holder is told the store closed (exit 3), the waiter is answered (exit 2), exit 0', { skip: !hasScript && 'needs script(1), util-linux' }, async t => {
  const dir = join(tempDir(), 'store')
  const marks = tempDir()
  const served = await inTerminal(['serve', '--port', '0', '--dir', dir])
  t.after(() => served.kill())
  const [, url, tokenFile] = await until(() => /holdfast: serving (\S+) \(token in (.+?)\)\r?\n/.exec(served.shown()), 'serve in the terminal to listen')
  const holder = start(['hold', url, 'jobs', 'k', '--token-file', tokenFile, '--', 'sh', '-c', `touch ${marks}/held; exec sleep 30`])
  t.after(() => holder.child.kill('SIGKILL'))
  await fileAppears(join(marks, 'held'))
  const waiter = start(['hold', url, 'jobs', 'k', '--wait', '1m', '--token-file', tokenFile, '--', 'touch', join(marks, 'waiter-ran')])
  t.after(() => waiter.child.kill('SIGKILL'))
  await until(async () => / 1$/m.test((await run(['inspect', url, '--token-file', tokenFile])).stdout), 'the waiter in line')

  // Before the fix: SIGHUP killed serve at once (and, caught, its "stopping" line to the closed
  // terminal threw EIO): the holder learned nothing until its lease ran out. Then Node 20 aborted
  // once serve had stopped, in its own reset of the terminal at exit: 134 (nodejs/node#51519).
  const stopped = await served.hangUp()
  assert.equal(stopped.code, 0, stopped.stderr)
  assert.equal(stopped.stderr, '')
  const h = await holder.done
  assert.equal(h.code, 3, h.stderr)
  assert.match(h.stderr, /the server's store closed/)
  const w = await waiter.done
  assert.equal(w.code, 2, w.stderr)
  assert.ok(!existsSync(join(marks, 'waiter-ran')), 'the waiter never ran its command')
})

test('SIGINT stops serve with exit 0', async () => {
  const server = await serve()
  const stopped = await server.stop('SIGINT')
  assert.equal(stopped.code, 0, JSON.stringify(stopped))
  assert.match(stopped.stdout, /stopping \(SIGINT\)/)
})

test('serve refuses a directory another server uses, and a busy port: exit 2, one line', async t => {
  const server = await serve()
  t.after(() => server.stop())
  const sameDir = await run(['serve', '--dir', server.dir, '--port', '0'])
  assert.equal(sameDir.code, 2, JSON.stringify(sameDir))
  assert.match(sameDir.stderr, /^holdfast: serve: .*in use by another open store.*\n$/)
  const port = new URL(server.url).port
  const otherDir = join(tempDir(), 'store')
  mkdirSync(otherDir)
  const samePort = await run(['serve', '--dir', otherDir, '--port', port])
  assert.equal(samePort.code, 2, JSON.stringify(samePort))
  assert.match(samePort.stderr, /^holdfast: serve: .*EADDRINUSE.*\n$/)
  assert.ok(!existsSync(join(otherDir, 'holdfast.lock')), 'the failed server let its directory go')
})

/**
 * A client of `server` holding jobs/k, and a hold of it waiting in line on the server: `lost` resolves
 * to the reason the lease ends with. With no reconnect, a connection merely cut would end both as
 * "connection closed": the server's own answers say the store closed.
 */
async function heldAndWaiting(t, server) {
  const remote = await connect(server.url, { token: server.token(), reconnect: false })
  t.after(() => remote.close())
  const lock = remote.lock('jobs', { ttl: '1h' })
  const lease = await lock.acquire('k')
  const lost = new Promise(resolve => lease.signal.addEventListener('abort', () => resolve(lease.signal.reason)))
  const waiter = lock.acquire('k', { wait: '1h' })
  waiter.catch(() => {}) // looked at by the test
  // Wait until the server has the waiter in line.
  await until(async () => (await remote.inspect()).some(info => info.key === 'k' && info.waiting === 1), 'the waiter in line')
  return { lost, waiter }
}

/** `holdfast serve` left with exit 1, the trap's code and message on one stderr line, the directory let go. */
function assertTrapped(exited, server) {
  assert.equal(exited.code, 1, JSON.stringify(exited))
  assert.match(exited.stderr, /^holdfast: serve: stopped by an internal error \(code closed\): the store closed after an internal error: .+\n$/)
  assert.doesNotMatch(exited.stdout, /stopped/)
  assert.ok(!existsSync(join(server.dir, 'holdfast.lock')), 'the directory lock is let go')
}

test('LOCK-06, a wasm trap: serve exits 1 once its store closed itself, after the trap\'s answers were sent, naming the error (its code and message) on stderr', async t => {
  const server = await serve({ env: trapOnSignal() })
  t.after(() => server.stop('SIGKILL'))
  const { lost, waiter } = await heldAndWaiting(t, server)

  server.proc.child.kill('SIGUSR2') // the store traps (trap-on-sigusr2.js)
  // The trap's answers come over the connection before the process leaves.
  const reason = await lost
  assert.ok(reason instanceof ClosedError && /the server's store closed/.test(reason.message), String(reason))
  await assert.rejects(waiter, e => e instanceof ClosedError && /internal error/.test(e.message))
  // Before the fix: the server stopped listening, then the process left with exit 0, printing nothing.
  let exited
  void server.proc.done.then(r => (exited = r))
  await until(() => exited, 'holdfast serve to exit after its store trapped')
  assertTrapped(exited, server)
})

for (const where of ['engine', 'after']) {
  const during = where === 'engine' ? "in the engine's own close" : 'once the close closed the engine, while it waits for what it closes'
  test(`LOCK-06, a wasm trap during the close SIGTERM began (${during}): serve exits 1, the error's code and message on stderr; the client was answered closed, and the directory let go`, async t => {
    const server = await serve({ env: trapInClose(where) })
    t.after(() => server.stop('SIGKILL'))
    const { lost, waiter } = await heldAndWaiting(t, server)

    const stopped = await server.stop('SIGTERM') // the store traps as it closes (trap-in-close.js)
    // Before the fix: exit 0, "stopped" on stdout and nothing on stderr, as after a clean stop.
    assertTrapped(stopped, server)
    assert.match(stopped.stdout, /stopping \(SIGTERM\)/)
    // The answers came over the connection before it closed.
    const reason = await lost
    assert.ok(reason instanceof ClosedError && /the server's store closed/.test(reason.message), String(reason))
    await assert.rejects(waiter, e => e instanceof ClosedError && /the store (is closed|closed after an internal error)/.test(e.message))
    // A new server serves the directory.
    const next = await serve({ dir: server.dir })
    const r = await run(['hold', next.url, 'jobs', 'k', '--token-file', next.tokenFile, '--', 'true'])
    assert.equal(r.code, 0, r.stderr)
    assertStopped(await next.stop())
  })
}
