/**
 * Floors for the refused-forgery case (`bench/tools/profile.ts interop floor`, or any A/B script): the
 * same HMAC check and the same 401 text as interop's refusal, on core alone (option `mode`):
 * `handler` (createHttpHandler), `service` (createServiceHost with its defaults); or
 * `interop-alone`, the interop service with nothing mounted behind it (no storage heap in the
 * process). Tells the host's share of a refusal from interop's own.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { serve, type Route } from '@ron/core'
import type { ServerFactory } from '../../lib/server-child.js'
import { serveOnCore } from '../core/host.js'

const SECRET = 'bench-webhook-secret'
const routes: Route[] = [
  {
    method: 'POST',
    path: '/webhooks/:provider',
    public: true,
    handler: async (ctx) => {
      const body = await ctx.bytes()
      const sig = String(ctx.req.headers['x-hub-signature-256'] ?? '')
      const expected = Buffer.from(`sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`)
      const ok = sig.length === expected.length && timingSafeEqual(Buffer.from(sig), expected)
      return ok
        ? { status: 202, json: { accepted: true } }
        : {
            status: 401,
            headers: { 'content-type': 'application/json' },
            body: `{"error":{"code":"Unauthorized","message":"webhook refused: signature does not match any active secret","retryable":false,"corr_id":${JSON.stringify(ctx.corrId)},"details":{"reason":"bad_signature","provider":"github"}}}`,
          }
    },
  },
]

const start: ServerFactory = async (options) => {
  if (options.mode === 'interop-alone') {
    // Interop with nothing mounted behind it: the refusal path without storage's heap in the process.
    const { createInteropService, hashApiKey, toServiceTokens } = await import('@ron/interop')
    const { MemoryTransport } = await import('@ron/core')
    const transport = new MemoryTransport()
    const interop = await createInteropService(
      { webhooks: { providers: { github: { secrets: [SECRET] } } }, apiKeys: [{ client: 'bench', keyHash: hashApiKey('bench-api-key-0123456789') }], rateLimit: false, brownout: { enabled: false } },
      transport,
      { tokens: toServiceTokens('x') },
    )
    const server = await serve(interop, { port: 0 })
    return { url: server.url, close: async () => { await server.close(); await interop.close(); await transport.close() } }
  }
  return serveOnCore(routes, options.mode)
}
export default start
