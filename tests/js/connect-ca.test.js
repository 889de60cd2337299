// connect(url, { ca }): a ca is trust for a TLS certificate, so it goes with a wss:// url only. With a
// ws:// or ws+unix:// url (no TLS) it was taken and never used: the client connected in the clear.
import { test } from 'node:test'
import assert from 'node:assert/strict'
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
