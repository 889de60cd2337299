// A TCP proxy in its own process, put between clients and a server so that a test can drop
// connections for real: `RUNTIME proxy.js '{"listen": PORT, "target": PORT}'` (127.0.0.1; listen 0
// picks a port). Prints `{ "ev": "listening", "port" }`. Signals:
//   kill -9      every connection drops (the OS resets both sides), and nobody listens until a new
//                proxy is started on the same port
//   SIGUSR1      a half drop: every client side is destroyed at once, while the server sides stay
//                open for `holdOpen` ms more (default 1500) — the client sees its connection end, the
//                server does not yet (a NAT or a load balancer resetting one side); for `pauseAccept`
//                ms after it (default 0) new connections are reset as they come, so that the client's
//                reconnection waits
//   SIGUSR2      a one-way silence: what the clients of the connections open now send is dropped from
//                then on, while both sides stay open and what the server sends still passes (a
//                connection gone half-open one way); new connections pass both ways
// With `"frames": true` it also prints each WebSocket message from the server as
// `{ "ev": "frame", "conn", "hex" }` (server-to-client frames are not masked), so that a test can see
// the server's answers (a refused renewal, say) without touching the client.
import net from 'node:net'
import { wsStream } from './frames.js'

const o = JSON.parse(process.argv[2])
const say = event => process.stdout.write(JSON.stringify({ ...event, t: Date.now() }) + '\n')
const pairs = new Set()
let nextConn = 0

/** Prints the server-to-client WebSocket messages of connection `conn` (frames: see frames.js). */
function frameReader(conn) {
  let message = []
  return wsStream(({ fin, opcode, payload }) => {
    if (opcode === 0x2 || opcode === 0x0) {
      message.push(payload)
      if (fin) {
        say({ ev: 'frame', conn, hex: Buffer.concat(message).toString('hex') })
        message = []
      }
    }
  })
}

let pausedUntil = 0

const server = net.createServer(client => {
  if (Date.now() < pausedUntil) return client.destroy()
  const conn = ++nextConn
  const upstream = net.connect(o.target, '127.0.0.1')
  const pair = { client, upstream }
  pairs.add(pair)
  client.pipe(upstream)
  if (o.frames) {
    const read = frameReader(conn)
    upstream.on('data', chunk => {
      read(chunk)
      client.write(chunk)
    })
  } else upstream.pipe(client)
  const end = () => {
    pairs.delete(pair)
    client.destroy()
    upstream.destroy()
  }
  client.on('error', () => {})
  upstream.on('error', () => {})
  client.on('close', () => {
    if (!pair.halfDropped) end()
  })
  upstream.on('close', end)
})

process.on('SIGUSR1', () => {
  const hold = o.holdOpen ?? 1500
  pausedUntil = Date.now() + (o.pauseAccept ?? 0)
  for (const pair of pairs) {
    pair.halfDropped = true
    pair.client.unpipe?.()
    pair.upstream.unpipe()
    pair.upstream.removeAllListeners('data')
    pair.client.destroy()
    setTimeout(() => pair.upstream.destroy(), hold)
  }
  say({ ev: 'half-dropped', count: pairs.size })
})

process.on('SIGUSR2', () => {
  for (const pair of pairs) {
    pair.client.unpipe(pair.upstream)
    // Read and dropped, so that the client's writes never back up.
    pair.client.on('data', () => {})
  }
  say({ ev: 'swallowing', count: pairs.size })
})

server.listen(o.listen ?? 0, '127.0.0.1', () => say({ ev: 'listening', port: server.address().port }))
