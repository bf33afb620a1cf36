/**
 * A tiny RON service: everything a real service gets from `createServiceHost` in ~60 lines.
 *
 * - `GET /hello` answers `{"hello":"<greeting>"}` (public, runs directly).
 * - `POST /echo` needs a token with scope `hello:write`, goes through the bounded `echo` work
 *   queue (full queue → 429 Busy) and streams the request body back.
 * - `/healthz`, `/readyz`, `/metrics`, `/version` are built in.
 * - `svc.reload({ greeting })` changes the greeting live; the queue sizes cannot change live.
 *
 * @module
 */

import { z } from 'zod'
import { createServiceHost, validateConfig, type RonService, type ServiceHostOptions, type Topology, type Transport } from '@ron/core'

/**
 * The service's config: ONE zod schema with defaults; the types derive from it. Invalid input is a
 * `ConfigError` naming the field.
 */
export const helloConfigSchema = z.strictObject({
  /** Service id (token audience, metric label). */
  id: z.string().min(1).default('hello'),
  /** Who to greet; can change live with `reload()`. */
  greeting: z.string().min(1).max(100).default('world'),
  /** Capacity of the `echo` work queue. */
  echoQueue: z.number().int().positive().default(16),
  /** Echo workers. */
  echoWorkers: z.number().int().positive().default(2),
  /** Time `close()` lets in-flight work finish, in ms. */
  drainDeadlineMs: z.number().int().positive().default(3000),
})

/** The validated config (every default applied). */
export type HelloSettings = z.output<typeof helloConfigSchema>

/** Options of {@link createHelloService}: the config fields (all optional) plus runtime objects. */
export type HelloConfig = z.input<typeof helloConfigSchema> & {
  /** Token verification (a verifier or issuer keys). @default none: POST /echo answers 401 */
  auth?: ServiceHostOptions['auth']
  /** @default systemClock */
  clock?: ServiceHostOptions['clock']
}

/** Config keys that cannot change while the service runs (they size its queues). */
const IMMUTABLE = ['id', 'echoQueue', 'echoWorkers'] as const

/** The hello service's tasks and channels (what `describe()` returns and CONCURRENCY.md shows). */
export function helloTopology(config: HelloSettings = helloConfigSchema.parse({})): Topology {
  const workers = config.echoWorkers
  return {
    service: config.id,
    tasks: [{ name: 'echo-worker', count: workers, criticality: 'critical', description: 'runs queued POST /echo requests' }],
    channels: [
      {
        name: 'echo',
        kind: 'mpsc',
        capacity: config.echoQueue,
        producers: ['http'],
        consumers: ['echo-worker'],
        overflow: 'reject-new',
        pool: { concurrency: workers },
      },
    ],
  }
}

/**
 * Creates the hello service.
 *
 * @example
 * ```ts
 * const svc = await createHelloService({ greeting: 'RON' })
 * http.createServer(svc.handle).listen(8080)
 * ```
 */
export async function createHelloService(config: HelloConfig = {}, transport?: Transport): Promise<RonService> {
  const { auth, clock, ...input } = config
  const settings = validateConfig(helloConfigSchema, input)
  const host = createServiceHost<HelloSettings>({
    id: settings.id,
    version: '1.0.0',
    topology: helloTopology(settings),
    config: { schema: helloConfigSchema, input, immutable: IMMUTABLE },
    drainDeadlineMs: settings.drainDeadlineMs,
    ...(transport === undefined ? {} : { transport }),
    ...(auth === undefined ? {} : { auth }),
    ...(clock === undefined ? {} : { clock }),
  })
  host.routes([
    // Read the snapshot per request: a reload swaps it atomically.
    { method: 'GET', path: '/hello', handler: () => ({ status: 200, json: { hello: host.config.get().greeting } }) },
    {
      method: 'POST',
      path: '/echo',
      scope: 'hello:write',
      queue: 'echo',
      handler: (ctx) => ({ status: 200, headers: { 'content-type': 'application/octet-stream' }, body: ctx.stream() }),
    },
  ])
  return Promise.resolve(host.service)
}
