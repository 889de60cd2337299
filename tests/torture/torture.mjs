// Crash-restart torture of fences (LOCK-02), with real processes: a child store (child.mjs) grants
// leases as fast as it can and writes every fence to its stdout; it is killed with SIGKILL at a random
// moment (while it starts, opens, writes a ceiling, or grants), started again on the same storage,
// and killed again, many times. Every fence ever observed must be larger than every fence observed
// before it: across every restart, no duplicate, and none lost from durability (a fence observed
// before a crash is below every fence after it). Run on three storages: `fileStorage`, a slow one
// and a failing one (storages.mjs); and, as a control that the check bites, on a storage that
// acknowledges writes it never makes, where the torture must find a repeated fence.
//
//   node torture.mjs                       (from a project where `holdfast` is installed: run.sh)
//   TORTURE_KILLS=1000                     kills per storage (default: 100 file, 50 slow, 50 flaky)
//   TORTURE_MODES="file slow flaky lying"  which storages (`lying`: the control, 10 kills)
//   TORTURE_RUNTIME=/path/to/node-or-bun   the runtime of the children (default: this one)
//   TORTURE_SEED=1                         the seed of the kill moments and the storages' faults
//
// Prints the figures (kills, fences checked, failed opens, largest gap) and exits 1 on a violation,
// naming the storage, the kill and the two fences.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { openStore } from 'holdfast'
import { mulberry32 } from './random.js'
import { makeStorage } from './storages.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const BLOCK = 1_000_000
const modes = (process.env.TORTURE_MODES ?? 'file slow flaky lying').split(/\s+/).filter(Boolean)
const defaults = { file: 100, slow: 50, flaky: 50, lying: 10 }
const runtime = process.env.TORTURE_RUNTIME || process.execPath
const rand = mulberry32(Number(process.env.TORTURE_SEED ?? 1))

/** When to kill: a child takes about 200 ms to start, open its store and write its first ceiling;
 * a third of the kills land in that time, most of the rest while it grants, and some late enough for
 * half a block of fences to be handed out (a second ceiling write, under way or done). */
function killAfter() {
  const r = rand()
  if (r < 0.3) return rand() * 200
  if (r < 0.85) return 200 + rand() * 500
  return 700 + rand() * 1800
}

/** Runs one child for `ms` and kills it; answers the numbers it wrote, a torn last one dropped. */
function runChild(mode, dir, seed, ms) {
  return new Promise((resolve, reject) => {
    const child = spawn(runtime, [join(here, 'child.mjs'), mode, dir, String(seed)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const chunks = []
    let stderr = ''
    child.stdout.on('data', chunk => chunks.push(chunk))
    child.stderr.on('data', chunk => (stderr += chunk))
    const timer = setTimeout(() => child.kill('SIGKILL'), ms)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (signal !== 'SIGKILL') {
        reject(new Error(`${mode}: the child ended by itself (code ${code}, signal ${signal}):\n${stderr}`))
        return
      }
      const bytes = Buffer.concat(chunks)
      const whole = bytes.length - (bytes.length % 8)
      const values = new Float64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + whole))
      resolve({ values, torn: whole !== bytes.length })
    })
  })
}

async function torture(mode, kills) {
  const dir = mkdtempSync(join(tmpdir(), `holdfast-torture-${mode}-`))
  const figures = { mode, kills: 0, runsWithFences: 0, pastHalfBlock: 0, fences: 0, failedOpens: 0, failedHolds: 0, torn: 0, maxGap: 0, last: 0 }
  const started = performance.now()
  try {
    let last = 0
    // Since the process that observed `last`: how many processes ran, and how many opens failed.
    // Each process moves the stored ceiling up by at most two blocks (its open, and the next ceiling
    // asked for at half a block), and each failed open whose write landed by one more: the most the
    // next first fence may skip.
    let processes = 0
    let opensFailed = 0
    for (let kill = 1; kill <= kills; kill++) {
      const { values, torn } = await runChild(mode, dir, kill, killAfter())
      figures.kills++
      figures.torn += torn ? 1 : 0
      processes++
      let first = true
      for (const v of values) {
        if (v === -1) {
          figures.failedOpens++
          opensFailed++
        } else if (v === -2) figures.failedHolds++
        else if (!Number.isSafeInteger(v) || v < 1) throw new Error(`${mode}, kill ${kill}: ${v} is not a fence`)
        else if (v <= last) {
          throw new Error(`${mode}, kill ${kill}: fence ${v} observed after fence ${last}${first ? ' (the first of this restart: fences restarted below what an earlier process handed out)' : ''}`)
        } else {
          if (first && last > 0) {
            const bound = 2 * BLOCK * processes + BLOCK * opensFailed
            if (v - last > bound) {
              throw new Error(`${mode}, kill ${kill}: fences skipped from ${last} to ${v}, more than two blocks a process since (${processes} processes, ${opensFailed} failed opens)`)
            }
            figures.maxGap = Math.max(figures.maxGap, v - last)
          }
          first = false
          last = v
          figures.fences++
        }
      }
      if (!first) {
        figures.runsWithFences++
        // Enough grants that the next ceiling was asked for (and was being written, or written).
        if (values.filter(v => v > 0).length >= BLOCK / 2) figures.pastHalfBlock++
        processes = 0
        opensFailed = 0
      }
    }
    // One more restart, in this process, after the last kill: it too starts above everything seen.
    const store = await openStoreRetrying(mode, dir)
    const next = await store.lock('torture').hold('a', lease => lease.fence)
    await store.close()
    if (next <= last) throw new Error(`${mode}: after the last kill the store handed out ${next}, not above ${last}`)
    figures.last = next
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  figures.seconds = Math.round((performance.now() - started) / 100) / 10
  return figures
}

async function openStoreRetrying(mode, dir) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await openStore({ storage: makeStorage(mode, dir, 1_000_000 + attempt) })
    } catch (error) {
      if (mode !== 'flaky' || attempt > 50) throw error
    }
  }
}

const all = []
let failed = false
for (const mode of modes) {
  const kills = mode === 'lying' ? defaults.lying : Number(process.env.TORTURE_KILLS ?? defaults[mode] ?? 100)
  if (mode === 'lying') {
    try {
      await torture(mode, kills)
      failed = true
      console.error('torture lying (control): FAILED: a storage that keeps no write went unnoticed')
    } catch (error) {
      console.log(`torture lying (control: a storage that acknowledges writes it never makes): caught, as it must be: ${error.message}`)
    }
    continue
  }
  try {
    const f = await torture(mode, kills)
    all.push(f)
    console.log(
      `torture ${mode}: ${f.kills} kill -9 restarts survived, ${f.fences} fences checked (${f.runsWithFences} restarts handed some out, ${f.pastHalfBlock} past half a block), ` +
        `strictly increasing across all; ${f.failedOpens} failed opens, ${f.failedHolds} failed holds, ${f.torn} torn last records dropped; ` +
        `largest gap between the fences of two restarts ${f.maxGap} (bound checked: two blocks a process); first fence after the last kill ${f.last} (${f.seconds} s)`,
    )
  } catch (error) {
    failed = true
    console.error(`torture ${mode}: FAILED: ${error.message}`)
  }
}
if (all.length) {
  const kills = all.reduce((a, f) => a + f.kills, 0)
  const fences = all.reduce((a, f) => a + f.fences, 0)
  console.log(`torture: ${kills} restarts survived, ${fences} fences checked, on ${all.map(f => f.mode).join(', ')}`)
}
process.exit(failed ? 1 : 0)
