/**
 * RON's host with one hello route, two ways (option `mode`):
 *
 * - `'handler'`: `createHttpHandler` + `serve` (the HTTP pipeline alone);
 * - `'service'` (default): a full service built on `createServiceHost` with its defaults (built-in
 *   endpoints, metrics, per-IP admission, readiness), served with `serve` — what a RON service is.
 */
import { createHttpHandler, createServiceHost, serve } from '@ron/core'
import type { ServerFactory } from '../server-child.js'

const routes = [{ method: 'GET' as const, path: '/hello', handler: () => ({ status: 200, json: { hello: 'world' } }) }]

const start: ServerFactory = async (options) => {
  if (options.mode === 'handler') {
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
export default start
