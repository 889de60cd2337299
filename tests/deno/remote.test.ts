// Serving and connecting on Deno, over its server (Node's transport: node:http and ws, under Deno) and
// Deno's own client (the global WebSocket): what tests/js/remote-leases.test.js does not cover there — Unix
// sockets, TLS, the wire shared with Node's `ws` transport both ways, and bad clients refused one by
// one. tests/deno/run.sh runs it with --allow-net, --allow-read/--allow-write (socket paths, temp
// dirs), --allow-env and --allow-run (Node and Deno child processes, openssl for a test certificate).
import assert from 'node:assert/strict'
import { openStore, memoryStorage, connect, ClosedError, type Lease } from 'npm:holdfast'

const TOKEN = 'deno-test-token-0123456789'

async function tempDir(prefix: string): Promise<string> {
  return await Deno.makeTempDir({ prefix })
}

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return
    await new Promise(r => setTimeout(r, 10))
  }
  assert.fail(`timed out waiting for: ${what}`)
}

/** A child process (Node, or Deno) with piped stdio; `line()` reads its stdout a line at a time. */
function child(cmd: string, args: string[], env: Record<string, string> = {}) {
  const proc = new Deno.Command(cmd, { args, env, stdin: 'piped', stdout: 'piped', stderr: 'piped' }).spawn()
  const lines = proc.stdout.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  const stderr = new Response(proc.stderr).text()
  const stdin = proc.stdin.getWriter()
  let ended: Promise<{ code: number; stderr: string }> | undefined
  return {
    async write(line: string): Promise<void> {
      await stdin.write(new TextEncoder().encode(`${line}\n`))
    },
    async line(): Promise<string> {
      for (;;) {
        const nl = buffer.indexOf('\n')
        if (nl >= 0) {
          const line = buffer.slice(0, nl)
          buffer = buffer.slice(nl + 1)
          return line
        }
        const { value, done } = await lines.read()
        if (done) throw new Error(`${cmd} ended: ${await stderr}`)
        buffer += value
      }
    },
    end(): Promise<{ code: number; stderr: string }> {
      return (ended ??= (async () => {
        await stdin.close().catch(() => {})
        await lines.cancel().catch(() => {})
        const status = await proc.status
        return { code: status.code, stderr: await stderr }
      })())
    },
  }
}

/** Node (the machine's), running an ES module that imports `holdfast` from this project: the node entry, over `ws`. */
function node(source: string, env: Record<string, string> = {}) {
  return child('node', ['--input-type=module', '-e', source], env)
}

Deno.test('Deno: serve on a Unix socket and connect over it (ws+unix://); the socket file goes with the server', async () => {
  const dir = await tempDir('holdfast-unix-')
  const path = `${dir}/holdfast.sock`
  const store = await openStore({ storage: memoryStorage() })
  try {
    const server = await store.serve({ path, token: TOKEN })
    assert.equal(server.url, `ws+unix://${path}`)
    const a = await connect(server.url, { token: TOKEN })
    const b = await connect(server.url, { token: TOKEN })
    const la = a.lock('jobs', { wait: Infinity })
    const lb = b.lock('jobs', { wait: Infinity })
    const first = await la.acquire('k')
    const order: string[] = []
    const second = lb.hold('k', lease => (order.push('b'), lease.fence))
    await until(() => store.inspect()[0]?.waiting === 1, 'b waits over the socket')
    const third = store.lock('jobs', { wait: Infinity }).hold('k', lease => (order.push('local'), lease.fence))
    await first.release()
    const [fb, fl] = await Promise.all([second, third])
    assert.deepEqual(order, ['b', 'local'], 'served in the order they came')
    assert.ok(first.fence < fb && fb < fl)
    assert.equal(server.connections, 2)
    await a.close()
    await b.close()
    await server.close()
    await assert.rejects(Deno.stat(path), Deno.errors.NotFound)
    await assert.rejects(connect(`ws+unix://${path}`, { token: TOKEN }), e => e instanceof ClosedError && /cannot reach/.test(e.message))
  } finally {
    await store.close()
    await Deno.remove(dir, { recursive: true })
  }
})

Deno.test('Deno server, Node client (ws): they speak one wire; a Node hold waits in line behind a Deno one', async () => {
  const store = await openStore({ storage: memoryStorage() })
  const server = await store.serve({ port: 0, token: TOKEN })
  const held = await store.lock('jobs').acquire('k')
  const n = node(
    `import { connect } from 'holdfast'
     const remote = await connect(process.env.URL, { token: process.env.TOKEN })
     console.log('connected')
     const fence = await remote.lock('jobs', { wait: '30s', ttl: '2s' }).hold('k', lease => lease.fence)
     console.log(fence)
     await remote.close()`,
    { URL: server.url, TOKEN },
  )
  try {
    assert.equal(await n.line(), 'connected')
    await until(() => store.inspect()[0]?.waiting === 1, 'the Node client waits')
    await held.release()
    const fence = Number(await n.line())
    assert.ok(fence > held.fence, `${fence} > ${held.fence}`)
    const { code, stderr } = await n.end()
    assert.equal(code, 0, stderr)
    await until(() => store.inspect().length === 0, 'released')
  } finally {
    await n.end()
    await store.close()
  }
})

Deno.test('Node server (ws), Deno client: holds, renewals past the ttl, and the server gone → lost', async () => {
  const n = node(
    `import { openStore, memoryStorage } from 'holdfast'
     import { createInterface } from 'node:readline'
     const store = await openStore({ storage: memoryStorage() })
     const server = await store.serve({ port: 0, token: process.env.TOKEN })
     console.log(server.url)
     for await (const line of createInterface({ input: process.stdin })) {
       if (line === 'inspect') console.log(JSON.stringify(store.inspect()))
       if (line === 'close') { await store.close(); console.log('closed') }
     }`,
    { TOKEN },
  )
  try {
    const url = await n.line()
    assert.match(url, /^ws:\/\/127\.0\.0\.1:\d+$/)
    const remote = await connect(url, { token: TOKEN, reconnect: false })
    const lock = remote.lock('jobs', { ttl: '1s' })
    let lease!: Lease
    const hold = lock.hold('k', async l => {
      lease = l
      // Three ttls: renewed every ttl/3 over Deno's WebSocket client.
      await new Promise(r => setTimeout(r, 3_000))
      return l.fence
    })
    const fence = await hold
    assert.equal(fence, lease.fence)
    assert.equal(lease.lost, false, 'renewed')
    const again = await lock.acquire('k')
    assert.ok(again.fence > fence)
    await again.release()
    // The server's store closes with a lease held over the connection: the lease is lost (ClosedError).
    const last = await lock.acquire('k')
    await n.write('close')
    assert.equal(await n.line(), 'closed')
    await until(() => last.lost, 'the Deno client was told')
    assert.ok(last.signal.reason instanceof ClosedError, String(last.signal.reason))
    await remote.close()
  } finally {
    await n.end()
  }
})

/** Opens a raw WebSocket and answers how it closed. */
async function rawClose(url: string, send: (ws: WebSocket) => void): Promise<number> {
  const ws = new WebSocket(url)
  ws.binaryType = 'arraybuffer'
  await new Promise((resolve, reject) => {
    ws.onopen = resolve
    ws.onerror = reject
  })
  const closed = new Promise<number>(resolve => (ws.onclose = e => resolve(e.code)))
  send(ws)
  return await closed
}

Deno.test('Deno server: plain HTTP gets 426; a text frame, a frame over 64 KiB or junk closes only that connection (a text frame as junk: 4400)', async () => {
  const store = await openStore({ storage: memoryStorage() })
  try {
    const server = await store.serve({ port: 0, token: TOKEN })
    const good = await connect(server.url, { token: TOKEN })
    const lease = await good.lock('jobs').acquire('k')
    const http = await fetch(server.url.replace('ws://', 'http://'))
    assert.equal(http.status, 426)
    assert.match(await http.text(), /WebSocket/)
    assert.equal(await rawClose(server.url, ws => ws.send('hello')), 4400)
    assert.equal(await rawClose(server.url, ws => ws.send(new Uint8Array(64 * 1024 + 1))), 1009)
    assert.equal(await rawClose(server.url, ws => ws.send(new Uint8Array([0xff, 0xff, 0xff, 0xff, 1, 2, 3]))), 4400)
    // The good client was not harmed.
    assert.equal(lease.lost, false)
    assert.deepEqual(await good.lock('jobs').tryHold('k', () => 1), { acquired: false })
    await lease.release()
    assert.equal(await good.lock('jobs').hold('k', l => l.key), 'k')
    await good.close()
  } finally {
    await store.close()
  }
})

async function openssl(args: string[]): Promise<void> {
  const out = await new Deno.Command('openssl', { args, stdout: 'null', stderr: 'piped' }).output()
  assert.equal(out.code, 0, `openssl ${args.join(' ')}: ${new TextDecoder().decode(out.stderr)}`)
}

async function makeCertificates(dir: string): Promise<void> {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  await openssl(['req', '-x509', ...ec, '-days', '1', '-subj', '/CN=holdfast-test-ca', '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign', '-keyout', `${dir}/ca.key`, '-out', `${dir}/ca.pem`])
  await openssl(['req', ...ec, '-subj', '/CN=localhost', '-keyout', `${dir}/key.pem`, '-out', `${dir}/leaf.csr`])
  await Deno.writeTextFile(`${dir}/leaf.ext`, 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n')
  await openssl(['x509', '-req', '-in', `${dir}/leaf.csr`, '-CA', `${dir}/ca.pem`, '-CAkey', `${dir}/ca.key`, '-CAcreateserial', '-days', '1',
    '-extfile', `${dir}/leaf.ext`, '-out', `${dir}/cert.pem`])
}

Deno.test('Deno server over TLS (serve({ tls })): Node and Deno clients connect with wss:// (Deno with --cert, or the ca option)', async () => {
  const dir = await tempDir('holdfast-tls-')
  try {
    // A test CA and a certificate for 127.0.0.1 signed by it (rustls, under Deno's client, refuses a
    // self-signed certificate used as its own CA).
    await makeCertificates(dir)
    const cert = await Deno.readTextFile(`${dir}/cert.pem`)
    const key = await Deno.readFile(`${dir}/key.pem`) // bytes work as well as text
    const store = await openStore({ storage: memoryStorage() })
    try {
      const server = await store.serve({ port: 0, token: TOKEN, tls: { cert, key } })
      assert.match(server.url, /^wss:\/\/127\.0\.0\.1:\d+$/)
      const held = await store.lock('jobs').acquire('k')
      // A Node client trusting the certificate.
      const n = node(
        `import { connect } from 'holdfast'
         const remote = await connect(process.env.URL, { token: process.env.TOKEN })
         console.log(await remote.lock('jobs', { wait: '30s' }).hold('k', lease => lease.fence))
         await remote.close()`,
        { URL: server.url, TOKEN, NODE_EXTRA_CA_CERTS: `${dir}/ca.pem` },
      )
      // A Deno client, in its own process: Deno takes extra CA certificates at startup (--cert).
      const d = child(Deno.execPath(), [
        'eval',
        `--cert=${dir}/ca.pem`,
        `import { connect } from 'npm:holdfast'
         const remote = await connect(Deno.env.get('URL'), { token: Deno.env.get('TOKEN') })
         console.log(await remote.lock('jobs', { wait: '30s' }).hold('k', lease => lease.fence))
         await remote.close()`,
      ], { URL: server.url, TOKEN, NO_COLOR: '1' })
      await until(() => store.inspect()[0]?.waiting === 2, 'both clients wait')
      await held.release()
      const fences = [Number(await n.line()), Number(await d.line())].sort((a, b) => a - b)
      assert.ok(fences[0]! > held.fence && fences[1]! > fences[0]!, `fences ${held.fence} ${fences}`)
      for (const c of [n, d]) {
        const { code, stderr } = await c.end()
        assert.equal(code, 0, stderr)
      }
      // In this process: connect(url, { ca }) trusts the CA for this connection only.
      await assert.rejects(connect(server.url, { token: TOKEN, reconnect: false }), ClosedError, 'untrusted without ca')
      const remote = await connect(server.url, { token: TOKEN, ca: await Deno.readTextFile(`${dir}/ca.pem`) })
      assert.ok((await remote.lock('jobs').hold('k', l => l.fence)) > fences[1]!)
      await remote.close()
    } finally {
      await store.close()
    }
  } finally {
    await Deno.remove(dir, { recursive: true })
  }
})

/** `promise`, or a failure naming `what` after `ms` (a server that never cuts must fail, not hang). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`not within ${ms}ms: ${what}`)), ms)))
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

/**
 * A raw TCP connection to `url`'s port that reads (and drops) all it gets, and never answers a close:
 * `answered` resolves at its first bytes read, `ended` when the server cuts it.
 */
async function rawTcp(url: string): Promise<{ conn: Deno.Conn; answered: Promise<void>; ended: Promise<void>; write(text: string): Promise<void> }> {
  const conn = await Deno.connect({ hostname: '127.0.0.1', port: Number(new URL(url).port) })
  let answer!: () => void
  const answered = new Promise<void>(resolve => (answer = resolve))
  const ended = (async () => {
    const buffer = new Uint8Array(64 * 1024)
    while ((await conn.read(buffer).catch(() => null)) !== null) answer()
  })()
  return { conn, answered, ended, write: async text => void (await conn.write(new TextEncoder().encode(text)).catch(() => 0)) }
}

const UPGRADE = 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: CQkJCQkJCQkJCQkJCQkJCQ==\r\nSec-WebSocket-Version: 13\r\n\r\n'

Deno.test('#13 item 2, Deno server: a connection that reads but never answers the close is cut a second (CLOSE_GRACE) after the server closed it — refused for no hello, or at close() — not kept for as long as Deno keeps it', async () => {
  const store = await openStore({ storage: memoryStorage() })
  const open: Deno.Conn[] = []
  try {
    const server = await store.serve({ port: 0, token: TOKEN, helloTimeout: 300 })
    // Refused for no hello (300 ms), then a second of grace.
    const refused = await rawTcp(server.url)
    open.push(refused.conn)
    await refused.write(UPGRADE)
    await within(refused.ended, 4_000, 'the connection refused for no hello was cut')
    // Closed by close() (its hello deadline far off).
    const server2 = await store.serve({ port: 0, token: TOKEN, helloTimeout: 60_000 })
    const closed = await rawTcp(server2.url)
    open.push(closed.conn)
    await closed.write(UPGRADE)
    await within(closed.answered, 4_000, 'the upgrade answered')
    await server2.close()
    await within(closed.ended, 4_000, 'the connection closed by close() was cut')
  } finally {
    for (const conn of open) {
      try {
        conn.close()
      } catch {
        // cut already
      }
    }
    await store.close()
  }
})

Deno.test('#13 item 2, Deno server: a connection that dribbles its WebSocket upgrade (a byte of its request every 300 ms) is cut at helloTimeout, as a silent one is', async () => {
  const store = await openStore({ storage: memoryStorage() })
  let dribble: ReturnType<typeof setInterval> | undefined
  const raw = await (async () => {
    const server = await store.serve({ port: 0, token: TOKEN, helloTimeout: 800 })
    return await rawTcp(server.url)
  })()
  try {
    await raw.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n')
    dribble = setInterval(() => void raw.write('X'), 300)
    await within(raw.ended, 5_000, 'the dribbling connection was cut')
  } finally {
    clearInterval(dribble)
    try {
      raw.conn.close()
    } catch {
      // cut already
    }
    await store.close()
  }
})
