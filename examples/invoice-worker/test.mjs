// The invoice worker under wrangler's test harness (workerd, as `wrangler dev` runs it): `npm test`
// here (with wrangler installed), or tests/workerd/run.sh on the packed package. Checks that:
//   1. ten concurrent charges of one invoice charge it once: one `charged`, nine `already-paid`;
//   2. a holder that stalls past its lease (maxHold 1 s here) is refused by the fence in D1 when it
//      writes late, after the next holder charged: one charge at the provider, the invoice paid once;
//   3. a refused call answers by its error's code: a key the lock refuses is a 400 (code invalid).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { pathToFileURL } from 'node:url'

const { createTestHarness } = await import(process.env.WRANGLER_MODULE ? pathToFileURL(process.env.WRANGLER_MODULE).href : 'wrangler')

let server
before(async () => {
  server = createTestHarness({
    root: process.cwd(),
    // A short maxHold, so that a slow charge outlives its lease within the test.
    workers: [{ configPath: 'wrangler.jsonc', vars: { CHARGE_MAX_HOLD: '1s' } }],
  })
  await server.listen()
})
after(async () => {
  await server?.close()
})

async function call(method, path) {
  const response = await server.fetch(path, { method })
  const body = await response.json()
  assert.ok(response.ok, `${method} ${path}: HTTP ${response.status} ${JSON.stringify(body)}`)
  return body
}

test('ten concurrent charges of one invoice charge it once', async () => {
  await call('POST', '/invoices/inv-1?amount=1200')
  const answers = await Promise.all(Array.from({ length: 10 }, () => call('POST', '/invoices/inv-1/charge')))
  const charged = answers.filter(a => a.outcome === 'charged')
  assert.equal(charged.length, 1, JSON.stringify(answers))
  assert.equal(answers.filter(a => a.outcome === 'already-paid').length, 9)
  // One holder at a time, in order: everyone after the charge saw it, with a larger fence.
  for (const a of answers) if (a.outcome === 'already-paid') assert.ok(a.fence > charged[0].fence && a.chargeId === charged[0].chargeId)
  assert.equal(new Set(answers.map(a => a.fence)).size, 10, 'every lease had its own fence')
  const { invoice, charges } = await call('GET', '/invoices/inv-1')
  assert.deepEqual(charges, [{ id: charged[0].chargeId, amount: 1200 }], 'one charge at the provider')
  assert.equal(invoice.status, 'paid')
  assert.equal(invoice.fence, charged[0].fence)
})

test('a holder that stalled past its lease is refused by the fence; the invoice is charged once', async () => {
  await call('POST', '/invoices/inv-2?amount=500')
  // A: its provider call takes 2.5 s, longer than the lock's maxHold (1 s): its lease is revoked.
  const stalled = call('POST', '/invoices/inv-2/charge?delay=2500')
  await new Promise(resolve => setTimeout(resolve, 1_300))
  // B: comes after A lost the key, gets it with a larger fence, and charges.
  const next = await call('POST', '/invoices/inv-2/charge')
  assert.equal(next.outcome, 'charged', JSON.stringify(next))
  // A's late write changes nothing: the row's fence is B's, larger than A's.
  const late = await stalled
  assert.equal(late.outcome, 'refused', JSON.stringify(late))
  assert.equal(late.lost, true)
  assert.match(late.error, /revoked at maxHold/)
  assert.ok(next.fence > late.fence)
  const { invoice, charges } = await call('GET', '/invoices/inv-2')
  assert.equal(charges.length, 1, `charged once: ${JSON.stringify(charges)}`)
  assert.deepEqual({ status: invoice.status, fence: invoice.fence, chargeId: invoice.chargeId }, { status: 'paid', fence: next.fence, chargeId: charges[0].id })
})

test('a refused call answers its error code with a status that fits it: a bad key is 400, not 409', async () => {
  const id = 'x'.repeat(1025) // a key is 1 to 1024 bytes
  await call('POST', `/invoices/${id}?amount=100`)
  const response = await server.fetch(`/invoices/${id}/charge`, { method: 'POST' })
  const { error } = await response.json()
  assert.equal(error.code, 'invalid')
  assert.equal(response.status, 400)
})
