/**
 * One object of each kind a hold makes by the thousand, kept for as long as the package is loaded, so
 * that the JavaScript engine keeps their shapes (V8's maps, JSC's structures).
 *
 * Why: optimized code refers to the shapes of the objects it was optimized for weakly, and a shape
 * lives while some object has it. A key's leases, waiters, lines and kept contexts all die when its
 * busy period ends; a full collection then frees their shapes, and every function of a hold's path
 * that was optimized for them is deoptimized at once (V8: "embedded weak objects cleared"), to be
 * optimized again over the next tens of thousands of holds — the contended benchmark (W3) ran at two
 * thirds of its speed in the runs where that happened, its explicit collection between the warm-up
 * and the timed pass being such a collection.
 *
 * A kept object is made by the same constructor as the real ones, and is given values of the same
 * kinds (a double where real ones hold doubles: a field that goes from a small integer to a double
 * changes shape), so that it has the shape they end up with.
 */

const kept: unknown[] = []

/** Keeps `object` (and so its shape) for as long as the package is loaded. */
export function keepShape(object: unknown): void {
  kept.push(object)
}
