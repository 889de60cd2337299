// The time to open a store, hold one key and close it, for two builds interleaved in one run:
// memoryStorage, and a callback storage answering by promise. Not part of run.sh; in a project with
// both packs installed as holdfast-a and holdfast-b:
//   npm install holdfast-a@file:a.tgz holdfast-b@file:b.tgz && node open.mjs   (or bun open.mjs)
const A = await import('holdfast-a'), B = await import('holdfast-b')
const N = 2000, R = 7
async function pass(m, async_) {
  const t = performance.now()
  for (let i = 0; i < N; i++) {
    const values = new Map()
    const storage = async_ ? { get: async k => values.get(k), set: async (k, v) => void values.set(k, v) } : m.memoryStorage()
    const s = await m.openStore({ storage })
    await s.lock('x').hold('k', l => l.fence)
    await s.close()
  }
  return (performance.now() - t) / N * 1000
}
for (const async_ of [false, true]) {
  const a = [], b = []
  for (let r = 0; r < R; r++) { b.push(await pass(B, async_)); a.push(await pass(A, async_)) }
  const med = x => x.sort((p, q) => p - q)[R >> 1]
  console.log(`${async_ ? 'promise storage' : 'memoryStorage  '}: open+hold+close µs  before ${med(b).toFixed(1)}  after ${med(a).toFixed(1)}  after/before ${(med(a) / med(b)).toFixed(2)}`)
}
