// The packed `holdfast` in the real workerd runtime: wrangler (its test harness, which bundles each
// worker as `wrangler dev` does and runs it in workerd through miniflare) serves src/worker.js under
// three configurations, and these tests send it requests. Run by tests/workerd/run.sh with
// Node 24 (wrangler needs Node >= 22.12), from a fresh project with the packed package installed.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { pathToFileURL } from 'node:url'

const { createTestHarness } = await import(process.env.WRANGLER_MODULE ? pathToFileURL(process.env.WRANGLER_MODULE).href : 'wrangler')

/** name in wrangler config -> what the configuration offers */
const workers = {
  'holdfast-workerd-test': { config: 'wrangler.jsonc', als: 'nodejs_compat (on by default from 2026-08-04)' },
  'holdfast-workerd-test-als': { config: 'wrangler.als.jsonc', als: 'nodejs_als' },
  'holdfast-workerd-test-no-compat': { config: 'wrangler.no-compat.jsonc', als: null },
}
const MAIN = 'holdfast-workerd-test'

let server
before(async () => {
  server = createTestHarness({ root: process.cwd(), workers: Object.values(workers).map(w => ({ configPath: w.config })) })
  await server.listen()
})
after(async () => {
  await server?.close()
})

/** GETs a path of one worker and answers its JSON. */
async function get(worker, path) {
  const response = await server.getWorker(worker).fetch(path)
  assert.equal(response.status, 200, `${worker} ${path}: HTTP ${response.status}`)
  return await response.json()
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

for (const [name, w] of Object.entries(workers)) {
  test(`${w.config}: wrangler bundles the workerd entry (wasm imported statically), and it starts and serves`, async () => {
    // Only the workerd entry answers that files are not available in workerd.
    const files = await get(name, '/local/files')
    assert.equal(files.error?.code, 'storage')
    assert.match(files.error.message, /files are not available in workerd/)
    const held = await get(name, '/local/hold?key=a')
    assert.equal(held.fence, 1)
  })

  test(`${w.config}: LOCK-04 ${w.als ? `is enforced with AsyncLocalStorage from ${w.als}` : 'is not enforced without AsyncLocalStorage (documented): the inner hold waits for itself'}`, async () => {
    // local: a store opened in the request; do: a store in a Durable Object of the test's own;
    // cf: workerStore(env.HOLDFAST), holds in HoldfastObject over Workers RPC (holdfast/cloudflare).
    for (const where of ['local', 'do', 'cf']) {
      const nested = await get(name, `/${where}/nested?object=nested&key=self`)
      if (w.als) {
        assert.equal(nested.error?.code, 'invalid', `${where}: ${JSON.stringify(nested)}`)
        assert.equal(nested.error.name, 'InvalidError')
        assert.match(nested.error.message, /held by this very hold/)
      } else {
        assert.equal(nested.error?.code, 'in_use', `${where}: ${JSON.stringify(nested)}`)
        // Its whole wait (200ms), not less: workerd's clock advances across the timer's I/O.
        assert.ok(nested.waitedMs >= 190, `${where}: waited ${nested.waitedMs}ms of its 200ms`)
      }
    }
  })

  test(`${w.config}: LOCK-06: a hold granted by lease.release() whose signal aborts in the same call, before its fn started, is cancelled: CancelledError, fn not run, the next in line served (a store in the request and in a Durable Object; lock, semaphore)`, async () => {
    for (const where of ['local', 'do']) {
      for (const limit of [undefined, 2]) {
        const path = `/${where}/abortAfterGrant?object=abort-after-grant&name=abort-after-grant&key=k-${limit ?? 1}${limit ? `&limit=${limit}` : ''}`
        const answer = await get(name, path)
        assert.deepEqual(
          answer,
          { error: answer.error, cause: 'gave up', ran: false, nextServed: true, busy: 0 },
          `${path}: ${JSON.stringify(answer)}`,
        )
        assert.equal(answer.error?.code, 'cancelled', `${path}: ${JSON.stringify(answer)}`)
      }
    }
  })
}

for (const [name, w] of Object.entries(workers).filter(([, w]) => w.als)) {
  test(`${w.config}: #17: five callers, each in its own AsyncLocalStorage value, hold one key in turn: each fn sees its own, free or handed over (a store in the request and in a Durable Object; lock, semaphore; hold, acquire, tryHold)`, async () => {
    for (const where of ['local', 'do']) {
      for (const limit of [undefined, 2]) {
        for (const form of ['hold', 'acquire', 'tryHold']) {
          const path = `/${where}/callers?object=callers&name=callers&key=${form}-${limit ?? 1}&form=${form}${limit ? `&limit=${limit}` : ''}`
          const answer = await get(name, path)
          assert.deepEqual(answer.wrong, [], `${path}: ${JSON.stringify(answer)}`)
          assert.equal(answer.reports.length, form === 'tryHold' ? 10 : 5)
        }
      }
    }
  })
}

test('a store opened in the request, on memoryStorage: hold, tryHold, and bad input as typed errors', async () => {
  assert.deepEqual(await get(MAIN, '/local/tryHold?key=42'), { acquired: true, value: { fence: 1 } })
  const badName = await get(MAIN, '/local/hold?name=Bad%20Name')
  assert.equal(badName.error?.code, 'invalid')
  assert.equal(badName.error.name, 'InvalidError')
  assert.match(badName.error.message, /name "Bad Name" must match/)
  const badKey = await get(MAIN, `/local/hold?key=${'x'.repeat(1025)}`)
  assert.equal(badKey.error?.code, 'invalid')
  assert.match(badKey.error.message, /1 to 1024 bytes/)
})

test('Durable Object: concurrent holds of one key are served one at a time, in the order they came (LOCK-01)', async () => {
  // b and c come 100 ms apart, while a still holds the key (400 ms).
  const path = tag => `/do/hold?object=order&key=chat&ms=${tag === 'a' ? 400 : 100}&tag=${tag}`
  const first = get(MAIN, path('a'))
  await sleep(100)
  const second = get(MAIN, path('b'))
  await sleep(100)
  const third = get(MAIN, path('c'))
  const [a, b, c] = await Promise.all([first, second, third])
  for (const r of [a, b, c]) assert.equal(typeof r.fence, 'number', JSON.stringify(r))
  assert.deepEqual([a.tag, b.tag, c.tag], ['a', 'b', 'c'])
  assert.ok(a.fence < b.fence && b.fence < c.fence, `fences in order: ${a.fence} ${b.fence} ${c.fence}`)
  assert.ok(b.start >= a.end, `b started (${b.start}) after a ended (${a.end})`)
  assert.ok(c.start >= b.end, `c started (${c.start}) after b ended (${b.end})`)
})

test('Durable Object: tryHold on a held key reports acquired: false; a wait that runs out is in_use', async () => {
  const holding = get(MAIN, '/do/hold?object=try&key=job&ms=500')
  await sleep(150)
  assert.deepEqual(await get(MAIN, '/do/tryHold?object=try&key=job'), { acquired: false })
  const asked = Date.now()
  const timedOut = await get(MAIN, '/do/hold?object=try&key=job&wait=100ms')
  assert.ok(Date.now() - asked >= 95, 'it waited its 100ms first')
  assert.equal(timedOut.error?.code, 'in_use', JSON.stringify(timedOut))
  assert.equal(timedOut.error.name, 'InUseError')
  const held = await holding
  const after = await get(MAIN, '/do/tryHold?object=try&key=job')
  assert.equal(after.acquired, true)
  assert.ok(after.value.fence > held.fence)
})

test('Durable Object: a bad name, key or duration gets a typed error over the boundary', async () => {
  const cases = [
    ['/do/hold?name=Nope', /name "Nope" must match/],
    ['/do/hold?name=-x', /name "-x" must match/],
    [`/do/tryHold?key=${'é'.repeat(513)}`, /1 to 1024 bytes/],
    ['/do/hold?wait=250', /250/],
  ]
  for (const [path, message] of cases) {
    const answer = await get(MAIN, path)
    assert.equal(answer.error?.code, 'invalid', `${path}: ${JSON.stringify(answer)}`)
    assert.equal(answer.error.name, 'InvalidError')
    assert.match(answer.error.message, message)
  }
})

test('Durable Object: fences keep growing after the object restarts with its persisted storage (LOCK-02)', async () => {
  const first = await get(MAIN, '/do/hold?object=restart&key=k')
  const { stored } = await get(MAIN, '/do/stored?object=restart')
  // The stored form is the ceiling's digits, a colon and their check (see the engine's fence.rs).
  const ceiling = Number(String(stored).split(':')[0])
  assert.match(String(stored), /^\d+:[0-9a-f]{8}$/)
  assert.ok(ceiling >= first.fence, `the ceiling ${stored} covers fence ${first.fence}`)
  await server.getWorker(MAIN).evictDurableObject('Locks', { name: 'restart' })
  const second = await get(MAIN, '/do/hold?object=restart&key=k')
  assert.ok(second.fence > ceiling, `after the restart, fence ${second.fence} is above the old ceiling ${stored}`)
  const { stored: again } = await get(MAIN, '/do/stored?object=restart')
  assert.ok(Number(String(again).split(':')[0]) > ceiling, 'the restarted store reserved a new block')
})
