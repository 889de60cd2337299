// Workloads: each runs inside its own child process against one adapter (see adapters.mjs), warms up,
// times one pass with performance.now(), and checks what the lock promises. A check reports what it
// saw; nothing here depends on how fast anything ran.
//
// run(adapter, scale) resolves to
//   { ops, count, ms, ok, notes: [..] }   ops = count / seconds; ok = every correctness check held
//   { na: 'reason' }                      the library has no such feature

const now = () => performance.now()

/** Full collection before timing, so garbage from the warm-up is not charged to the timed pass. */
export const gc = globalThis.gc ?? (globalThis.Bun ? () => globalThis.Bun.gc(true) : () => {})

const n = (base, scale) => Math.max(1, Math.round(base * scale))

/** Collects notes; `fail` also marks the measurement as a correctness failure. Its ok and notes go into the result. */
function checker() {
  const c = {
    ok: true,
    notes: [],
    note: (m) => void c.notes.push(m),
    fail: (m) => void ((c.ok = false), c.notes.push(m)),
  }
  return c
}

/** After fn threw, the key must be free again: a tryHold takes it and runs its fn once. */
async function freeAfterThrow(a, key) {
  try {
    await a.hold(key, async () => {
      throw new Error('thrown inside the hold')
    })
  } catch {}
  let runs = 0
  const r = await a.tryHold(key, () => {
    runs++
    return 'ok'
  })
  return r.acquired && r.value === 'ok' && runs === 1
}

/** Counts holders that entered out of call order, and the most that were ever inside at once. */
function entryRecorder() {
  const rec = { order: [], inside: 0, max: 0 }
  rec.fnFor = (i) => async () => {
    if (++rec.inside > rec.max) rec.max = rec.inside
    rec.order.push(i)
    await undefined // one microtask inside the hold
    rec.inside--
  }
  rec.outOfPlace = (count) => {
    let bad = count - rec.order.length // holders that never entered count as out of place
    for (let j = 0; j < rec.order.length; j++) if (rec.order[j] !== j) bad++
    return bad
  }
  return rec
}

/** Holds `key` until `release()` is called; resolves once the holder is inside. `holder`: its hold. */
async function heldUntilReleased(a, key) {
  let release
  const gate = new Promise((r) => (release = r))
  let entered
  const inside = new Promise((r) => (entered = r))
  const holder = a.holdWait(key, () => {
    entered()
    return gate
  })
  await inside
  return { holder, release }
}

export const WORKLOADS = {
  W1: {
    title: 'uncontended: 1 key, sequential hold/release of an empty async fn',
    sizes: (s) => `N=${n(200_000, s)}`,
    async run(a, scale) {
      const N = n(200_000, scale)
      let runs = 0
      const fn = async () => {
        runs++
      }
      for (let i = 0; i < N / 10; i++) await a.hold('k', fn)
      gc()
      runs = 0
      const t0 = now()
      for (let i = 0; i < N; i++) await a.hold('k', fn)
      const ms = now() - t0

      const c = checker()
      if (runs !== N) c.fail(`fn ran ${runs} times for ${N} holds`)
      if (a.live() !== 0) c.fail(`${a.live()} keys still listed after the last release`)
      if (!(await freeAfterThrow(a, 'k'))) c.fail('key not free after fn threw (tryHold did not acquire)')
      if (c.ok) c.note('fn ran once per hold, key free after fn threw')
      return { ops: (N / ms) * 1e3, count: N, ms, ok: c.ok, notes: c.notes }
    },
  },

  W2: {
    title: 'many keys: distinct keys held once each, sequentially',
    sizes: (s) => `N=${n(100_000, s)} keys`,
    async run(a, scale) {
      const N = n(100_000, scale)
      // Key strings are built before timing: the pass measures the lock, not string concatenation.
      const keys = Array.from({ length: N }, (_, i) => `key:${i}`)
      const warm = Array.from({ length: Math.ceil(N / 10) }, (_, i) => `warm:${i}`)
      let runs = 0
      const fn = async () => {
        runs++
      }
      for (const k of warm) await a.hold(k, fn)
      gc()
      runs = 0
      const t0 = now()
      for (let i = 0; i < N; i++) await a.hold(keys[i], fn)
      const ms = now() - t0

      const c = checker()
      const live = a.live()
      if (runs !== N) c.fail(`fn ran ${runs} times for ${N} holds`)
      if (live !== 0) c.fail(`${live} keys still listed after all were released`)
      if (c.ok) c.note(`fn ran once per key, ${live} live entries after`)
      return { ops: (N / ms) * 1e3, count: N, ms, ok: c.ok, notes: c.notes }
    },
  },

  W3: {
    title: 'contended: 1,000 concurrent holders on 1 key, fn awaits a microtask; FIFO entry + mutual exclusion',
    sizes: (s) => `1000 holders x ${n(20, s)} batches`,
    async run(a, scale) {
      const H = 1000
      const B = n(20, scale)
      const batch = async () => {
        const rec = entryRecorder()
        const all = new Array(H)
        for (let i = 0; i < H; i++) all[i] = a.holdWait('k', rec.fnFor(i))
        await Promise.all(all)
        return rec
      }
      for (let b = 0; b < 2; b++) await batch()
      gc()
      const recs = []
      const t0 = now()
      for (let b = 0; b < B; b++) recs.push(await batch())
      const ms = now() - t0

      const maxInside = Math.max(...recs.map((r) => r.max))
      const worstOut = Math.max(...recs.map((r) => r.outOfPlace(H)))
      const live = a.live()
      const c = checker()
      if (worstOut === 0) c.note('FIFO yes')
      else c.fail(`FIFO NO (up to ${worstOut}/${H} out of place)`)
      c.note(`max inside ${maxInside}`)
      if (maxInside !== 1) c.fail(`mutual exclusion violated: ${maxInside} holders inside at once`)
      if (live !== 0) c.fail(`${live} keys still listed after all were released`)
      c.note(`${(ms / B).toFixed(2)} ms per ${H} holders`)
      return { ops: ((H * B) / ms) * 1e3, count: H * B, ms, ok: c.ok, notes: c.notes }
    },
  },

  W4: {
    title: 'semaphore: limit 8, 10,000 concurrent tasks (fn awaits a microtask); never more than 8 inside, FIFO entry',
    sizes: (s) => `10000 tasks x ${n(5, s)} batches`,
    async run(a, scale) {
      const T = 10_000
      const LIMIT = 8
      const B = n(5, scale)
      const sem = a.semaphore(LIMIT)
      if (sem === null) return { na: 'no semaphore' }
      const batch = async () => {
        const rec = entryRecorder()
        const all = new Array(T)
        for (let i = 0; i < T; i++) all[i] = sem('k', rec.fnFor(i))
        await Promise.all(all)
        return rec
      }
      await batch()
      gc()
      const recs = []
      const t0 = now()
      for (let b = 0; b < B; b++) recs.push(await batch())
      const ms = now() - t0

      const maxInside = Math.max(...recs.map((r) => r.max))
      const worstOut = Math.max(...recs.map((r) => r.outOfPlace(T)))
      const live = a.live()
      const c = checker()
      c.note(`max inside ${maxInside}/${LIMIT}`)
      if (maxInside > LIMIT) c.fail(`limit violated: ${maxInside} > ${LIMIT} inside at once`)
      if (worstOut === 0) c.note('FIFO yes')
      else c.fail(`FIFO NO (up to ${worstOut}/${T} out of place)`)
      if (live !== 0) c.fail(`${live} keys still listed after all were released`)
      return { ops: ((T * B) / ms) * 1e3, count: T * B, ms, ok: c.ok, notes: c.notes }
    },
  },

  W5: {
    title: 'failed tryHold on a held key (sequential)',
    sizes: (s) => `N=${n(100_000, s)}`,
    async run(a, scale) {
      const N = n(100_000, scale)
      const { holder, release } = await heldUntilReleased(a, 'k')

      let acquired = 0
      const fn = () => {}
      for (let i = 0; i < N / 10; i++) if ((await a.tryHold('k', fn)).acquired) acquired++
      gc()
      const t0 = now()
      for (let i = 0; i < N; i++) if ((await a.tryHold('k', fn)).acquired) acquired++
      const ms = now() - t0

      release()
      await holder
      // The same call on the released key must take it and hand back fn's value.
      const after = await a.tryHold('k', () => 42)
      const live = a.live()
      const c = checker()
      if (acquired === 0) c.note('acquired while held: 0')
      else c.fail(`acquired while held: ${acquired}`)
      if (!(after.acquired && after.value === 42)) c.fail("tryHold on the released key did not acquire / return fn's value")
      if (live !== 0) c.fail(`${live} keys still listed after release`)
      return { ops: (N / ms) * 1e3, count: N, ms, ok: c.ok, notes: c.notes }
    },
  },

  W6: {
    title: 'drain: lines of 1,000 and of 10,000 waiters (the most one key may have) behind a holder, let go; FIFO, and how the cost per waiter grows with the line',
    sizes: (s) => `(10 lines of 1000 + 1 line of 10000 waiters) x ${n(3, s)}`,
    async run(a, scale) {
      const B = n(3, scale)
      // One line: a holder keeps the key while `size` holds join the line, then lets go; timed from the
      // holder's release to the last waiter's answer. Every waiter's fn answers at once.
      const drain = async (size) => {
        const { holder, release } = await heldUntilReleased(a, 'k')
        const order = []
        let within = 0
        let max = 0
        const all = new Array(size)
        for (let i = 0; i < size; i++) {
          all[i] = a.holdWait('k', () => {
            if (++within > max) max = within
            order.push(i)
            within--
          })
        }
        const t0 = now()
        release()
        await holder
        await Promise.all(all)
        const ms = now() - t0
        let out = size - order.length
        for (let j = 0; j < order.length; j++) if (order[j] !== j) out++
        return { ms, out, max }
      }
      for (let b = 0; b < 2; b++) await drain(10_000)
      gc()
      let small = 0
      let large = 0
      let worstOut = 0
      let maxInside = 0
      // Ten lines of 1,000 and one of 10,000: the same number of waiters, so that with a cost per
      // waiter that does not grow with the line, both take the same time.
      for (let b = 0; b < B; b++) {
        for (const [size, add] of [
          ...Array.from({ length: 10 }, () => [1_000, (ms) => (small += ms)]),
          [10_000, (ms) => (large += ms)],
        ]) {
          const r = await drain(size)
          add(r.ms)
          worstOut = Math.max(worstOut, r.out)
          maxInside = Math.max(maxInside, r.max)
        }
      }
      const live = a.live()
      const c = checker()
      if (worstOut === 0) c.note('FIFO yes')
      else c.fail(`FIFO NO (up to ${worstOut} out of place)`)
      if (maxInside > 1) c.fail(`mutual exclusion violated: ${maxInside} holders inside at once`)
      if (live !== 0) c.fail(`${live} keys still listed after all were released`)
      // Linear cost: a waiter in a line ten times as long should cost about the same (issue 6's bound,
      // 100,000 waiters in at most 12x the time of 10,000, is 1.2x a waiter).
      const each = (ms) => ((ms * 1e6) / (10_000 * B)).toFixed(0)
      c.note(`a waiter costs ${(large / small).toFixed(2)}x in a line of 10000 as in one of 1000 (${each(large)} ns vs ${each(small)} ns)`)
      return { ops: ((10_000 * B) / large) * 1e3, count: 10_000 * B, ms: large, ok: c.ok, notes: c.notes }
    },
  },
}
