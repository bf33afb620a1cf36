/**
 * A tiny RON service: everything a real service gets from `createServiceHost` in ~60 lines.
 *
 * - `GET /hello` answers `{"hello":"<greeting>"}` (public, runs directly).
 * - `POST /echo` needs a token with scope `hello:write`, goes through the bounded `echo` work
 *   queue (full queue → 429 Busy) and streams the request body back.
 * - `/healthz`, `/readyz`, `/metrics`, `/version` are built in.
 *
 * @module
 */

import { createServiceHost, type RonService, type ServiceHostOptions, type Topology, type Transport } from '@ron/core'

/** Options of {@link createHelloService}; every field is optional. */
export interface HelloConfig {
  /** Service id (token audience, metric label). @default 'hello' */
  id?: string
  /** Who to greet. @default 'world' */
  greeting?: string
  /** Capacity of the `echo` work queue. @default 16 */
  echoQueue?: number
  /** Echo workers. @default 2 */
  echoWorkers?: number
  /** Token verification (a verifier or issuer keys). @default none: POST /echo answers 401 */
  auth?: ServiceHostOptions['auth']
  /** Time `close()` lets in-flight work finish. @default 3000 */
  drainDeadlineMs?: number
  /** @default systemClock */
  clock?: ServiceHostOptions['clock']
}

/** The hello service's tasks and channels (what `describe()` returns and CONCURRENCY.md shows). */
export function helloTopology(config: HelloConfig = {}): Topology {
  const workers = config.echoWorkers ?? 2
  return {
    service: config.id ?? 'hello',
    tasks: [{ name: 'echo-worker', count: workers, criticality: 'critical', description: 'runs queued POST /echo requests' }],
    channels: [
      {
        name: 'echo',
        kind: 'mpsc',
        capacity: config.echoQueue ?? 16,
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
  const host = createServiceHost({
    id: config.id ?? 'hello',
    version: '1.0.0',
    topology: helloTopology(config),
    ...(transport === undefined ? {} : { transport }),
    ...(config.auth === undefined ? {} : { auth: config.auth }),
    ...(config.drainDeadlineMs === undefined ? {} : { drainDeadlineMs: config.drainDeadlineMs }),
    ...(config.clock === undefined ? {} : { clock: config.clock }),
  })
  const greeting = config.greeting ?? 'world'
  host.routes([
    { method: 'GET', path: '/hello', handler: () => ({ status: 200, json: { hello: greeting } }) },
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
