// Shared by the suites that check every store refuses a misuse alike (tests/js: in process and a client
// of serve(); tests/redis: `holdfast/redis`; tests/workerd: a client of a HoldfastObject): one list of
// invalid calls — bad keys, bad durations, unknown options, options after fn, arguments of the wrong
// type, bad capacities and limits, releases twice and after close, every call after close() — each
// with what the in-process store answers: the error's class and `code`, how it comes (thrown at once or
// rejected), and words its message must hold (the place, and the bad value). Another store must answer
// each alike, word for word, unless the difference is chosen and documented (the suite names it, and
// where it is written down). Each step asks its own names, so no step depends on another's outcome.
// It imports nothing, so that a Worker runs it too (tests/workerd, on a workerStore(), with or without
// nodejs_compat).

/** Throws `message` unless `ok`. */
function check(ok, message) {
  if (!ok) throw new Error(message)
}

const fn = () => 'ran'
const aborted = () => AbortSignal.abort(new Error('gone'))

/** Runs `call`: `{ how: 'ok' | 'throws' | 'rejects', value? , error? }`; a thrown error is not awaited. */
async function answer(call) {
  let got
  try {
    got = call()
  } catch (error) {
    return { how: 'throws', error }
  }
  try {
    return { how: 'ok', value: await got }
  } catch (error) {
    return { how: 'rejects', error }
  }
}

/** What a value answered, with what differs by store or run (fences, ids, handles) left out. */
function shape(value) {
  if (value === undefined || value === null || typeof value !== 'object') return value
  if (typeof value.hold === 'function') return 'a handle'
  if (typeof value.claim === 'function') return 'a pool'
  if (typeof value.fence === 'number' && 'signal' in value) return 'a lease'
  if (Array.isArray(value)) return value.map(shape)
  const out = {}
  for (const [k, v] of Object.entries(value)) out[k] = k === 'id' ? typeof v : k === 'claim' ? v && { units: v.units } : shape(v)
  return out
}

// Durations that are not one; where a wait is taken, `Infinity` is one (no limit), and 1e20 ms too.
const NOT_DURATIONS = [
  ['abc', `"abc" must be whole numbers with units`],
  [-1, '-1 must be a duration'],
  [Number.NaN, 'NaN must be a duration'],
  [Infinity, 'Infinity must be a duration'],
  ['30 s', `"30 s" must be whole numbers with units`],
  ['1.5s', `"1.5s" must be whole numbers with units`],
  ['', `"" must be whole numbers with units`],
  ['-1s', `"-1s" must be whole numbers with units`],
  ['1s30m', `"1s30m" must be whole numbers with units`],
  [null, 'must be a duration (a number of ms or text such as \'30s\'), not object'],
  [true, 'not boolean'],
  [{}, 'not object'],
  [10n, 'not bigint'],
]

/** Keys that are none, as every hold, try and acquire takes them: `[label, key, words]`. */
const BAD_KEYS = [
  ['empty', '', 'key "" must be 1 to 1024 bytes'],
  ['1025 bytes', 'x'.repeat(1025), 'key of 1025 bytes must be 1 to 1024'],
  ['1026 bytes in 513 characters', 'é'.repeat(513), 'key of 1026 bytes'],
  ['a lone high surrogate', '\ud83d', 'key "\\ud83d" is not well-formed Unicode (a lone surrogate at index 0)'],
  ['a lone low surrogate inside', 'ab\udc00c', 'key "ab\\udc00c" is not well-formed Unicode (a lone surrogate at index 2)'],
  ['fractional', 1.5, 'key 1.5 must be a string or a whole number'],
  ['NaN', Number.NaN, 'key NaN must be'],
  ['Infinity', Infinity, 'key Infinity must be'],
  ['2^53', 2 ** 53, 'key 9007199254740992 must be'],
  ['null', null, 'key of type null must be'],
  ['undefined', undefined, 'key of type undefined must be'],
  ['an object', {}, 'key of type object must be'],
  ['an array', ['k'], 'key of type object must be'],
  ['a boolean', true, 'key of type boolean must be'],
  ['a bigint', 5n, 'key of type bigint must be'],
  ['a symbol', Symbol('k'), 'key of type symbol must be'],
]

/**
 * The steps: `[name, call(store, names), expected]`, where `names(kind)` gives a name of the step's own
 * and `expected` is `{ how, code, says: [words] }` for an error, or `{ how: 'ok' }`.
 */
export function misuses() {
  const steps = []
  const refuse = (how, code, ...says) => ({ how, code, says })
  const step = (name, call, expected) => steps.push([name, call, expected])

  // Keys, through each call that takes one.
  for (const [label, key, words] of BAD_KEYS) {
    step(`hold key ${label}`, (s, n) => s.lock(n()).hold(key, fn), refuse('rejects', 'invalid', `lock ${'%'}: key`, words))
    step(`tryHold key ${label}`, (s, n) => s.lock(n()).tryHold(key, fn), refuse('rejects', 'invalid', `lock ${'%'}: key`, words))
    step(`acquire key ${label}`, (s, n) => s.lock(n()).acquire(key), refuse('rejects', 'invalid', `lock ${'%'}: key`, words))
    step(`semaphore hold key ${label}`, (s, n) => s.semaphore(n(), { limit: 2 }).hold(key, fn), refuse('rejects', 'invalid', `semaphore ${'%'}: key`, words))
  }
  step('hold key 1024 bytes', (s, n) => s.lock(n()).hold('y'.repeat(1024), lease => lease.key.length), { how: 'ok' })
  step('hold key -(2^53-1)', (s, n) => s.lock(n()).hold(-(2 ** 53 - 1), lease => lease.key), { how: 'ok' })
  step('hold key a surrogate pair', (s, n) => s.lock(n()).hold('\ud83d\ude00', lease => lease.key), { how: 'ok' })

  // Durations: a handle's ttl, maxHold and wait; a hold's, an acquire's and a claim's wait; a claim's ttl.
  for (const [value, words] of NOT_DURATIONS) {
    const v = typeof value === 'bigint' ? `${value}n` : typeof value === 'string' ? JSON.stringify(value) : String(value)
    step(`lock ttl ${v}`, (s, n) => s.lock(n(), { ttl: value }), refuse('throws', 'invalid', `lock ${'%'}: ttl`, words))
    step(`lock maxHold ${v}`, (s, n) => s.lock(n(), { maxHold: value }), refuse('throws', 'invalid', `lock ${'%'}: maxHold`, words))
    step(`semaphore ttl ${v}`, (s, n) => s.semaphore(n(), { limit: 2, ttl: value }), refuse('throws', 'invalid', `semaphore ${'%'}: ttl`, words))
    if (value === Infinity) continue
    step(`lock wait ${v}`, (s, n) => s.lock(n(), { wait: value }), refuse('throws', 'invalid', `lock ${'%'}: wait`, words))
    step(`hold wait ${v}`, (s, n) => s.lock(n()).hold('k', { wait: value }, fn), refuse('rejects', 'invalid', `lock ${'%'}: key "k": wait`, words))
    step(`acquire wait ${v}`, (s, n) => s.lock(n()).acquire('k', { wait: value }), refuse('rejects', 'invalid', `lock ${'%'}: key "k": wait`, words))
    step(`claim wait ${v}`, (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, { wait: value }), refuse('rejects', 'invalid', `pool ${'%'}`, 'wait', words))
    step(`claim ttl ${v}`, (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, { ttl: value }), refuse('rejects', 'invalid', `pool ${'%'}`, 'ttl', words))
  }
  // Durations that are one, at the bounds and past them.
  step('lock ttl 1e20', (s, n) => s.lock(n(), { ttl: 1e20 }), refuse('throws', 'invalid', `lock ${'%'}: ttl`, '1s to 1h'))
  step('lock maxHold 1e20', (s, n) => s.lock(n(), { maxHold: 1e20 }), refuse('throws', 'invalid', `lock ${'%'}: maxHold`, '30 days'))
  step('lock maxHold 0', (s, n) => s.lock(n(), { maxHold: 0 }), refuse('throws', 'invalid', `lock ${'%'}: maxHold`))
  step('lock ttl 999ms', (s, n) => s.lock(n(), { ttl: 999 }), refuse('throws', 'invalid', `lock ${'%'}: ttl`, '999'))
  step('lock ttl 1h1ms', (s, n) => s.lock(n(), { ttl: 3_600_001 }), refuse('throws', 'invalid', `lock ${'%'}: ttl`, '3600001'))
  step('lock ttl 1h', (s, n) => s.lock(n(), { ttl: '1h' }).hold('k', fn), { how: 'ok' })
  step('lock maxHold 30d', (s, n) => s.lock(n(), { maxHold: '30d' }).hold('k', fn), { how: 'ok' })
  step('lock maxHold 30d1ms', (s, n) => s.lock(n(), { maxHold: 30 * 86_400_000 + 1 }), refuse('throws', 'invalid', `lock ${'%'}: maxHold`))
  step('lock wait 1e20', (s, n) => s.lock(n(), { wait: 1e20 }).hold('k', fn), { how: 'ok' })
  step('hold wait 1e20', (s, n) => s.lock(n()).hold('k', { wait: 1e20 }, fn), { how: 'ok' })
  step('hold wait Infinity', (s, n) => s.lock(n()).hold('k', { wait: Infinity }, fn), { how: 'ok' })
  step('hold wait 0.5', (s, n) => s.lock(n()).hold('k', { wait: 0.5 }, fn), { how: 'ok' })
  step('claim wait 1e20', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, { wait: 1e20 }), { how: 'ok' })
  step('claim ttl 1e20', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, { ttl: 1e20 }), refuse('rejects', 'invalid', `pool ${'%'}`, 'ttl'))
  step('claim ttl 31d', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, { ttl: '31d' }), refuse('rejects', 'invalid', `pool ${'%'}`, 'ttl'))
  step('claim ttl 0', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, { ttl: 0 }), refuse('rejects', 'invalid', `pool ${'%'}`, 'ttl'))

  // Unknown options, options of the wrong type, options after fn.
  step('lock unknown option', (s, n) => s.lock(n(), { tll: '1s' }), refuse('throws', 'invalid', `lock ${'%'}: unknown option "tll"`))
  step('lock options a string', (s, n) => s.lock(n(), '30s'), refuse('throws', 'invalid', `lock ${'%'}: options must be an object, not string`))
  step('lock options null', (s, n) => s.lock(n(), null), refuse('throws', 'invalid', `lock ${'%'}: options must be an object, not null`))
  step('lock options an array', (s, n) => s.lock(n(), []), refuse('throws', 'invalid', `lock ${'%'}: options must be an object, not an array`))
  step('semaphore unknown option', (s, n) => s.semaphore(n(), { limit: 2, limt: 3 }), refuse('throws', 'invalid', `semaphore ${'%'}: unknown option "limt"`))
  step('semaphore no options', (s, n) => s.semaphore(n()), refuse('throws', 'invalid', `semaphore ${'%'}: option limit is required`))
  step('pool unknown option', (s, n) => s.pool(n('pool'), { capacity: 2, size: 2 }), refuse('throws', 'invalid', `pool ${'%'}: unknown option "size"`))
  step('pool options a number', (s, n) => s.pool(n('pool'), 5), refuse('throws', 'invalid', `pool ${'%'}: options must be an object, not number`))
  step('hold unknown option', (s, n) => s.lock(n()).hold('k', { wiat: 0 }, fn), refuse('rejects', 'invalid', `lock ${'%'}: key "k": unknown option "wiat"`))
  step('hold options a string', (s, n) => s.lock(n()).hold('k', 'now', fn), refuse('rejects', 'invalid', `lock ${'%'}: key "k": options must be an object, not string`))
  step('hold options null', (s, n) => s.lock(n()).hold('k', null, fn), refuse('rejects', 'invalid', `lock ${'%'}: key "k": options must be an object, not null`))
  step('hold options after fn', (s, n) => s.lock(n()).hold('k', fn, { wait: 0 }), refuse('rejects', 'invalid', `lock ${'%'}: key "k": hold takes (key, [options], fn): nothing after fn`))
  step('hold options, fn, then more', (s, n) => s.lock(n()).hold('k', {}, fn, {}), { how: 'ok' })
  step('tryHold wait option', (s, n) => s.lock(n()).tryHold('k', { wait: 0 }, fn), refuse('rejects', 'invalid', `lock ${'%'}: key "k": tryHold: unknown option "wait"`))
  step('tryHold options after fn', (s, n) => s.lock(n()).tryHold('k', fn, {}), refuse('rejects', 'invalid', `lock ${'%'}: key "k": tryHold takes (key, [options], fn): nothing after fn`))
  // Arguments past those a call takes would go unheard: a fn after acquire's options never runs (its
  // lease is never released), more options after a claim's are dropped (an id among them).
  step('acquire options, then fn', (s, n) => s.lock(n()).acquire('k', {}, fn), refuse('rejects', 'invalid', `lock ${'%'}: key "k": acquire takes (key, [options]): nothing after options`))
  step('acquire no options, then fn', (s, n) => s.lock(n()).acquire('k', undefined, fn), refuse('rejects', 'invalid', `lock ${'%'}: key "k": acquire takes (key, [options]): nothing after options`))
  step('acquire options, then undefined', async (s, n) => (await s.lock(n()).acquire('k', {}, undefined)).release(), { how: 'ok' })
  step('claim options, then more options', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, {}, { id: 'order-1' }), refuse('rejects', 'invalid', `pool ${'%'}: claim takes (n, [options]): nothing after options`))
  step('claim options, then undefined', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, {}, undefined), { how: 'ok' })
  step('acquire unknown option', (s, n) => s.lock(n()).acquire('k', { timeout: 5 }), refuse('rejects', 'invalid', `lock ${'%'}: key "k": unknown option "timeout"`))
  step('acquire options a function', (s, n) => s.lock(n()).acquire('k', fn), refuse('rejects', 'invalid', `lock ${'%'}: key "k": options must be an object, not function`))
  step('claim unknown option', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, { idd: 'a' }), refuse('rejects', 'invalid', `pool ${'%'}`, 'unknown option "idd"'))
  step('claim options a string', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, 'a'), refuse('rejects', 'invalid', `pool ${'%'}`, 'options must be an object, not string'))
  step('hold bad signal', (s, n) => s.lock(n()).hold('k', { signal: {} }, fn), refuse('rejects', 'invalid', `lock ${'%'}: key "k": option signal must be an AbortSignal`))
  step('acquire aborted signal', (s, n) => s.lock(n()).acquire('k', { signal: aborted() }), refuse('rejects', 'cancelled', `lock ${'%'}: key "k": cancelled before it began`))
  step('claim bad signal', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, { signal: 'stop' }), refuse('rejects', 'invalid', `pool ${'%'}`, 'option signal must be an AbortSignal'))

  // Functions and arguments of the wrong type.
  step('hold no fn', (s, n) => s.lock(n()).hold('k'), refuse('rejects', 'invalid', `lock ${'%'}: key "k": hold needs a function to run`))
  step('hold options then not a fn', (s, n) => s.lock(n()).hold('k', {}, 42), refuse('rejects', 'invalid', `lock ${'%'}: key "k": hold needs a function to run`))
  step('tryHold no fn', (s, n) => s.lock(n()).tryHold('k'), refuse('rejects', 'invalid', `lock ${'%'}: key "k": tryHold needs a function to run`))
  step('tryHold options then null', (s, n) => s.lock(n()).tryHold('k', {}, null), refuse('rejects', 'invalid', `lock ${'%'}: key "k": tryHold needs a function to run`))
  step('lock name a number', s => s.lock(42), refuse('throws', 'invalid', 'lock: name must be a string, not number'))
  step('lock no name', s => s.lock(), refuse('throws', 'invalid', 'lock: name must be a string, not undefined'))
  step('lock name with a space', s => s.lock('bad name'), refuse('throws', 'invalid', 'lock bad name: name "bad name" must match'))
  step('lock name 65 characters', s => s.lock('n'.repeat(65)), refuse('throws', 'invalid', `name "${'n'.repeat(65)}" must match`))
  // A long text (a request body passed by mistake) is quoted cut: its first 100 characters and its size,
  // not the whole of it (twice, for a name) in every log line that prints the error.
  step('lock name 100,000 characters', s => s.lock('n'.repeat(100_000)), refuse('throws', 'invalid', `lock ${'n'.repeat(100)}…: name "${'n'.repeat(100)}"… (100000 bytes) must match`))
  step('lock ttl text of 100,000 characters', (s, n) => s.lock(n(), { ttl: 't'.repeat(100_000) }), refuse('throws', 'invalid', `: ttl "${'t'.repeat(100)}"… (100000 bytes) must be`))
  step('semaphore name an object', s => s.semaphore({}, { limit: 2 }), refuse('throws', 'invalid', 'semaphore: name must be a string, not object'))
  step('pool name null', s => s.pool(null, { capacity: 2 }), refuse('throws', 'invalid', 'pool: name must be a string, not object'))
  // Each names the bad value: a number as itself, text quoted, others by what they are.
  for (const [label, n, said] of [['0', 0], ['-1', -1], ['1.5', 1.5], ['NaN', Number.NaN], ['Infinity', Infinity], ['"1"', '1'], ['none', undefined, 'undefined'], ['null', null], ['1n', 1n], ['an object', {}, 'an object']]) {
    step(`claim ${label}`, (s, names) => s.pool(names('pool'), { capacity: 2 }).claim(n), refuse('rejects', 'invalid', `pool ${'%'}: a claim of ${said ?? label} must be a whole number`))
  }
  step('claim over capacity', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(3), refuse('rejects', 'invalid', `pool ${'%'}`, '3'))
  step('claim id a number', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, { id: 42 }), refuse('rejects', 'invalid', `pool ${'%'}`, 'id'))
  step('claim id empty', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, { id: '' }), refuse('rejects', 'invalid', `pool ${'%'}`, 'id'))
  step('claim id 129 bytes', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, { id: 'i'.repeat(129) }), refuse('rejects', 'invalid', `pool ${'%'}`, 'id'))
  step('claim id a lone surrogate', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, { id: 'order-\ud800' }), refuse('rejects', 'invalid', `pool ${'%'}`, 'id'))
  step('pool release id a number', (s, n) => s.pool(n('pool'), { capacity: 2 }).release(42), refuse('rejects', 'invalid', `pool ${'%'}`))
  step('pool release no id', (s, n) => s.pool(n('pool'), { capacity: 2 }).release(), refuse('rejects', 'invalid', `pool ${'%'}`))
  step('pool release id empty', (s, n) => s.pool(n('pool'), { capacity: 2 }).release(''), refuse('rejects', 'invalid', `pool ${'%'}`))
  step('pool confirm id an object', (s, n) => s.pool(n('pool'), { capacity: 2 }).confirm({}), refuse('rejects', 'invalid', `pool ${'%'}`))
  for (const [label, c, said] of [['0', 0], ['-1', -1], ['1.5', 1.5], ['NaN', Number.NaN], ['Infinity', Infinity], ['2^53', 2 ** 53, '9007199254740992'], ['1e20', 1e20, '100000000000000000000'], ['"10"', '10'], ['null', null], ['true', true], ['an array', [3], 'an object']]) {
    step(`pool capacity ${label}`, (s, n) => s.pool(n('pool'), { capacity: c }).remaining(), refuse('throws', 'invalid', `pool ${'%'}: capacity ${said ?? label} must be a whole number`))
    step(`resize ${label}`, (s, n) => s.pool(n('pool'), { capacity: 2 }).resize(c), refuse('rejects', 'invalid', `pool ${'%'}: capacity ${said ?? label} must be a whole number`))
    step(`semaphore limit ${label}`, (s, n) => s.semaphore(n(), { limit: c }), refuse('throws', 'invalid', `semaphore ${'%'}: limit ${said ?? label} must be a whole number`))
  }
  step('pool capacity 2^53-1', (s, n) => s.pool(n('pool'), { capacity: 2 ** 53 - 1 }).remaining(), { how: 'ok' })
  step('pool capacity 2^32-1', (s, n) => s.pool(n('pool'), { capacity: 2 ** 32 - 1 }).remaining(), { how: 'ok' })
  step('semaphore limit 10001', (s, n) => s.semaphore(n(), { limit: 10_001 }), refuse('throws', 'invalid', `semaphore ${'%'}: limit 10001`))

  // Options left out as `undefined` or `null`, and arguments past those a call takes.
  step('hold options undefined', (s, n) => s.lock(n()).hold('k', undefined, fn), { how: 'ok' })
  step('tryHold options undefined', (s, n) => s.lock(n()).tryHold('k', undefined, fn), { how: 'ok' })
  step('tryHold options null', (s, n) => s.lock(n()).tryHold('k', null, fn), refuse('rejects', 'invalid', `lock ${'%'}: key "k": tryHold: options must be an object, not null`))
  step('acquire options null', (s, n) => s.lock(n()).acquire('k', null), refuse('rejects', 'invalid', `lock ${'%'}: key "k": options must be an object, not null`))
  step('lock options undefined', (s, n) => s.lock(n(), undefined).hold('k', fn), { how: 'ok' })
  // In process at once; elsewhere at the handle's first call (README, Pools: chosen).
  step('pool capacity undefined, a new pool', (s, n) => s.pool(n('pool'), { capacity: undefined }).claim(1), refuse('throws', 'invalid', `pool ${'%'}: no such pool`))
  step('claim options null', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, null), refuse('rejects', 'invalid', `pool ${'%'}`, 'options must be an object, not null'))
  step('claim ttl Infinity', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, { ttl: Infinity }), refuse('rejects', 'invalid', `pool ${'%'}`, 'ttl Infinity'))
  step('claim wait Infinity, units free', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(1, { wait: Infinity }), { how: 'ok' })

  // Two faults at once: every store names the same one (the order of the checks is the in-process one).
  step('hold fn a string', (s, n) => s.lock(n()).hold('k', 'fn'), refuse('rejects', 'invalid', `lock ${'%'}: key "k": options must be an object, not string`))
  step('hold unknown option, no fn', (s, n) => s.lock(n()).hold('k', { wiat: 0 }), refuse('rejects', 'invalid', `lock ${'%'}: key "k": unknown option "wiat"`))
  step('hold bad wait, fn a number', (s, n) => s.lock(n()).hold('k', { wait: -1 }, 7), refuse('rejects', 'invalid', `lock ${'%'}: key "k": wait -1 must be a duration`))
  step('hold options after fn, bad key', (s, n) => s.lock(n()).hold('', fn, {}), refuse('rejects', 'invalid', `lock ${'%'}: key ""`))
  step('hold aborted signal, no fn', (s, n) => s.lock(n()).hold('k', { signal: aborted() }), refuse('rejects', 'cancelled', `lock ${'%'}: key "k": cancelled before it began`))
  step('tryHold wait option, no fn', (s, n) => s.lock(n()).tryHold('k', { wait: 0 }), refuse('rejects', 'invalid', `lock ${'%'}: key "k": tryHold: unknown option "wait"`))
  step('tryHold options null, then options', (s, n) => s.lock(n()).tryHold('k', null, {}), refuse('rejects', 'invalid', `lock ${'%'}: key "k": tryHold: options must be an object, not null`))
  step('tryHold aborted signal, no fn', (s, n) => s.lock(n()).tryHold('k', { signal: aborted() }), refuse('rejects', 'cancelled', `lock ${'%'}: key "k": cancelled before it began`))
  step('acquire bad wait and unknown option', (s, n) => s.lock(n()).acquire('k', { wait: 'x', foo: 1 }), refuse('rejects', 'invalid', `lock ${'%'}: key "k"`))
  step('claim 0 with an unknown option', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(0, { idd: 'a' }), refuse('rejects', 'invalid', `pool ${'%'}`))
  step('claim over capacity, bad ttl', (s, n) => s.pool(n('pool'), { capacity: 2 }).claim(3, { ttl: -1 }), refuse('rejects', 'invalid', `pool ${'%'}`))
  step('semaphore bad limit and unknown option', (s, n) => s.semaphore(n(), { limit: 0, lmit: 2 }), refuse('throws', 'invalid', `semaphore ${'%'}`))
  step('lock bad ttl and bad maxHold', (s, n) => s.lock(n(), { ttl: 'x', maxHold: 'y' }), refuse('throws', 'invalid', `lock ${'%'}`))
  // A handle's name is checked before its options, on every store (and a closed store before both).
  step('lock bad name, unknown option', s => s.lock('Bad Name', { tll: 1 }), refuse('throws', 'invalid', 'lock Bad Name: name "Bad Name" must match'))
  step('lock name a number, bad ttl', s => s.lock(7, { ttl: -1 }), refuse('throws', 'invalid', 'lock: name must be a string, not number'))
  step('semaphore bad name, no limit', s => s.semaphore('-s', {}), refuse('throws', 'invalid', 'semaphore -s: name "-s" must match'))
  step('pool name a number, capacity a string', s => s.pool(7, { capacity: '3' }), refuse('throws', 'invalid', 'pool: name must be a string, not number'))
  step('pool bad name, bad capacity', s => s.pool('Bad!', { capacity: 0 }), refuse('throws', 'invalid', 'pool Bad!: name "Bad!" must match'))
  step('pool bad name, unknown option', s => s.pool('Bad!', { size: 1 }), refuse('throws', 'invalid', 'pool Bad!: name "Bad!" must match'))
  step('pool bad name, no capacity', s => s.pool('Bad!'), refuse('throws', 'invalid', 'pool Bad!: name "Bad!" must match'))

  // Ends: twice, and after close (of the store, in the steps after close below).
  step('lease release twice', async (s, n) => {
    const lease = await s.lock(n()).acquire('k')
    return [await lease.release(), await lease.release(), lease.lost]
  }, { how: 'ok' })
  step('claim release twice', async (s, n) => {
    const c = await s.pool(n('pool'), { capacity: 2 }).claim(1)
    return [await c.claim.release(), await c.claim.release()]
  }, { how: 'ok' })
  step('confirm after release', async (s, n) => {
    const c = await s.pool(n('pool'), { capacity: 2 }).claim(1, { ttl: '1h' })
    await c.claim.release()
    return c.claim.confirm()
  }, refuse('rejects', 'lost', `pool ${'%'}`))
  step('hold inside its own hold', (s, n) => {
    const lock = s.lock(n())
    return lock.hold('k', () => lock.hold('k', fn))
  }, refuse('rejects', 'invalid', `lock ${'%'}: key "k"`))
  return steps
}

/**
 * Steps run after the store closed, on handles, a lease and a claim made before: `[name, call(kept)]`;
 * each is refused `ClosedError` (thrown at once where the call answers at once), or answers as a
 * second release does.
 */
export async function beforeClose(store, prefix) {
  const lock = store.lock(`${prefix}-closed`)
  const semaphore = store.semaphore(`${prefix}-closed-s`, { limit: 2 })
  const pool = store.pool(`${prefix}-closed-p`, { capacity: 3 })
  const lease = await lock.acquire('held')
  const claim = (await pool.claim(1, { ttl: '1h' })).claim
  const released = (await pool.claim(1)).claim
  await released.release()
  return { lock, semaphore, pool, lease, claim, released }
}

/** Steps after close: `[name, call(kept), how, code]` (no code: answered, as it was before close). */
export const AFTER_CLOSE = [
  ['hold', k => k.lock.hold('k', fn), 'rejects', 'closed'],
  ['tryHold', k => k.lock.tryHold('k', fn), 'rejects', 'closed'],
  ['acquire', k => k.lock.acquire('k'), 'rejects', 'closed'],
  ['semaphore hold', k => k.semaphore.hold('k', fn), 'rejects', 'closed'],
  ['semaphore tryHold', k => k.semaphore.tryHold('k', fn), 'rejects', 'closed'],
  // A bad input is named as such even after close, as before it.
  ['hold with a bad key', k => k.lock.hold('', fn), 'rejects', 'invalid'],
  ['hold options after fn', k => k.lock.hold('k', fn, {}), 'rejects', 'invalid'],
  ['new lock', k => k.store.lock('later'), 'throws', 'closed'],
  ['new lock, bad name', k => k.store.lock('Bad Name'), 'throws', 'closed'],
  ['new pool, bad capacity', k => k.store.pool('later', { capacity: 0 }), 'throws', 'closed'],
  ['new pool, bad name', k => k.store.pool('Bad!'), 'throws', 'closed'],
  ['new lock, unknown option', k => k.store.lock('later', { tll: 1 }), 'throws', 'closed'],
  ['new semaphore, no limit', k => k.store.semaphore('later', {}), 'throws', 'closed'],
  ['new semaphore', k => k.store.semaphore('later', { limit: 1 }), 'throws', 'closed'],
  ['new pool', k => k.store.pool('later', { capacity: 1 }), 'throws', 'closed'],
  ['claim', k => k.pool.claim(1), 'rejects', 'closed'],
  ['claim with a bad n', k => k.pool.claim(0), 'rejects', 'invalid'],
  ['claim with an unknown option', k => k.pool.claim(1, { idd: 'a' }), 'rejects', 'invalid'],
  ['remaining', k => k.pool.remaining(), 'rejects', 'closed'],
  ['resize', k => k.pool.resize(5), 'rejects', 'closed'],
  ['resize with a bad capacity', k => k.pool.resize(0), 'rejects', 'invalid'],
  ['pool release by id', k => k.pool.release('order-1'), 'rejects', 'closed'],
  ['pool release by a bad id', k => k.pool.release(''), 'rejects', 'invalid'],
  ['pool confirm by id', k => k.pool.confirm('order-1'), 'rejects', 'closed'],
  ['lease release', k => k.lease.release(), 'ok'],
  ['lease release again', k => k.lease.release(), 'ok'],
  ['lease lost', k => k.lease.lost, 'ok'],
  ['lease signal aborted', k => [k.lease.signal.aborted, k.lease.signal.reason?.code], 'ok'],
  ['claim confirm', k => k.claim.confirm(), 'rejects', 'closed'],
  ['claim release', k => k.claim.release(), 'rejects', 'closed'],
  ['released claim released again', k => k.released.release(), 'rejects', 'closed'],
  ['inspect', k => k.store.inspect(), 'throws', 'closed'],
  ['close again', k => k.store.close(), 'ok'],
]

/**
 * Runs every step on `store` (its names begin with `prefix`), then closes it and runs the steps after
 * close: one line `[name, outcome]` a step, where an outcome is `{ how, value }` or `{ how, class,
 * code, message }` with the step's own name written `%` in the message. `afterClose: false` leaves the
 * close and the steps after it out (a Worker's store has no close()).
 */
export async function transcript(store, prefix, { close = () => store.close(), classes, afterClose = true } = {}) {
  const lines = []
  let i = 0
  for (const [name, call] of misuses()) {
    let own
    const names = (kind = 'lock') => (own = `${prefix}-${kind === 'pool' ? 'p' : 'l'}${i++}`)
    lines.push([name, written(await answer(() => call(store, names)), classes, own)])
  }
  if (!afterClose) return lines
  const kept = { store, ...(await beforeClose(store, prefix)) }
  await close()
  for (const [name, call] of AFTER_CLOSE) lines.push([`closed: ${name}`, written(await answer(() => call(kept)), classes)])
  return lines
}

/**
 * An outcome as the transcript writes it: the step's own name as `%`, and a claim id the store drew
 * (each store draws its own, in its own form) as `claim "…"`. `classes` (the package's, by code): whether
 * the error is an instance of its code's class, as a caller's `instanceof` asks.
 */
function written(got, classes, own) {
  if (got.how === 'ok') return { how: 'ok', value: shape(got.value) }
  const e = got.error
  let message = typeof e?.message === 'string' ? e.message : String(e)
  if (own !== undefined) message = message.replaceAll(own, '%')
  message = message.replace(/claim "[0-9a-f]{16,}"/, 'claim "…"')
  const out = { how: got.how, class: e?.constructor?.name, code: e?.code, message }
  if (classes) out.instance = e instanceof classes[e?.code]
  return out
}

const CLASSES = { invalid: 'InvalidError', closed: 'ClosedError', cancelled: 'CancelledError', lost: 'LostError', in_use: 'InUseError', limit: 'LimitError' }

/**
 * Checks the in-process store's transcript against each step's expectation: the class (an instance
 * of the package's own, where the transcript asked), the code, how it came, and the words of its message.
 */
export function checkExpected(lines) {
  const steps = new Map(misuses().map(([name, , expected]) => [name, expected]))
  const wrong = []
  for (const [name, got] of lines) {
    const expected = name.startsWith('closed: ') ? closedExpected(name) : steps.get(name)
    const problems = []
    if (got.how !== expected.how) problems.push(`${got.how}, not ${expected.how}`)
    if (expected.code !== undefined) {
      if (got.code !== expected.code) problems.push(`code ${got.code}, not ${expected.code}`)
      if (got.class !== CLASSES[expected.code]) problems.push(`class ${got.class}`)
      if (got.instance === false) problems.push(`not an instance of the package's ${CLASSES[expected.code]}`)
      for (const words of expected.says) if (!got.message?.includes(words)) problems.push(`no ${JSON.stringify(words)}`)
    }
    if (problems.length > 0) wrong.push(`${name}: ${problems.join('; ')}\n  ${JSON.stringify(got)}`)
  }
  check(wrong.length === 0, `${wrong.length} steps answer other than expected:\n${wrong.join('\n')}`)
}

function closedExpected(name) {
  const [, , how, code] = AFTER_CLOSE.find(([n]) => `closed: ${n}` === name)
  return { how, code, says: [] }
}

/**
 * Compares `other`'s transcript with the in-process `reference`'s, line by line. `chosen` maps the
 * name of a step answered otherwise by design to where that is written down (left out of the
 * comparison); `words` maps the other's messages where their words differ by design. Every line that
 * differs is reported at once.
 */
export function sameTranscript(reference, other, { chosen = {}, words = m => m } = {}) {
  const names = lines => JSON.stringify(lines.map(([name]) => name))
  check(names(other) === names(reference), `the steps differ: ${names(other)}`)
  const diffs = []
  for (const [i, [name, want]] of reference.entries()) {
    if (name in chosen) continue
    const got = other[i][1].message === undefined ? other[i][1] : { ...other[i][1], message: words(other[i][1].message) }
    // Outcomes are JSON (written() makes them so), their keys in one order.
    if (JSON.stringify(got) !== JSON.stringify(want)) diffs.push(`${name}:\n  in process: ${JSON.stringify(want)}\n  here:       ${JSON.stringify(got)}`)
  }
  for (const name of Object.keys(chosen)) check(reference.some(([n]) => n === name), `no step ${name}`)
  check(diffs.length === 0, `${diffs.length} steps differ:\n${diffs.join('\n')}`)
}
