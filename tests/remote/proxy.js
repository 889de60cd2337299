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
// With `"frames": true` it also prints each WebSocket message from the server as
// `{ "ev": "frame", "conn", "hex" }` (server-to-client frames are not masked), so that a test can see
// the server's answers (a refused renewal, say) without touching the client.
import net from 'node:net'

const o = JSON.parse(process.argv[2])
const say = event => process.stdout.write(JSON.stringify({ ...event, t: Date.now() }) + '\n')
const pairs = new Set()
let nextConn = 0

/** Parses server-to-client WebSocket frames out of a byte stream after the HTTP upgrade answer. */
function frameReader(conn) {
  let buf = Buffer.alloc(0)
  let upgraded = false
  let message = []
  return chunk => {
    buf = Buffer.concat([buf, chunk])
    if (!upgraded) {
      const end = buf.indexOf('\r\n\r\n')
      if (end < 0) return
      buf = buf.subarray(end + 4)
      upgraded = true
    }
    for (;;) {
      if (buf.length < 2) return
      const fin = buf[0] & 0x80
      const opcode = buf[0] & 0x0f
      const masked = buf[1] & 0x80
      let len = buf[1] & 0x7f
      let at = 2
      if (len === 126) {
        if (buf.length < 4) return
        len = buf.readUInt16BE(2)
        at = 4
      } else if (len === 127) {
        if (buf.length < 10) return
        len = Number(buf.readBigUInt64BE(2))
        at = 10
      }
      const maskAt = at
      if (masked) at += 4
      if (buf.length < at + len) return
      let payload = Buffer.from(buf.subarray(at, at + len))
      if (masked) for (let i = 0; i < payload.length; i++) payload[i] ^= buf[maskAt + (i % 4)]
      buf = buf.subarray(at + len)
      if (opcode === 0x2 || opcode === 0x0) {
        message.push(payload)
        if (fin) {
          say({ ev: 'frame', conn, hex: Buffer.concat(message).toString('hex') })
          message = []
        }
      }
    }
  }
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

server.listen(o.listen ?? 0, '127.0.0.1', () => say({ ev: 'listening', port: server.address().port }))
