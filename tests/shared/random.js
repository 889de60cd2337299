// Shared by the suites (the runners copy tests/shared/*.js into each suite's project) and the benchmark.

/**
 * A small seeded generator (mulberry32), uniform in [0, 1): the same seed gives the same numbers, so
 * that a model test, a torture child's faults or a benchmark's resampling replay exactly.
 */
export function mulberry32(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
