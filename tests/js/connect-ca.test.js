// connect(url, { ca }): a ca is trust for a TLS certificate, so it goes with a wss:// url only. With a
// ws:// or ws+unix:// url (no TLS) it was taken and never used: the client connected in the clear.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { openStore, memoryStorage, connect, InvalidError } from 'holdfast'

const TOKEN = 'test-token-0123456789'
const CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'

test('connect() with option ca and a ws:// or ws+unix:// url (no TLS) is an InvalidError naming the option and the scheme, before anything is dialed', async () => {
  const store = await openStore({ storage: memoryStorage() })
  const server = await store.serve({ port: 0, token: TOKEN })
  try {
    for (const [url, scheme] of [[server.url, 'ws://'], ['ws+unix:///tmp/holdfast-no-such.sock', 'ws+unix://']]) {
      for (const ca of [CA, new TextEncoder().encode(CA)]) {
        const error = await connect(url, { token: TOKEN, reconnect: false, ca }).then(
          client => (client.close(), assert.fail(`${url}: connected with a ca and no TLS`)),
          e => e,
        )
        assert.ok(error instanceof InvalidError, `${url}: ${error?.constructor?.name} ${error}`)
        assert.match(error.message, /^connect: option ca /)
        assert.ok(error.message.includes(`${url} is ${scheme} (no TLS)`), error.message)
      }
    }
    assert.equal(server.connections, 0, 'nothing was dialed')
  } finally {
    await store.close()
  }
})

test('connect() with an empty ca (a file read empty) is an InvalidError naming the option, as serve() refuses an empty tls.cert, not an unreachable server', async () => {
  // It was taken as no ca at all: trusted the system's certificates only, and a server with its own
  // was refused as ClosedError "cannot reach the server", which callers retry as a passing outage.
  for (const ca of ['', new Uint8Array(0)]) {
    const error = await connect('wss://127.0.0.1:1', { token: TOKEN, reconnect: false, ca }).then(
      client => (client.close(), assert.fail('connected')),
      e => e,
    )
    assert.ok(error instanceof InvalidError, `${JSON.stringify(ca)}: ${error?.constructor?.name} ${error}`)
    assert.match(error.message, /^connect: option ca .*empty/)
  }
})

test('connect() with a ca that is not a certificate (text that is none, a PEM armour around junk, as text or bytes) is an InvalidError naming the option, before anything is dialed, not an unreachable server', async () => {
  // It was handed to the runtime's TLS, which skipped it (Node, Bun) or refused it at the handshake
  // (Deno), and every connection failed as ClosedError "cannot reach the server", which callers retry
  // as a passing outage.
  let dialed = 0
  const listener = net.createServer(socket => (dialed++, socket.destroy()))
  await new Promise(resolve => listener.listen(0, '127.0.0.1', resolve))
  const url = `wss://127.0.0.1:${listener.address().port}`
  try {
    const junk = '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n'
    for (const ca of ['/etc/ssl/my-ca.pem', 'not a certificate', CA, junk, new TextEncoder().encode(junk), `${CA}${junk}`]) {
      const error = await connect(url, { token: TOKEN, reconnect: false, ca }).then(
        client => (client.close(), assert.fail('connected')),
        e => e,
      )
      const said = typeof ca === 'string' ? JSON.stringify(ca) : 'bytes'
      assert.ok(error instanceof InvalidError, `${said}: ${error?.constructor?.name} ${error}`)
      assert.match(error.message, /^connect: option ca /, said)
    }
    assert.equal(dialed, 0, 'nothing was dialed')
  } finally {
    listener.close()
  }
})
