/**
 * Serves `routes` on core alone, as a bench baseline: `mode: 'handler'` through
 * `createHttpHandler`, anything else through `createServiceHost` with its defaults.
 */
import { createHttpHandler, createServiceHost, serve, type Route } from '@ron/core'
import type { StartedServer } from '../../lib/server-child.js'

export async function serveOnCore(routes: Route[], mode: unknown): Promise<StartedServer> {
  if (mode === 'handler') {
    const server = await serve(createHttpHandler({ serviceId: 'bench', routes }), { port: 0 })
    return { url: server.url, close: () => server.close() }
  }
  const host = createServiceHost({ id: 'bench', version: '0.0.0', topology: { service: 'bench', tasks: [], channels: [] } })
  host.routes(routes)
  const server = await serve(host.service, { port: 0 })
  return {
    url: server.url,
    close: async () => {
      await server.close()
      await host.service.close()
    },
  }
}
