/**
 * A URL as errors and the command line say it: with its password, if it has one, as `***`. Errors go
 * to logs, and from `holdfast` to stderr (a cron job's mail), where a Redis password
 * (`redis://:PASSWORD@HOST`) has no business.
 */
export function masked(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password === '') return url
    parsed.password = '***'
    return parsed.href
  } catch {
    // Not a URL a client could read either: said as it is, less anything between :// and @.
    return url.replace(/\/\/[^/@]*@/, '//***@')
  }
}
