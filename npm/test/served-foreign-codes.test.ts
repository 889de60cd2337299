import { test } from 'node:test'
import assert from 'node:assert/strict'
import { encodeClient, type ServerFrame } from '../src/remote/wire.js'
import { servedSession } from './served.js'

/**
 * An error the server answers whose `code` is none of the wire's (a Node system error's `EIO`, a
 * runtime's `ERR_…`, from a host's storage or the store) is answered all the same, as an error of a
 * code the wire carries, its own code kept in the message: the wire's codec refuses a code it does not
 * know, and that refusal left the frame unanswered (its client waiting for good) or broke out of the
 * frame's dispatch.
 */

const request = (i: number) => i.toString(16).padStart(32, '0')
const hold = (id: number, key: string) =>
  encodeClient(id, { type: 'hold', semaphore: false, limit: 1, name: 'x', key, ttl: 30_000, maxHold: 0, wait: 0, request: request(id) })
const tick = () => new Promise(resolve => setImmediate(resolve))
const errors = (frames: ServerFrame[]) => frames.map(f => [f.id, f.type, (f as { code?: string }).code, (f as { message?: string }).message])
const foreign = (code: string) => Object.assign(new Error('disk I/O error'), { code })

test('LOCK-05: a release its host could not keep, for an error of a code the wire does not know (EIO), is answered an error naming it, not left unanswered', async () => {
  const refusals: ((e: unknown) => void)[] = []
  const s = await servedSession({ hooks: { releasing: () => new Promise<void>((_, reject) => refusals.push(reject)) } })
  s.send(hold(1, 'a'))
  const granted = s.frames().find(f => f.id === 1) as { lease: string }
  s.send(encodeClient(2, { type: 'release', lease: granted.lease }))
  await tick()
  refusals.shift()!(foreign('EIO'))
  await tick()
  assert.deepEqual(errors(s.frames()), [[2, 'error', 'closed', 'disk I/O error (EIO)']])
  assert.deepEqual(
    s.store.inspectKeys().map(k => k.key),
    ['a'],
    'nothing let go',
  )
  await s.store.close()
})

test('an inspection the store fails with an error of a code the wire does not know is answered an error, and the frames after it still act', async () => {
  const s = await servedSession()
  const inspectKeys = s.store.inspectKeys.bind(s.store)
  s.store.inspectKeys = () => {
    throw foreign('ERR_SOMETHING')
  }
  s.send(encodeClient(1, { type: 'inspect' }))
  s.store.inspectKeys = inspectKeys
  s.send(hold(2, 'a'))
  assert.deepEqual(
    s.frames().map(f => [f.id, f.type]),
    [
      [1, 'error'],
      [2, 'granted'],
    ],
  )
  await s.store.close()
})
