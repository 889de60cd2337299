// The part of workerd's `cloudflare:workers` module that holdfast uses (the package is typed without
// `@cloudflare/workers-types`; in a worker project, those types describe the same class).
declare module 'cloudflare:workers' {
  export abstract class DurableObject<Env = unknown> {
    constructor(ctx: unknown, env: Env)
  }
}
