// How far a ratio of two adapters' speeds can be trusted, from the rounds of one run.
//
// The benchmark reports median(a) ÷ median(b) over its rounds. On a shared machine one build's rounds
// move by a tenth or more from process to process, so a ratio near its line (0.9, 1.0) can fall on
// either side from one run to the next. `ratioInterval` gives the range that ratio keeps when the run
// is drawn again from its own rounds (a percentile bootstrap): rounds are drawn with replacement, in
// pairs (round i of a with round i of b: they ran side by side, one after the other, under the same
// load), and the ratio of the medians is taken for each draw.
//
// Invariants:
// - Deterministic: the draws come from a fixed seed, so the same rounds always give the same interval.
// - The interval contains the ratio of the medians of the rounds themselves whenever it is made.
// - Fewer than 5 rounds give no interval (`undefined`): with so few, the draws say nothing useful.
// Nothing here judges a speed: the interval is printed beside the ratio, for whoever reads it.

import { mulberry32 } from '../shared/random.js'

/** The median of `xs` (sorted in place). */
function medianOf(xs) {
  xs.sort()
  const n = xs.length
  return n % 2 ? xs[(n - 1) / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2
}

/** The median of the numbers `xs` (left as they are). */
export function median(xs) {
  return medianOf(Float64Array.from(xs))
}

/**
 * The `level` (default 90%) interval of median(a) ÷ median(b), where a[i] and b[i] are the speeds of
 * round i (ops/s, every one a positive number), or `undefined` with fewer than 5 rounds or rounds that
 * do not pair up. `resamples` draws (default 2,000).
 */
export function ratioInterval(a, b, { level = 0.9, resamples = 2000, seed = 17 } = {}) {
  const n = a.length
  if (n < 5 || b.length !== n) return undefined
  if (![...a, ...b].every((x) => typeof x === 'number' && x > 0 && Number.isFinite(x))) return undefined
  const random = mulberry32(seed)
  const xa = new Float64Array(n)
  const xb = new Float64Array(n)
  const ratios = new Float64Array(resamples)
  for (let k = 0; k < resamples; k++) {
    for (let i = 0; i < n; i++) {
      const j = Math.floor(random() * n)
      xa[i] = a[j]
      xb[i] = b[j]
    }
    ratios[k] = medianOf(xa) / medianOf(xb)
  }
  ratios.sort()
  const point = medianOf(Float64Array.from(a)) / medianOf(Float64Array.from(b))
  const low = Math.min(point, ratios[Math.floor(((1 - level) / 2) * resamples)])
  const high = Math.max(point, ratios[Math.ceil(((1 + level) / 2) * resamples) - 1])
  return [low, high]
}
