// A bad name reads alike in every store: over a connection as in process (`lock Seats!: name "Seats!"
// must match …`, `pool: name must be a string, not number`), an InvalidError thrown by the call that
// names it, before anything is sent.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openStore, connect, memoryStorage, InvalidError } from 'holdfast'
import { TOKEN } from './helpers.js'

/** The InvalidError message `make` throws. */
function refusal(make) {
  try {
    make()
  } catch (error) {
    assert.ok(error instanceof InvalidError, `${error}`)
    return error.message
  }
  assert.fail('not refused')
}

test('a bad lock, semaphore or pool name is refused over a connection in the words of the store in process', async t => {
  const store = await openStore({ storage: memoryStorage() })
  t.after(() => store.close())
  const server = await store.serve({ port: 0, token: TOKEN })
  const client = await connect(server.url, { token: TOKEN, reconnect: false })
  t.after(() => client.close())
  const cases = [
    s => s.lock('Seats!'),
    s => s.semaphore('-x', { limit: 2 }),
    s => s.pool('Seats!', { capacity: 3 }),
    s => s.pool('Seats!'),
    s => s.lock(42),
    s => s.pool(null, { capacity: 3 }),
  ]
  for (const make of cases) assert.equal(refusal(() => make(client)), refusal(() => make(store)), String(make))
  assert.equal(refusal(() => client.lock('Seats!')), 'lock Seats!: name "Seats!" must match [a-z0-9][a-z0-9_.-]{0,63}')
})
