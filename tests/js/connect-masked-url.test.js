// connect() to a url with a password in it (ws://user:PASSWORD@HOST, basic auth at a reverse proxy):
// its errors go to logs (and, from `holdfast`, to stderr), so they say the url with the password as
// `***`, as the command line and openRedisStore() already do.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect, ClosedError, InvalidError } from 'holdfast'

const TOKEN = 'test-token-0123456789'

test('connect() errors say a url\'s password as ***: an unreachable server (ClosedError) and a ca with no TLS (InvalidError)', async () => {
  // Before: "connect ws://user:s3cret@127.0.0.1:1: cannot reach the server: …", the password in the log.
  const cases = [
    [{}, ClosedError],
    [{ ca: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n' }, InvalidError],
  ]
  for (const [options, type] of cases) {
    const error = await connect('ws://user:s3cret@127.0.0.1:1', { token: TOKEN, reconnect: false, ...options }).then(
      client => (client.close(), assert.fail('connected')),
      e => e,
    )
    assert.ok(error instanceof type, `${error?.constructor?.name} ${error}`)
    assert.ok(!error.message.includes('s3cret'), error.message)
    assert.ok(error.message.includes('ws://user:***@127.0.0.1:1'), error.message)
  }
})
