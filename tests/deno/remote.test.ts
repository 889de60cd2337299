// Serving and connecting on Deno, over Deno's own server (Deno.serve + Deno.upgradeWebSocket) and
// client (the global WebSocket): what tests/js/remote-leases.test.js does not cover there — Unix
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
