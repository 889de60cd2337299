import { test } from 'node:test'
import assert from 'node:assert/strict'
import { MAX_KEY_BYTES, toKey, utf8Length } from '../src/util/key.js'
import { InvalidError } from '../src/errors.js'

test('keys are strings or safe whole numbers, spelled in decimal', () => {
  assert.equal(toKey('a', 'p'), 'a')
  assert.equal(toKey(42, 'p'), '42')
  assert.equal(toKey(-7, 'p'), '-7')
  for (const bad of [1.5, NaN, Infinity, 2 ** 53, null, undefined, {}, 10n, true]) {
    assert.throws(
      () => toKey(bad, 'lock x'),
      e => e instanceof InvalidError && e.message.startsWith('lock x: key'),
      String(bad),
    )
  }
})

test('1 to 1024 bytes of UTF-8, counted without encoding', () => {
  assert.equal(toKey('k'.repeat(MAX_KEY_BYTES), 'p').length, MAX_KEY_BYTES)
  assert.equal(toKey('é'.repeat(512), 'p').length, 512)
  for (const bad of ['', 'k'.repeat(1025), 'é'.repeat(513), '😀'.repeat(257)]) {
    assert.throws(() => toKey(bad, 'p'), InvalidError, `${bad.length} units`)
  }
  for (const text of ['a', 'é', '€', '😀', 'a😀é€', '\u07ff\u0800']) {
    assert.equal(utf8Length(text), new TextEncoder().encode(text).length, text)
  }
})

test('#13: a key that is not well-formed Unicode is refused, naming where its lone surrogate is', () => {
  for (const [bad, at] of [
    ['user-\ud83d', 5],
    ['\udc00', 0],
    ['a\udc00b', 1],
    ['\ud83d\ud83d', 0],
    [`${'k'.repeat(400)}\ud800`, 400],
  ] as const) {
    assert.throws(
      () => toKey(bad, 'lock users'),
      e => e instanceof InvalidError && e.message.includes(`index ${at}`) && /well-formed/.test(e.message),
      JSON.stringify(bad),
    )
  }
  // Whole surrogate pairs are fine, and U+FFFD is a key of its own.
  assert.equal(toKey('user-\ud83d\ude00', 'p'), 'user-😀')
  assert.equal(toKey('user-\ufffd', 'p'), 'user-\ufffd')
})
