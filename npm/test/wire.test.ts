import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { encodeGranted, encodeHold, encodeRelease, encodeRenew, initSync, wireRevision } from '../wasm/holdfast_wasm.js'
import {
  REVISION,
  batchOf,
  decodeClient,
  decodeClientAll,
  decodeServer,
  decodeServerAll,
  eachGranted,
  encodeClient,
  encodeGrantedOf,
  encodeHoldOf,
  encodeReleaseOf,
  encodeServer,
  type ClientMessage,
  type ServerMessage,
} from '../src/remote/wire.js'
import { RemoteRequest, type RemoteSink } from '../src/remote/request.js'
import { poolsAnswerSize, poolsPageAfter } from '../src/remote/inspect-pages.js'
import { hexOfWords, idWords } from '../src/util/hex.js'

before(() => {
  initSync({ module: new WebAssembly.Module(readFileSync(new URL('../wasm/holdfast_wasm_bg.wasm', import.meta.url))) })
})

const request = '0123456789abcdef0123456789abcdef'
const lease = 'fedcba9876543210fedcba9876543210'

test('every client message survives encode then decode', () => {
  const messages: ClientMessage[] = [
    { type: 'hello', revision: 2, token: 't0ken', client: 'holdfast-js/0.1.0' },
    { type: 'hello', revision: 3, token: 't0ken', client: 'holdfast-js/0.1.0' },
    { type: 'hold', semaphore: false, limit: 1, name: 'summaries', key: 'chat é 😀', ttl: 30_000, maxHold: 0, wait: 10_000, request },
    { type: 'hold', semaphore: true, limit: 3, name: 'uploads', key: 'u', ttl: 1_000, maxHold: 60_000, wait: null, request },
    { type: 'renew', lease },
    { type: 'release', lease },
    { type: 'cancel', request },
    { type: 'inspect' },
    { type: 'goodbye' },
    { type: 'claim', pool: 'seats', capacity: 2 ** 53 - 1, n: 2, claim: 'order-7 🎟', wait: null, ttl: 0 },
    { type: 'claim', pool: 'seats', capacity: 180, n: 1, claim: 'x', wait: 5_000, ttl: 900_000 },
    { type: 'pool', op: 'resize', pool: 'seats', capacity: 180, claim: '', value: 200 },
    { type: 'pool', op: 'cancel', pool: 'seats', capacity: 180, claim: 'order-7', value: 0 },
    { type: 'inspectPools' },
    { type: 'ping' },
    { type: 'inspectPoolsPage', after: '' },
    { type: 'inspectPoolsPage', after: 'seats' },
  ]
  for (const [id, m] of messages.entries()) assert.deepEqual(decodeClient(encodeClient(id, m)), { id, ...m }, m.type)
})

test('every server message survives encode then decode', () => {
  const messages: ServerMessage[] = [
    { type: 'welcome', revision: 2, maxFrame: 65_536, connectionLimit: 0 },
    { type: 'welcome', revision: 3, maxFrame: 65_536, connectionLimit: 10 },
    { type: 'granted', request, lease, fence: 2 ** 53 - 1, ttl: 30_000, revokeIn: 0 },
    { type: 'busy' },
    { type: 'renewed', ttl: 30_000, revokeIn: 5_000 },
    { type: 'done' },
    { type: 'error', code: 'in_use', message: 'lock x: key "k": held by another' },
    { type: 'lost', lease, code: 'lost' },
    { type: 'claimed', claimed: true, remaining: 178 },
    { type: 'claimed', claimed: false, remaining: 0 },
    { type: 'count', value: 2 ** 53 - 1 },
    { type: 'pools', pools: [{ name: 'seats', capacity: 180, remaining: 2, claims: 90, waiting: 1 }] },
    { type: 'poolsPage', more: true, pools: [{ name: 'licences', capacity: 2 ** 53 - 1, remaining: 0, claims: 7, waiting: 0 }] },
    { type: 'poolsPage', more: false, pools: [] },
  ]
  // A `lost` is pushed by the server, answering no frame: its id is 0 on the wire whatever is given.
  messages.forEach((m, i) => {
    const id = m.type === 'lost' ? 0 : i + 1
    assert.deepEqual(decodeServer(encodeServer(id, m)), { id, ...m }, m.type)
  })
})

test("#17 the frames of a hold, encoded in JavaScript, are the codec's byte for byte, and what they do not take goes to the codec", () => {
  // Seeded, so that a failure repeats.
  let seed = 17
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31
  const hex = () => Array.from({ length: 32 }, () => '0123456789abcdefABCDEF'[Math.floor(next() * 22)]).join('')
  const texts = ['', 'k', 'a'.repeat(1024), 'chat é 😀', '\u{10ffff}x', 'lone \ud800 surrogate', 'ß'.repeat(300)]
  const numbers = [0, 1, 0.5, 999.9, -1, -0.5, NaN, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 7, 2 ** 53 - 1]
  const ids = [0, 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, -1, 3.7]
  const same = (mine: Uint8Array, codec: Uint8Array, what: string) => assert.deepEqual([...mine], [...codec], what)
  for (let i = 0; i < 500; i++) {
    const pick = <T>(xs: T[]): T => xs[Math.floor(next() * xs.length)]!
    const id = pick(ids)
    const request = hex()
    const lease = hex()
    const hold = {
      type: 'hold' as const,
      semaphore: next() < 0.5,
      limit: pick([1, 3, 2 ** 32 - 1, 2 ** 32 + 1]),
      name: pick(texts),
      key: pick(texts),
      ttl: pick([1_000, 30_000, 3_600_000, 2 ** 32 + 5, 1.5]),
      maxHold: pick(numbers),
      wait: next() < 0.3 ? null : pick(numbers),
      request,
    }
    same(
      encodeClient(id, hold),
      encodeHold(id, hold.semaphore, hold.limit, hold.name, hold.key, hold.ttl, hold.maxHold, hold.wait ?? -1, request),
      `hold ${JSON.stringify(hold)}`,
    )
    same(encodeClient(id, { type: 'release', lease }), encodeRelease(id, lease), `release ${lease}`)
    same(encodeClient(id, { type: 'renew', lease }), encodeRenew(id, lease), `renew ${lease}`)
    const granted = { type: 'granted' as const, request, lease, fence: pick(numbers), ttl: pick([1_000, 30_000]), revokeIn: pick(numbers) }
    same(encodeServer(id, granted), encodeGranted(id, request, lease, granted.fence, granted.ttl, granted.revokeIn), `granted ${JSON.stringify(granted)}`)
  }
  // Past what they take: the codec's answer, a frame or its refusal.
  const long = 'é'.repeat(40_000)
  const hold = { type: 'hold' as const, semaphore: false, limit: 1, name: long, key: 'k', ttl: 1_000, maxHold: 2 ** 60, wait: null, request }
  same(encodeClient(1, hold), encodeHold(1, false, 1, long, 'k', 1_000, 2 ** 60, -1, request), 'a name past a u16 length, a maxHold past 2^53')
  for (const bad of ['', 'g'.repeat(32), request.slice(1), `${request}0`, `é${request.slice(1)}`]) {
    assert.throws(() => encodeClient(1, { type: 'release', lease: bad }), /lease must be 32 hex digits/, bad)
    assert.throws(() => encodeClient(1, { ...hold, name: 'n', maxHold: 0, request: bad }), /request must be 32 hex digits/, bad)
    assert.throws(() => encodeServer(1, { type: 'granted', request, lease: bad, fence: 1, ttl: 1_000, revokeIn: 0 }), /lease must be 32 hex digits/, bad)
  }
})

/** What a read answers, or the code of the error it throws: the two readers' outcomes, compared. */
function outcomeOf(read: () => unknown): unknown {
  try {
    return read()
  } catch (error) {
    return (error as { code?: string }).code
  }
}

test('#17 granted frames, alone or batched, are read in JavaScript as the codec reads them (it reads them beside a done); the rest goes to the codec', () => {
  let seed = 58
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31
  const byte = () => Math.floor(next() * 256)
  const done = encodeServer(9, { type: 'done' })
  const read = (bytes: Uint8Array): unknown => outcomeOf(() => decodeServerAll(bytes))
  for (let i = 0; i < 500; i++) {
    const frames = Array.from({ length: 1 + Math.floor(next() * 3) }, () => {
      const frame = Uint8Array.from({ length: 58 }, byte)
      frame[0] = 1
      frame[1] = 0x82
      // Counts below 2^53 mostly, past it sometimes (rounded as the codec rounds them).
      if (next() < 0.8) frame[45] = frame[44] = frame[43] = 0
      if (next() < 0.8) frame[57] = frame[56] = frame[55] = 0
      if (next() < 0.3) frame[42] = frame[54] = 0x1f
      return frame
    })
    // Now and then a version or type byte changed, or a frame cut: refused, or read, as the codec does.
    if (next() < 0.2) frames[0]![Math.floor(next() * 2)] = byte()
    if (next() < 0.1) frames.push(frames.pop()!.subarray(0, -1))
    const mine = read(frames.length === 1 ? frames[0]! : batchOf(frames, true))
    const codecRead = read(batchOf([...frames, done], true))
    assert.deepEqual(mine, Array.isArray(codecRead) ? codecRead.slice(0, -1) : codecRead, `granted ${frames.map(f => [...f].join(','))}`)
  }
  const granted = encodeServer(7, { type: 'granted', request, lease, fence: 2 ** 53 - 1, ttl: 30_000, revokeIn: 0 })
  // A batch says id 0; another is refused, from a server as from a client.
  for (const [batch, what] of [
    [batchOf([granted, granted], true), 'server'],
    [batchOf([encodeRelease(0, lease), encodeRelease(0, lease)], false), 'client'],
  ] as const) {
    const wrong = Uint8Array.from(batch, (b, i) => (i === 2 ? 1 : b))
    assert.throws(
      () => (what === 'server' ? decodeServerAll(wrong) : decodeClientAll(wrong)),
      (e: { code?: string }) => e.code === 'protocol',
      what,
    )
  }
  assert.deepEqual(decodeServerAll(granted), [{ id: 7, type: 'granted', request, lease, fence: 2 ** 53 - 1, ttl: 30_000, revokeIn: 0 }])
  // A byte more or less, or another version, is the codec's to refuse.
  for (const bad of [granted.subarray(0, 57), Uint8Array.from([...granted, 0]), Uint8Array.from(granted, (b, i) => (i === 0 ? 2 : b))]) {
    assert.throws(
      () => decodeServerAll(bad),
      (e: { code?: string }) => e.code === 'protocol',
      `${bad.length} bytes, version ${bad[0]}`,
    )
  }
})

test('#17 the frames of a hold (hold, release, renew), alone or batched, are read in JavaScript as the codec reads them (it reads them beside an inspect); bad ones stay refused', () => {
  let seed = 36
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31
  const pick = <T>(xs: T[]): T => xs[Math.floor(next() * xs.length)]!
  const hex = () => Array.from({ length: 32 }, () => '0123456789abcdef'[Math.floor(next() * 16)]).join('')
  const texts = [
    '',
    'k',
    'bench',
    'twelve-chars',
    'thirteen-char',
    'fourteen é x!',
    '\u007f'.repeat(13),
    'a'.repeat(64),
    'a'.repeat(65),
    'b'.repeat(1024),
    'chat é',
    '\u007f~ !',
  ]
  const numbers = [0, 1, 999, 2 ** 32 - 1, 2 ** 32 + 7, 2 ** 53 - 1, 2 ** 60]
  const inspect = encodeClient(9, { type: 'inspect' })
  // The codec's reading: an inspect beside them is not read here.
  const codec = (frames: Uint8Array[]): unknown => outcomeOf(() => decodeClientAll(batchOf([...frames, inspect], false)).slice(0, -1))
  const mine = (bytes: Uint8Array): unknown => outcomeOf(() => decodeClientAll(bytes))
  for (let i = 0; i < 500; i++) {
    const frames = Array.from({ length: 1 + Math.floor(next() * 3) }, (_, j) => {
      const id = pick([0, 1, 2 ** 31, 2 ** 32 - 1]) + j
      const r = next()
      if (r < 0.2) return encodeClient(id, { type: 'release', lease: hex() })
      if (r < 0.3) return encodeClient(id, { type: 'renew', lease: hex() })
      const name = pick(texts)
      return encodeHold(
        id,
        next() < 0.5,
        pick([1, 3, 2 ** 32 - 1]),
        name.length > 64 ? 'n' : name,
        pick(texts),
        pick([1, 30_000, 2 ** 32 - 1]),
        pick(numbers),
        next() < 0.3 ? -1 : pick(numbers),
        hex(),
      )
    })
    // Now and then a byte changed: what the codec refuses must stay refused, and the same read.
    if (next() < 0.3) {
      const f = pick(frames)
      f[Math.floor(next() * f.length)] = pick([0, 1, 2, 0x7f, 0x80, 0xff])
    }
    if (next() < 0.1) frames.push(frames.pop()!.subarray(0, -1))
    assert.deepEqual(mine(frames.length === 1 ? frames[0]! : batchOf(frames, false)), codec(frames), `${frames.map(f => [...f].join(','))}`)
  }
  // A name past the codec's 64 bytes, or a bad version, is refused, read here or not.
  const named = encodeHold(1, false, 1, 'n'.repeat(64), 'k', 1, 0, -1, request)
  const long = Uint8Array.from([...named.subarray(0, 13), 110, ...named.subarray(13)])
  long[11] = 65
  assert.throws(
    () => decodeClientAll(long),
    (e: { code?: string }) => e.code === 'protocol',
  )
  assert.throws(
    () => decodeClientAll(Uint8Array.from(encodeRelease(1, lease), (b, i) => (i === 0 ? 2 : b))),
    (e: { code?: string }) => e.code === 'protocol',
  )
  const kind = Uint8Array.from(encodeHold(1, false, 1, 'n', 'k', 1, 0, -1, request))
  kind[6] = 2
  assert.throws(
    () => decodeClientAll(kind),
    (e: { code?: string }) => e.code === 'protocol',
  )
  // Counts past 2^53: the codec's rounding.
  const big = decodeClientAll(encodeHold(1, false, 1, 'n', 'k', 1, 2 ** 60 + 2 ** 20, 2 ** 55 + 1, request))[0] as { maxHold: number; wait: number }
  assert.deepEqual([big.maxHold, big.wait], [2 ** 60 + 2 ** 20, 2 ** 55])
  const hold = decodeClientAll(encodeHold(5, true, 3, 'n', 'k', 30_000, 2 ** 53 - 1, -1, request))
  assert.deepEqual(hold, [{ id: 5, type: 'hold', semaphore: true, limit: 3, name: 'n', key: 'k', ttl: 30_000, maxHold: 2 ** 53 - 1, wait: null, request }])
})

test('#17: a hold naming the name and key of the frame before gets them; one of the same length but other bytes is read anew', () => {
  const names = ['bench', 'bench', 'bencg', 'bench', 'x', 'thirteen-char', 'thirteen-chaz', 'a\u007fb', 'a\u007fc']
  for (const [i, name] of names.entries()) {
    const key = names[names.length - 1 - i]!
    const message = batchOf([encodeClient(0, { type: 'release', lease }), encodeHold(i, false, 1, name, key, 1_000, 0, -1, request)], false)
    const [, hold] = decodeClientAll(message) as [unknown, { name: string; key: string }]
    assert.deepEqual([hold.name, hold.key], [name, key], `frame ${i}`)
  }
  // A name not ASCII goes to the codec, and the one after it is read again, not taken from before it.
  const odd = decodeClient(encodeHold(1, false, 1, 'benché', 'k', 1_000, 0, -1, request)) as { name: string }
  assert.equal(odd.name, 'benché')
  const after = decodeClient(encodeHold(1, false, 1, 'bencg', 'k', 1_000, 0, -1, request)) as { name: string }
  assert.equal(after.name, 'bencg')
})

test('#17: names and keys read lately are reused by their bytes, never for other bytes: many keys in turn, colliding in the table, each read as sent', () => {
  // More keys than the table has slots (1,024), of every length up to past the longest kept (64
  // bytes), in turn and again: any two that share a slot replace each other, and each is read as sent.
  const keys = Array.from({ length: 3_000 }, (_, i) => `${'k'.repeat(i % 70)}${i % 1_500}`)
  for (let round = 0; round < 2; round++) {
    for (const [i, key] of keys.entries()) {
      const name = i % 3 === 0 ? 'bench' : `n${i % 7}`
      const hold = decodeClient(encodeHold(i, false, 1, name, key, 1_000, 0, -1, request)) as { name: string; key: string }
      assert.equal(hold.key, key, `key ${i}, round ${round}`)
      assert.equal(hold.name, name, `name ${i}, round ${round}`)
    }
  }
})

test('a frame that does not decode is refused, never half read', () => {
  const good = encodeClient(1, { type: 'renew', lease })
  for (const bad of [new Uint8Array(0), good.subarray(0, good.length - 1), Uint8Array.of(...good, 0), Uint8Array.of(255, 255, 255)]) {
    assert.throws(() => decodeClient(bad), `${bad.length} bytes`)
  }
})

test('#17 revision 3: the codec speaks the revision this package says, and the old hello and welcome are revision 2', () => {
  assert.equal(wireRevision(), REVISION)
  const old = encodeClient(1, { type: 'hello', revision: 2, token: 't', client: 'c' })
  assert.equal(old[1], 0x01, 'the old hello, which every server reads')
  assert.equal(encodeClient(1, { type: 'hello', revision: 3, token: 't', client: 'c' })[1], 0x09)
  assert.equal(encodeServer(1, { type: 'welcome', revision: 2, maxFrame: 1, connectionLimit: 0 })[1], 0x81)
})

test('#17 revision 3: a batch built here carries its frames in order, decoded in one call; a bad frame in it refuses it all', () => {
  const frames = [
    encodeClient(0, { type: 'release', lease }),
    encodeClient(7, { type: 'hold', semaphore: false, limit: 1, name: 'jobs', key: 'k é', ttl: 30_000, maxHold: 0, wait: null, request }),
    encodeClient(8, { type: 'inspect' }),
  ]
  assert.deepEqual(
    decodeClientAll(batchOf(frames, false)),
    frames.map(f => decodeClient(f)),
  )
  assert.throws(() => decodeClient(batchOf(frames, false)), /batch where one frame/)
  assert.throws(() => decodeClientAll(batchOf([frames[0]!, Uint8Array.of(1, 2, 3)], false)), /bad frame/)
  assert.throws(() => decodeServerAll(batchOf(frames, false)), /bad frame/, "a client's batch is no server's")
  const answers = [
    encodeServer(7, { type: 'granted', request, lease, fence: 9, ttl: 30_000, revokeIn: 0 }),
    encodeServer(8, { type: 'inspected', entries: [{ kind: 'lock', name: 'jobs', key: 'k', holders: [{ fence: 9, heldMs: 1 }], waiting: 0 }] }),
    encodeServer(0, { type: 'lost', lease, code: 'lost' }),
    encodeServer(9, { type: 'inspectedPage', more: false, entries: [] }),
  ]
  assert.deepEqual(
    decodeServerAll(batchOf(answers, true)),
    answers.map(f => decodeServer(f)),
  )
})

test('#16 revision 4: pool frames travel in a batch beside others, their pools in order with inspections', () => {
  const entries = [{ kind: 'lock' as const, name: 'jobs', key: 'k', holders: [{ fence: 3, heldMs: 10 }], waiting: 0 }]
  const pools = [{ name: 'seats', capacity: 180, remaining: 2, claims: 90, waiting: 1 }]
  const frames = [
    encodeServer(1, { type: 'inspected', entries }),
    encodeServer(2, { type: 'claimed', claimed: true, remaining: 5 }),
    encodeServer(3, { type: 'pools', pools }),
    encodeServer(4, { type: 'count', value: 1 }),
  ]
  assert.deepEqual(decodeServerAll(batchOf(frames, true)), [
    { id: 1, type: 'inspected', entries },
    { id: 2, type: 'claimed', claimed: true, remaining: 5 },
    { id: 3, type: 'pools', pools },
    { id: 4, type: 'count', value: 1 },
  ])
})

test('#17 idWords: an id of 32 hex digits as the four 32-bit words holdRemote takes, most significant first; anything else refused', () => {
  const words = new Uint32Array(8)
  assert.equal(idWords('0123456789abcdefFEDCBA9876543210', words, 4), true)
  assert.deepEqual([...words.subarray(4)], [0x0123_4567, 0x89ab_cdef, 0xfedc_ba98, 0x7654_3210])
  assert.equal(idWords('f'.repeat(32), words, 0), true)
  assert.deepEqual([...words.subarray(0, 4)], [0xffff_ffff, 0xffff_ffff, 0xffff_ffff, 0xffff_ffff])
  for (const bad of ['', 'g'.repeat(32), request.slice(1), `${request}0`, `é${request.slice(1)}`, ` ${request.slice(1)}`]) {
    assert.equal(idWords(bad, words, 0), false, bad)
  }
})

/** `hex` as the four words, most significant first and signed, that a client keeps an id as. */
function wordsOf(hex: string): [number, number, number, number] {
  const words = new Uint32Array(4)
  assert.ok(idWords(hex, words, 0))
  return [words[0]! | 0, words[1]! | 0, words[2]! | 0, words[3]! | 0]
}

test("#17 a client's ids as four words: its hold and release frames are the codec's byte for byte, and back to hex", () => {
  let seed = 17
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31
  const hexOf = () => Array.from({ length: 32 }, () => '0123456789abcdef'[Math.floor(next() * 16)]).join('')
  for (const id of [request, lease, 'f'.repeat(32), '0'.repeat(32), '80000000000000000000000000000001', ...Array.from({ length: 200 }, hexOf)]) {
    const w = wordsOf(id)
    assert.equal(hexOfWords(...w), id)
    assert.deepEqual(encodeReleaseOf(0, ...w), encodeRelease(0, id), `release ${id}`)
    for (const [name, key, wait] of [
      ['bench', 'r3:7', null],
      ['summaries', 'chat é 😀', 10_000],
      ['a', 'k'.repeat(70_000), 0], // a key too long for a u16: the codec's to refuse
    ] as const) {
      const codec = outcomeOf(() => encodeHold(5, true, 3, name, key, 30_000, 120_000, wait ?? -1, id))
      assert.deepEqual(
        outcomeOf(() => encodeHoldOf(5, true, 3, name, key, 30_000, 120_000, wait, ...w)),
        codec,
        `hold ${name} ${key.slice(0, 9)} ${id}`,
      )
    }
  }
})

test('#17 a client reads a message of granted frames with nothing made, as the codec reads it; any other message is not its to read', () => {
  const told: unknown[] = []
  const on = (id: number, fence: number, ttl: number, revokeIn: number, l0: number, l1: number, l2: number, l3: number) =>
    told.push({ id, type: 'granted', lease: hexOfWords(l0, l1, l2, l3), fence, ttl, revokeIn })
  const granted = [
    encodeServer(7, { type: 'granted', request, lease, fence: 2 ** 53 - 1, ttl: 30_000, revokeIn: 0 }),
    encodeServer(2 ** 32 - 2, { type: 'granted', request: lease, lease: request, fence: 1, ttl: 1_000, revokeIn: 2 ** 40 }),
  ]
  for (const message of [granted[0]!, batchOf(granted, true)]) {
    told.length = 0
    assert.ok(eachGranted(message, on))
    const codec = decodeServerAll(message) as Extract<ServerMessage, { type: 'granted' }>[]
    assert.deepEqual(
      told,
      codec.map(({ request: _, ...f }) => f),
    )
  }
  const done = encodeServer(9, { type: 'done' })
  for (const other of [done, batchOf([granted[0]!, done], true), granted[0]!.subarray(0, 57), Uint8Array.from(granted[0]!, (b, i) => (i === 0 ? 2 : b))]) {
    told.length = 0
    assert.equal(eachGranted(other, on), false)
    assert.deepEqual(told, [], 'nothing told of a message not read whole')
  }
})

test("#17 the server's ids as words: a request's lease drawn as words, its granted frame the codec's byte for byte, its hex made when asked", () => {
  const sink = {} as RemoteSink
  let seed = 23
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31
  const hexOf = () => Array.from({ length: 32 }, () => '0123456789abcdef'[Math.floor(next() * 16)]).join('')
  const ids = [request, lease, 'f'.repeat(32), '0'.repeat(32), '80000000000000000000000000000001', ...Array.from({ length: 100 }, hexOf)]
  for (const [i, id] of ids.entries()) {
    // A lease kept by a host (given as hex), and one drawn by the server (none given).
    for (const given of [ids[(i + 1) % ids.length]!, undefined]) {
      const r = new RemoteRequest('lock', 'n', 'k', id, given, 30_000, 0, 1, 9, sink)
      assert.equal(r.idsOk, 0)
      assert.match(r.lease, /^[0-9a-f]{32}$/)
      if (given !== undefined) assert.equal(r.lease, given)
      assert.deepEqual([r.l0, r.l1, r.l2, r.l3], wordsOf(r.lease))
      assert.deepEqual([r.r0, r.r1, r.r2, r.r3], wordsOf(id))
      for (const [fence, revokeIn] of [
        [1, 0],
        [2 ** 53 - 1, 2 ** 40],
        [2 ** 60, 5], // past 2^53: the codec's to encode
      ]) {
        assert.deepEqual(encodeGrantedOf(9, r, fence!, 30_000, revokeIn!), encodeGranted(9, id, r.lease, fence!, 30_000, revokeIn!), `${id} ${fence}`)
      }
    }
  }
  const drawn = new Set(Array.from({ length: 1_000 }, () => new RemoteRequest('lock', 'n', 'k', request, undefined, 1, 0, 1, 1, sink).lease))
  assert.equal(drawn.size, 1_000, 'every lease drawn is new')
  assert.equal(new RemoteRequest('lock', 'n', 'k', request.slice(1), lease, 1, 0, 1, 1, sink).idsOk, 1)
  assert.equal(new RemoteRequest('lock', 'n', 'k', request, 'g'.repeat(32), 1, 0, 1, 1, sink).idsOk, 2)
})

test('#17 batches past 64 bytes, cut from one block, each carry their own frames only, in any number', () => {
  const release = encodeReleaseOf(0, ...wordsOf(lease))
  const made: [Uint8Array, Uint8Array[]][] = []
  for (let i = 0; i < 600; i++) {
    // Every size, up to batches larger than a block's eighth (made whole).
    const frames = Array.from({ length: 1 + (i % 40) }, (_, j) => encodeHoldOf(i, false, 1, 'bench', `k${i}.${j}`, 30_000, 0, null, i, j, -1, 7))
    frames.unshift(release)
    made.push([batchOf(frames, false), frames])
  }
  // Read only once all are made: none was written over by a later one.
  for (const [batch, frames] of made)
    assert.deepEqual(
      decodeClientAll(batch),
      frames.map(f => decodeClient(f)),
    )
})

test('revision 8: a page of pools is counted to the byte as the codec writes it: within its budget, at least one pool, in order of name after the one asked, and a whole answer sized as its frame', () => {
  const pools = Array.from({ length: 500 }, (_, i) => {
    const n = (i * 37) % 500
    return { name: `p${n}-${'x'.repeat(n % 60)}`, capacity: 2 ** 53 - 1, remaining: n, claims: n % 7, waiting: n % 3 }
  })
  const names = pools.map(p => p.name).sort()
  assert.equal(encodeServer(1, { type: 'pools', pools }).length + 1, poolsAnswerSize(pools), 'a whole answer, and the byte a page adds')
  for (const budget of [1, 200, 4096, 10_000]) {
    const seen: string[] = []
    let after = ''
    for (;;) {
      const page = poolsPageAfter(pools, after, budget)
      const bytes = encodeServer(1, { type: 'poolsPage', ...page }).length
      assert.ok(page.pools.length >= 1, `budget ${budget}: a page holds a pool`)
      assert.ok(bytes <= budget || page.pools.length === 1, `budget ${budget}: a page of ${bytes} bytes`)
      if (page.more) {
        const next = poolsPageAfter(pools, page.pools.at(-1)!.name, Number.MAX_SAFE_INTEGER).pools[0]!
        assert.ok(bytes + 2 + next.name.length + 24 > budget, `budget ${budget}: the next pool would have fit`)
      }
      seen.push(...page.pools.map(p => p.name))
      if (!page.more) break
      after = page.pools.at(-1)!.name
    }
    assert.deepEqual(seen, names, `budget ${budget}: every pool once, in order of name`)
  }
  assert.deepEqual(poolsPageAfter(pools, names.at(-1)!, 4096), { pools: [], more: false })
})
