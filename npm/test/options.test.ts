import { test } from 'node:test'
import assert from 'node:assert/strict'
import { checkOptions, checkSignal } from '../src/util/options.js'
import { InvalidError } from '../src/errors.js'

test('unknown option names are refused by name, with the known ones listed', () => {
  assert.deepEqual(checkOptions(undefined, 'p', ['a']), {})
  assert.deepEqual(checkOptions({ a: 1 }, 'p', ['a', 'b']), { a: 1 })
  assert.throws(
    () => checkOptions({ tll: 1 }, 'lock x', ['ttl', 'wait']),
    e => e instanceof InvalidError && /lock x: unknown option "tll" \(known: ttl, wait\)/.test(e.message),
  )
  for (const [bad, said] of [
    [null, 'null'],
    [[], 'an array'],
    ['x', 'string'],
  ] as const) {
    assert.throws(
      () => checkOptions(bad, 'p', []),
      e => e instanceof InvalidError && e.message.includes(said),
      said,
    )
  }
})

test('a signal is anything shaped like an AbortSignal', () => {
  const signal = new AbortController().signal
  assert.equal(checkSignal(signal, 'p'), signal)
  assert.equal(checkSignal(undefined, 'p'), undefined)
  for (const bad of ['abort', {}, { aborted: true }, null]) assert.throws(() => checkSignal(bad, 'p'), InvalidError)
})
