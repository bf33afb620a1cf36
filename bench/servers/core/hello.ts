/**
 * RON's host with one hello route, two ways (option `mode`):
 *
 * - `'handler'`: `createHttpHandler` + `serve` (the HTTP pipeline alone);
 * - `'service'` (default): a full service built on `createServiceHost` with its defaults (built-in
 *   endpoints, metrics, per-IP admission, readiness), served with `serve` — what a RON service is.
 */
import type { ServerFactory } from '../../lib/server-child.js'
import { serveOnCore } from './host.js'

const routes = [{ method: 'GET' as const, path: '/hello', handler: () => ({ status: 200, json: { hello: 'world' } }) }]

const start: ServerFactory = (options) => serveOnCore(routes, options.mode)
export default start
