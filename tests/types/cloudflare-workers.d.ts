// What `@cloudflare/workers-types` declares of `cloudflare:workers` that holdfast/cloudflare's types
// use (a worker project has those types; this compile does not install them).
declare module 'cloudflare:workers' {
  export abstract class DurableObject<Env = unknown> {
    constructor(ctx: unknown, env: Env)
  }
}
