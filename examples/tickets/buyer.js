// One process of buyers: connects to the ticket server and has BUYERS buyers ask for a seat at once,
// each with an order id of its own (a tenth of them ask twice at once, as a client retrying after a
// timeout would). Prints one line per buyer: `sold ORDER REMAINING` or `sold-out ORDER REMAINING`.
import { connect } from 'holdfast'

const [url, token, proc, buyers] = process.argv.slice(2)
const remote = await connect(url, { token })
const seats = remote.pool('flight-aa123', { capacity: 180 })
await Promise.all(
  Array.from({ length: Number(buyers) }, async (_, i) => {
    const order = `order-${proc}-${i}`
    const ask = () => seats.claim(1, { id: order })
    // The same order asked twice at once answers once: both asks get the first claim's outcome.
    const [answer, again] = await Promise.all(i % 10 === 0 ? [ask(), ask()] : [ask(), undefined])
    if (again && (again.claimed !== answer.claimed || again.remaining !== answer.remaining)) {
      throw new Error(`${order}: asked twice, answered differently`)
    }
    process.stdout.write(`${answer.claimed ? 'sold' : 'sold-out'} ${order} ${answer.remaining}\n`)
  }),
)
await remote.close()
