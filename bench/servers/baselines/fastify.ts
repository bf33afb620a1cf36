/** Baseline server: fastify 5 with one hello route (its defaults: logger off). Options: none. */
import Fastify from 'fastify'
import type { ServerFactory } from '../../lib/server-child.js'

const start: ServerFactory = async () => {
  const app = Fastify({ logger: false })
  app.get('/hello', () => ({ hello: 'world' }))
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  return { url, close: () => app.close() }
}
export default start
