/** `holdfast inspect`: the busy keys (and the pools) of a server or a Redis, as a table or as JSON. */

import type { KeyInfo, PoolInfo } from '../entry/node.js'
import { UsageError, age, answeredWithin, openClient, parseArgs } from './args.js'

export const INSPECT_USAGE = `Usage: holdfast inspect URL [--token-file FILE] [--json]

Prints the busy keys of the server at URL: kind, name, key, holders (fence and how long held),
and how many wait; then its pools: name, capacity, units left, open claims, claims waiting.
URL may be a Redis (redis://HOST:PORT): the keys holdfast/redis keeps there.

Options:
  --token-file FILE  the server's token (default: the environment variable HOLDFAST_TOKEN)
  --json             print the keys and pools as one JSON array instead of tables
  -h, --help         this text

Exit status: 0 printed (also when its reader left early, as in holdfast inspect | head -1); 2 any
other error (usage, no token, unreachable server, refused token, no answer within 10s).
`

export async function inspect(args: string[]): Promise<number> {
  const { options, positionals, help } = parseArgs(args, { 'token-file': 'value', json: 'flag' }, 'inspect')
  if (help) {
    process.stdout.write(INSPECT_USAGE)
    return 0
  }
  if (positionals.length !== 1) throw new UsageError(`inspect: give the server's URL, as in holdfast inspect ws://127.0.0.1:7420 (see holdfast inspect --help)`)
  const url = positionals[0]!
  const remote = await openClient(url, options.get('token-file'), 'inspect')
  let all: (KeyInfo | PoolInfo)[]
  try {
    all = await answeredWithin(remote.inspect(), 'inspect', url)
  } finally {
    await remote.close().catch(() => {})
  }
  const entries = all.filter((e): e is KeyInfo => e.kind !== 'pool').sort((a, b) => cmp(a.kind, b.kind) || cmp(a.name, b.name) || cmp(a.key, b.key))
  const pools = all.filter((e): e is PoolInfo => e.kind === 'pool').sort((a, b) => cmp(a.name, b.name))
  if (options.has('json')) {
    process.stdout.write(`${escapeControls(JSON.stringify([...entries, ...pools], null, 2))}\n`)
    return 0
  }
  if (entries.length === 0) process.stdout.write('no busy keys\n')
  else {
    const rows = [['KIND', 'NAME', 'KEY', 'HOLDERS', 'WAITING']]
    for (const e of entries) {
      const holders = e.holders.map(h => `fence ${h.fence} (${age(h.heldMs)})`).join(', ')
      rows.push([e.kind, e.name, showKey(e.key), holders || '-', String(e.waiting)])
    }
    table(rows)
  }
  if (pools.length > 0) {
    process.stdout.write('\n')
    table([
      ['POOL', 'CAPACITY', 'LEFT', 'CLAIMS', 'WAITING'],
      ...pools.map(p => [p.name, String(p.capacity), String(p.remaining), String(p.claims), String(p.waiting)]),
    ])
  }
  return 0
}

/** Rows as columns padded to their widest cell (the last one not padded). */
function table(rows: string[][]): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map(r => r[i]!.length)))
  for (const r of rows) process.stdout.write(`${r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')}\n`)
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** A key as it is, unless spaces or control characters would blur the table: then quoted and escaped. */
function showKey(key: string): string {
  return /^[^\s\p{C}"]+$/u.test(key) ? key : escapeControls(JSON.stringify(key))
}

/**
 * Characters a terminal may obey rather than show, as `\uXXXX` escapes: JSON.stringify escapes C0
 * controls but leaves C1 controls (U+0080-U+009F; U+009B is a CSI that some terminals act on) and the
 * bidirectional formatting characters (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069) raw, so a
 * key someone else chose could rewrite or reorder what `holdfast inspect` prints. Applied to JSON text
 * these only ever stand inside strings, where the escape means the same character.
 */
export function escapeControls(text: string): string {
  return text.replace(/[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, c => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
