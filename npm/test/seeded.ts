/** Seeded pseudo-random numbers for the unit tests (xorshift32): the same steps for a seed on every runtime, so a failing case can be run again. */
export function seeded(seed: number): (n: number) => number {
  let x = seed | 0 || 1
  return n => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) % n
  }
}
