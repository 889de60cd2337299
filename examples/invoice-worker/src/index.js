// Charge each invoice once, from a stateless Worker.
//
// Many requests may ask to charge one invoice at the same time (a double-clicked "Pay" button, a
// retried webhook, two queues). holdfast's Durable Object (HoldfastObject) holds the lock
// "invoice-charges" for every Worker: one charge of an invoice runs at a time, and the others wait
// their turn in order, then find the invoice paid.
//
// A lock alone cannot stop a holder that stalled past its lease (a slow payment call, a frozen
// isolate) from writing late. The fence does: every charge writes the invoice row only if its lease's
// fence is larger than the fence already there (`WHERE fence < ?`), so D1 itself refuses the late
// writer once a newer holder wrote. The payment provider is asked with an idempotency key, as real
// providers (Stripe's Idempotency-Key) allow, so that a retried charge is the same charge.
//
//   POST /invoices/:id?amount=1200        create an invoice (open)
//   POST /invoices/:id/charge             charge it once (the lock, the provider, the fenced write)
//   GET  /invoices/:id                    the invoice and every charge the provider made for it
//
// `?delay=ms` on /charge makes the (simulated) provider slow, to show a holder that outlives its lease.
import { HoldfastObject, workerStore } from 'holdfast/cloudflare'
import { LostError, HoldfastError } from 'holdfast'

// The Durable Object class must be exported from the worker that binds it (wrangler.jsonc).
export { HoldfastObject }

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS invoices (
     id        TEXT PRIMARY KEY,
     amount    INTEGER NOT NULL,
     status    TEXT NOT NULL DEFAULT 'open',   -- open | paid
     charge_id TEXT,
     fence     INTEGER NOT NULL DEFAULT 0       -- the fence of the lease that last wrote this row
   )`,
  // The payment provider's side, simulated in the same database: one charge per idempotency key.
  `CREATE TABLE IF NOT EXISTS charges (
     id              TEXT PRIMARY KEY,
     idempotency_key TEXT NOT NULL UNIQUE,
     invoice_id      TEXT NOT NULL,
     amount          INTEGER NOT NULL
   )`,
]

async function schema(db) {
  await db.batch(SCHEMA.map(sql => db.prepare(sql)))
}

/** The simulated payment provider: charges once per idempotency key, and answers that charge again after. */
async function providerCharge(db, { invoiceId, amount, idempotencyKey, delay }) {
  if (delay > 0) await new Promise(resolve => setTimeout(resolve, delay))
  await db
    .prepare('INSERT INTO charges (id, idempotency_key, invoice_id, amount) VALUES (?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING')
    .bind(`ch_${crypto.randomUUID()}`, idempotencyKey, invoiceId, amount)
    .run()
  return await db.prepare('SELECT id, amount FROM charges WHERE idempotency_key = ?').bind(idempotencyKey).first()
}

/**
 * Charges invoice `id` once. Answers what this request did: `charged`, `already-paid`, or `refused`
 * (its fenced write came after a newer holder's), with `lost: true` if its lease was lost meanwhile.
 */
async function charge(env, id, { delay }) {
  const locks = workerStore(env.HOLDFAST)
  const charges = locks.lock('invoice-charges', { ttl: '10s', wait: '30s', maxHold: env.CHARGE_MAX_HOLD ?? '30s' })
  let outcome
  try {
    return await charges.hold(id, async lease => {
      const invoice = await env.DB.prepare('SELECT amount, status, charge_id FROM invoices WHERE id = ?').bind(id).first()
      if (!invoice) return (outcome = { outcome: 'no-such-invoice', fence: lease.fence })
      if (invoice.status === 'paid') return (outcome = { outcome: 'already-paid', fence: lease.fence, chargeId: invoice.charge_id })

      // Slow work gets lease.signal where it can take one; this simulated provider cannot (like a
      // stalled isolate), which is exactly the case the fence is for.
      const paid = await providerCharge(env.DB, { invoiceId: id, amount: invoice.amount, idempotencyKey: `invoice-${id}`, delay })

      // The guarded write: only with a fence larger than the row's. A holder whose lease was lost
      // meanwhile (revoked at maxHold, or not renewed) and whose key went to a newer holder that
      // wrote first changes 0 rows here.
      const { meta } = await env.DB.prepare("UPDATE invoices SET status = 'paid', charge_id = ?, fence = ? WHERE id = ? AND fence < ?")
        .bind(paid.id, lease.fence, id, lease.fence)
        .run()
      outcome = meta.changes === 1 ? { outcome: 'charged', fence: lease.fence, chargeId: paid.id } : { outcome: 'refused', fence: lease.fence }
      return outcome
    })
  } catch (error) {
    // hold rejects LostError after fn settled when the lease was lost meanwhile: say what fn did.
    if (error instanceof LostError && outcome) return { ...outcome, lost: true, error: error.message }
    throw error
  }
}

// The HTTP status of a HoldfastError, by its stable code; any other code is 503 (see fetch).
const STATUS = { invalid: 400, in_use: 409 }

export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    const [, collection, id, action] = url.pathname.split('/')
    if (collection !== 'invoices' || !id) return new Response('not found\n', { status: 404 })
    await schema(env.DB)
    try {
      if (request.method === 'POST' && action === 'charge') {
        return Response.json(await charge(env, id, { delay: Number(url.searchParams.get('delay') ?? 0) }))
      }
      if (request.method === 'POST' && action === undefined) {
        const amount = Number(url.searchParams.get('amount') ?? 0)
        await env.DB.prepare('INSERT INTO invoices (id, amount) VALUES (?, ?) ON CONFLICT (id) DO NOTHING').bind(id, amount).run()
        return Response.json({ id, amount, status: 'open' })
      }
      if (request.method === 'GET' && action === undefined) {
        const invoice = await env.DB.prepare('SELECT id, amount, status, charge_id AS chargeId, fence FROM invoices WHERE id = ?').bind(id).first()
        const { results } = await env.DB.prepare('SELECT id, amount FROM charges WHERE invoice_id = ?').bind(id).all()
        return Response.json({ invoice, charges: results })
      }
      return new Response('not found\n', { status: 404 })
    } catch (error) {
      // Branch on the error's code: invalid is the caller's (a bad id, over 1024 bytes); in_use is a
      // charge still held by others after the wait; the rest (closed, storage, limit, ...) are ours, to retry.
      if (error instanceof HoldfastError) {
        const status = STATUS[error.code] ?? 503
        return Response.json({ error: { code: error.code, name: error.name, message: error.message } }, { status })
      }
      throw error
    }
  },
}
