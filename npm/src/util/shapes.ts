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
 *
 * Where that cannot be foreseen, the kept object is moved along (`keepShapes`): when a real object's
 * field takes a value of a kind its shape did not allow, V8 deprecates the shape and moves each object
 * to the new one when it is next touched. A kept object nobody touches stays on the deprecated shape,
 * which it alone keeps alive, while the new one, which the real objects and the optimized code use,
 * dies at the next full collection. The remote client's holds did so (R1's client, Node 26: its hold's
 * path ran unoptimized for most of the timed part, after the collection before it).
 */

const kept: unknown[] = []

/** Keeps `object` (and so its shape) for as long as the package is loaded. */
export function keepShape(object: unknown): void {
  kept.push(object)
}

/**
 * Keeps `objects` and answers what moves them to their shape's current version, by `touch` (a write
 * of a field, which V8 does on the current shape): call it where real objects of theirs end, so that
 * a shape deprecated meanwhile is left behind at once.
 */
export function keepShapes<T>(objects: T[], touch: (object: T) => void): () => void {
  for (const object of objects) keepShape(object)
  return () => {
    for (const object of objects) touch(object)
  }
}
