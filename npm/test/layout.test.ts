// The package's layout (#14): no import circle among its modules, type-only imports included, and the
// shared types a leaf. A circle is what made the rooms hard to tell apart: each file of one needs all.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

// Compiled into .unit/test/: the sources are two levels up, in src/.
const src = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src')
const IMPORT = /(?:import|export)\s[^'";]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(e =>
    e.isDirectory() ? modules(join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [join(dir, e.name)] : [],
  )
}

/** Each module's imports of other modules of the package (type-only ones too). */
function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>()
  for (const file of modules(src)) {
    const deps: string[] = []
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const target = normalize(join(dirname(file), (m[1] ?? m[2])!)).replace(/\.js$/, '.ts')
      if (existsSync(target)) deps.push(target)
    }
    g.set(file, deps)
  }
  return g
}

test('no import circle among the modules of npm/src, type-only imports included', () => {
  const g = graph()
  assert.ok(g.size > 20, `read the sources (${g.size} modules in ${src})`)
  const state = new Map<string, 'open' | 'done'>()
  const circles: string[] = []
  const visit = (file: string, path: string[]) => {
    state.set(file, 'open')
    for (const dep of g.get(file) ?? []) {
      if (state.get(dep) === 'open') circles.push([...path.slice(path.indexOf(dep)), file, dep].map(f => relative(src, f)).join(' -> '))
      else if (!state.has(dep)) visit(dep, [...path, file])
    }
    state.set(file, 'done')
  }
  for (const file of g.keys()) if (!state.has(file)) visit(file, [])
  assert.deepEqual(circles, [])
})

test('types.ts, the types the rooms share, imports nothing of the package', () => {
  assert.deepEqual(graph().get(join(src, 'types.ts')), [])
})

test('#14: the ABI of the store and the engine is written once in TypeScript, in store/abi.ts: no other module of the store defines a constant of its names', () => {
  // (remote/wire.ts has constants of its own for the flat codec of wire messages, another ABI.)
  const abi = join(src, 'store', 'abi.ts')
  const names = [...readFileSync(abi, 'utf8').matchAll(/^export const (\w+) = /gm)].map(m => m[1]!)
  assert.ok(names.length > 20, `read the ABI's names (${names.length} in ${abi})`)
  const copies: string[] = []
  for (const file of modules(join(src, 'store'))) {
    if (file === abi) continue
    for (const m of readFileSync(file, 'utf8').matchAll(/^\s*(?:export\s+)?const\s+(\w+)\s*=/gm)) {
      if (names.includes(m[1]!)) copies.push(`${relative(src, file)}: ${m[1]}`)
    }
  }
  assert.deepEqual(copies, [])
})
