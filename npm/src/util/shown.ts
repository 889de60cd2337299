/**
 * A bad value as an error message names it: a number as itself, text quoted (so that `'10'` does not
 * read as the number 10, which would pass), a bigint with its `n`, `null`, `undefined` and booleans as
 * written, and anything else by what it is (`an object`, `a function`, `a symbol`), never its
 * contents.
 */
export function shown(value: unknown): string {
  switch (typeof value) {
    case 'number':
    case 'boolean':
    case 'undefined':
      return String(value)
    case 'string':
      return JSON.stringify(value)
    case 'bigint':
      return `${value}n`
    default:
      return value === null ? 'null' : `a${typeof value === 'object' ? 'n' : ''} ${typeof value}`
  }
}
