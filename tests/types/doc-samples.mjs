// Writes each ```ts / ```js block of README.md and docs/*.md as a module of its own in OUT (the body in an
// async function, the names the prose leaves to the reader declared), for tests/js/run.sh to compile
// against the installed package: a sample that a change of the API left behind fails there, not in a
// user's editor. `node doc-samples.mjs ROOT OUT` prints the files written.
import { readFileSync, writeFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
const [root, out] = process.argv.slice(2)
const files = ['README.md', ...readdirSync(join(root, 'docs')).filter(f => f.endsWith('.md')).map(f => `docs/${f}`)]
const prelude = {
  ts: `/// <reference path="./cloudflare-workers.d.ts" />
declare const chatId: string, userId: string, orderId: string, invoiceId: string, token: string, value: string
declare const signal: AbortSignal
declare const env: { HOLDFAST: import('holdfast/cloudflare').DurableObjectNamespaceLike }
declare function writeSummary(chatId: string, fence: number, options?: { signal: AbortSignal }): Promise<void>
`,
  js: `// @ts-check
/// <reference path="./cloudflare-workers.d.ts" />
/** @type {any} */ const chatId = 0, userId = 0, orderId = '', invoiceId = 0, token = '', signal = undefined
/** @type {import('holdfast/cloudflare').DurableObjectNamespaceLike} */ let namespace
const env = { HOLDFAST: namespace }
/** @type {import('holdfast').Store} */ let store
/** @type {typeof import('holdfast').connect} */ let connect
`,
}
const names = []
for (const file of files) {
  const lines = readFileSync(join(root, file), 'utf8').split('\n')
  for (let i = 0; i < lines.length; i++) {
    const m = /^```(ts|js)\s*$/.exec(lines[i])
    if (!m) continue
    const start = i + 1
    const body = []
    for (i++; !lines[i].startsWith('```'); i++) body.push(lines[i])
    const top = body.filter(l => /^(import |export \{)/.test(l))
    let rest = body.filter(l => !/^(import |export \{)/.test(l))
    // A block that shows one name made several ways (`const store = ...` twice) assigns it again.
    const seen = new Set()
    rest = rest.map(l => l.replace(/^const (\w+) =/, (all, n) => (seen.has(n) ? `${n} =` : (seen.add(n), all))))
    rest = rest.map(l => l.replace(/^const (\w+) =/, (all, n) => (rest.some(o => o.startsWith(`${n} =`)) ? `let ${n} =` : all)))
    const name = `doc-sample-${file.replace(/\W/g, '_')}-${start}.${m[1] === 'ts' ? 'ts' : 'js'}`
    const exportDefault = rest.some(l => l.startsWith('export default'))
    const text = exportDefault
      ? `${prelude[m[1]]}${top.join('\n')}\n${rest.join('\n')}\n`
      : `${prelude[m[1]]}${top.join('\n')}\nexport async function sample() {\n// ${file}:${start}\n${rest.join('\n')}\n}\n`
    writeFileSync(join(out, name), text)
    names.push(name)
  }
}
// ioredis is not installed beside the package here: its constructor is all a sample calls.
writeFileSync(join(out, 'doc-sample-ioredis.d.ts'), "declare module 'ioredis' {\n  export class Redis {\n    constructor(url?: string)\n  }\n}\n")
console.log(names.join(' '))
