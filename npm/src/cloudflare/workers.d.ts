// The part of workerd's `cloudflare:workers` module that holdfast uses (the package is typed without
// `@cloudflare/workers-types`; in a worker project, those types describe the same class).
declare module 'cloudflare:workers' {
  export abstract class DurableObject<Env = unknown> {
    constructor(ctx: unknown, env: Env)
  }
  /** The current request's `ctx.waitUntil`: in workerd from 2025-08 on, absent before (so read through a namespace import: index.ts). */
  export const waitUntil: ((promise: Promise<unknown>) => void) | undefined
}
